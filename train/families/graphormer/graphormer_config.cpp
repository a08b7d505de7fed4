// Graphormer run keys. Model defaults are GraphormerConfig's (the paper's ZINC "slim" sizes, GV1).
#include "train/families/graphormer/graphormer_config.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tensor/error.h"
#include "train/config/config_checks.h"
#include "base/io/run_dir.h"
#include "train/config/run_config.h"
#include "data/ogb_features.h"
#include "train/families/graphormer/graphormer_sources.h"

namespace urpe {

namespace {
// A float default as the decimal it was written as (0.1f → 0.1, not 0.10000000149011612).
double decimal(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7g", static_cast<double>(value));
  return std::strtod(text, nullptr);
}
}  // namespace

void add_graphormer_keys(ConfigSchema& s) {
  const GraphormerConfig d;
  s.add_choice("pe", {"none", "urpe"}, "none",
               "none = plain Graphormer (spatial + edge bias), urpe = Graphormer + URPE (C over SPD)");
  s.add_int("layers", d.layers, "Graphormer layers (pre-LN)");
  s.add_int("d_model", d.d_model, "model width");
  s.add_int("d_ffn", d.d_ffn, "feed-forward hidden width");
  s.add_int("heads", d.heads, "attention heads (must divide d_model)");
  s.add_float("dropout", decimal(d.dropout), "dropout on the attention and FFN outputs");
  s.add_float("attention_dropout", decimal(d.attention_dropout), "dropout on the attention probabilities");
  s.add_float("input_dropout", decimal(d.input_dropout), "dropout on the node features before the first layer");
  s.add_int("multi_hop_max_dist", d.multi_hop_max_dist, "hops of the multi-hop edge encoding (GV1 ZINC: 20)");
  s.add_int("max_spd", d.max_spd, "URPE: C buckets for SPD 0..max_spd (+3 graph-token buckets)");
  s.add_choice("embedding_tables", {"auto", "zinc", "ogb"}, "auto",
               "sizes of the atom, edge, spatial, degree and edge-distance tables: zinc (GV1's ZINC model: 64, 64, "
               "40, 64, 40 hops), ogb (GV1's OGB-LSC model, Graphormer-Small's: 9 x 512 + 1, 3 x 512 + 1, 512, 512, "
               "128 hops), or auto (ogb when dataset_format = ogb, else zinc)");
  s.add_float("init_std", decimal(d.init_std), "std of the embeddings; linears use init_std/sqrt(layers) (GV1)");
  s.add_float("end_lr", 1e-9, "learning rate reached at `steps` after the linear decay (fairseq end_learning_rate)");
  s.add_string("dataset", "embedded",
               "embedded (data/assets/molecules), a graph-file directory (tools/zinc_to_urpe.py: ZINC in the "
               "benchmarking-GNNs layout), or a CSV path (plain or .gz); docs/data.md");
  s.add_choice("dataset_format", {"auto", "graphs", "zinc250k", "csv", "ogb"}, "auto",
               "how `dataset` is read: auto (a directory with graphs.tsv or a *.tsv file: graphs; else csv), "
               "graphs (urpe graph file, its own split), zinc250k (smiles,logP,qed,SAS: penalized logP "
               "computed), csv (smiles_column, target_column), ogb (a SMILES CSV read as OGB's 9 atom and 3 "
               "bond features, PCQM4M: Appendix C.3.2)");
  s.add_string("smiles_column", "smiles", "CSV column holding the SMILES");
  s.add_string("target_column", "penalized_logp_normalized",
               "CSV column of the regression target (MAE is on its scale)");
  s.add_string("split", "auto",
               "auto (embedded: its split.csv; CSV: seeded), seeded (80/10/10 by split_seed), or a row,split file");
  s.add_int("split_seed", 1, "seed of the seeded split and of the train_subset draw (not the run seed)");
  s.add_int("train_subset", 0, "> 0: train on this many molecules of the training split (fixed draw)");
  s.add_int("max_nodes", 128, "molecules with more atoms are left out of batches (GV2 max_nodes)");
  s.add_int("eval_batch", 128, "molecules per evaluation batch (valid/test, fixed order)");
  s.add_bool("fixed_shapes", false,
             "pad every training batch to one shape: the training split's largest molecule and "
             "min(multi_hop_max_dist, its atoms - 1) hops, hops past a batch's own count read as zeros (the same "
             "sums); cuda_graph = on pads so whatever this says (docs/cuda.md#cuda-graphs)");
}

GraphormerConfig graphormer_config_from(const Config& config) {
  GraphormerConfig c;
  c.layers = config.get_int("layers");
  c.d_model = config.get_int("d_model");
  c.d_ffn = config.get_int("d_ffn");
  c.heads = config.get_int("heads");
  c.dropout = static_cast<float>(config.get_float("dropout"));
  c.attention_dropout = static_cast<float>(config.get_float("attention_dropout"));
  c.input_dropout = static_cast<float>(config.get_float("input_dropout"));
  c.multi_hop_max_dist = config.get_int("multi_hop_max_dist");
  c.max_spd = config.get_int("max_spd");
  c.init_std = static_cast<float>(config.get_float("init_std"));
  c.linear_dtype = linear_dtype_of(config);
  c.urpe = config.get_string("pe") == "urpe";
  if (embedding_tables_of(config) == "ogb") {
    // GV1's tables for OGB features (model.py, every dataset but ZINC): 512 ids per feature column
    // (data::kFeatureIdOffset) + padding, spatial and degree 512, 128 hops of edge distance.
    c.num_atoms = data::kFeatureIdOffset * data::kOgbAtomFeatures + 1;
    c.num_edges = data::kFeatureIdOffset * data::kOgbBondFeatures + 1;
    c.num_spatial = 512;
    c.num_degree = 512;
    c.num_edge_dis = 128;
  }
  URPE_CHECK(c.heads > 0 && c.d_model % c.heads == 0,
             "config: heads (" << c.heads << ") must divide d_model (" << c.d_model << ")");
  URPE_CHECK(c.init_std > 0.0f, "config: init_std must be positive, got " << c.init_std);
  return c;  // the model's constructor checks the remaining ranges, naming each field
}

data::CollateOptions collate_options_from(const Config& config) {
  data::CollateOptions o;
  o.max_nodes = static_cast<int32_t>(config.get_int("max_nodes"));
  o.multi_hop_max_dist = static_cast<int32_t>(config.get_int("multi_hop_max_dist"));
  URPE_CHECK(o.max_nodes >= 1, "config: max_nodes must be at least 1, got " << o.max_nodes);
  URPE_CHECK(o.multi_hop_max_dist >= 1,
             "config: multi_hop_max_dist must be at least 1, got " << o.multi_hop_max_dist);
  return o;
}

void check_graphormer_values(const Config& c) {
  using namespace config_check;
  for (const char* key : {"layers", "d_model", "d_ffn", "heads", "eval_batch"}) int_at_least(c, key, 1);
  heads_divide(c, "heads", "d_model");
  for (const char* key : {"dropout", "attention_dropout", "input_dropout"}) probability(c, key);
  int_between(c, "multi_hop_max_dist", 1, GraphormerConfig().num_edge_dis);
  int_at_least(c, "max_spd", 1);
  positive(c, "init_std");
  non_negative(c, "end_lr");
  int_at_least(c, "train_subset", 0);
  int_between(c, "max_nodes", 1, INT32_MAX);  // the collation's node index is an int32
  URPE_CHECK(c.get_string("embedding_tables") != "zinc" || resolved_dataset_format(c) != "ogb",
             "config: embedding_tables = zinc cannot hold OGB's feature ids (dataset_format = ogb, 512 per column); "
             "use embedding_tables = ogb or auto");
  URPE_CHECK(c.get_string("dataset") != "embedded" || c.get_string("dataset_format") == "auto",
             "config: dataset_format = " << c.get_string("dataset_format")
                                         << " applies to a dataset path; the embedded molecules are read as they are "
                                            "(dataset_format = auto)");
}

// A path key that must name a file: an error when it is missing or a directory.
static void check_file_key(const Config& c, const std::string& key, const std::string& expected) {
  const std::string path = c.get_string(key);
  URPE_CHECK(path_exists(path), "config: " << key << " '" << path << "' does not exist (expected " << expected << ")");
  URPE_CHECK(!is_directory(path), "config: " << key << " '" << path << "' is a directory (expected " << expected << ")");
}

void check_graphormer_paths(const Config& c) {
  const std::string dataset = c.get_string("dataset");
  if (dataset != "embedded" && resolved_dataset_format(c) == "graphs") {
    URPE_CHECK(path_exists(dataset), "config: dataset '" << dataset << "' does not exist (expected a graph-file "
                                                         << "directory holding graphs.tsv, docs/data.md)");
  } else if (dataset != "embedded") {
    check_file_key(c, "dataset", "'embedded', a graph-file directory or a CSV file, plain or .gz");
  }
  const std::string split = c.get_string("split");
  if (split != "auto" && split != "seeded") check_file_key(c, "split", "auto, seeded or a row,split CSV file");
}

std::string embedding_tables_of(const Config& config) {
  const std::string tables = config.get_string("embedding_tables");
  if (tables != "auto") return tables;
  return resolved_dataset_format(config) == "ogb" ? "ogb" : "zinc";
}

bool is_graphormer_config(const Config& config) { return config.get_string("model") == "graphormer"; }

GraphormerSettings graphormer_settings_from(const Config& c) {
  GraphormerSettings s;
  s.pe = c.get_string("pe");
  s.urpe = s.pe == "urpe";
  s.dataset = c.get_string("dataset");
  s.dataset_format = c.get_string("dataset_format");
  s.smiles_column = c.get_string("smiles_column");
  s.target_column = c.get_string("target_column");
  s.split = c.get_string("split");
  s.split_seed = static_cast<uint64_t>(c.get_int("split_seed"));
  s.max_nodes = c.get_int("max_nodes");
  s.max_spd = c.get_int("max_spd");
  s.train_subset = c.get_int("train_subset");
  s.eval_batch = c.get_int("eval_batch");
  s.fixed_shapes = c.get_bool("fixed_shapes") || c.get_bool("cuda_graph");
  s.end_lr = c.get_float("end_lr");
  return s;
}

std::string resolved_dataset_format(const Config& config) {
  return resolved_dataset_format(graphormer_settings_from(config));
}

}  // namespace urpe
