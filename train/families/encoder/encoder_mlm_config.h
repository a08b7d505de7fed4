// The keys of the masked-language-model task of the encoder family (`task = mlm`: the paper's
// Appendix C.4 pre-training comparison in small, data/masked_lm.h) and their translation into the
// task and the model. For task = mlm the encoder's keys read:
//   vocab        the MLM vocabulary: the vocab − 2 most frequent corpus tokens, a rare-token id
//                and [MASK] (data/masked_lm.h)
//   seq_len      the window length n
//   valid_size   validation windows: the first valid_size consecutive windows of the valid split
//   corpus       the WikiText-format corpus directory (embedded = data/assets/corpus)
//   mask_prob    the share of positions masked per window (BERT: 0.15; then 80/10/10)
// The model is the encoder with `pe` as for the synthetic tasks (ape+rpe, rpe, urpe, ...) and
// RoBERTa's LM head tied to the token embedding; task_protocol, shaw_clip and the like keep their
// meaning, and the synthetic-task keys that have none here (task_protocol) are ignored.
#pragma once
#include "data/masked_lm.h"
#include "models/encoder.h"
#include "base/io/config.h"
#include "train/families/encoder/encoder_config.h"

namespace urpe {

// The mlm keys of the encoder family (corpus, mask_prob; `task` lists mlm itself).
void add_masked_lm_keys(ConfigSchema& schema);
// mask_prob in (0, 1) (for every task), vocab >= 3 for task = mlm (run by check_config_values);
// errors name the key.
void check_masked_lm_values(const Config& config);
// `corpus` names a directory (unless embedded).
void check_masked_lm_paths(const Config& config);
// A given config of another task that sets corpus or mask_prob (to other than the default) is refused.
void check_masked_lm_keys_read(const Config& config);

bool is_masked_lm(const Config& config);  // model = encoder and task = mlm
data::MaskedLanguageModel masked_lm_from(const EncoderSettings& settings);
// The encoder of an mlm config: vocab rows and classes, RoBERTa's LM head tied to the embedding.
void set_masked_lm_model(const EncoderSettings& settings, EncoderConfig& encoder);

}  // namespace urpe
