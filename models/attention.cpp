// Self-attention: projections, head split (B, N, H, dh) → (B, H, N, dh), the URPE core, and the
// merge back. The head split/merge are permute copies (tensors have no strides).
#include "models/attention.h"

#include <cmath>

#include "ops/dropout.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "ops/urpe_flash_attention.h"

namespace urpe {

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
                              float attention_dropout, Rng* dropout_rng, bool training) const {
  const int64_t batch = x.size(0), n = x.size(1), d_model = x.size(2);
  auto split_heads = [&](const Tensor& t) {  // (B, N, d) → (B, H, N, dh)
    return permute(reshape(t, {batch, n, heads, head_dim}), {0, 2, 1, 3});
  };
  const Tensor q = split_heads(q_proj.forward(x));
  const Tensor k = split_heads(k_proj.forward(x));
  const Tensor v = split_heads(v_proj.forward(x));
  positional.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  if (path == AttentionPath::fused) {
    // The same dropout seed, drawn at the same point of the stream as the materialised path
    // below, so both paths drop the same attention weights.
    AttentionDropout drop;
    if (training && attention_dropout > 0.0f) drop = {attention_dropout, dropout_rng->next_seed()};
    const Tensor context = urpe_flash_attention(q, k, v, positional, drop);  // (B, H, N, dh)
    const Tensor merged = reshape(permute(context, {0, 2, 1, 3}), {batch, n, d_model});
    return out_proj.forward(merged);
  }
  Tensor attention = urpe_attention(matmul(q, k, false, true), positional);  // (B, H, N, N)
  if (training && attention_dropout > 0.0f)
    attention = dropout(attention, attention_dropout, dropout_rng->next_seed(), true);
  const Tensor context = matmul(attention, v);  // (B, H, N, dh)
  const Tensor merged = reshape(permute(context, {0, 2, 1, 3}), {batch, n, d_model});
  return out_proj.forward(merged);
}

}  // namespace urpe
