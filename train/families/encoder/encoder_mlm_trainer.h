// Training and evaluation of the encoder on masked language modelling (`task = mlm`,
// train/families/encoder/encoder_mlm_config.h, data/masked_lm.h): the paper's Appendix C.4 comparison of APE+RPE, RPE and
// URPE in pre-training, in small. `urpe train` reaches it through train_encoder; `urpe repro
// pretrain` runs one per positional encoding (app/repro/pretrain.h).
#pragma once
#include <string>

#include "data/corpus.h"
#include "data/masked_lm.h"
#include "models/encoder.h"
#include "train/families/encoder/encoder_trainer.h"
#include "base/io/config.h"
#include "train/loop/train_options.h"

namespace urpe {

// A corpus split in the MLM vocabulary, and the task that masks it.
struct MaskedLmData {
  data::MaskedLanguageModel task;
  std::string corpus_dir;
  int64_t corpus_vocab = 0;                // the corpus's own vocabulary (before the cap)
  std::vector<int32_t> train, valid, test;  // capped streams
  double rare_share_valid = 0;             // valid tokens that became the rare-token id
};
// Reads the corpus the config names and caps it to `vocab` (data/masked_lm.h).
MaskedLmData masked_lm_data(const Config& config, const data::Corpus* corpus = nullptr);
MaskedLmData masked_lm_data(const EncoderSettings& settings, const data::Corpus* corpus = nullptr);

struct MaskedLmEval {
  double loss = 0;      // mean cross-entropy over every masked position of the windows
  double accuracy = 0;  // masked positions whose argmax is the original token
  int64_t windows = 0, masked = 0;
};
// The first `windows` consecutive windows of `stream` (fewer when the split holds fewer), masked
// from a fixed seed, so every run (and every call) scores the same inputs.
MaskedLmEval evaluate_masked_lm(const TransformerEncoder& model, const data::MaskedLanguageModel& task,
                                const std::vector<int32_t>& stream, int64_t windows);

// Trains per `config` (task = mlm) into `out_dir`; metric = the final validation masked-token
// accuracy, final_valid_loss = the validation MLM loss (the paper's C.4 quantity). `corpus`, when
// given, is the one the config names (a repro reads it once for all its runs).
EncoderTrainOutcome train_masked_lm(const Config& config, const std::string& out_dir, const TrainOptions& options,
                             const data::Corpus* corpus = nullptr);

}  // namespace urpe
