// The RoBERTa-style post-LN bidirectional Transformer encoder of the paper's synthetic tasks
// (docs/synthetic_encoder.md#encoder) with a per-position classification head, and its positional
// variants:
//   none: no position information at all
//   ape:  learned absolute position embeddings added to the token embeddings
//   rpe:  a per-head relative bias table B (unique or T5-bucketed), shared by all layers
//   urpe: rpe plus the per-head C table (unique Toeplitz or bucketed), shared, initialised to 1
//   sinusoidal: the fixed sine/cosine table of Vaswani et al. added to the token embeddings
//   alibi: a fixed bias −m_h·|i − j| (Press et al.'s geometric slopes) through the bias table/map
//   rope:  rotary embedding of q and k in every layer (ops/rotary.h)
//   shaw:  Shaw et al.'s learned relative embeddings a^K, a^V clipped at distance k, per layer
//   BASE+urpe: any base but rpe with URPE's C table on top (docs/theory.md#which-encodings-can-tell-positions-apart)
//   ape+rpe: learned absolute positions and the relative bias table together, as UniLMv2 (and the
//         paper's Appendix C.4 baseline) uses them
// Forward: x = LN_emb(E[t] (+ P[pos])) → Drop; per layer x = LN1(x + Drop(MHA(x))),
// x = LN2(x + Drop(FFN(x))); logits = x·W_headᵀ + b (head = linear), or the RoBERTa LM head of the
// official synthetic-task code (head = lm_head): logits = LN_head(GELU(x·W_dᵀ + b_d))·W_headᵀ + b,
// with W_head the token embedding itself when tie_head (official ETP).
#pragma once
#include <string>
#include <vector>

#include "models/attention.h"
#include "models/hidden_states.h"
#include "models/positional.h"
#include "models/token_model.h"

namespace urpe {

// The output head (see above): a linear layer, or dense → GELU → LayerNorm → linear.
enum class EncoderHead { linear, lm_head };

enum class PositionalKind { none, ape, rpe, urpe, sinusoidal, alibi, rope, shaw };
PositionalKind parse_positional_kind(const std::string& text);  // one base name, e.g. rope
const char* positional_kind_name(PositionalKind kind);

// The `pe` value of a run: a base, and with "+urpe" URPE's C table on top of it. "urpe" alone is
// T5-RPE + URPE (the paper's model), so "rpe+urpe" and "urpe+urpe" are rejected. "ape+rpe" is the
// base rpe with learned absolute positions added to the token embeddings as well (with_ape).
struct PositionalSpec {
  PositionalKind base = PositionalKind::urpe;
  bool urpe_on_top = false;
  bool with_ape = false;
};
PositionalSpec parse_positional_spec(const std::string& text);
std::string positional_spec_name(const PositionalSpec& spec);
// Every accepted `pe` value for the encoder, in the README's order.
const std::vector<std::string>& positional_spec_names();

// ALiBi's per-head slopes (Press et al. 2022, `get_slopes`): 2^(−8h/H) for h = 1..H when H is a
// power of two; otherwise those of the nearest lower power of two, then every other slope of the
// next power of two.
std::vector<double> alibi_slopes(int64_t heads);
// The fixed sinusoidal table (n, d): [p, 2i] = sin(p/10000^(2i/d)), [p, 2i+1] = cos(same).
Tensor sinusoidal_table(int64_t n, int64_t d, const Device& device = {});

struct EncoderConfig {
  int64_t vocab = 100;        // token ids in [0, vocab): the rows of the token embedding
  int64_t seq_len = 32;       // maximum sequence length (sizes the APE / relative tables)
  int64_t layers = 2;
  int64_t d_model = 64;
  int64_t heads = 4;
  int64_t d_ff = 256;
  int64_t num_classes = 32;   // output classes per position
  float dropout = 0.0f;
  float attention_dropout = 0.0f;
  float init_std = 0.02f;
  DType linear_dtype = DType::f32;  // the linear layers' GEMMs: bf16 under precision=bf16 (layers.h)
  PositionalKind pe = PositionalKind::urpe;
  bool urpe_on_top = false;   // C on top of `pe` (any base but rpe/urpe): pe = BASE+urpe
  bool with_ape = false;      // learned absolute positions as well (pe = ape+rpe; base rpe only)
  int64_t shaw_clip = 16;     // Shaw: relative distances clipped to [−k, k]
  RelativeKind rpe_kind = RelativeKind::unique;
  RelativeKind urpe_kind = RelativeKind::unique;
  bool embedding_layer_norm = true;
  // softmax (the paper), or exp: A = exp(S·scale + B) ⊙ C without the denominator, the variant
  // `urpe theory denominator` trains (ops/urpe_attention.h).
  AttentionNorm attention_norm = AttentionNorm::softmax;
  AttentionPath attention = AttentionPath::materialized;  // fused: no (B, H, N, N) tensors
  EncoderHead head = EncoderHead::linear;
  bool tie_head = false;      // lm_head: W_head = the token embedding (needs num_classes == vocab)
  // A padding id (official: fairseq's 1; −1 = none): as nn.Embedding(padding_idx) under
  // init_bert_params, its row of the token embedding starts at 0 and the lookup gives it no gradient.
  int64_t padding_id = -1;
};

class TransformerEncoder final : public TokenModel {
 public:
  TransformerEncoder(const EncoderConfig& config, uint64_t seed, const Device& device = {});

  // tokens: i32 (B, N) with N ≤ seq_len → logits (B, N, num_classes). Dropout draws its seeds from
  // `dropout_rng` when training (may be null when not training). `states`, when given, is cleared
  // and receives every block's input and output (models/hidden_states.h).
  Tensor forward(const Tensor& tokens, bool training, Rng* dropout_rng,
                 HiddenStates* states = nullptr) const;
  // forward in two halves: the last block's output (B, N, d), and the output head applied to any
  // (..., d) rows of it → (..., num_classes). The masked LM (train/families/encoder/encoder_mlm_trainer.cpp) runs the head
  // on the masked positions only, as BERT does.
  Tensor encode(const Tensor& tokens, bool training, Rng* dropout_rng, HiddenStates* states = nullptr) const;
  Tensor classify(const Tensor& features) const;
  // The head's mean cross-entropy on (..., d) features against i32 targets (...) without the
  // logits (classify + cross_entropy, fused in row chunks: position identification's logits are
  // (B·n, n)). `argmax`, when given, receives each row's top class, i32 (rows,), for the accuracy.
  // `chunk_rows`: rows per chunk, 0 = automatic (≤ 16 MiB of logits; tests pick smaller ones).
  Tensor classify_loss(const Tensor& features, const Tensor& targets, int32_t ignore_index,
                       Tensor* argmax = nullptr, int64_t chunk_rows = 0) const;

  const EncoderConfig& config() const { return config_; }
  const ParameterSet& parameters() const override { return params_; }
  // The shared per-head tables (undefined when the variant has none), for plots.
  // (ALiBi's bias table is fixed, not a parameter.)
  Tensor bias_table() const { return bias_table_; }
  Tensor c_table() const override { return c_table_; }
  const Device& device() const { return device_; }
  // TokenModel (models/token_model.h): forward_tokens is forward in evaluation mode.
  int64_t width() const override { return config_.d_model; }
  int64_t blocks() const override { return config_.layers; }
  int64_t vocab() const override { return config_.vocab; }
  Tensor forward_tokens(const Tensor& batch_major_ids, HiddenStates* states) const override {
    return forward(batch_major_ids, false, nullptr, states);
  }

 private:
  struct Layer {
    SelfAttention attention;
    LayerNorm attention_norm;
    FeedForward ffn;
    LayerNorm ffn_norm;
    Tensor shaw_keys, shaw_values;  // (2k + 1, dh) each, pe = shaw
  };
  bool has_c() const { return config_.pe == PositionalKind::urpe || config_.urpe_on_top; }

  EncoderConfig config_;
  Device device_;
  ParameterSet params_;
  EmbeddingTable tokens_, positions_;
  LayerNorm embedding_norm_;
  std::vector<Layer> layers_;
  Linear head_;                  // the output layer (weight undefined when tied)
  Linear head_dense_;            // lm_head: the dense layer before GELU
  LayerNorm head_norm_;          // lm_head: the LayerNorm after GELU
  Tensor bias_table_, c_table_;  // (H, K) each, shared by all layers
  Tensor bias_map_full_, c_map_full_;  // i32 (seq_len, seq_len); relative (2·seq_len − 1) when fused
  Tensor sinusoid_;                    // (seq_len, d_model), pe = sinusoidal
  Tensor rope_cos_, rope_sin_;         // (seq_len, dh/2), pe = rope
  Tensor shaw_map_full_;               // i32 (seq_len, seq_len): clip(j − i, −k, k) + k
};

}  // namespace urpe
