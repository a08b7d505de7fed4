// The encoder family's keys and their checks (see encoder_config.h). The defaults are the small
// setting measured to separate URPE from RPE on a CPU (n = 32, V = 100, 2 layers, d = 64, 4 heads,
// init 0.07).
#include "train/families/encoder/encoder_config.h"

#include "models/encoder.h"
#include "tensor/error.h"
#include "ops/urpe_attention.h"
#include "train/config/config_checks.h"
#include "train/config/run_config.h"
#include "train/families/encoder/encoder_mlm_config.h"

namespace urpe {

// The synthetic-task encoder (docs/synthetic_encoder.md).
void add_encoder_keys(ConfigSchema& s) {
  s.add_choice("task", {"pi", "etp", "mlm"}, "pi",
               "pi / etp: the synthetic tasks, position identification or even token prediction; mlm: masked "
               "language modelling on a corpus (the paper's Appendix C.4 in small, docs/reproduce.md)");
  s.add_choice("pe", positional_spec_names(), "urpe",
               "positional encoding: none, ape, sinusoidal, rpe, alibi, rope, shaw, urpe (= rpe + URPE's C), "
               "BASE+urpe for C on top of another base (docs/theory.md#which-encodings-can-tell-positions-apart), or "
               "ape+rpe (learned absolute positions and the relative bias together, Appendix C.4)");
  s.add_int("shaw_clip", 16, "pe = shaw: relative distances are clipped to [-shaw_clip, shaw_clip]");
  s.add_choice("rpe_kind", {"unique", "bucketed"}, "unique", "RPE bias table: one scalar per distance, or T5 buckets");
  s.add_choice("urpe_kind", {"unique", "bucketed"}, "unique", "URPE C table: Toeplitz (per distance) or T5 buckets");
  s.add_choice("attention_norm", {"softmax", "exp"}, "softmax",
               "attention weights: softmax (the paper) or exp without the denominator, A = exp(S/√dh + B) ⊙ C "
               "(an experiment: urpe theory denominator)");
  s.add_choice("attention", {"fused", "materialized"}, "materialized",
               "how attention is computed: materialized (QKᵀ, the URPE core and A·V on (batch, heads, n, n) "
               "tensors) or fused (tiles with an online softmax: memory grows with n, not n²); same results");
  s.add_int("seq_len", 32, "sequence length n");
  s.add_int("vocab", 100, "number of distinct input tokens V");
  s.add_int("layers", 2, "encoder layers");
  s.add_int("d_model", 64, "model width");
  s.add_int("heads", 4, "attention heads (must divide d_model)");
  s.add_int("d_ff", 256, "feed-forward hidden width");
  s.add_float("dropout", 0.0, "dropout on embeddings, attention output and FFN output");
  s.add_float("attention_dropout", 0.0,
              "dropout on the attention probabilities (fairseq's attention_dropout, BERT's "
              "attention_probs_dropout_prob)");
  s.add_float("init_std", 0.07, "std of the N(0, std) weight initialisation");
  s.add_int("valid_size", 512, "validation sequences (a fixed set drawn from another seed; mlm: the valid "
                                "split's first windows)");
  s.add_choice("task_protocol", {"simple", "official"}, "simple",
               "task definition: simple (tokens 0 … V−1, PI targets i, every position scored, linear head) or "
               "official (the paper's fairseq code: tokens 11 … V−10, PI targets 1 + i with position 0 not "
               "scored, 11 + V classes, dense → GELU → LayerNorm → linear head tied to the embedding for ETP; "
               "docs/synthetic_encoder.md#protocols)");
  add_masked_lm_keys(s);
}

void check_encoder_values(const Config& c) {
  using namespace config_check;
  URPE_CHECK(c.get_int("seq_len") > 1, "config: seq_len must be > 1, got " << c.get_int("seq_len"));
  int_at_least(c, "vocab", 2);
  for (const char* key : {"layers", "d_model", "heads", "d_ff", "valid_size"}) int_at_least(c, key, 1);
  heads_divide(c, "heads", "d_model");
  probability(c, "dropout");
  probability(c, "attention_dropout");
  positive(c, "init_std");
  int_at_least(c, "shaw_clip", 1);
  const bool rope = c.get_string("pe") == "rope" || c.get_string("pe") == "rope+urpe";
  URPE_CHECK(!rope || (c.get_int("d_model") / c.get_int("heads")) % 2 == 0,
             "config: pe = " << c.get_string("pe") << " needs an even head dimension d_model/heads, got "
                             << c.get_int("d_model") / c.get_int("heads"));
  check_masked_lm_values(c);
}

EncoderSettings encoder_settings_from(const Config& c) {
  EncoderSettings s;
  s.task = c.get_string("task");
  s.masked_lm = s.task == "mlm";
  s.pe = c.get_string("pe");
  s.pe_spec = parse_positional_spec(s.pe);
  s.shaw_clip = c.get_int("shaw_clip");
  s.rpe_kind = parse_relative_kind(c.get_string("rpe_kind"));
  s.urpe_kind = parse_relative_kind(c.get_string("urpe_kind"));
  s.attention_norm = parse_attention_norm(c.get_string("attention_norm"));
  s.attention = parse_attention_path(c.get_string("attention"));
  s.seq_len = c.get_int("seq_len");
  s.vocab = c.get_int("vocab");
  s.layers = c.get_int("layers");
  s.d_model = c.get_int("d_model");
  s.heads = c.get_int("heads");
  s.d_ff = c.get_int("d_ff");
  s.dropout = static_cast<float>(c.get_float("dropout"));
  s.attention_dropout = static_cast<float>(c.get_float("attention_dropout"));
  s.init_std = static_cast<float>(c.get_float("init_std"));
  s.valid_size = c.get_int("valid_size");
  s.task_protocol = parse_task_protocol(c.get_string("task_protocol"));
  s.linear_dtype = linear_dtype_of(c);
  s.mask_prob = c.get_float("mask_prob");
  s.corpus = c.get_string("corpus");
  return s;
}

bool is_encoder_config(const Config& config) { return config.get_string("model") == "encoder"; }

}  // namespace urpe
