// Encoder construction (parameter shapes and init) and forward pass.
#include "models/encoder.h"

#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "tensor/nvtx_range.h"

namespace urpe {

PositionalKind parse_positional_kind(const std::string& text) {
  if (text == "none") return PositionalKind::none;
  if (text == "ape") return PositionalKind::ape;
  if (text == "rpe") return PositionalKind::rpe;
  if (text == "urpe") return PositionalKind::urpe;
  URPE_FAIL("positional encoding '" << text << "': expected none, ape, rpe or urpe");
}

const char* positional_kind_name(PositionalKind kind) {
  switch (kind) {
    case PositionalKind::none: return "none";
    case PositionalKind::ape: return "ape";
    case PositionalKind::rpe: return "rpe";
    default: return "urpe";
  }
}

// The map for sequences of length n from one built for the maximum length: rows/cols [0, n) of
// a square (N, N) map, or the middle 2n − 1 diagonals of a relative (2N − 1) one (the buckets
// of j − i ∈ [−(n − 1), n − 1]).
static Tensor leading_square(const Tensor& map, int64_t n) {
  if (map.dim() == 1) {
    const int64_t longest = (map.size(0) + 1) / 2;
    return longest == n ? map : slice(map, 0, longest - n, longest + n - 1);
  }
  if (map.size(0) == n) return map;
  return slice(slice(map, 0, 0, n), 1, 0, n);
}

// The bucket map of a table for the maximum length: relative for the fused path (no N×N map).
static Tensor bucket_map_for(const EncoderConfig& c, RelativeKind kind, const Device& device) {
  return c.attention == AttentionPath::fused ? relative_bucket_vector(c.seq_len, kind, true, device)
                                             : relative_bucket_map(c.seq_len, kind, true, device);
}

TransformerEncoder::TransformerEncoder(const EncoderConfig& c, uint64_t seed, const Device& device)
    : config_(c), device_(device) {
  URPE_CHECK(c.seq_len > 1, "encoder: seq_len must be > 1, got " << c.seq_len);
  URPE_CHECK(c.vocab > 0 && c.layers > 0 && c.d_model > 0 && c.d_ff > 0 && c.num_classes > 0,
             "encoder: vocab, layers, d_model, d_ff and num_classes must be positive");
  URPE_CHECK(c.heads > 0 && c.d_model % c.heads == 0,
             "encoder: heads (" << c.heads << ") must divide d_model (" << c.d_model << ")");
  Rng rng(seed);
  const InitSpec init{c.init_std, &rng, device};
  tokens_ = EmbeddingTable(params_, "embed_tokens", c.vocab, c.d_model, init);
  if (c.pe == PositionalKind::ape)
    positions_ = EmbeddingTable(params_, "embed_positions", c.seq_len, c.d_model, init);
  if (c.embedding_layer_norm) embedding_norm_ = LayerNorm(params_, "embed_norm", c.d_model, device);
  if (c.pe == PositionalKind::rpe || c.pe == PositionalKind::urpe) {
    const int64_t buckets = relative_bucket_count(c.seq_len, c.rpe_kind);
    bias_table_ = params_.add("rel_pos_bias", Tensor::normal({c.heads, buckets}, 0.0f, c.init_std, rng, device));
    bias_map_full_ = bucket_map_for(c, c.rpe_kind, device);
  }
  if (c.pe == PositionalKind::urpe) {
    const int64_t buckets = relative_bucket_count(c.seq_len, c.urpe_kind);
    c_table_ = params_.add("urpe_c", Tensor::ones({c.heads, buckets}, device));
    c_map_full_ = bucket_map_for(c, c.urpe_kind, device);
  }
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    Layer layer;
    layer.attention = SelfAttention(params_, p + ".self_attn", c.d_model, c.heads, init);
    layer.attention.path = c.attention;
    layer.attention_norm = LayerNorm(params_, p + ".self_attn_norm", c.d_model, device);
    layer.ffn = FeedForward(params_, p + ".ffn", c.d_model, c.d_ff, init, true);
    layer.ffn_norm = LayerNorm(params_, p + ".ffn_norm", c.d_model, device);
    layers_.push_back(std::move(layer));
  }
  head_ = Linear(params_, "head", c.d_model, c.num_classes, init);
}

Tensor TransformerEncoder::forward(const Tensor& tokens, bool training, Rng* dropout_rng) const {
  check_dtype("encoder", "tokens", tokens, DType::i32);
  check_dim("encoder", "tokens", tokens, 2, 2);
  const int64_t n = tokens.size(1);
  URPE_CHECK(n > 0 && n <= config_.seq_len,
             "encoder: sequence length " << n << " exceeds seq_len " << config_.seq_len);
  URPE_CHECK(!training || config_.dropout == 0.0f || dropout_rng != nullptr,
             "encoder: training with dropout needs a random stream");
  auto drop = [&](const Tensor& t, float p) {
    return (training && p > 0.0f) ? dropout(t, p, dropout_rng->next_seed(), true) : t;
  };

  Tensor x = tokens_.forward(tokens);  // (B, N, d)
  if (config_.pe == PositionalKind::ape) {
    const Tensor positions = Tensor::arange(n, DType::i32, device_);
    x = add(x, positions_.forward(positions));  // (N, d) broadcast over the batch
  }
  if (config_.embedding_layer_norm) x = embedding_norm_.forward(x);
  x = drop(x, config_.dropout);

  UrpeAttentionParams positional;
  if (bias_table_.defined()) {
    positional.bias_table = bias_table_;
    positional.bias_map = leading_square(bias_map_full_, n);
  }
  if (c_table_.defined()) {
    positional.c_table = c_table_;
    positional.c_map = leading_square(c_map_full_, n);
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    const std::string block = "encoder.layer" + std::to_string(l);  // NVTX names (Nsight)
    const NvtxRange layer_range(x.device(), block);
    {
      const NvtxRange range(x.device(), block + ".attention");
      const Tensor attended =
          layer.attention.forward(x, positional, config_.attention_dropout, dropout_rng, training);
      x = layer.attention_norm.forward(add(x, drop(attended, config_.dropout)));
    }
    const NvtxRange range(x.device(), block + ".ffn");
    const Tensor transformed = layer.ffn.forward(x, 0.0f, dropout_rng, training);
    x = layer.ffn_norm.forward(add(x, drop(transformed, config_.dropout)));
  }
  return head_.forward(x);
}

}  // namespace urpe
