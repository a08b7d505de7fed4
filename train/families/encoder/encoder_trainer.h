// Training and evaluation of the encoder on the synthetic tasks (PI, ETP): the loop behind
// `urpe train` for model = encoder, `urpe eval`, the demo and `urpe repro synthetic`.
#pragma once
#include <string>

#include "data/synthetic.h"
#include "models/encoder.h"
#include "base/io/config.h"
#include "train/families/encoder/encoder_config.h"
#include "base/io/run_dir.h"
#include "train/loop/train_options.h"

namespace urpe {


struct EncoderTrainOutcome {
  ResultRow result;          // metric = final validation accuracy
  double final_valid_loss = 0;
  bool interrupted = false;  // stopped by Ctrl-C (a checkpoint was saved)
};

// Trains per `config` into `out_dir` (config.txt, metrics.csv, model.safetensors, results.json,
// plots/). With resume, the run continues from its checkpoint and config.txt.
EncoderTrainOutcome train_encoder(const Config& config, const std::string& out_dir, const TrainOptions& options);

struct EncoderEvalResult {
  double loss = 0;
  double accuracy = 0;  // token-level, over the scored positions of the validation set
};

// The task and model a config describes (the model freshly initialised from the config's seed).
SyntheticTask synthetic_task_of(const EncoderSettings& settings);  // task = mlm is an error
EncoderConfig encoder_model_of(const EncoderSettings& settings);
// The same from a resolved config (encoder_settings_from, then the above).
SyntheticTask task_from_config(const Config& config);
EncoderConfig encoder_config_from(const Config& config);
// The held-out sets are fixed draws seeded independently of the run's seed, so every run of a
// task is scored on the same sequences; `test` is a second, disjoint draw.
enum class EvalSplit { valid, test };
// Token accuracy and mean cross-entropy over the scored positions of `size` held-out sequences.
EncoderEvalResult evaluate_encoder(const TransformerEncoder& model, const SyntheticTask& task, int64_t size,
                            int64_t batch, EvalSplit split = EvalSplit::valid);

}  // namespace urpe
