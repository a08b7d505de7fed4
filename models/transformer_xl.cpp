// Transformer-XL construction (parameter shapes and the init of
// docs/transformer_xl.md#initialisation), the segment forward
// with memory, and the full and adaptive softmax losses. Backward comes from autograd. The maths
// is in transformer_xl.h.
#include "models/transformer_xl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "autograd/node.h"
#include "models/encoder.h"  // alibi_slopes
#include "ops/cast.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/relative_shift.h"
#include "ops/shape.h"
#include "tensor/op_profile.h"  // ScopeRange: NVTX range + profiler scope

namespace urpe {

namespace {
constexpr const char* kModel = "transformer_xl";
}

// ---- construction ----

TransformerXL::TransformerXL(const TransformerXLConfig& c, uint64_t seed, const Device& device)
    : config_(c), device_(device) {
  URPE_CHECK(c.vocab > 0 && c.layers > 0 && c.heads > 0 && c.d_head > 0 && c.d_inner > 0,
             kModel << ": vocab, layers, heads, d_head and d_inner must be positive");
  URPE_CHECK(c.d_model > 0 && c.d_model % 2 == 0,
             kModel << ": d_model must be positive and even (sines and cosines), got " << c.d_model);
  URPE_CHECK(c.tgt_len > 0 && c.mem_len >= 0,
             kModel << ": tgt_len must be positive and mem_len non-negative, got " << c.tgt_len
                    << " and " << c.mem_len);
  for (size_t k = 0; k < c.cutoffs.size(); ++k)
    URPE_CHECK(c.cutoffs[k] > (k == 0 ? 0 : c.cutoffs[k - 1]) && c.cutoffs[k] < c.vocab,
               kModel << ": adaptive softmax cutoffs must increase strictly inside (0, vocab = "
                      << c.vocab << "); cutoff " << k << " is " << c.cutoffs[k]);
  if (config_.max_klen <= 0) config_.max_klen = c.tgt_len + c.mem_len;
  set_memory_options(c.mem_len, c.clamp_len, c.same_length);

  Rng rng(seed);
  const InitSpec init{c.init_std, &rng, device, c.linear_dtype};
  const int64_t d = c.d_model, hd = c.heads * c.d_head;
  auto layer_norm = [&](const std::string& name) {  // gain N(1, std), bias 0 (docs/transformer_xl.md#initialisation)
    LayerNorm norm(params_, name, d, device);
    norm.gamma.copy_from(Tensor::normal({d}, 1.0f, c.init_std, rng, device));
    return norm;
  };

  embedding_ = params_.add("word_emb.weight", Tensor::normal({c.vocab, d}, 0.0f, c.init_std, rng, device));
  u_ = params_.add("r_w_bias", Tensor::normal({c.heads, c.d_head}, 0.0f, c.init_std, rng, device));
  if (!c.alibi) v_ = params_.add("r_r_bias", Tensor::normal({c.heads, c.d_head}, 0.0f, c.init_std, rng, device));
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    Layer layer;
    layer.qkv = Linear(params_, p + ".attn.qkv_net", d, 3 * hd, init, false);
    if (!c.alibi) layer.r_proj = Linear(params_, p + ".attn.r_net", d, hd, init, false);
    layer.out_proj = Linear(params_, p + ".attn.o_net", hd, d, init, false);
    layer.attention_norm = layer_norm(p + ".attn.layer_norm");
    layer.ffn = FeedForward(params_, p + ".ff", d, c.d_inner, init, false);
    layer.ffn_norm = layer_norm(p + ".ff.layer_norm");
    layers_.push_back(std::move(layer));
  }
  out_bias_ = params_.add("out_bias", Tensor::zeros({c.vocab}, DType::f32, device));
  if (!c.cutoffs.empty()) {
    const int64_t clusters = static_cast<int64_t>(c.cutoffs.size());
    cluster_weight_ = params_.add("cluster_weight", Tensor::normal({clusters, d}, 0.0f, c.init_std, rng, device));
    cluster_bias_ = params_.add("cluster_bias", Tensor::zeros({clusters}, DType::f32, device));
  }
  if (c.urpe) c_table_ = params_.add("urpe_c", Tensor::ones({c.heads, config_.max_klen}, device));
}

void TransformerXL::set_memory_options(int64_t mem_len, int64_t clamp_len, bool same_length) {
  URPE_CHECK(mem_len >= 0, kModel << ": mem_len must be non-negative, got " << mem_len);
  URPE_CHECK(!same_length || mem_len > 0,
             kModel << ": same_length needs mem_len > 0 (otherwise every key is masked)");
  config_.mem_len = mem_len;
  config_.clamp_len = clamp_len;
  config_.same_length = same_length;
  segment_constants_.clear();  // the maps and the positional table depend on all three
}

// ---- positional table and attention masks ----

// R[k] = [sin(pos_k·f_0..f_{d/2−1}), cos(pos_k·f_0..)], pos_k = min(klen − 1 − k, clamp_len).
// Computed in double on the host, then stored as f32: (klen, d).
Tensor TransformerXL::positional_table(int64_t klen) const {
  const int64_t d = config_.d_model, half = d / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half));  // (d/2,)
  for (int64_t m = 0; m < half; ++m) inv_freq[m] = std::pow(10000.0, -2.0 * m / d);
  std::vector<float> values(static_cast<size_t>(klen * d));
  for (int64_t k = 0; k < klen; ++k) {
    double pos = static_cast<double>(klen - 1 - k);
    if (config_.clamp_len > 0) pos = std::min(pos, static_cast<double>(config_.clamp_len));
    for (int64_t m = 0; m < half; ++m) {
      const double angle = pos * inv_freq[m];
      values[k * d + m] = static_cast<float>(std::sin(angle));
      values[k * d + half + m] = static_cast<float>(std::cos(angle));
    }
  }
  return Tensor::from_vector(values, {klen, d}).to(device_);
}

// The core's settings for one segment: scale 1/√dh, causal with offset mlen (key j visible iff
// j ≤ mlen + i), C gathered by the clamped distance (URPE), and the bias table/map for ALiBi and
// same_length. same_length is a constant −∞ bias on keys j ≤ i − s, which needs no extra mask
// argument in the core: bucket 1 of a {0, −∞} table, or with ALiBi the bucket after its distances.
UrpeAttentionParams TransformerXL::attention_core(int64_t qlen, int64_t mlen) const {
  const int64_t klen = mlen + qlen;
  UrpeAttentionParams core;
  core.scale = 1.0f / std::sqrt(static_cast<float>(config_.d_head));
  core.causal = true;
  core.causal_offset = mlen;
  if (c_table_.defined()) {
    std::vector<int32_t> map(static_cast<size_t>(qlen * klen), 0);  // (qlen, klen)
    int64_t longest = config_.max_klen - 1;
    if (config_.clamp_len > 0) longest = std::min(longest, config_.clamp_len);
    for (int64_t i = 0; i < qlen; ++i)
      for (int64_t j = 0; j <= mlen + i; ++j)  // future keys keep 0: the core zeroes them
        map[i * klen + j] = static_cast<int32_t>(std::min(mlen + i - j, longest));
    core.c_table = c_table_;
    core.c_map = Tensor::from_vector(map, {qlen, klen}).to(device_);
  }
  if (!config_.alibi && !config_.same_length) return core;
  // ALiBi: bucket δ' = min(δ, clamp_len) holds −m_h·δ' for δ' = 0 … longest; otherwise one bucket 0.
  const int64_t longest = !config_.alibi ? 0 : config_.clamp_len > 0 ? std::min(klen - 1, config_.clamp_len) : klen - 1;
  const int64_t masked = longest + 1, buckets = longest + 2;  // the same_length bucket: −∞
  std::vector<float> table(static_cast<size_t>(config_.heads * buckets), 0.0f);  // (H, buckets)
  const std::vector<double> slopes = config_.alibi ? alibi_slopes(config_.heads) : std::vector<double>();
  for (int64_t h = 0; h < config_.heads; ++h) {
    for (int64_t k = 0; config_.alibi && k <= longest; ++k)
      table[h * buckets + k] = static_cast<float>(-slopes[h] * static_cast<double>(k));
    table[h * buckets + masked] = -std::numeric_limits<float>::infinity();
  }
  const int64_t s = klen > config_.mem_len ? qlen - (klen - config_.mem_len) : qlen;
  std::vector<int32_t> map(static_cast<size_t>(qlen * klen), 0);  // (qlen, klen); future keys: any
  for (int64_t i = 0; i < qlen; ++i)
    for (int64_t j = 0; j <= mlen + i; ++j)
      map[i * klen + j] = static_cast<int32_t>(config_.same_length && j <= i - s ? masked
                                                                                 : std::min(mlen + i - j, longest));
  core.bias_table = Tensor::from_vector(table, {config_.heads, buckets}).to(device_);
  core.bias_map = Tensor::from_vector(map, {qlen, klen}).to(device_);
  return core;
}

const TransformerXL::SegmentConstants& TransformerXL::segment_constants(int64_t qlen, int64_t mlen) const {
  for (size_t k = 0; k < segment_constants_.size(); ++k) {
    if (segment_constants_[k].qlen != qlen || segment_constants_[k].mlen != mlen) continue;
    std::rotate(segment_constants_.begin() + static_cast<std::ptrdiff_t>(k),
                segment_constants_.begin() + static_cast<std::ptrdiff_t>(k) + 1, segment_constants_.end());
    return segment_constants_.back();
  }
  if (segment_constants_.size() == kSegmentConstants) segment_constants_.erase(segment_constants_.begin());
  SegmentConstants made;
  made.qlen = qlen;
  made.mlen = mlen;
  if (!config_.alibi) made.pos = positional_table(qlen + mlen);
  made.core = attention_core(qlen, mlen);
  made.core.c_table = Tensor();  // the parameter is set at each use
  segment_constants_.push_back(std::move(made));
  return segment_constants_.back();
}

Tensor TransformerXL::forward_tokens(const Tensor& batch_major_ids, HiddenStates* states) const {
  URPE_CHECK(batch_major_ids.dim() == 2 && batch_major_ids.dtype() == DType::i32,
             kModel << ": forward_tokens takes i32 (B, T) ids, got " << batch_major_ids.describe());
  const int64_t batch = batch_major_ids.size(0), T = batch_major_ids.size(1);
  const std::vector<int32_t> ids = batch_major_ids.to_vector_i32();
  std::vector<int32_t> time_major(ids.size());  // (T, B)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < T; ++t) time_major[t * batch + b] = ids[b * T + t];
  return forward_hidden(Tensor::from_vector(time_major, {T, batch}, device_), {}, false, nullptr, states).hidden;
}

// ---- attention block ----

// h: (B, qlen, d), memory: (B, mlen, d) or undefined, pos: (klen, d) (undefined with ALiBi)
// → LN(h + Drop(o)) (B, qlen, d)
Tensor TransformerXL::attention(const Layer& layer, const Tensor& h, const Tensor& memory,
                                const Tensor& pos, const UrpeAttentionParams& core, bool training,
                                Rng* rng, Tensor* weights) const {
  const int64_t batch = h.size(0), qlen = h.size(1), mlen = memory.defined() ? memory.size(1) : 0, klen = mlen + qlen;
  const int64_t heads = config_.heads, dh = config_.d_head, hd = heads * dh;
  auto drop = [&](const Tensor& t, float p) {
    return (training && p > 0.0f) ? dropout(t, p, take_dropout_seed(*rng), true) : t;
  };

  // precision=bf16 (docs/cuda.md#mixed-precision): the activations from the q/k/v and r
  // projections to the output projection are bf16 (q, k, v, r, AC, BD, the scores, P, A, the
  // context), each op computing in FP32; u and v are rounded at their use (autocast's cast of a
  // parameter; their gradients come back FP32). The memory, c, the output projection's result, the
  // residual sum and layer norm stay FP32. An analysis that reads A (weights) keeps FP32, as the
  // encoder does.
  const DType act = layer.qkv.dtype == DType::bf16 && weights == nullptr ? DType::bf16 : DType::f32;
  const Tensor c = memory.defined() ? concat({memory, h}, 1) : h;  // (B, klen, d), f32
  const Tensor qkv = layer.qkv.forward(c, act);                     // (B, klen, 3·H·dh)
  const Tensor q = reshape(slice(slice(qkv, 1, mlen, klen), 2, 0, hd), {batch, qlen, heads, dh});
  const Tensor k = permute(reshape(slice(qkv, 2, hd, 2 * hd), {batch, klen, heads, dh}), {0, 2, 1, 3});
  const Tensor v = permute(reshape(slice(qkv, 2, 2 * hd, 3 * hd), {batch, klen, heads, dh}), {0, 2, 1, 3});
  // AC[b,h,i,j] = (q_i + u)·k_j: (B, H, qlen, dh)·(B, H, klen, dh)ᵀ → (B, H, qlen, klen)
  const Tensor q_u = permute(add(q, cast(u_, act)), {0, 2, 1, 3});
  Tensor scores = matmul(q_u, k, false, true, act);
  if (!config_.alibi) {  // ALiBi's bias −m_h·δ is in the core's bias table instead
    // r: (klen, H·dh) → (H, klen, dh)
    const Tensor r = permute(reshape(layer.r_proj.forward(pos, act), {klen, heads, dh}), {1, 0, 2});
    // BDraw[h,b,i,k] = (q_i + v)·r_k: (H, B·qlen, dh)·(H, klen, dh)ᵀ → (H, B, qlen, klen), then the
    // shift picks row k = j + qlen − 1 − i (distance mlen + i − j) and we return to (B, H, qlen, klen).
    const Tensor q_v = reshape(permute(add(q, cast(v_, act)), {2, 0, 1, 3}), {heads, batch * qlen, dh});
    const Tensor bd_raw = reshape(matmul(q_v, r, false, true, act), {heads, batch, qlen, klen});
    scores = add(scores, permute(relative_shift(bd_raw), {1, 0, 2, 3}));
  }

  Tensor attn = urpe_attention(scores, core);  // (B, H, qlen, klen), scale 1/√dh inside
  if (weights) *weights = attn;
  attn = drop(attn, config_.dropatt);
  const Tensor context = matmul(attn, v, false, false, act);  // (B, H, qlen, dh)
  const Tensor merged = reshape(permute(context, {0, 2, 1, 3}), {batch, qlen, hd});
  const Tensor out = drop(layer.out_proj.forward(merged), config_.dropout);  // (B, qlen, d), f32
  return layer.attention_norm.forward(add(h, out));
}

// ---- segment forward ----

TxlHidden TransformerXL::forward_hidden(const Tensor& tokens, const TxlMemory& mems, bool training,
                                        Rng* dropout_rng, HiddenStates* states) const {
  check_dtype(kModel, "tokens", tokens, DType::i32);
  check_dim(kModel, "tokens", tokens, 2, 2);
  const int64_t qlen = tokens.size(0), batch = tokens.size(1), d = config_.d_model;
  URPE_CHECK(qlen > 0 && batch > 0, kModel << ": tokens " << tokens.describe() << " are empty");
  URPE_CHECK(mems.empty() || mems.size() == layers_.size() + 1,
             kModel << ": memory has " << mems.size() << " tensors, expected none or "
                    << layers_.size() + 1 << " (one per layer input plus the last output)");
  const int64_t mlen = mems.empty() ? 0 : mems[0].size(1);
  for (const Tensor& m : mems)
    URPE_CHECK(m.shape() == (Shape{batch, mlen, d}),
               kModel << ": memory tensor " << m.describe() << " must have shape "
                      << shape_str({batch, mlen, d}) << " (B, mlen, d) for tokens " << tokens.describe());
  const bool dropping = training && (config_.dropout > 0.0f || config_.dropatt > 0.0f);
  URPE_CHECK(!dropping || dropout_rng != nullptr, kModel << ": training with dropout needs a random stream");
  auto drop = [&](const Tensor& t) {
    return (training && config_.dropout > 0.0f) ? dropout(t, config_.dropout, take_dropout_seed(*dropout_rng), true) : t;
  };
  const int64_t klen = mlen + qlen;

  // h_0 = Drop(E[w]·√d), (qlen, B, d) → batch-major (B, qlen, d)
  const Tensor embedded = scale(embedding(embedding_, tokens), std::sqrt(static_cast<float>(d)));
  std::vector<Tensor> hids{drop(permute(embedded, {1, 0, 2}))};
  // (klen, d), one dropout mask for batch and layers; ALiBi has no R
  const SegmentConstants& constants = segment_constants(qlen, mlen);
  const Tensor pos = config_.alibi ? Tensor() : drop(constants.pos);
  UrpeAttentionParams core = constants.core;
  if (c_table_.defined()) core.c_table = c_table_;
  if (states) states->clear();

  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    const Tensor memory = mlen > 0 ? mems[l] : Tensor();
    const std::string block = "txl.layer" + std::to_string(l);  // NVTX names (Nsight)
    const profile::ScopeRange layer_range(device_, block);
    Tensor x;
    {
      const profile::ScopeRange range(device_, block + ".attention");
      Tensor weights;
      const bool keep = states && states->keep_attention;
      x = attention(layer, hids.back(), memory, pos, core, training, dropout_rng, keep ? &weights : nullptr);
      if (keep) states->attention.push_back(weights);
    }
    if (states && states->keep_after_attention) states->after_attention.push_back(x);
    const profile::ScopeRange range(device_, block + ".ffn");
    const Tensor transformed = layer.ffn.forward(x, training ? config_.dropout : 0.0f, dropout_rng, training);
    hids.push_back(layer.ffn_norm.forward(add(x, drop(transformed))));
  }

  if (states) states->blocks = hids;

  TxlHidden result;
  result.hidden = permute(drop(hids.back()), {1, 0, 2});  // (qlen, B, d)

  // Memory update (docs/transformer_xl.md#memory): rows [beg, end) of [m_l; h_l], end = mlen + qlen,
  // beg = max(0, end − mem_len); detached, so no gradient ever reaches an earlier segment.
  if (config_.mem_len > 0) {
    autograd::NoGrad no_grad;
    const int64_t beg = std::max<int64_t>(0, klen - config_.mem_len);
    for (size_t l = 0; l < hids.size(); ++l) {
      const Tensor h = hids[l].detach();
      const Tensor all = mlen > 0 ? concat({mems[l], h}, 1) : h;  // (B, klen, d)
      result.mems.push_back(slice(all, 1, beg, klen).detach());
    }
  }
  return result;
}

TxlStep TransformerXL::forward(const Tensor& tokens, const Tensor& targets, const TxlMemory& mems,
                               bool training, Rng* dropout_rng) const {
  TxlHidden h = forward_hidden(tokens, mems, training, dropout_rng);
  return TxlStep{loss(h.hidden, targets), std::move(h.mems)};
}

// ---- output layer ----

Tensor TransformerXL::logits(const Tensor& hidden) const {
  URPE_CHECK(config_.cutoffs.empty(),
             kModel << ": logits() needs a full softmax; this model has adaptive cutoffs (use loss())");
  return linear_in(config_.linear_dtype, hidden, embedding_, out_bias_);  // (qlen, B, vocab)
}

Tensor TransformerXL::loss(const Tensor& hidden, const Tensor& targets) const {
  check_dtype(kModel, "targets", targets, DType::i32);
  URPE_CHECK(hidden.dim() == 3 && targets.shape() == (Shape{hidden.size(0), hidden.size(1)}),
             kModel << ": targets " << targets.describe() << " must be (qlen, B) like hidden "
                    << hidden.describe());
  if (!config_.cutoffs.empty()) return adaptive_loss(hidden, targets);
  const int64_t rows = targets.numel();
  // precision=bf16: the logits the loss keeps for backward are bf16 (its log-sum-exp is FP32, its
  // ∂logits bf16 goes into the output layer's backward GEMMs as it is); fp32: f32, linear_in's call.
  const DType dtype = config_.linear_dtype;
  const Tensor logits = linear(hidden, embedding_, out_bias_, dtype, dtype);  // (qlen, B, vocab)
  return cross_entropy(reshape(logits, {rows, config_.vocab}), reshape(targets, {rows}));
}

// Adaptive softmax (docs/transformer_xl.md#adaptive-softmax), div_val = 1, tied to the embedding.
// With cutoffs l_1 < … < l_n:
//   head = log_softmax(h·[E[0:l_1]; Wc]ᵀ + [b[0:l_1]; bc])   (l_1 + n classes)
//   t < l_1:                    −log p = −head[t]
//   t ∈ [l_c, l_{c+1}) (c ≥ 1): −log p = −head[l_1 + n − c] − log_softmax(h·E[l_c:l_{c+1}]ᵀ + b[..])[t − l_c]
// (cluster c reads head column −c, as in the official code). The mean over all N targets is
//   (N·CE(head, head targets) + Σ_c n_c·CE(tail_c, t − l_c)) / N,
// each CE a mean over its rows; the tail rows are gathered with the embedding op, so gradients
// flow back to exactly those hidden rows.
Tensor TransformerXL::adaptive_loss(const Tensor& hidden, const Tensor& targets) const {
  const int64_t rows = targets.numel(), d = config_.d_model, vocab = config_.vocab;
  const int64_t clusters = static_cast<int64_t>(config_.cutoffs.size()), head_size = config_.cutoffs[0];
  const Tensor h = reshape(hidden, {rows, d});                // (N, d)
  const std::vector<int32_t> t = targets.to_vector_i32();     // (N,)

  std::vector<int64_t> bounds{0};
  for (int64_t c : config_.cutoffs) bounds.push_back(c);
  bounds.push_back(vocab);
  std::vector<int32_t> head_targets(static_cast<size_t>(rows));
  std::vector<std::vector<int32_t>> tail_rows(clusters + 1), tail_targets(clusters + 1);
  for (int64_t n = 0; n < rows; ++n) {
    URPE_CHECK(t[n] >= 0 && t[n] < vocab,
               kModel << ": target " << t[n] << " at flat position " << n << " is outside [0, " << vocab << ")");
    const int64_t c = std::upper_bound(bounds.begin(), bounds.end(), t[n]) - bounds.begin() - 1;
    head_targets[n] = static_cast<int32_t>(c == 0 ? t[n] : head_size + clusters - c);
    if (c > 0) {
      tail_rows[c].push_back(static_cast<int32_t>(n));
      tail_targets[c].push_back(static_cast<int32_t>(t[n] - bounds[c]));
    }
  }

  const Tensor head_weight = concat({slice(embedding_, 0, 0, head_size), cluster_weight_}, 0);
  const Tensor head_bias = concat({slice(out_bias_, 0, 0, head_size), cluster_bias_}, 0);
  // The head's and clusters' logits in the activations' dtype (bf16 under precision=bf16, as in
  // loss()); the cross-entropies and their sums f32.
  const DType dtype = config_.linear_dtype;
  const Tensor head_ce = cross_entropy(linear(h, head_weight, head_bias, dtype, dtype),
                                       Tensor::from_vector(head_targets, {rows}).to(device_));
  Tensor total = scale(head_ce, static_cast<float>(rows));
  for (int64_t c = 1; c <= clusters; ++c) {
    const int64_t count = static_cast<int64_t>(tail_rows[c].size());
    if (count == 0) continue;
    const Tensor h_c = embedding(h, Tensor::from_vector(tail_rows[c], {count}).to(device_));  // (n_c, d)
    const Tensor logits_c = linear(h_c, slice(embedding_, 0, bounds[c], bounds[c + 1]),
                                   slice(out_bias_, 0, bounds[c], bounds[c + 1]), dtype, dtype);
    const Tensor ce = cross_entropy(logits_c, Tensor::from_vector(tail_targets[c], {count}).to(device_));
    total = add(total, scale(ce, static_cast<float>(count)));
  }
  return scale(total, 1.0f / static_cast<float>(rows));
}

}  // namespace urpe
