// Masked-LM keys of the encoder family (see encoder_mlm_config.h).
#include "train/families/encoder/encoder_mlm_config.h"

#include "tensor/error.h"
#include "train/config/config_checks.h"
#include "base/io/printable.h"
#include "train/families/txl/txl_config.h"

namespace urpe {

void add_masked_lm_keys(ConfigSchema& s) {
  s.add_string("corpus", "embedded",
               "task = mlm: WikiText-format corpus directory (train/valid/test .txt or wiki.*.tokens, plain or "
               "gzip); embedded = the corpus shipped in data/assets/corpus");
  s.add_float("mask_prob", 0.15,
              "task = mlm: share of each window's positions masked and scored (BERT 15%: of them 80% become "
              "[MASK], 10% a random token, 10% stay)");
}

bool is_masked_lm(const Config& config) {
  return config.get_string("model") == "encoder" && config.get_string("task") == "mlm";
}

void check_masked_lm_values(const Config& c) {
  if (is_masked_lm(c)) config_check::int_at_least(c, "vocab", 3);
  const double p = c.get_float("mask_prob");  // checked for every task, like every other key
  URPE_CHECK(p > 0.0 && p < 1.0, "config: mask_prob must be in (0, 1), got " << c.get_string("mask_prob"));
}

void check_masked_lm_keys_read(const Config& c) {
  if (is_masked_lm(c)) return;
  for (const char* key : {"corpus", "mask_prob"}) {
    const ConfigKey* spec = c.schema().find(key);
    URPE_CHECK(!spec || !c.is_set(key) || c.get_string(key) == spec->default_value,
               "config: " << key << " = " << printable(c.get_string(key)) << " is read only by task = mlm; task = "
                          << c.get_string("task") << " never reads it (drop it, or set task = mlm)");
  }
}

void check_masked_lm_paths(const Config& config) {
  if (is_masked_lm(config)) check_txl_paths(config);  // the same `corpus` key and rules as txl
}

data::MaskedLanguageModel masked_lm_from(const EncoderSettings& s) {
  return data::MaskedLanguageModel(s.vocab, s.seq_len, s.mask_prob);
}

void set_masked_lm_model(const EncoderSettings& s, EncoderConfig& c) {
  c.vocab = s.vocab;
  c.num_classes = c.vocab;  // every id a target could be ([MASK] is never one, but the head is tied)
  c.head = EncoderHead::lm_head;
  c.tie_head = true;
  c.padding_id = -1;  // windows are always full
}

}  // namespace urpe
