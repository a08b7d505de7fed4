// Which reader a Graphormer run's `dataset` key goes through (docs/data.md): a graph-file
// directory (ZINC in the benchmarking-GNNs layout, converted by tools/zinc_to_urpe.py), the
// ZINC-250k SMILES CSV (smiles,logP,qed,SAS; the target computed from its columns), or any CSV of
// SMILES and a target column. The embedded set is train/families/graphormer/graphormer_trainer.cpp's own case.
//
//   dataset_format = auto       a directory holding graphs.tsv, or a *.tsv(.gz) file → graphs;
//                               anything else → csv
//                    graphs     urpe's graph file (data/graph_file.h); its split column is the
//                               split unless `split` names a file or says seeded
//                    zinc250k   250k_rndm_zinc_drugs_clean_3.csv's layout; target_column must be
//                               penalized_logp_normalized (the benchmark's scale) or penalized_logp
//                    csv        smiles_column and target_column by name
//                    ogb        the same CSV read as OGB's 9 atom and 3 bond features (PCQM4M,
//                               data/ogb_dataset.h); Graphormer's tables become GV2's 512 ids
//                               per feature column
#pragma once
#include <optional>
#include <string>

#include "data/molecule_dataset.h"
#include "base/io/config.h"
#include "train/families/graphormer/graphormer_config.h"

namespace urpe {

struct ConfiguredMolecules {
  data::MoleculeDataset dataset;
  std::optional<data::MoleculeSplit> own_split;  // the graph file's split column
  std::string format;                            // graphs | zinc250k | csv | ogb (auto resolved)
  std::string label;                             // "<path> (<format>[, comments])" for the run's description
};

// The format `dataset_format` resolves to for `dataset` (auto decided by the path).
std::string resolved_dataset_format(const GraphormerSettings& settings);
std::string resolved_dataset_format(const Config& config);  // graphormer_config.cpp

// Reads the config's non-embedded dataset. Errors name the file and line, or the key.
ConfiguredMolecules load_configured_molecules(const GraphormerSettings& settings);

}  // namespace urpe
