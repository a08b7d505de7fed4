// Run-directory opening, the Ctrl-C flag, the step meter, the eval-and-checkpoint cadence and the
// results row shared by the trainers.
#include "train/run_control.h"

#include <cmath>
#include <csignal>
#include <utility>

#include "train/checkpoint.h"
#include "train/run_config.h"
#include "train/run_dir.h"
#include "train/run_plots.h"

namespace urpe {

namespace {
volatile std::sig_atomic_t g_stop_requested = 0;
void request_stop(int) { g_stop_requested = 1; }
}  // namespace

std::string open_run_directory(const std::string& out_dir, const TrainOptions& options, Config& config) {
  make_directories(out_dir);
  const std::string checkpoint_path = join_path(out_dir, "model.safetensors");
  URPE_CHECK(options.resume || options.overwrite || !path_exists(checkpoint_path),
             "'" << out_dir << "' already holds a run (model.safetensors); continue it with --resume "
                 << out_dir << " or choose another --out");
  if (options.resume) {
    URPE_CHECK(path_exists(checkpoint_path),
               "cannot resume: no checkpoint at '" << checkpoint_path << "' (is this a run directory?)");
    config = config_from_text(read_checkpoint_info(checkpoint_path).config_text, checkpoint_path + " (config)");
  }
  return checkpoint_path;
}

StopOnInterrupt::StopOnInterrupt() {
  g_stop_requested = 0;
  previous_ = std::signal(SIGINT, request_stop);
}

StopOnInterrupt::~StopOnInterrupt() { std::signal(SIGINT, previous_); }

bool StopOnInterrupt::requested() const { return g_stop_requested != 0; }

double StepMeter::end_step(int64_t step, double loss, double units, TrainingProgress& progress) {
  URPE_CHECK(std::isfinite(loss), "training diverged at step " << step << " (loss " << loss
                                      << "); try a smaller lr or clip > 0");
  const auto now = std::chrono::steady_clock::now();
  progress.pending_loss_sum += loss;
  ++progress.pending_loss_count;
  progress.step = step;
  progress.seconds += std::chrono::duration<double>(now - step_start_).count();
  window_units_ += units;
  const double window = std::chrono::duration<double>(now - window_start_).count();
  return window > 0 ? window_units_ / window : 0.0;
}

void StepMeter::restart_window() {
  window_start_ = std::chrono::steady_clock::now();
  window_units_ = 0;
}

EvalCadence::EvalCadence(int64_t steps, int64_t eval_every, const TrainOptions& options, std::string out_dir,
                         TrainingProgress& progress, MetricsLog& metrics, ProgressLine& line, StepMeter& meter,
                         std::function<void()> save_checkpoint)
    : steps_(steps),
      eval_every_(eval_every),
      stop_after_step_(options.stop_after_step),
      out_dir_(std::move(out_dir)),
      progress_(progress),
      metrics_(metrics),
      line_(line),
      meter_(meter),
      save_checkpoint_(std::move(save_checkpoint)) {}

bool EvalCadence::after_step(int64_t step, float lr, double units_per_s,
                             const std::function<double(double)>& train_metric,
                             const std::function<ValidationReport()>& validate) {
  const bool stop = interrupt_.requested() || step == stop_after_step_;
  const bool evaluate_now = step % eval_every_ == 0 || step == steps_;
  if (stop && !evaluate_now) save_checkpoint_();  // between evaluations: the state and the unlogged loss window
  if (evaluate_now) {
    const double train_loss = progress_.pending_loss_sum / static_cast<double>(progress_.pending_loss_count);
    metrics_.write(step, "train", train_loss, train_metric(train_loss), lr, units_per_s, progress_.seconds);
    progress_.pending_loss_sum = 0;
    progress_.pending_loss_count = 0;
    const ValidationReport valid = validate();
    metrics_.write(step, "valid", valid.loss, valid.metric, lr, units_per_s, progress_.seconds);
    line_.message(valid.message);
    save_checkpoint_();
    meter_.restart_window();
  }
  if (stop)
    line_.message("interrupted: checkpoint saved at step " + std::to_string(step) +
                  "; continue with: urpe train --resume " + out_dir_);
  return stop;
}

ResultRow run_result_row(const TrainOptions& options, const Config& config, const TrainingProgress& progress,
                         int64_t params, const Device& device) {
  ResultRow r;
  r.experiment = options.experiment;
  r.pe = config.get_string("pe");
  r.seed = config.get_int("seed");
  r.params = params;
  r.steps = progress.step;
  r.seconds = progress.seconds;
  r.device = device.name();
  return r;
}

void write_run_result(const std::string& out_dir, const ResultRow& row) {
  write_text_atomic(join_path(out_dir, "results.json"), result_to_json(row).dump(2) + "\n");
  draw_run_plots(out_dir);
}

AdamConfig adam_config_from(const Config& config) {
  AdamConfig adam;
  adam.weight_decay = static_cast<float>(config.get_float("weight_decay"));
  adam.clip_norm = static_cast<float>(config.get_float("clip"));
  return adam;
}

LrSchedule lr_schedule_from(const Config& config, int64_t steps) {
  LrSchedule schedule;
  schedule.peak_lr = static_cast<float>(config.get_float("lr"));
  schedule.warmup = config.get_int("warmup");
  schedule.total = steps;
  return schedule;
}

}  // namespace urpe
