// The RoBERTa-style post-LN bidirectional Transformer encoder of the paper's synthetic tasks
// (docs/synthetic_encoder.md#encoder) with a per-position classification head, and its positional
// variants:
//   none: no position information at all
//   ape:  learned absolute position embeddings added to the token embeddings
//   rpe:  a per-head relative bias table B (unique or T5-bucketed), shared by all layers
//   urpe: rpe plus the per-head C table (unique Toeplitz or bucketed), shared, initialised to 1
// Forward: x = LN_emb(E[t] (+ P[pos])) → Drop; per layer x = LN1(x + Drop(MHA(x))),
// x = LN2(x + Drop(FFN(x))); logits = x·W_headᵀ + b.
#pragma once
#include <string>
#include <vector>

#include "models/attention.h"
#include "models/positional.h"

namespace urpe {

enum class PositionalKind { none, ape, rpe, urpe };
PositionalKind parse_positional_kind(const std::string& text);  // none|ape|rpe|urpe
const char* positional_kind_name(PositionalKind kind);

struct EncoderConfig {
  int64_t vocab = 100;        // token ids in [0, vocab)
  int64_t seq_len = 32;       // maximum sequence length (sizes the APE / relative tables)
  int64_t layers = 2;
  int64_t d_model = 64;
  int64_t heads = 4;
  int64_t d_ff = 256;
  int64_t num_classes = 32;   // output classes per position
  float dropout = 0.0f;
  float attention_dropout = 0.0f;
  float init_std = 0.02f;
  PositionalKind pe = PositionalKind::urpe;
  RelativeKind rpe_kind = RelativeKind::unique;
  RelativeKind urpe_kind = RelativeKind::unique;
  bool embedding_layer_norm = true;
  AttentionPath attention = AttentionPath::materialized;  // fused: no (B, H, N, N) tensors
};

class TransformerEncoder {
 public:
  TransformerEncoder(const EncoderConfig& config, uint64_t seed, const Device& device = {});

  // tokens: i32 (B, N) with N ≤ seq_len → logits (B, N, num_classes). Dropout draws its seeds from
  // `dropout_rng` when training (may be null when not training).
  Tensor forward(const Tensor& tokens, bool training, Rng* dropout_rng) const;

  const EncoderConfig& config() const { return config_; }
  const ParameterSet& parameters() const { return params_; }
  // The shared per-head tables (undefined when the variant has none), for plots.
  Tensor bias_table() const { return bias_table_; }
  Tensor c_table() const { return c_table_; }
  const Device& device() const { return device_; }

 private:
  struct Layer {
    SelfAttention attention;
    LayerNorm attention_norm;
    FeedForward ffn;
    LayerNorm ffn_norm;
  };

  EncoderConfig config_;
  Device device_;
  ParameterSet params_;
  EmbeddingTable tokens_, positions_;
  LayerNorm embedding_norm_;
  std::vector<Layer> layers_;
  Linear head_;
  Tensor bias_table_, c_table_;  // (H, K) each, shared by all layers
  Tensor bias_map_full_, c_map_full_;  // i32 (seq_len, seq_len); relative (2·seq_len − 1) when fused
};

}  // namespace urpe
