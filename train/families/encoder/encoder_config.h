// The keys of the encoder family (`model = encoder`: the synthetic tasks PI and ETP,
// docs/synthetic_encoder.md, and masked language modelling, encoder_mlm_config.h), their checks,
// and EncoderSettings: the keys typed once (the config boundary, train/config/run_settings.h).
// Adding a setting: add_encoder_keys declares it, check_encoder_values checks it, a field below
// and a line in encoder_settings_from read it; the trainer, memory estimate and plots read the field.
#pragma once
#include <cstdint>
#include <string>

#include "base/io/config.h"
#include "data/synthetic.h"
#include "models/encoder.h"
#include "tensor/dtype.h"

namespace urpe {

// Adds the family's keys (the registry's add_keys for "encoder").
void add_encoder_keys(ConfigSchema& schema);
// Ranges and combinations of the family's keys; one error naming the key.
void check_encoder_values(const Config& config);
// The encoder family's keys, typed (strings become the enums beside their types here, once).
struct EncoderSettings {
  std::string task;        // "pi", "etp" or "mlm", as written (progress labels, results)
  bool masked_lm = false;  // task = mlm
  std::string pe;          // the positional encoding as written ("urpe", "rope+urpe", ...)
  PositionalSpec pe_spec;
  int64_t shaw_clip = 0;
  RelativeKind rpe_kind = RelativeKind::unique, urpe_kind = RelativeKind::unique;
  AttentionNorm attention_norm = AttentionNorm::softmax;
  AttentionPath attention = AttentionPath::materialized;
  int64_t seq_len = 0, vocab = 0, layers = 0, d_model = 0, heads = 0, d_ff = 0;
  float dropout = 0, attention_dropout = 0, init_std = 0;
  int64_t valid_size = 0;
  TaskProtocol task_protocol = TaskProtocol::simple;
  DType linear_dtype = DType::f32;  // the `precision` key (linear_dtype_of)
  double mask_prob = 0;             // task = mlm (encoder_mlm_config.h)
  std::string corpus;               // task = mlm: the corpus key as written ("embedded" or a directory)
};
// The keys of a resolved encoder config (check_encoder_values has checked them).
EncoderSettings encoder_settings_from(const Config& config);

// Whether `config` is one of this family's (the commands that read encoder runs only).
bool is_encoder_config(const Config& config);

}  // namespace urpe
