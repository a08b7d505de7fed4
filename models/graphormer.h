// Graphormer (Ying et al., NeurIPS 2021) for molecular property regression, as in the paper-era
// code GV1 (docs/graphormer.md: pre-LN layers, a final LayerNorm, the ZINC "slim" tables), plus its URPE
// variant (docs/graphormer.md#urpe-variant): the paper's ZINC experiment (Table 2).
//
// Batch (data/molecule_dataset.h: B graphs, n nodes after padding, D hops, graph token at 0):
//   node input   h_v = Atom[x_v] + InDeg[deg_v] + OutDeg[deg_v]        (B, n, d)
//                (feature columns, x (B, n, F): Σ_f Atom[x_v,f] in place of Atom[x_v], GV2)
//                X = Drop_in([T; h])                                     (B, n+1, d)
//   bias         b[h,i,j] (B, H, n+1, n+1):
//                  node pairs  Spatial[spatial_pos(i,j)]_h + E[i,j]_h
//                  graph token t_h on row 0 (incl. (0,0)) and column 0
//                  + attn_bias (−∞ on padded keys and far pairs; added once: GV1 adds it twice,
//                    which changes nothing since 0+0 = 0 and −∞+−∞ = −∞)
//   multi-hop    E[i,j] = (Σ_{s<D} e_s[i,j]·W_s) / sp'(i,j),  e_s = EdgeEmb[edge_input(i,j,s)] (H,),
//                W_s = EdgeDis.reshape(num_edge_dis, H, H)[s],  sp' = clamp(max(SPD, 1), 0, hop_max)
//                (with Fe bond feature columns, e_s is the mean of EdgeEmb over them, GV2;
//                with one column, the bond type, the mean is the identity);
//                computed as Σ_s (EdgeEmb·W_s)[edge_input(i,j,s)] (the same sum, reassociated:
//                one small GEMM for the per-hop tables, then ops/embedding.h's embedding_sum)
//   layer        Y = LN1(X);  A = softmax(q·kᵀ/√dh + b) ⊙ C;  X += Drop(W_o(Drop_att(A)·v))
//                Y = LN2(X);  X += Drop(W2·GELU(W1·Y + b1) + b2)
//   readout      pred = W_out·LN_final(X)[:, 0] + b_out  (B,);   loss = mean |pred − y| (L1)
// URPE: C[h,i,j] = c_h[bucket(i,j)] with one table (H, max_spd + 4) shared by all layers, ones at
// init (so a fresh URPE model computes exactly what the baseline computes):
//   bucket = min(SPD(i,j), max_spd) for node pairs (unreachable pairs → max_spd),
//            max_spd+1 graph token → node, max_spd+2 node → graph token, max_spd+3 graph token
//            itself; padded keys get C = 0 from the core's key padding (A = 0 there).
// How the pieces reach the attention core (ops/urpe_attention.h): the dense bias b is added to
// the scaled scores before the core (GV1 scales q by dh^−1/2, then adds b), so the core runs with
// scale 1 and no bias table; the padded keys go in as key_padding (they are also −∞ in b); C goes
// in as c_table + a per-batch i32 map (B, n+1, n+1).
//
// Deviations from GV1, both for inputs GV1 never sees on ZINC: spatial_pos values beyond the
// Spatial table (unreachable pairs, 511) use its last row instead of failing, and edge_input with
// more hops than multi_hop_max_dist is cut to that many hops (GV1 does the same cut).
// Init (GV1): Linear N(0, 0.02/√layers) with zero bias; every embedding N(0, 0.02) including its
// padding row (GV1 never re-zeroes it; padding rows just get no gradient); LayerNorm (1, 0).
#pragma once
#include <string>
#include <vector>

#include "data/molecule_dataset.h"
#include "models/layers.h"
#include "ops/urpe_attention.h"

namespace urpe {

struct GraphormerConfig {
  int64_t layers = 12;
  int64_t d_model = 80;
  int64_t d_ffn = 80;
  int64_t heads = 8;
  float dropout = 0.1f;             // on the attention block and FFN outputs
  float attention_dropout = 0.1f;   // on A
  float input_dropout = 0.1f;       // on [T; h] before the first layer
  int64_t multi_hop_max_dist = 20;  // hops of the multi-hop edge encoding (GV1 ZINC: 20)
  // Embedding table sizes (GV1 ZINC).
  int64_t num_atoms = 64;
  int64_t num_edges = 64;
  int64_t num_spatial = 40;
  int64_t num_degree = 64;
  int64_t num_edge_dis = 40;        // EdgeDis has num_edge_dis·H·H rows
  bool urpe = false;
  int64_t max_spd = 38;             // C buckets for SPD 0..max_spd (then 3 graph-token buckets)
  float init_std = 0.02f;
  DType linear_dtype = DType::f32;  // the linear layers' GEMMs: bf16 under precision=bf16 (layers.h), which
                                    // also stores the attention's and the FFN's activations in bf16, the
                                    // attention bias rounded once a forward (docs/cuda.md#mixed-precision)
};

// "graphormer-slim" (paper ZINC: 12 layers, d 80, ffn 80, 8 heads, dropouts 0.1, multi-hop 20) and
// "graphormer-tiny" (3 layers, d 32, ffn 32, 4 heads, multi-hop 5); a "-urpe" suffix sets urpe.
GraphormerConfig graphormer_preset(const std::string& name);
std::vector<std::string> graphormer_preset_names();

// Parameter count from the config alone (the formula the tests check the model against).
int64_t graphormer_parameter_count(const GraphormerConfig& config);

// The tensors a forward reads: the batch's ids, maps and targets, with every id checked against
// its table on the host (Graphormer::inputs). On the host they are uploaded by forward; already on
// the model's device (a captured step's static input buffers, train/loop/captured_step.h) they are
// read where they are: forward then uploads nothing and reads nothing back.
struct GraphormerInputs {
  Tensor x;            // i32 (B, n) atom ids, or (B, n, F) feature columns
  Tensor degree;       // i32 (B, n)
  Tensor joint_ids;    // i32 (B, n+1, n+1): the Spatial + virtual-distance lookup
  Tensor edge_ids;     // i32 (B, n, n, L = hops·Fe), or packed (B, n, n, ceil(L·bits/32)) when edge_id_bits > 0
  Tensor divisor;      // f32 (B, n, n): sp'
  Tensor attn_bias;    // f32 (B, n+1, n+1)
  Tensor key_padding;  // i32 (B, n+1)
  Tensor c_map;        // i32 (B, n+1, n+1): URPE's buckets (undefined for the baseline)
  Tensor y;            // f32 (B,) targets
  int64_t bond_features = 1;  // Fe
  int64_t edge_columns = 0;   // L, the ids per pair (before packing)
  int32_t edge_id_bits = 0;   // 8 or 16: edge_ids packed; 0: plain
  bool absent_hops = false;   // a fixed-shape batch: id num_edges is an absent hop (a zero row)
  int32_t c_map_low = 0, c_map_high = 0;  // c_map's values, measured on the host

  // The defined tensors in a fixed order (what a captured step copies), and the same inputs with
  // those tensors replaced (the static buffers).
  std::vector<Tensor> tensors() const;
  GraphormerInputs with_tensors(const std::vector<Tensor>& tensors) const;
};

class Graphormer {
 public:
  Graphormer(const GraphormerConfig& config, uint64_t seed, const Device& device = {});

  // A collated batch (CPU tensors; moved to the model's device here) → predictions (B,).
  // Dropout seeds come from `dropout_rng` when training (may be null otherwise).
  Tensor forward(const data::GraphBatch& batch, bool training, Rng* dropout_rng) const;
  // Mean L1 between predictions (B,) and batch.y.
  Tensor loss(const Tensor& predictions, const data::GraphBatch& batch) const;
  // The same in two parts: the host's (the batch's shapes and ids checked, its maps, on the host)
  // and the device's (no check that reads the device, no upload when the inputs are on it).
  // forward(batch) is forward(inputs(batch)), bit for bit.
  GraphormerInputs inputs(const data::GraphBatch& batch) const;
  Tensor forward(const GraphormerInputs& inputs, bool training, Rng* dropout_rng) const;
  Tensor loss(const Tensor& predictions, const GraphormerInputs& inputs) const;

  // The pieces of the forward, public for tests and plots.
  Tensor attention_bias(const data::GraphBatch& batch) const;  // (B, H, n+1, n+1)
  Tensor urpe_c_map(const data::GraphBatch& batch) const;      // i32 (B, n+1, n+1)
  // The settings the batch's host-side maps depend on: a collator given these
  // (CollateOptions::maps) makes them ahead, and forward uses them instead of making its own.
  // fixed_shapes: for fixed-shape batches (CollateOptions::fixed_nodes), one packing width for all.
  data::GraphMapOptions map_options(bool fixed_shapes = false) const;
  // A fixed-shape batch's absent-hop id (CollateOptions::absent_hop_id): one past the edge table.
  int32_t absent_hop_id() const { return static_cast<int32_t>(config_.num_edges); }

  const GraphormerConfig& config() const { return config_; }
  const ParameterSet& parameters() const { return params_; }
  Tensor c_table() const { return c_table_; }  // (H, max_spd + 4), undefined for the baseline
  const Device& device() const { return device_; }

 private:
  struct Layer {
    LayerNorm attention_norm;
    Linear q, k, v, out;
    LayerNorm ffn_norm;
    FeedForward ffn;  // GELU, no dropout inside
  };

  Tensor node_features(const GraphormerInputs& in) const;              // (B, n+1, d)
  // The batch's maps: its own when made for this model's settings, else made here.
  data::GraphBatchMaps maps_of(const data::GraphBatch& batch) const;
  Tensor uploaded_c_map(const GraphormerInputs& in) const;  // i32 (B, n+1, n+1) on device_
  Tensor attention_bias(const GraphormerInputs& in) const;
  Tensor multi_hop_edge_bias(const GraphormerInputs& in) const;  // (H, B, n, n)
  Tensor attention(const Layer& layer, const Tensor& x, const Tensor& bias,
                   const UrpeAttentionParams& core, bool training, Rng* rng) const;

  GraphormerConfig config_;
  Device device_;
  ParameterSet params_;
  Tensor atom_, edge_, edge_dis_, spatial_, in_degree_, out_degree_;  // embedding tables
  Tensor graph_token_;       // (1, d)
  Tensor virtual_distance_;  // (1, H)
  std::vector<Layer> layers_;
  LayerNorm final_norm_;
  Linear out_proj_;          // d → 1
  Tensor c_table_;           // (H, max_spd + 4), URPE only
};

}  // namespace urpe
