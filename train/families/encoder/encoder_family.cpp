// The encoder family (`model = encoder`): a RoBERTa-style post-LN encoder on the synthetic tasks
// (PI, ETP; encoder_trainer.h) or on masked language modelling (task = mlm; encoder_mlm_trainer.h),
// as the registry sees it (train/families/model_family.h).
#include <memory>

#include "train/families/encoder/encoder_config.h"
#include "train/families/encoder/encoder_mlm_config.h"
#include "train/families/encoder/encoder_mlm_trainer.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/families/model_family.h"
#include "train/families/encoder/encoder_plots.h"
#include "train/loop/checkpoint.h"
#include "train/loop/run_control.h"
#include "train/config/run_settings.h"

namespace urpe {

namespace {

FamilyTrainResult train(const Config& config, const std::string& out_dir, const TrainOptions& options) {
  const EncoderTrainOutcome o = train_encoder(config, out_dir, options);
  return {o.interrupted,
          printf_text("%s %s, valid accuracy %.2f%% (loss %.4f) after %lld steps, %lld parameters, %.1f s",
                      o.result.task.c_str(), o.result.pe.c_str(), 100.0 * o.result.metric, o.final_valid_loss,
                      static_cast<long long>(o.result.steps), static_cast<long long>(o.result.params),
                      o.result.seconds)};
}

std::string evaluate(const std::string& dir, const Config& config, const std::string& split, const std::string& which) {
  const std::string checkpoint = run_checkpoint_path(dir, which);
  const EncoderSettings settings = encoder_settings_from(config);
  const Device device = parse_device(run_settings_from(config).device);
  if (settings.masked_lm) {  // task = mlm: the split's first valid_size windows, fixed masks
    TransformerEncoder model(encoder_model_of(settings), 0, device);
    const CheckpointInfo info = load_checkpoint(checkpoint, model.parameters(), nullptr);
    const MaskedLmData data = masked_lm_data(settings);
    const MaskedLmEval e = evaluate_masked_lm(model, data.task, split == "valid" ? data.valid : data.test,
                                              settings.valid_size);
    return printf_text("%s (%s, step %lld): %s MLM loss %.4f, masked-token accuracy %.2f%% over %lld masked tokens "
                       "of %lld windows",
                       dir.c_str(), which.c_str(), static_cast<long long>(info.progress.step), split.c_str(), e.loss,
                       100.0 * e.accuracy, static_cast<long long>(e.masked), static_cast<long long>(e.windows));
  }
  const SyntheticTask task = synthetic_task_of(settings);
  TransformerEncoder model(encoder_model_of(settings), 0, device);
  const CheckpointInfo info = load_checkpoint(checkpoint, model.parameters(), nullptr);
  // The synthetic tasks have one fixed held-out set; `test` scores a second, disjoint draw.
  const int64_t size = settings.valid_size;
  const EncoderEvalResult r = evaluate_encoder(model, task, size, 64, split == "valid" ? EvalSplit::valid : EvalSplit::test);
  check_finite_score(dir, which, split, r.loss);
  return printf_text("%s (%s, step %lld): %s accuracy %.2f%%, loss %.4f over %lld sequences", dir.c_str(),
                     which.c_str(), static_cast<long long>(info.progress.step), split.c_str(), 100.0 * r.accuracy,
                     r.loss, static_cast<long long>(size));
}

AnalysedModel analysed_model(const Config& config, uint64_t seed) {
  AnalysedModel m;
  const EncoderSettings settings = encoder_settings_from(config);
  m.model = std::make_unique<TransformerEncoder>(encoder_model_of(settings), seed, Device::cpu());
  m.seq_len = settings.seq_len;
  return m;
}

}  // namespace

// encoder_bench_step.cpp
std::unique_ptr<StepModel> make_encoder_bench_step(const StepModelOptions& options, const Device& device);

ModelFamily encoder_family() {
  ModelFamily f;
  f.name = "encoder";
  f.add_keys = add_encoder_keys;
  f.check_values = check_encoder_values;
  f.check_given_keys = check_masked_lm_keys_read;
  f.check_paths = check_masked_lm_paths;
  f.estimate_memory = estimate_encoder_memory;
  f.train = train;
  f.evaluate = evaluate;
  f.draw_run_plots = draw_encoder_run_plots;
  f.analysed_model = analysed_model;
  f.not_captured_because = "";  // the synthetic tasks (task = mlm refuses at the run's start)
  f.make_bench_step = make_encoder_bench_step;
  return f;
}

}  // namespace urpe
