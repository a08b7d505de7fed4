// The readers behind a Graphormer run's `dataset` key (train/families/graphormer/graphormer_sources.h).
#include "train/families/graphormer/graphormer_sources.h"

#include "data/graph_file.h"
#include "data/ogb_dataset.h"
#include "tensor/error.h"
#include "base/io/run_dir.h"

namespace urpe {

std::string resolved_dataset_format(const GraphormerSettings& settings) {
  if (settings.dataset_format != "auto") return settings.dataset_format;
  return data::is_graph_file_dataset(settings.dataset) ? "graphs" : "csv";
}

ConfiguredMolecules load_configured_molecules(const GraphormerSettings& settings) {
  const std::string& source = settings.dataset;
  ConfiguredMolecules m;
  m.format = resolved_dataset_format(settings);
  URPE_CHECK(path_exists(source), "config: dataset '" << source << "' does not exist (expected 'embedded', a CSV "
                                                      << "file or a graph-file directory, docs/data.md)");
  if (m.format == "graphs") {
    data::GraphFileData g = data::load_graph_file(source);
    m.dataset = std::move(g.dataset);
    m.own_split = std::move(g.split);
    m.label = m.dataset.source + " (graph file" + (g.comments.empty() ? "" : ": " + g.comments) + ")";
    return m;
  }
  URPE_CHECK(!is_directory(source), "config: dataset '" << source << "' is a directory without "
                                                        << data::kGraphFileName << "; dataset_format = " << m.format
                                                        << " expects a CSV file (plain or .gz)");
  const std::string& target = settings.target_column;
  // Molecules over max_nodes keep only their atom count: none of their O(N²) tables is built
  // (a 10⁶-atom line would need terabytes), and the trainer leaves them out of every batch.
  const int64_t max_atoms = settings.max_nodes;
  if (m.format == "ogb") {
    m.dataset = data::load_ogb_molecule_csv(source, settings.smiles_column, target, max_atoms);
    m.label = source + " (OGB features: 9 atom, 3 bond columns)";
    return m;
  }
  if (m.format == "zinc250k") {
    URPE_CHECK(target == "penalized_logp_normalized" || target == "penalized_logp",
               "config: target_column '" << target << "': dataset_format = zinc250k computes the target from the "
                                         << "logP and SAS columns; expected penalized_logp_normalized (the benchmark's "
                                         << "scale) or penalized_logp");
    // Aromatic [nH] is typed "N H1", which ZINC's 28 types lack: such types get new ids.
    m.dataset = data::load_zinc250k_csv(source, target == "penalized_logp_normalized", /*grow_vocabulary=*/true,
                                        data::AtomVocabulary::zinc(), max_atoms);
    m.label = source + " (ZINC-250k CSV, target " + target + " from logP, SAS and the cycle penalty)";
    return m;
  }
  data::MoleculeCsvOptions csv;
  csv.smiles_column = settings.smiles_column;
  csv.target_column = target;
  csv.grow_vocabulary = true;  // atom types beyond ZINC's 28 get new ids (the model checks its table)
  csv.max_atoms = max_atoms;
  m.dataset = data::load_molecule_csv(source, csv);
  m.label = source;
  return m;
}

}  // namespace urpe
