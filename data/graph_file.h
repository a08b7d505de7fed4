// urpe's plain molecule-graph file, graphs.tsv: molecules given as graphs (atom type ids, bond
// type ids), not SMILES, with their target and split. tools/zinc_to_urpe.py writes it from the
// benchmarking-GNNs ZINC pickles, so Graphormer reads exactly the benchmark's graphs
// (docs/data.md#urpe-graph-file).
//
// A directory holds graphs.tsv (or graphs.tsv.gz) and atom_types.txt (the atom vocabulary, line k
// = type id k: ZINC's 28 types). The file (UTF-8, '\n' or "\r\n" line ends, plain or gzip):
//   # urpe-graphs 1                         line 1, exactly
//   # key: value                            comments; "# graphs: N" (required) is the number of
//                                           graph lines, so a file cut at a line end is caught
//   split<TAB>index<TAB>target<TAB>atoms<TAB>bonds      the header row, exactly
//   train<TAB>167621<TAB>0.3952<TAB>0 0 1 2<TAB>0-1-1 1-2-2 2-3-1
//     split   train | valid | test
//     index   the molecule's row in its source (the benchmark pickle of its split), >= 0
//     target  a finite number within the float range
//     atoms   N >= 1 atom type ids in [0, vocabulary size), space-separated
//     bonds   "i-j-t" per bond, space-separated (may be empty): 0 <= i < j < N, t = 1 single,
//             2 double, 3 triple (the benchmark's bond types; urpe's raw bond ids), each pair once
// Any other content is one urpe::Error "<file> line L: expected …, got …"; nothing is kept.
#pragma once
#include <string>

#include "data/molecule_dataset.h"

namespace urpe::data {

constexpr const char* kGraphFileName = "graphs.tsv";
constexpr const char* kGraphFileFormatLine = "# urpe-graphs 1";
constexpr int32_t kGraphFileBondTypes = 3;  // single, double, triple

struct GraphFileData {
  MoleculeDataset dataset;  // smiles are empty: the file has graphs only
  MoleculeSplit split;      // the file's own split column
  std::vector<int64_t> source_index;  // (M,) each graph's row in its source (the index column)
  std::string comments;     // the "# " lines after the first, joined with "; " (source, counts)
};

// The graph file of `path`: a directory (its graphs.tsv or graphs.tsv.gz) or the file itself;
// atom_types.txt comes from the same directory.
GraphFileData load_graph_file(const std::string& path);

// Whether `path` names a graph-file dataset: a directory holding graphs.tsv(.gz), or a file named
// *.tsv / *.tsv.gz (the CSV readers take the rest).
bool is_graph_file_dataset(const std::string& path);

}  // namespace urpe::data
