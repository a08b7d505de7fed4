// Graphormer construction (GV1 parameter shapes and init), the attention bias
// (docs/graphormer.md#attention-bias), the
// URPE bucket map, and the pre-LN forward. Everything differentiable is composed from existing
// ops (embedding, matmul, sum, div, concat, permute, the URPE core), so backward is autograd's;
// the integer maps and constant masks are built on the host from the collated CPU batch.
#include "models/graphormer.h"

#include <string>
#include <algorithm>
#include <cmath>

#include "autograd/node.h"
#include "ops/cast.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/urpe_attention_checks.h"
#include "ops/urpe_self_attention.h"
#include "tensor/op_profile.h"  // ScopeRange: NVTX range + profiler scope

namespace urpe {

// ---- presets and the parameter formula ----

GraphormerConfig graphormer_preset(const std::string& name) {
  std::string base = name;
  bool urpe = false;
  const std::string suffix = "-urpe";
  if (base.size() > suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0) {
    urpe = true;
    base.resize(base.size() - suffix.size());
  }
  GraphormerConfig c;
  if (base == "graphormer-slim") {
    // Defaults are the paper's ZINC sizes (GV1 examples/benchmarking-gnns); C has 302 entries per
    // head, Table 2's +2,416 parameters over 8 heads (docs/reproduce.md#zinc-heads-and-the-size-of-c).
    c.max_spd = 298;
  } else if (base == "graphormer-tiny") {
    c.layers = 3;
    c.d_model = 32;
    c.d_ffn = 32;
    c.heads = 4;
    c.multi_hop_max_dist = 5;
  } else {
    std::string known;
    for (const std::string& n : graphormer_preset_names()) known += (known.empty() ? "" : ", ") + n;
    URPE_FAIL("graphormer preset '" << name << "': expected one of " << known);
  }
  c.urpe = urpe;
  return c;
}

std::vector<std::string> graphormer_preset_names() {
  return {"graphormer-tiny", "graphormer-tiny-urpe", "graphormer-slim", "graphormer-slim-urpe"};
}

int64_t graphormer_parameter_count(const GraphormerConfig& c) {
  const int64_t d = c.d_model, f = c.d_ffn, H = c.heads;
  const int64_t embeddings = c.num_atoms * d + 2 * c.num_degree * d  // atoms, in/out degree
                             + c.num_edges * H + c.num_edge_dis * H * H + c.num_spatial * H
                             + d + H;                                  // graph token, virtual distance
  const int64_t per_layer = 2 * 2 * d                                  // two LayerNorms
                            + 4 * (d * d + d)                          // q, k, v, out
                            + (d * f + f) + (f * d + d);               // FFN
  const int64_t head = 2 * d + d + 1;                                  // final LN, d → 1
  const int64_t urpe = c.urpe ? H * (c.max_spd + 4) : 0;
  return embeddings + c.layers * per_layer + head + urpe;
}

// ---- construction ----

Graphormer::Graphormer(const GraphormerConfig& c, uint64_t seed, const Device& device)
    : config_(c), device_(device) {
  URPE_CHECK(c.layers > 0 && c.d_model > 0 && c.d_ffn > 0,
             "graphormer: layers, d_model and d_ffn must be positive");
  URPE_CHECK(c.heads > 0 && c.d_model % c.heads == 0,
             "graphormer: heads (" << c.heads << ") must divide d_model (" << c.d_model << ")");
  URPE_CHECK(c.multi_hop_max_dist >= 1 && c.multi_hop_max_dist <= c.num_edge_dis,
             "graphormer: multi_hop_max_dist must be in [1, num_edge_dis = " << c.num_edge_dis
                                                                              << "], got " << c.multi_hop_max_dist);
  URPE_CHECK(c.num_atoms > 1 && c.num_edges > 1 && c.num_spatial > 1 && c.num_degree > 1,
             "graphormer: embedding tables need at least 2 rows (row 0 is padding)");
  URPE_CHECK(!c.urpe || c.max_spd >= 1, "graphormer: max_spd must be at least 1, got " << c.max_spd);
  for (float p : {c.dropout, c.attention_dropout, c.input_dropout})
    URPE_CHECK(p >= 0.0f && p < 1.0f, "graphormer: dropout probabilities must be in [0, 1), got " << p);

  Rng rng(seed);
  const InitSpec embedding_init{c.init_std, &rng, device, c.linear_dtype};
  const InitSpec linear_init{c.init_std / std::sqrt(static_cast<float>(c.layers)), &rng, device, c.linear_dtype};
  auto table = [&](const std::string& name, int64_t rows, int64_t cols) {
    return params_.add(name, Tensor::normal({rows, cols}, 0.0f, embedding_init.std, rng, device));
  };
  const int64_t d = c.d_model, H = c.heads;
  atom_ = table("atom_encoder.weight", c.num_atoms, d);
  edge_ = table("edge_encoder.weight", c.num_edges, H);
  edge_dis_ = table("edge_dis_encoder.weight", c.num_edge_dis * H * H, 1);
  spatial_ = table("spatial_pos_encoder.weight", c.num_spatial, H);
  in_degree_ = table("in_degree_encoder.weight", c.num_degree, d);
  out_degree_ = table("out_degree_encoder.weight", c.num_degree, d);
  graph_token_ = table("graph_token.weight", 1, d);
  virtual_distance_ = table("graph_token_virtual_distance.weight", 1, H);
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    Layer layer;
    layer.attention_norm = LayerNorm(params_, p + ".self_attention_norm", d, device);
    layer.q = Linear(params_, p + ".self_attention.linear_q", d, d, linear_init);
    layer.k = Linear(params_, p + ".self_attention.linear_k", d, d, linear_init);
    layer.v = Linear(params_, p + ".self_attention.linear_v", d, d, linear_init);
    layer.out = Linear(params_, p + ".self_attention.output_layer", d, d, linear_init);
    layer.ffn_norm = LayerNorm(params_, p + ".ffn_norm", d, device);
    layer.ffn = FeedForward(params_, p + ".ffn", d, c.d_ffn, linear_init, true);
    layers_.push_back(std::move(layer));
  }
  final_norm_ = LayerNorm(params_, "final_ln", d, device);
  out_proj_ = Linear(params_, "downstream_out_proj", d, 1, linear_init);
  if (c.urpe) c_table_ = params_.add("urpe_c", Tensor::ones({H, c.max_spd + 4}, device));
  URPE_CHECK(params_.count() == graphormer_parameter_count(c),
             "graphormer: built " << params_.count() << " parameters, the formula says "
                                  << graphormer_parameter_count(c));
}

// ---- batch checks ----

namespace {

constexpr const char* kModel = "graphormer";
// GV1 builds the atom, edge, spatial and degree tables with nn.Embedding(padding_idx=0).
constexpr int64_t kPaddingRow = 0;

// Shapes and dtypes of the collated batch (the layout of data/molecule_dataset.h).
void check_batch(const data::GraphBatch& b) {
  check_dtype(kModel, "batch.x", b.x, DType::i32);
  check_dim(kModel, "batch.x", b.x, 2, 3);  // (B, n) one atom type, (B, n, F) feature columns
  const int64_t B = b.x.size(0), n = b.x.size(1);
  auto expect = [&](const char* name, const Tensor& t, DType dtype, const Shape& shape) {
    check_dtype(kModel, name, t, dtype);
    URPE_CHECK(t.shape() == shape, kModel << ": " << name << " " << t.describe() << " must have shape "
                                          << shape_str(shape) << " to match batch.x " << b.x.describe());
  };
  expect("batch.in_degree", b.in_degree, DType::i32, {B, n});
  expect("batch.spatial_pos", b.spatial_pos, DType::i32, {B, n, n});
  check_dim(kModel, "batch.edge_input", b.edge_input, 4, 4);
  expect("batch.edge_input", b.edge_input, DType::i32, {B, n, n, b.edge_input.size(3)});
  URPE_CHECK(b.bond_features >= 1 && b.edge_input.size(3) % b.bond_features == 0,
             kModel << ": batch.edge_input " << b.edge_input.describe() << " must hold whole hops of "
                    << b.bond_features << " bond feature columns");
  expect("batch.attn_bias", b.attn_bias, DType::f32, {B, n + 1, n + 1});
  expect("batch.num_nodes", b.num_nodes, DType::i32, {B});
}

// Every id of `t` must index its table; a grown atom vocabulary or a larger molecule than the
// tables were sized for gets a message naming the config option instead of an embedding error.
// A CUDA tensor is checked from its bounds on the device (kernels::index_bounds_cuda) and copied to
// the host only when one is out of range, to name it.
void check_ids(const char* name, const Tensor& t, int64_t rows, const char* option) {
#if defined(URPE_WITH_CUDA)
  if (t.device().is_cuda() && t.numel() > 0) {
    const kernels::IndexBounds bounds = kernels::index_bounds_cuda(t);
    if (bounds.low >= 0 && bounds.high < rows) return;
  }
#endif
  // On the host: the ids where they are (a copy only of a CUDA tensor that failed above), their
  // bounds first (one pass the compiler vectorises), then the first id out of range, to name it.
  const Tensor host = t.device().is_cuda() ? t.to(Device::cpu()) : t;
  const int32_t* ids = host.i32();
  const int64_t count = host.numel();
  int32_t low = 0, high = 0;
  if (count > 0) low = high = ids[0];
  for (int64_t k = 1; k < count; ++k) {
    low = std::min(low, ids[k]);
    high = std::max(high, ids[k]);
  }
  if (low >= 0 && high < rows) return;
  for (int64_t k = 0; k < count; ++k)
    URPE_CHECK(ids[k] >= 0 && ids[k] < rows,
               kModel << ": " << name << " " << t.describe() << " has id " << ids[k] << " at flat index "
                      << k << ", outside the table of " << option << " = " << rows << " rows");
}

}  // namespace

// ---- the inputs: the host's part of a forward ----

std::vector<Tensor> GraphormerInputs::tensors() const {
  std::vector<Tensor> out = {x, degree, joint_ids, edge_ids, divisor, attn_bias, key_padding};
  if (c_map.defined()) out.push_back(c_map);
  out.push_back(y);
  return out;
}

GraphormerInputs GraphormerInputs::with_tensors(const std::vector<Tensor>& t) const {
  const size_t expected = c_map.defined() ? 9 : 8;
  URPE_CHECK(t.size() == expected, kModel << ": inputs take " << expected << " tensors, got " << t.size()
                                          << " (internal error)");
  GraphormerInputs in = *this;
  size_t k = 0;
  for (Tensor* field : {&in.x, &in.degree, &in.joint_ids, &in.edge_ids, &in.divisor, &in.attn_bias, &in.key_padding})
    *field = t[k++];
  if (c_map.defined()) in.c_map = t[k++];
  in.y = t[k];
  return in;
}

GraphormerInputs Graphormer::inputs(const data::GraphBatch& batch) const {
  check_batch(batch);
  // The host-side maps: made by the collator a step ahead when it was given map_options(),
  // else here (data/graph_batch_maps.h).
  const data::GraphBatchMaps maps = maps_of(batch);
  GraphormerInputs in;
  check_ids("batch.x", batch.x, config_.num_atoms, "num_atoms");
  check_ids("batch.in_degree", batch.in_degree, config_.num_degree, "num_degree");
  in.x = batch.x;
  in.degree = batch.in_degree;
  in.joint_ids = maps.joint_ids;
  // The multi-hop ids: a fixed-shape batch's absent hops read row num_edges, a zero row the
  // forward appends to the per-hop tables (multi_hop_edge_bias).
  const int64_t V = config_.num_edges;
  in.absent_hops = batch.absent_hop_id > 0;
  URPE_CHECK(!in.absent_hops || batch.absent_hop_id == V,
             kModel << ": the batch's absent hops are id " << batch.absent_hop_id << ", the model's " << V
                    << " (one past its edge table; internal error)");
  const int64_t rows = in.absent_hops ? V + 1 : V;
  // The ids' bounds from the collator when it measured them (on its own thread); otherwise, or
  // when one is out of range (to name it), a pass over them here.
  const bool known_in_range = maps.edge_ids_bounded && maps.edge_id_low >= 0 && maps.edge_id_high < rows;
  if (!known_in_range)
    check_ids("batch.edge_input", batch.edge_input, rows, in.absent_hops ? "num_edges (+ the absent hop)" : "num_edges");
  // On a GPU, the collator's 8- or 16-bit packing when it made one (a quarter or half of the bytes
  // to upload; map_options() asks for it), unpacked there.
  const bool packed = device_.is_cuda() && maps.edge_ids_packed.defined();
  in.edge_ids = packed ? maps.edge_ids_packed : batch.edge_input;
  in.edge_id_bits = packed ? maps.edge_id_bits : 0;
  in.edge_columns = batch.edge_input.size(3);
  in.bond_features = batch.bond_features;
  in.divisor = maps.divisor;
  in.attn_bias = batch.attn_bias;
  in.key_padding = maps.key_padding;
  if (config_.urpe) {
    in.c_map = maps.c_map;
    in.c_map_low = maps.c_map_low;
    in.c_map_high = maps.c_map_high;
  }
  in.y = batch.y;
  return in;
}

// ---- forward pieces ----

Tensor Graphormer::node_features(const GraphormerInputs& in) const {
  const int64_t B = in.x.size(0);
  const Tensor x = in.x.to(device_), degree = in.degree.to(device_);  // (B, n)
  // Row 0 of these tables is GV1's padding_idx = 0: read (padded atoms) but never given a gradient.
  // With feature columns (B, n, F), h_v = Σ_f Atom[x_v,f] (GV2's sum over the feature axis).
  Tensor h = embedding(atom_, x, kPaddingRow);  // (B, n, d) or (B, n, F, d)
  if (x.dim() == 3) h = sum(h, 2);              // (B, n, d)
  h = add(h, embedding(in_degree_, degree, kPaddingRow));
  h = add(h, embedding(out_degree_, degree, kPaddingRow));  // out-degree = in-degree (undirected graphs)
  const Tensor token = embedding(graph_token_, Tensor::zeros({B, 1}, DType::i32, device_));  // (B, 1, d)
  return concat({token, h}, 1);  // (B, n+1, d)
}

Tensor Graphormer::multi_hop_edge_bias(const GraphormerInputs& in) const {
  const int64_t B = in.x.size(0), n = in.x.size(1), H = config_.heads, M = B * n * n;
  const int64_t Fe = in.bond_features;  // feature columns per hop (1: the bond type)
  const int64_t hops_in = in.edge_columns / Fe;
  const int64_t D = std::min<int64_t>(hops_in, config_.multi_hop_max_dist);
  const int64_t V = config_.num_edges;

  // The ids as collated, (M, hops_in·Fe) on the model's device; only the first D hops are read
  // (GV1 cuts at multi_hop_max_dist too), in place: no cut or reordered copy of millions of ids.
  const Tensor edge_ids = in.edge_ids.to(device_);
  const Tensor ids = in.edge_id_bits > 0
                         ? unpack_ids(reshape(edge_ids, {M, edge_ids.size(-1)}), in.edge_columns, in.edge_id_bits)
                         : reshape(edge_ids, {M, in.edge_columns});
  if (D == 0) return Tensor::zeros({H, B, n, n}, DType::f32, device_);

  // E[i,j] = Σ_s e_s[i,j]·W_s with e_s = EdgeEmb[id_s(i,j)] (H,) is, by associativity,
  // Σ_s T_s[id_s(i,j)] with the per-hop tables T_s = EdgeEmb·W_s (V, H): one small GEMM
  // (V, H)·(H, D·H) for all hops, then one pass over the ids (ops/embedding.h embedding_sum)
  // instead of a (D, M, H) lookup, a per-hop matmul and a sum over hops (on the H200 that matmul's
  // backward, a contraction over all M pairs, took 7.1 ms of a 34 ms ZINC step).
  // With feature columns, e_s = mean_f EdgeEmb[id_{s,f}] (GV2: edge_encoder(edge_input).mean(-2)):
  // T_s / Fe read by each of the Fe ids of hop s.
  // Missing hops read EdgeEmb[0], GV1's padding row: it adds to the sum (and to W's gradient)
  // but is never trained, so the GEMM reads a detached copy of it.
  const Tensor emb = concat({slice(edge_, 0, 0, 1).detach(), slice(edge_, 0, 1, V)}, 0);   // (V, H)
  const Tensor w = slice(reshape(edge_dis_, {config_.num_edge_dis, H, H}), 0, 0, D);     // (D, H, H)
  const Tensor w_cols = reshape(permute(w, {1, 0, 2}), {H, D * H});                       // (H, D·H)
  Tensor tables = permute(reshape(matmul(emb, w_cols), {V, D, H}), {1, 0, 2});             // (D, V, H)
  if (Fe > 1) tables = scale(tables, 1.0f / static_cast<float>(Fe));
  // A fixed-shape batch (cuda_graph = on) pads every pair to the same D hops: those past the
  // batch's own D read row V, zeros, so they add +0 to the sum (and nothing to W's gradient), and
  // each graph's sum is the one its batch would give unpadded (GV1's missing hops below the
  // batch's D still read row 0).
  if (in.absent_hops) tables = concat({tables, Tensor::zeros({D, 1, H}, DType::f32, device_)}, 1);  // (D, V+1, H)
  const Tensor total = embedding_sum(tables, ids, Fe);                                     // (M, H)
  // Divisor sp' (B, n, n): SPD for real pairs (spatial_pos − 1), 1 for self and padding, clamped
  // to [0, multi_hop_max_dist] (data/graph_batch_maps.cpp). One number per pair: it divides the
  // head-major sum as a broadcast suffix (ops/elementwise.h), so no (B, n, n, H) repeat is built.
  return div(reshape(permute(total, {1, 0}), {H, B, n, n}), in.divisor.to(device_));
}

data::GraphMapOptions Graphormer::map_options(bool fixed_shapes) const {
  data::GraphMapOptions o;
  o.num_spatial = static_cast<int32_t>(config_.num_spatial);
  o.max_spd = static_cast<int32_t>(config_.max_spd);
  o.multi_hop_max_dist = static_cast<int32_t>(config_.multi_hop_max_dist);
  o.pack_edge_ids = device_.is_cuda();  // the upload is what packing saves
  // Fixed shapes: one width for every batch, the one that holds every id of the table and the
  // absent hop (ids past it fail the range check anyway).
  if (fixed_shapes && o.pack_edge_ids) o.pack_bits = config_.num_edges + 1 <= (1 << 8) ? 8 : 16;
  return o;
}

data::GraphBatchMaps Graphormer::maps_of(const data::GraphBatch& batch) const {
  const data::GraphMapOptions mine = map_options(batch.absent_hop_id > 0);
  if (batch.maps.made && batch.maps.options == mine) return batch.maps;
  return data::graph_batch_maps(batch, mine);
}

Tensor Graphormer::attention_bias(const data::GraphBatch& batch) const { return attention_bias(inputs(batch)); }

Tensor Graphormer::attention_bias(const GraphormerInputs& in) const {
  const int64_t B = in.x.size(0), n = in.x.size(1), n1 = n + 1, H = config_.heads;

  // Spatial + virtual distance in one lookup: rows [0, num_spatial) of the joint table are
  // Spatial, row num_spatial is t. Node pairs read Spatial[min(spatial_pos, num_spatial − 1)],
  // the graph token's row and column read t (so (0, 0) gets t once, as in GV1): in.joint_ids.
  const Tensor joint = concat({spatial_, virtual_distance_}, 0);  // (num_spatial + 1, H)
  // Spatial row 0 (padding pairs) is GV1's padding_idx; the virtual-distance row is trained.
  Tensor bias = embedding(joint, in.joint_ids.to(device_), kPaddingRow);  // (B, n+1, n+1, H)

  // The rest is summed head-major, (H, B, n+1, n+1), where the per-graph terms (B, …) broadcast
  // over the heads as suffixes (ops/elementwise.h) on the model's device.
  bias = permute(bias, {3, 0, 1, 2});  // (H, B, n+1, n+1)

  // Multi-hop edge term on the node block: pad a zero row and column for the graph token.
  Tensor edges = multi_hop_edge_bias(in);  // (H, B, n, n)
  edges = concat({Tensor::zeros({H, B, n, 1}, DType::f32, device_), edges}, 3);   // (H, B, n, n+1)
  edges = concat({Tensor::zeros({H, B, 1, n1}, DType::f32, device_), edges}, 2);  // (H, B, n+1, n+1)

  // The collated attn_bias (B, n+1, n+1): −∞ on padded keys and far pairs, the same for every head.
  bias = add(add(bias, edges), in.attn_bias.to(device_));  // (H, B, n+1, n+1)
  return permute(bias, {1, 0, 2, 3});                       // (B, H, n+1, n+1)
}

// The C bucket map on the model's device, its value range handed to the attention op's check
// (ops/urpe_attention_checks.h): the range was measured over these values on the host, so the
// op need not read a new map back from the GPU at every step.
Tensor Graphormer::uploaded_c_map(const GraphormerInputs& in) const {
  const Tensor map = in.c_map.to(device_);
  note_bucket_map_range(map, in.c_map_low, in.c_map_high);
  return map;
}

Tensor Graphormer::urpe_c_map(const data::GraphBatch& batch) const {
  // C's bucket of each pair (data/graph_batch_maps.cpp): min(SPD, max_spd) for node pairs, then
  // the graph token's three buckets.
  check_batch(batch);
  const data::GraphBatchMaps maps = maps_of(batch);
  GraphormerInputs in;
  in.c_map = maps.c_map;
  in.c_map_low = maps.c_map_low;
  in.c_map_high = maps.c_map_high;
  return uploaded_c_map(in);
}

// bias: the attention bias (B, H, N, N) in the activations' dtype (forward rounds it once for all
// layers under precision=bf16).
Tensor Graphormer::attention(const Layer& layer, const Tensor& x, const Tensor& bias,
                             const UrpeAttentionParams& core, bool training, Rng* rng) const {
  const int64_t B = x.size(0), N = x.size(1), d = config_.d_model, H = config_.heads, dh = d / H;
  // precision=bf16 (docs/cuda.md#mixed-precision): q, k, v, the scores, P, A and the context are
  // bf16 from the projections to the output projection, each op computing in FP32, as in the
  // encoder; the block below is an FP32 op, so bf16 always takes the composition.
  const DType act = bias.dtype();
  if (act == DType::f32 && !(training && config_.attention_dropout > 0.0f)) {
    // The block as one op on packed q/k/v weights (ops/urpe_self_attention.h). GV1 scales q by
    // dh^−½ and adds b to the scores; the block scales the scores instead (the same function)
    // and takes b as its logit bias.
    UrpeAttentionParams scaled = core;
    scaled.scale = 1.0f / std::sqrt(static_cast<float>(dh));
    const SelfAttentionWeights projections{layer.q.weight, layer.k.weight, layer.v.weight,
                                           layer.q.bias,   layer.k.bias,   layer.v.bias};
    return layer.out.forward(urpe_self_attention(x, projections, H, scaled, bias));  // (B, N, d)
  }
  auto split_heads = [&](const Tensor& t) {  // (B, N, d) → (B, H, N, dh)
    return permute(reshape(t, {B, N, H, dh}), {0, 2, 1, 3});
  };
  // One bf16 copy of x for the three projections, no gradient of its own: ∂x stays their FP32
  // sum (linear's x_rounded, ops/matmul.h).
  Tensor x16;
  if (act == DType::bf16) {
    const autograd::NoGrad no_grad;
    x16 = cast(x, DType::bf16);
  }
  const Tensor q = split_heads(scale(layer.q.forward(x, act, x16), 1.0f / std::sqrt(static_cast<float>(dh))));
  const Tensor k = split_heads(layer.k.forward(x, act, x16));
  const Tensor v = split_heads(layer.v.forward(x, act, x16));
  const Tensor scores = add(matmul(q, k, false, true, act), bias);  // (B, H, N, N)
  Tensor probs = urpe_attention(scores, core);                       // (B, H, N, N)
  if (training && config_.attention_dropout > 0.0f)
    probs = dropout(probs, config_.attention_dropout, take_dropout_seed(*rng), true);
  const Tensor context = matmul(probs, v, false, false, act);  // (B, H, N, dh)
  return layer.out.forward(reshape(permute(context, {0, 2, 1, 3}), {B, N, d}));  // f32
}

// ---- forward ----

Tensor Graphormer::forward(const data::GraphBatch& batch, bool training, Rng* dropout_rng) const {
  return forward(inputs(batch), training, dropout_rng);
}

Tensor Graphormer::forward(const GraphormerInputs& in, bool training, Rng* dropout_rng) const {
  const bool any_dropout =
      config_.dropout > 0.0f || config_.attention_dropout > 0.0f || config_.input_dropout > 0.0f;
  URPE_CHECK(!training || !any_dropout || dropout_rng != nullptr,
             "graphormer: training with dropout needs a random stream");
  auto drop = [&](const Tensor& t, float p) {
    return (training && p > 0.0f) ? dropout(t, p, take_dropout_seed(*dropout_rng), true) : t;
  };

  // (B, H, n+1, n+1), computed in FP32 (the lookups, the multi-hop GEMM, the sums); under
  // precision=bf16 rounded once here for every layer's bf16 scores (its gradient, the layers' bf16
  // gradients summed, comes back FP32 through the cast).
  const Tensor bias = cast(attention_bias(in), config_.linear_dtype);
  UrpeAttentionParams core;                         // scale 1: q is already scaled, b already added
  core.key_padding = in.key_padding.to(device_);
  if (config_.urpe) {
    URPE_CHECK(in.c_map.defined(), kModel << ": a URPE model's inputs need the C map (internal error)");
    core.c_table = c_table_;
    core.c_map = uploaded_c_map(in);
  }

  Tensor x = drop(node_features(in), config_.input_dropout);  // (B, n+1, d)
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    const std::string block = "graphormer.layer" + std::to_string(l);  // NVTX names (Nsight)
    const profile::ScopeRange layer_range(device_, block);
    {
      const profile::ScopeRange range(device_, block + ".attention");
      const Tensor attended =
          attention(layer, layer.attention_norm.forward(x), bias, core, training, dropout_rng);
      x = add(x, drop(attended, config_.dropout));
    }
    const profile::ScopeRange range(device_, block + ".ffn");
    const Tensor transformed = layer.ffn.forward(layer.ffn_norm.forward(x), 0.0f, dropout_rng, training);
    x = add(x, drop(transformed, config_.dropout));
  }
  const int64_t B = x.size(0);
  const Tensor token = reshape(slice(final_norm_.forward(x), 1, 0, 1), {B, config_.d_model});  // (B, d)
  return reshape(out_proj_.forward(token), {B});  // (B,)
}

Tensor Graphormer::loss(const Tensor& predictions, const data::GraphBatch& batch) const {
  check_dtype(kModel, "batch.y", batch.y, DType::f32);
  URPE_CHECK(batch.y.shape() == predictions.shape(),
             kModel << ": batch.y " << batch.y.describe() << " must match the predictions "
                    << predictions.describe());
  return l1_loss(predictions, batch.y.to(device_));
}

Tensor Graphormer::loss(const Tensor& predictions, const GraphormerInputs& in) const {
  check_dtype(kModel, "inputs.y", in.y, DType::f32);
  URPE_CHECK(in.y.shape() == predictions.shape(),
             kModel << ": inputs.y " << in.y.describe() << " must match the predictions " << predictions.describe());
  return l1_loss(predictions, in.y.to(device_));
}

}  // namespace urpe
