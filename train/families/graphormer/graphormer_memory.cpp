// Graphormer's memory estimate (models/graphormer.h; memory_estimate.h says what is estimated and
// why): per batch of ZINC-sized molecules, the attention scores, the dense attention bias and the
// multi-hop edge input, and every parameter table, from the keys of graphormer_config.cpp.
#include <string>

#include "models/graphormer.h"
#include "train/config/memory_estimate.h"
#include "train/families/graphormer/graphormer_config.h"

namespace urpe {

// The size-factor helpers shared by the families' estimates (train/config/memory_estimate.h).
using size_terms::constant;
using size_terms::key_factor;
using size_terms::rows_factor;
using size_terms::value_of;

MemoryEstimate estimate_graphormer_memory(const Config& config) {
  MemoryEstimate e;
  const GraphormerConfig defaults;
  const SizeFactor rows = rows_factor(config, "eval_batch", value_of(config, "eval_batch"), "");
  const SizeFactor heads = key_factor(config, "heads"), d = key_factor(config, "d_model");
  const SizeFactor layers = key_factor(config, "layers"), d_ffn = key_factor(config, "d_ffn");
  // A batch is padded to its largest molecule, which only the data knows. The estimate assumes
  // ZINC's largest (38 atoms; the embedded set's is 30), or max_nodes when that is smaller: what it
  // refuses then fails for any molecules of that size, and max_nodes = 100000 meant as "no limit"
  // is not refused. Larger molecules that do not fit are reported by the allocator when they come.
  constexpr double kZincLargestMolecule = 38;
  const bool capped = value_of(config, "max_nodes") < kZincLargestMolecule;
  const SizeFactor nodes = capped ? key_factor(config, "max_nodes", 2)
                                  : SizeFactor{"atoms (ZINC's largest molecule)", kZincLargestMolecule, 2, {}};
  const SizeFactor n1 = capped ? SizeFactor{"(max_nodes + 1)", nodes.value + 1, 2, {"max_nodes"}}
                               : SizeFactor{"(atoms + graph token)", kZincLargestMolecule + 1, 2, {}};
  SizeFactor n1_once = n1;
  n1_once.power = 1;
  const SizeFactor hops = key_factor(config, "multi_hop_max_dist");
  e.activations = {{"attention scores", {rows, heads, n1}},
                   {"multi-hop edge features", {hops, rows, nodes, heads}},
                   {"the feed-forward hidden layer", {rows, n1_once, d_ffn}},
                   {"hidden states", {rows, n1_once, d}},
                   // Per batch, alive through every layer: the dense bias b (spatial, edge and
                   // graph-token terms) and the batch's i32 multi-hop edge input (edge_input).
                   {"the attention bias (spatial, edge and graph-token terms)", {rows, heads, n1}},
                   {"the batch's multi-hop edge input", {rows, nodes, hops}}};
  // Every parameter of models/graphormer.cpp (graphormer_parameter_count), table by table.
  const SizeFactor layer_norms{"(2·layers + 1) LayerNorms", 2 * layers.value + 1, 1, {"layers"}};
  e.parameters = {
      {"the attention projections (weights and biases)",
       {layers, constant(4), d, SizeFactor{"(d_model + 1)", d.value + 1, 1, {"d_model"}}}},
      {"the feed-forward weights", {layers, constant(2), d, d_ffn}},
      {"the feed-forward biases", {layers, SizeFactor{"(d_ffn + d_model)", d_ffn.value + d.value, 1, {"d_ffn", "d_model"}}}},
      {"the LayerNorms (two per layer and the final one)", {layer_norms, constant(2), d}},
      {"the multi-hop edge weights", {constant(static_cast<double>(defaults.num_edge_dis), "num_edge_dis"),
                                      key_factor(config, "heads", 2)}},
      {"the atom and degree embeddings",
       {constant(static_cast<double>(defaults.num_atoms + 2 * defaults.num_degree), "table rows"), d}},
      {"the edge and spatial encodings",
       {constant(static_cast<double>(defaults.num_edges + defaults.num_spatial), "table rows"), heads}},
      {"the graph token, its virtual distance and the output layer",
       {SizeFactor{"(2·d_model + heads + 1)", 2 * d.value + heads.value + 1, 1, {"d_model", "heads"}}}}};
  if (graphormer_settings_from(config).urpe) {
    // One C table shared by the layers, and per batch the i32 (B, n+1, n+1) map of C buckets.
    e.parameters.push_back(
        {"the URPE C table", {heads, SizeFactor{"(max_spd + 4) buckets", value_of(config, "max_spd") + 4, 1, {"max_spd"}}}});
    e.activations.push_back({"the URPE C map", {rows, n1}});
  }
  return e;
}

}  // namespace urpe
