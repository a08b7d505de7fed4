// The keys of the Graphormer family (`model = graphormer`: molecular property regression, the
// paper's Table 2) and their translation into the model, data and collation settings.
//
// Data keys pick the molecules, the target and the split:
//   dataset = embedded           data/assets/molecules (9,997 molecules, split.csv 80/10/10), a
//                                graph-file directory (tools/zinc_to_urpe.py: ZINC in the
//                                benchmarking-GNNs layout), or a path to a CSV (plain or .gz)
//   dataset_format               auto | graphs | zinc250k | csv (train/families/graphormer/graphormer_sources.h)
//   smiles_column, target_column the columns by name (embedded: smiles, penalized_logp_normalized,
//                                i.e. ZINC's normalised penalized logP: MAEs are on that scale)
//   split = auto | seeded | PATH auto: the embedded set's split.csv, a graph file's split column,
//                                a seeded 80/10/10 split for a CSV; seeded: that split (split_seed)
//                                for any dataset; PATH: a row,split file
//   train_subset = K             > 0: train on K molecules of the training split (a fixed draw
//                                from split_seed, the same for every run seed), for CPU budgets
// The learning rate warms up linearly over `warmup` steps to `lr`, then decays linearly to
// `end_lr` at `steps` (fairseq polynomial_decay, docs/graphormer.md#configurations).
#pragma once
#include <cstdint>
#include <string>

#include "data/molecule_dataset.h"
#include "models/graphormer.h"
#include "base/io/config.h"

namespace urpe {

// Adds the family's keys (called by run_config.cpp's build_schema for "graphormer").
void add_graphormer_keys(ConfigSchema& schema);

// The model a config describes; errors name the key.
GraphormerConfig graphormer_config_from(const Config& config);
data::CollateOptions collate_options_from(const Config& config);

// What the graphormer keys mean, checked without reading any data (run by check_config_values):
// positive sizes, heads dividing d_model, dropouts in [0, 1), multi_hop_max_dist within the
// edge-distance table, max_spd >= 1, init_std > 0, end_lr >= 0, train_subset >= 0, max_nodes
// an int32, dataset_format = auto for the embedded set; each error names the key.
void check_graphormer_values(const Config& config);
// `dataset` (unless embedded) and a `split` path name existing files (run by check_config_paths).
void check_graphormer_paths(const Config& config);
// The tables `embedding_tables` resolves to: zinc or ogb (auto: ogb for dataset_format = ogb).
std::string embedding_tables_of(const Config& config);
// Whether `config` is one of this family's (`urpe repro molecules --preset` takes only those).
bool is_graphormer_config(const Config& config);

// The keys the trainer, the data readers, the memory estimate and the plots read, typed once (the
// config boundary, train/config/run_settings.h); the model's and the collation's own keys become
// GraphormerConfig and CollateOptions above. Adding a setting: add_graphormer_keys declares it,
// check_graphormer_values checks it, a field here and a line in graphormer_settings_from read it.
struct GraphormerSettings {
  std::string pe;     // none or urpe
  bool urpe = false;  // pe = urpe
  std::string dataset, dataset_format;  // as written (resolved_dataset_format decides auto)
  std::string smiles_column, target_column;
  std::string split;  // auto, seeded or a path
  uint64_t split_seed = 0;
  int64_t max_nodes = 0, max_spd = 0;
  int64_t train_subset = 0;  // 0: the whole training split
  int64_t eval_batch = 0;
  bool fixed_shapes = false;  // fixed_shapes, or cuda_graph = on: every training batch padded to one shape
  double end_lr = 0;
};
// The keys of a resolved graphormer config.
GraphormerSettings graphormer_settings_from(const Config& config);

}  // namespace urpe
