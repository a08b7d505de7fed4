// The training loop: fresh batches from a seeded stream, cross-entropy over every position,
// Adam with warm-up + linear decay, periodic evaluation and checkpoints, Ctrl-C saves and stops.
#include "train/encoder_trainer.h"

#include <cmath>

#include "autograd/node.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "train/checkpoint.h"
#include "train/profiling.h"
#include "train/progress.h"
#include "train/run_control.h"
#include "train/run_config.h"
#include "train/schedule.h"

namespace urpe {

namespace {


constexpr uint64_t kValidationSeed = 0x7a11d5e7ULL;  // the same held-out sets for every run
constexpr uint64_t kTestSeed = 0x7e575e7ULL;
constexpr int64_t kEvalBatch = 64;  // fixed, so the held-out sets and their scores never depend on it

struct Streams {
  static uint64_t data_seed(uint64_t seed) { return seed * 2 + 1; }
  static uint64_t dropout_seed(uint64_t seed) { return seed * 2 + 2; }
};

// Fraction of positions whose argmax equals the target.
double accuracy_of(const Tensor& logits, const Tensor& targets) {
  const std::vector<float> l = logits.to_vector_f32();
  const std::vector<int32_t> t = targets.to_vector_i32();
  const int64_t classes = logits.size(-1);
  int64_t correct = 0;
  for (size_t row = 0; row < t.size(); ++row) {
    const float* p = l.data() + row * classes;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (p[c] > p[best]) best = c;
    correct += best == t[row];
  }
  return t.empty() ? 0.0 : static_cast<double>(correct) / static_cast<double>(t.size());
}

Tensor flat_loss(const Tensor& logits, const Tensor& targets) {
  const int64_t rows = logits.numel() / logits.size(-1);
  return cross_entropy(reshape(logits, {rows, logits.size(-1)}), reshape(targets, {rows}));
}

}  // namespace

SyntheticTask task_from_config(const Config& config) {
  return SyntheticTask(parse_synthetic_kind(config.get_string("task")), config.get_int("seq_len"),
                       config.get_int("vocab"));
}

EncoderConfig encoder_config_from(const Config& config) {
  const SyntheticTask task = task_from_config(config);
  EncoderConfig c;
  c.vocab = config.get_int("vocab");
  c.seq_len = config.get_int("seq_len");
  c.layers = config.get_int("layers");
  c.d_model = config.get_int("d_model");
  c.heads = config.get_int("heads");
  c.d_ff = config.get_int("d_ff");
  c.num_classes = task.num_classes();
  c.dropout = static_cast<float>(config.get_float("dropout"));
  c.init_std = static_cast<float>(config.get_float("init_std"));
  c.pe = parse_positional_kind(config.get_string("pe"));
  c.rpe_kind = parse_relative_kind(config.get_string("rpe_kind"));
  c.urpe_kind = parse_relative_kind(config.get_string("urpe_kind"));
  URPE_CHECK(c.seq_len > 1, "config: seq_len must be > 1, got " << c.seq_len);
  URPE_CHECK(c.heads > 0 && c.d_model % c.heads == 0,
             "config: heads (" << c.heads << ") must divide d_model (" << c.d_model << ")");
  URPE_CHECK(c.dropout >= 0.0f && c.dropout < 1.0f, "config: dropout must be in [0, 1), got " << c.dropout);
  URPE_CHECK(c.init_std > 0.0f, "config: init_std must be positive, got " << c.init_std);
  return c;
}

EvalResult evaluate_encoder(const TransformerEncoder& model, const SyntheticTask& task,
                            int64_t valid_size, int64_t batch, EvalSplit split) {
  autograd::NoGrad no_grad;
  Rng valid_rng(split == EvalSplit::valid ? kValidationSeed : kTestSeed);
  EvalResult result;
  int64_t seen = 0;
  while (seen < valid_size) {
    const int64_t b = std::min(batch, valid_size - seen);
    const SyntheticBatch data = task.sample(b, valid_rng, model.device());
    const Tensor logits = model.forward(data.tokens, false, nullptr);
    result.loss += flat_loss(logits, data.targets).item() * static_cast<double>(b);
    result.accuracy += accuracy_of(logits, data.targets) * static_cast<double>(b);
    seen += b;
  }
  result.loss /= static_cast<double>(valid_size);
  result.accuracy /= static_cast<double>(valid_size);
  return result;
}

TrainOutcome train_encoder(const Config& config_in, const std::string& out_dir, const TrainOptions& options) {
  Config config = config_in;
  const std::string checkpoint_path = open_run_directory(out_dir, options, config);
  TrainingProgress progress;
  const int64_t steps = config.get_int("steps"), batch = config.get_int("batch");
  const int64_t eval_every = config.get_int("eval_every"), valid_size = config.get_int("valid_size");
  const uint64_t seed = static_cast<uint64_t>(config.get_int("seed"));
  URPE_CHECK(steps > 0 && batch > 0 && eval_every > 0 && valid_size > 0,
             "config: steps, batch, eval_every and valid_size must be positive");
  const SyntheticTask task = task_from_config(config);
  const Device device = parse_device(config.get_string("device"));
  ProfileWindow profile = apply_device_options(options, device, steps);
  TransformerEncoder model(encoder_config_from(config), seed, device);

  Adam optimizer(model.parameters().tensors(), adam_config_from(config));
  LrSchedule schedule = lr_schedule_from(config, steps);
  schedule.validate();

  progress.data_rng = Rng(Streams::data_seed(seed));
  progress.dropout_rng = Rng(Streams::dropout_seed(seed));
  if (options.resume) {
    progress = load_checkpoint(checkpoint_path, model.parameters(), &optimizer).progress;
  } else {
    write_text_atomic(join_path(out_dir, "config.txt"), config.to_text());
  }
  MetricsLog metrics(join_path(out_dir, "metrics.csv"), options.resume, progress.step);
  ProgressLine line(options.label.empty() ? "[" + config.get_string("task") + "/" + config.get_string("pe") + "]"
                                          : options.label,
                    steps, progress.step, options.quiet);
  const std::string config_text = config.to_text();
  auto save = [&] { save_checkpoint(checkpoint_path, model.parameters(), &optimizer, progress, config_text); };

  TrainOutcome outcome;
  EvalResult last_eval;
  bool evaluated = false;
  const int64_t tokens_per_step = batch * config.get_int("seq_len");
  StepMeter meter;
  EvalCadence cadence(steps, eval_every, options, out_dir, progress, metrics, line, meter, save);

  for (int64_t step = progress.step + 1; step <= steps; ++step) {
    meter.begin_step();
    profile.before_step(step);
    const SyntheticBatch data = task.sample(batch, progress.data_rng, device);
    const Tensor logits = model.forward(data.tokens, true, &progress.dropout_rng);
    const Tensor loss = flat_loss(logits, data.targets);
    optimizer.zero_grad();
    loss.backward();
    const float lr = schedule.at(step);
    optimizer.step(lr);
    profile.after_step(step);
    const double loss_value = loss.item();
    const double tokens_per_s = meter.end_step(step, loss_value, static_cast<double>(tokens_per_step), progress);
    line.update(step, loss_value, lr, tokens_per_s);

    auto train_accuracy = [&](double) { return accuracy_of(logits, data.targets); };
    auto validate = [&] {
      last_eval = evaluate_encoder(model, task, valid_size, kEvalBatch);
      evaluated = true;
      char text[160];
      std::snprintf(text, sizeof text, "step %lld: valid loss %.4f, accuracy %.2f%%",
                    static_cast<long long>(step), last_eval.loss, 100.0 * last_eval.accuracy);
      return ValidationReport{last_eval.loss, last_eval.accuracy, text};
    };
    if (cadence.after_step(step, lr, tokens_per_s, train_accuracy, validate)) {
      outcome.interrupted = true;
      break;
    }
  }
  line.finish();
  if (!evaluated)  // resumed a finished run: score the stored model
    last_eval = evaluate_encoder(model, task, valid_size, kEvalBatch);

  ResultRow& r = outcome.result;
  r = run_result_row(options, config, progress, model.parameters().count(), device);
  r.task = config.get_string("task");
  r.model = "encoder";
  r.metric_name = "valid_accuracy";
  r.metric = last_eval.accuracy;
  outcome.final_valid_loss = last_eval.loss;
  write_run_result(out_dir, r);
  return outcome;
}

}  // namespace urpe
