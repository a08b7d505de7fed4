// Encoder construction (parameter shapes and init) and forward pass.
#include "models/encoder.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "ops/activation.h"
#include "ops/dropout.h"
#include "ops/embedding.h"
#include "ops/linear_cross_entropy.h"
#include "ops/rotary.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "tensor/op_profile.h"  // ScopeRange: NVTX range + profiler scope

namespace urpe {

PositionalKind parse_positional_kind(const std::string& text) {
  if (text == "none") return PositionalKind::none;
  if (text == "ape") return PositionalKind::ape;
  if (text == "rpe") return PositionalKind::rpe;
  if (text == "urpe") return PositionalKind::urpe;
  if (text == "sinusoidal") return PositionalKind::sinusoidal;
  if (text == "alibi") return PositionalKind::alibi;
  if (text == "rope") return PositionalKind::rope;
  if (text == "shaw") return PositionalKind::shaw;
  URPE_FAIL("positional encoding '" << text
                                    << "': expected none, ape, sinusoidal, rpe, alibi, rope, shaw or urpe");
}

const char* positional_kind_name(PositionalKind kind) {
  switch (kind) {
    case PositionalKind::none: return "none";
    case PositionalKind::ape: return "ape";
    case PositionalKind::rpe: return "rpe";
    case PositionalKind::sinusoidal: return "sinusoidal";
    case PositionalKind::alibi: return "alibi";
    case PositionalKind::rope: return "rope";
    case PositionalKind::shaw: return "shaw";
    default: return "urpe";
  }
}

const std::vector<std::string>& positional_spec_names() {
  static const std::vector<std::string> names = {
      "none", "ape", "sinusoidal", "rpe", "alibi", "rope", "shaw", "urpe",
      "none+urpe", "ape+urpe", "sinusoidal+urpe", "alibi+urpe", "rope+urpe", "shaw+urpe", "ape+rpe"};
  return names;
}

PositionalSpec parse_positional_spec(const std::string& text) {
  if (std::find(positional_spec_names().begin(), positional_spec_names().end(), text) ==
      positional_spec_names().end()) {
    std::string accepted;
    for (const std::string& name : positional_spec_names()) accepted += (accepted.empty() ? "" : ", ") + name;
    URPE_FAIL("positional encoding '" << text << "': expected one of " << accepted
                                      << " (urpe alone is RPE + URPE)");
  }
  PositionalSpec spec;
  if (text == "ape+rpe") {  // both encodings, not C on top of APE
    spec.base = PositionalKind::rpe;
    spec.with_ape = true;
    return spec;
  }
  const size_t plus = text.find('+');
  spec.base = parse_positional_kind(text.substr(0, plus));
  spec.urpe_on_top = plus != std::string::npos;
  return spec;
}

std::string positional_spec_name(const PositionalSpec& spec) {
  if (spec.with_ape) return std::string("ape+") + positional_kind_name(spec.base);
  return std::string(positional_kind_name(spec.base)) + (spec.urpe_on_top ? "+urpe" : "");
}

std::vector<double> alibi_slopes(int64_t heads) {
  URPE_CHECK(heads > 0, "alibi_slopes: heads must be positive, got " << heads);
  auto power_of_two = [](int64_t n) {
    const double start = std::pow(2.0, -8.0 / static_cast<double>(n));
    std::vector<double> slopes;
    for (int64_t h = 0; h < n; ++h) slopes.push_back(std::pow(start, static_cast<double>(h + 1)));
    return slopes;
  };
  int64_t closest = 1;
  while (closest * 2 <= heads) closest *= 2;
  std::vector<double> slopes = power_of_two(closest);
  if (closest == heads) return slopes;
  const std::vector<double> finer = alibi_slopes(2 * closest);
  for (int64_t h = 0; static_cast<int64_t>(slopes.size()) < heads; h += 2) slopes.push_back(finer[h]);
  return slopes;
}

Tensor sinusoidal_table(int64_t n, int64_t d, const Device& device) {
  std::vector<float> table(n * d);
  for (int64_t p = 0; p < n; ++p)
    for (int64_t c = 0; c < d; ++c) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, static_cast<double>(c - c % 2) / d);
      table[p * d + c] = static_cast<float>(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  return Tensor::from_vector(table, {n, d}, device);
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
  URPE_CHECK(!c.urpe_on_top || (c.pe != PositionalKind::rpe && c.pe != PositionalKind::urpe),
             "encoder: pe " << positional_kind_name(c.pe) << "+urpe: use pe = urpe (RPE + URPE)");
  URPE_CHECK(!c.with_ape || (c.pe == PositionalKind::rpe && !c.urpe_on_top),
             "encoder: absolute positions as well (with_ape) go with pe = rpe only (pe = ape+rpe)");
  const int64_t head_dim = c.d_model / c.heads;
  URPE_CHECK(c.pe != PositionalKind::rope || head_dim % 2 == 0,
             "encoder: pe = rope needs an even head dimension d_model/heads, got " << head_dim);
  URPE_CHECK(c.pe != PositionalKind::shaw || c.shaw_clip >= 1,
             "encoder: shaw_clip must be at least 1, got " << c.shaw_clip);
  Rng rng(seed);
  const InitSpec init{c.init_std, &rng, device, c.linear_dtype};
  tokens_ = EmbeddingTable(params_, "embed_tokens", c.vocab, c.d_model, init);
  if (c.padding_id >= 0) {  // fairseq's init_bert_params zeroes the padding row
    URPE_CHECK(c.padding_id < c.vocab, "encoder: padding_id " << c.padding_id << " is not a token id (vocab " << c.vocab << ")");
    std::vector<float> table = tokens_.table.to_vector_f32();
    std::fill_n(table.begin() + c.padding_id * c.d_model, c.d_model, 0.0f);
    tokens_.table.copy_from(Tensor::from_vector(table, tokens_.table.shape()));
  }
  if (c.pe == PositionalKind::ape || c.with_ape)
    positions_ = EmbeddingTable(params_, "embed_positions", c.seq_len, c.d_model, init);
  if (c.pe == PositionalKind::sinusoidal) sinusoid_ = sinusoidal_table(c.seq_len, c.d_model, device);
  if (c.embedding_layer_norm) embedding_norm_ = LayerNorm(params_, "embed_norm", c.d_model, device);
  if (c.pe == PositionalKind::rpe || c.pe == PositionalKind::urpe) {
    const int64_t buckets = relative_bucket_count(c.seq_len, c.rpe_kind);
    bias_table_ = params_.add("rel_pos_bias", Tensor::normal({c.heads, buckets}, 0.0f, c.init_std, rng, device));
    bias_map_full_ = bucket_map_for(c, c.rpe_kind, device);
  }
  if (c.pe == PositionalKind::alibi) {  // fixed: B_h[(j − i) + n − 1] = −m_h·|j − i|
    const std::vector<double> slopes = alibi_slopes(c.heads);
    const int64_t buckets = 2 * c.seq_len - 1;
    std::vector<float> table(c.heads * buckets);
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t k = 0; k < buckets; ++k)
        table[h * buckets + k] = static_cast<float>(-slopes[h] * std::fabs(static_cast<double>(k - (c.seq_len - 1))));
    bias_table_ = Tensor::from_vector(table, {c.heads, buckets}, device);
    bias_map_full_ = bucket_map_for(c, RelativeKind::unique, device);  // bucket (j − i) + n − 1
  }
  if (c.pe == PositionalKind::rope) std::tie(rope_cos_, rope_sin_) = rotary_tables(c.seq_len, head_dim, 10000.0, device);
  if (c.pe == PositionalKind::shaw) {
    std::vector<int32_t> map(c.seq_len * c.seq_len);
    for (int64_t i = 0; i < c.seq_len; ++i)
      for (int64_t j = 0; j < c.seq_len; ++j)
        map[i * c.seq_len + j] = static_cast<int32_t>(std::clamp<int64_t>(j - i, -c.shaw_clip, c.shaw_clip) + c.shaw_clip);
    shaw_map_full_ = Tensor::from_vector(map, {c.seq_len, c.seq_len}, device);
  }
  if (has_c()) {
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
    if (c.pe == PositionalKind::shaw) {
      const Shape shape{2 * c.shaw_clip + 1, head_dim};
      layer.shaw_keys = params_.add(p + ".self_attn.shaw_keys", Tensor::normal(shape, 0.0f, c.init_std, rng, device));
      layer.shaw_values = params_.add(p + ".self_attn.shaw_values", Tensor::normal(shape, 0.0f, c.init_std, rng, device));
    }
    layers_.push_back(std::move(layer));
  }
  if (c.head == EncoderHead::linear) {
    URPE_CHECK(!c.tie_head, "encoder: tie_head needs head = lm_head");
    head_ = Linear(params_, "head", c.d_model, c.num_classes, init);
    return;
  }
  // RobertaLMHead: dense (d → d) → GELU → LayerNorm → linear to the classes (+ bias, zeros).
  head_dense_ = Linear(params_, "head.dense", c.d_model, c.d_model, init);
  head_norm_ = LayerNorm(params_, "head.layer_norm", c.d_model, device);
  if (c.tie_head) {
    URPE_CHECK(c.num_classes == c.vocab, "encoder: a head tied to the token embedding needs num_classes ("
                                             << c.num_classes << ") == vocab rows (" << c.vocab << ")");
    head_.weight = tokens_.table;
    head_.bias = params_.add("head.bias", Tensor::zeros({c.num_classes}, DType::f32, device));
  } else {
    head_ = Linear(params_, "head", c.d_model, c.num_classes, init);
  }
}

Tensor TransformerEncoder::forward(const Tensor& tokens, bool training, Rng* dropout_rng,
                                   HiddenStates* states) const {
  return classify(encode(tokens, training, dropout_rng, states));
}

Tensor TransformerEncoder::encode(const Tensor& tokens, bool training, Rng* dropout_rng,
                                  HiddenStates* states) const {
  check_dtype("encoder", "tokens", tokens, DType::i32);
  check_dim("encoder", "tokens", tokens, 2, 2);
  const int64_t n = tokens.size(1);
  URPE_CHECK(n > 0 && n <= config_.seq_len,
             "encoder: sequence length " << n << " exceeds seq_len " << config_.seq_len);
  URPE_CHECK(!training || (config_.dropout == 0.0f && config_.attention_dropout == 0.0f) || dropout_rng != nullptr,
             "encoder: training with dropout needs a random stream");
  auto drop = [&](const Tensor& t, float p) {
    return (training && p > 0.0f) ? dropout(t, p, take_dropout_seed(*dropout_rng), true) : t;
  };

  Tensor x = config_.padding_id >= 0 ? embedding(tokens_.table, tokens, config_.padding_id)
                                     : tokens_.forward(tokens);  // (B, N, d)
  if (positions_.table.defined()) {  // pe = ape or ape+rpe
    const Tensor positions = Tensor::arange(n, DType::i32, device_);
    x = add(x, positions_.forward(positions));  // (N, d) broadcast over the batch
  }
  if (sinusoid_.defined()) x = add(x, slice(sinusoid_, 0, 0, n));
  if (config_.embedding_layer_norm) x = embedding_norm_.forward(x);
  x = drop(x, config_.dropout);
  if (states) {
    states->clear();
    states->blocks.push_back(x);
  }

  UrpeAttentionParams positional;
  positional.norm = config_.attention_norm;
  if (bias_table_.defined()) {
    positional.bias_table = bias_table_;
    positional.bias_map = leading_square(bias_map_full_, n);
  }
  if (c_table_.defined()) {
    positional.c_table = c_table_;
    positional.c_map = leading_square(c_map_full_, n);
  }
  PositionExtras extras;
  if (rope_cos_.defined()) {
    extras.rope_cos = slice(rope_cos_, 0, 0, n);
    extras.rope_sin = slice(rope_sin_, 0, 0, n);
  }
  const Tensor shaw_map = shaw_map_full_.defined() ? leading_square(shaw_map_full_, n) : Tensor();
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    if (layer.shaw_keys.defined()) {  // (N, N, dh): a^K and a^V of every (i, j)
      extras.shaw_keys = embedding(layer.shaw_keys, shaw_map);
      extras.shaw_values = embedding(layer.shaw_values, shaw_map);
    }
    const std::string block = "encoder.layer" + std::to_string(l);  // NVTX names (Nsight)
    const profile::ScopeRange layer_range(x.device(), block);
    {
      const profile::ScopeRange range(x.device(), block + ".attention");
      Tensor weights;
      const bool keep = states && states->keep_attention;
      const Tensor attended = layer.attention.forward(x, positional, config_.attention_dropout, dropout_rng,
                                                      training, keep ? &weights : nullptr, &extras);
      if (keep) states->attention.push_back(weights);
      x = layer.attention_norm.forward(add(x, drop(attended, config_.dropout)));
    }
    if (states && states->keep_after_attention) states->after_attention.push_back(x);
    const profile::ScopeRange range(x.device(), block + ".ffn");
    const Tensor transformed = layer.ffn.forward(x, 0.0f, dropout_rng, training);
    x = layer.ffn_norm.forward(add(x, drop(transformed, config_.dropout)));
    if (states) states->blocks.push_back(x);
  }
  return x;  // (B, N, d)
}

Tensor TransformerEncoder::classify(const Tensor& features) const {
  Tensor x = features;  // (..., d)
  if (config_.head == EncoderHead::lm_head) x = head_norm_.forward(gelu(head_dense_.forward(x)));
  return head_.forward(x);  // (..., num_classes); tied: x·E_tokᵀ + b
}

Tensor TransformerEncoder::classify_loss(const Tensor& features, const Tensor& targets, int32_t ignore_index,
                                         Tensor* argmax, int64_t chunk_rows) const {
  Tensor x = features;  // (..., d)
  if (config_.head == EncoderHead::lm_head) x = head_norm_.forward(gelu(head_dense_.forward(x)));
  const int64_t rows = x.numel() / config_.d_model;
  URPE_CHECK(targets.numel() == rows, "encoder: " << targets.describe() << " targets for " << rows
                                                  << " rows of features " << features.describe());
  // The last linear layer and the cross-entropy in row chunks: the (rows, num_classes) logits
  // never exist whole (ops/linear_cross_entropy.h).
  return linear_cross_entropy(reshape(x, {rows, config_.d_model}), head_.weight, head_.bias,
                              reshape(targets, {rows}), ignore_index, argmax, chunk_rows);
}

}  // namespace urpe
