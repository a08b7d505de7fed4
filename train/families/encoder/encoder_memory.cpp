// The synthetic-task encoder's memory estimate (models/encoder.h; memory_estimate.h says what is
// estimated and why): the attention scores, logits and hidden states of one step, the parameters
// by group, and the positional encoding's own tables, sized from the config keys of
// train/config/run_config.cpp and encoder_config.cpp.
#include <algorithm>
#include <cmath>
#include <string>

#include "models/encoder.h"
#include "models/positional.h"
#include "ops/linear_cross_entropy.h"
#include "train/config/memory_estimate.h"
#include "train/families/encoder/encoder_config.h"

namespace urpe {

// The size-factor helpers shared by the families' estimates (train/config/memory_estimate.h).
using size_terms::constant;
using size_terms::key_factor;
using size_terms::rows_factor;
using size_terms::value_of;

namespace {

constexpr double kEncoderEvalBatch = 64;  // encoder_trainer.cpp's fixed evaluation batch

}  // namespace

MemoryEstimate estimate_encoder_memory(const Config& config) {
  const EncoderSettings settings = encoder_settings_from(config);
  MemoryEstimate e;
  const double eval_rows = std::min(kEncoderEvalBatch, value_of(config, "valid_size"));
  const SizeFactor rows = rows_factor(config, "", eval_rows, "evaluation batch");
  const SizeFactor n = key_factor(config, "seq_len"), n2 = key_factor(config, "seq_len", 2);
  const SizeFactor heads = key_factor(config, "heads"), d = key_factor(config, "d_model");
  const SizeFactor layers = key_factor(config, "layers"), d_ff = key_factor(config, "d_ff");
  const SizeFactor head_dim{"head dim (d_model / heads)", std::floor(d.value / std::max(heads.value, 1.0)), 1,
                            {"d_model"}};
  // simple: PI classifies positions (n classes), ETP tokens (vocab + 1 with the EOS class);
  // official: 11 + vocab classes (PI at least seq_len + 1) and 11 + vocab embedding rows
  // (data/synthetic.h).
  const bool pi = settings.task == "pi";
  const bool official = settings.task_protocol == TaskProtocol::official;
  const double vocab = value_of(config, "vocab");
  SizeFactor classes = pi ? SizeFactor{"classes (seq_len)", n.value, 1, {"seq_len"}}
                          : SizeFactor{"classes (vocab + 1)", vocab + 1, 1, {"vocab"}};
  if (official)
    classes = pi && n.value + 1 > vocab + 11 ? SizeFactor{"classes (seq_len + 1)", n.value + 1, 1, {"seq_len"}}
                                             : SizeFactor{"classes (vocab + 11)", vocab + 11, 1, {"vocab"}};
  SizeFactor embedding_rows = official ? SizeFactor{"vocab + 11", vocab + 11, 1, {"vocab"}} : key_factor(config, "vocab");
  // mlm (train/families/encoder/encoder_mlm_config.h): vocab rows and vocab classes (the head is tied to the embedding).
  const bool mlm = settings.masked_lm;
  if (mlm) classes = embedding_rows = key_factor(config, "vocab");
  // Fused attention keeps per-row statistics instead of the B·H·n² scores (ops/urpe_flash_attention.h).
  const bool fused = settings.attention == AttentionPath::fused;
  const SizeTerm attention = fused ? SizeTerm{"attention row statistics (fused)", {rows, heads, n}}
                                   : SizeTerm{"attention scores", {rows, heads, n2}};
  // Position identification's head runs fused with its loss in row chunks (encoder_trainer.cpp,
  // ops/linear_cross_entropy.h): one chunk of logits at a time, at most kLinearCrossEntropyChunkFloats
  // of them but at least one row, never more than the whole (B·n, classes).
  SizeTerm logits{"logits", {rows, n, classes}};
  if (pi && logits.count() > double(kLinearCrossEntropyChunkFloats)) {
    const double chunk = std::max(classes.value, std::floor(double(kLinearCrossEntropyChunkFloats) / classes.value) * classes.value);
    if (chunk < logits.count()) logits = {"logits of one row chunk (the head fused with its loss)", {constant(chunk)}};
  }
  e.activations = {attention,
                   {"the feed-forward hidden layer", {rows, n, d_ff}},
                   logits,
                   {"hidden states", {rows, n, d}}};
  e.parameters = {{"the token embedding", {embedding_rows, d}},
                  {"the attention projections", {layers, constant(4), key_factor(config, "d_model", 2)}},
                  {"the feed-forward weights", {layers, constant(2), d, d_ff}},
                  {"the classifier", {d, classes}}};
  if (mlm) {
    e.parameters.back() = {"the LM head's dense layer (its output is the tied embedding)", {d, d}};
    // The head runs on the masked positions only: round(mask_prob · seq_len) per sequence.
    const double masked = std::max(1.0, std::round(settings.mask_prob * n.value));
    for (SizeTerm& t : e.activations)
      if (t.what == "logits") t.factors = {rows, {"masked positions (mask_prob · seq_len)", masked, 1, {"seq_len", "mask_prob"}}, classes};
  }

  // The positional encoding's own tables (models/encoder.cpp), `pe` = BASE or BASE+urpe.
  const PositionalSpec pe = settings.pe_spec;
  // A map of buckets per (i, j): square (n²) for the materialised core, relative (2n − 1) when fused.
  const SizeFactor map_size = fused ? SizeFactor{"(2·seq_len − 1) distances", 2 * n.value - 1, 1, {"seq_len"}} : n2;
  // One table row per bucket: a scalar per distance (unique) or T5's 32 buckets.
  auto buckets = [&](RelativeKind kind) {
    return kind == RelativeKind::bucketed
               ? constant(static_cast<double>(relative_bucket_count(2, RelativeKind::bucketed)), "T5 buckets")
               : SizeFactor{"(2·seq_len − 1) buckets", 2 * n.value - 1, 1, {"seq_len"}};
  };
  double maps = 0;  // i32 (i, j) → bucket maps, counted as one term
  switch (pe.base) {
    case PositionalKind::ape: e.parameters.push_back({"the position embedding", {n, d}}); break;
    case PositionalKind::sinusoidal: e.fixed_tables.push_back({"the sinusoid table", {n, d}}); break;
    case PositionalKind::rpe:
    case PositionalKind::urpe:
      e.parameters.push_back({"the relative-position bias table", {heads, buckets(settings.rpe_kind)}});
      ++maps;
      break;
    case PositionalKind::alibi:
      e.fixed_tables.push_back(
          {"the ALiBi bias table", {heads, SizeFactor{"(2·seq_len − 1) distances", 2 * n.value - 1, 1, {"seq_len"}}}});
      ++maps;
      break;
    case PositionalKind::rope:  // cos and sin, (n, dh/2) each
      e.fixed_tables.push_back({"the rotary cos and sin tables", {n, head_dim}});
      break;
    case PositionalKind::shaw: {  // a^K and a^V per layer, (2k + 1, dh) each
      const SizeFactor rows_k{"(2·shaw_clip + 1) distances", 2 * value_of(config, "shaw_clip") + 1, 1, {"shaw_clip"}};
      e.parameters.push_back({"Shaw's relative embeddings a^K, a^V", {layers, constant(2), rows_k, head_dim}});
      // gathered per (i, j) in every layer: (n, n, dh) for a^K and for a^V
      e.activations.push_back({"Shaw's gathered relative embeddings (one of a^K, a^V of one layer)", {n2, head_dim}});
      e.fixed_tables.push_back({"Shaw's clipped-distance map", {n2}});
      break;
    }
    case PositionalKind::none: break;
  }
  if (pe.with_ape) e.parameters.push_back({"the position embedding", {n, d}});  // ape+rpe
  if (pe.base == PositionalKind::urpe || pe.urpe_on_top) {
    e.parameters.push_back({"the URPE C table", {heads, buckets(settings.urpe_kind)}});
    ++maps;
  }
  if (maps > 0) e.fixed_tables.push_back({"relative-position maps", {constant(maps, "maps"), map_size}});
  return e;
}

}  // namespace urpe
