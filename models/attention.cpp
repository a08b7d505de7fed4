// Self-attention: projections, head split (B, N, H, dh) → (B, H, N, dh), the URPE core, and the
// merge back. The head split/merge are permute copies (tensors have no strides).
#include "models/attention.h"

#include <cmath>

#include "autograd/node.h"
#include "ops/cast.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/rotary.h"
#include "ops/shape.h"
#include "ops/urpe_flash_attention.h"
#include "ops/urpe_self_attention.h"

namespace urpe {

namespace {

// Shaw's terms as one batched GEMM per query position i (batch axis i, as in Shaw et al. §3.3):
// (N, B·H, ·) against the (N, N, dh) gathered embeddings of that query's row.
Tensor by_query(const Tensor& t) {  // (B, H, N, X) → (N, B·H, X)
  return reshape(permute(t, {2, 0, 1, 3}), {t.size(2), t.size(0) * t.size(1), t.size(3)});
}
Tensor from_query(const Tensor& t, int64_t batch, int64_t heads) {  // (N, B·H, X) → (B, H, N, X)
  return permute(reshape(t, {t.size(0), batch, heads, t.size(2)}), {1, 2, 0, 3});
}

// A relative map (values for j − i = −(N − 1) … N − 1, length 2N − 1) as the square (N, N) map
// the materialised core reads: map[i, j] = rel[(j − i) + N − 1].
Tensor square_from_relative(const Tensor& rel, int64_t n) {
  const std::vector<int32_t> r = rel.to_vector_i32();
  URPE_CHECK(static_cast<int64_t>(r.size()) == 2 * n - 1,
             "attention: a relative map of " << r.size() << " buckets for sequences of " << n);
  std::vector<int32_t> square(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) square[i * n + j] = r[(j - i) + n - 1];
  return Tensor::from_vector(square, {n, n}, rel.device());
}

}  // namespace

AttentionPath parse_attention_path(const std::string& text) {
  if (text == "materialized") return AttentionPath::materialized;
  if (text == "fused") return AttentionPath::fused;
  URPE_FAIL("attention '" << text << "': expected fused or materialized");
}

const char* attention_path_name(AttentionPath path) {
  return path == AttentionPath::fused ? "fused" : "materialized";
}

SelfAttention::SelfAttention(ParameterSet& params, const std::string& name, int64_t d_model,
                             int64_t num_heads, const InitSpec& init)
    : q_proj(params, name + ".q_proj", d_model, d_model, init),
      k_proj(params, name + ".k_proj", d_model, d_model, init),
      v_proj(params, name + ".v_proj", d_model, d_model, init),
      out_proj(params, name + ".out_proj", d_model, d_model, init),
      heads(num_heads),
      head_dim(d_model / num_heads) {
  URPE_CHECK(num_heads > 0 && d_model % num_heads == 0,
             name << ": heads (" << num_heads << ") must divide d_model (" << d_model << ")");
}

Tensor SelfAttention::forward(const Tensor& x, UrpeAttentionParams positional,
                              float attention_dropout, Rng* dropout_rng, bool training,
                              Tensor* weights, const PositionExtras* extras) const {
  const int64_t batch = x.size(0), n = x.size(1), d_model = x.size(2);
  const PositionExtras none;
  const PositionExtras& pos = extras ? *extras : none;
  // The materialised path as one op on packed q/k/v weights (ops/urpe_self_attention.h), when
  // nothing needs the heads apart: no RoPE or Shaw terms, no attention dropout, no weights out.
  const bool dropping = training && attention_dropout > 0.0f;
  // precision=bf16 (docs/cuda.md#mixed-precision): the activations are bf16 from the q/k/v
  // projections to the output projection (q, k, v, S, P, A, the context; RoPE's rotated q and k;
  // Shaw's terms, whose gathered a^K, a^V are rounded at their use; on the fused path q, k, v and
  // the context), each op computing in FP32; the output projection returns f32 for the residual
  // stream. Analyses that read A keep FP32 activations.
  const bool fused = path == AttentionPath::fused && weights == nullptr && !pos.shaw_values.defined() &&
                     positional.norm == AttentionNorm::softmax;
  const DType act = q_proj.dtype == DType::bf16 && weights == nullptr ? DType::bf16 : DType::f32;
  const bool block = act == DType::f32 && path == AttentionPath::materialized && weights == nullptr && !dropping &&
                     !pos.rope_cos.defined() && !pos.shaw_keys.defined() && !pos.shaw_values.defined() &&
                     q_proj.bias.defined() && k_proj.bias.defined() && v_proj.bias.defined();
  if (block) {
    positional.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    if (positional.bias_map.defined() && positional.bias_map.dim() == 1)
      positional.bias_map = square_from_relative(positional.bias_map, n);
    if (positional.c_map.defined() && positional.c_map.dim() == 1)
      positional.c_map = square_from_relative(positional.c_map, n);
    const SelfAttentionWeights projections{q_proj.weight, k_proj.weight, v_proj.weight,
                                           q_proj.bias,   k_proj.bias,   v_proj.bias};
    return out_proj.forward(urpe_self_attention(x, projections, heads, positional));  // (B, N, d)
  }
  auto split_heads = [&](const Tensor& t) {  // (B, N, d) → (B, H, N, dh)
    return permute(reshape(t, {batch, n, heads, head_dim}), {0, 2, 1, 3});
  };
  // One bf16 copy of x for the three projections (each would keep its own), no gradient of its
  // own: ∂x stays the projections' FP32 sums (ops/matmul.h, linear's x_rounded).
  Tensor x16;
  if (act == DType::bf16 && x.dtype() == DType::f32) {
    const autograd::NoGrad no_grad;
    x16 = cast(x, DType::bf16);
  }
  Tensor q = split_heads(q_proj.forward(x, act, x16));
  Tensor k = split_heads(k_proj.forward(x, act, x16));
  const Tensor v = split_heads(v_proj.forward(x, act, x16));
  if (pos.rope_cos.defined()) {
    q = rotary(q, pos.rope_cos, pos.rope_sin);
    k = rotary(k, pos.rope_cos, pos.rope_sin);
  }
  positional.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  // The fused op has no exp variant, stores no A, and cannot add Shaw's value term (which needs A).
  if (fused) {
    // The same dropout seed, drawn at the same point of the stream as the materialised path
    // below, so both paths drop the same attention weights.
    AttentionDropout drop;
    if (training && attention_dropout > 0.0f) drop = {attention_dropout, take_dropout_seed(*dropout_rng)};
    const Tensor context = urpe_flash_attention(q, k, v, positional, drop);  // (B, H, N, dh)
    const Tensor merged = reshape(permute(context, {0, 2, 1, 3}), {batch, n, d_model});
    return out_proj.forward(merged);
  }
  // The materialised core reads square maps; a model built for the fused path holds relative ones.
  if (positional.bias_map.defined() && positional.bias_map.dim() == 1)
    positional.bias_map = square_from_relative(positional.bias_map, n);
  if (positional.c_map.defined() && positional.c_map.dim() == 1)
    positional.c_map = square_from_relative(positional.c_map, n);
  Tensor scores = matmul(q, k, false, true, act);  // (B, H, N, N)
  if (pos.shaw_keys.defined())
    scores = add(scores, from_query(matmul(by_query(q), cast(pos.shaw_keys, act), false, true, act), batch, heads));
  Tensor attention = urpe_attention(scores, positional);  // (B, H, N, N)
  if (weights) *weights = attention;
  if (training && attention_dropout > 0.0f)
    attention = dropout(attention, attention_dropout, take_dropout_seed(*dropout_rng), true);
  Tensor context = matmul(attention, v, false, false, act);  // (B, H, N, dh)
  if (pos.shaw_values.defined())
    context = add(context, from_query(matmul(by_query(attention), cast(pos.shaw_values, act), false, false, act),
                                      batch, heads));
  const Tensor merged = reshape(permute(context, {0, 2, 1, 3}), {batch, n, d_model});
  return out_proj.forward(merged);
}

}  // namespace urpe
