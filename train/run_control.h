// What every trainer does the same way around its loop: open (or reopen) the run directory,
// measure each step, evaluate and save on one cadence, stop cleanly on Ctrl-C, and write the
// result. Kept in one place so the three trainers (encoder, Transformer-XL, Graphormer) agree on
// when a run directory may be overwritten, when checkpoints are saved and how an interrupt is
// handled (which is what makes --resume continue bit-identically).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "tensor/device.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/optimizer.h"
#include "train/progress.h"
#include "train/run_dir.h"
#include "train/schedule.h"
#include "train/train_options.h"

namespace urpe {

// Creates out_dir and returns its checkpoint path. Refuses to overwrite an existing run unless
// options.resume or options.overwrite; with resume, replaces `config` by the one stored in the
// checkpoint (errors name the directory and what to do).
std::string open_run_directory(const std::string& out_dir, const TrainOptions& options, Config& config);

// While alive, SIGINT sets a flag instead of killing the process; the trainer polls requested()
// between steps, saves a checkpoint and stops. The previous handler is restored on destruction.
// (A signal handler can only talk to the program through such a flag.)
class StopOnInterrupt {
 public:
  StopOnInterrupt();
  ~StopOnInterrupt();
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;
  bool requested() const;

 private:
  void (*previous_)(int);
};

// The bookkeeping after every optimizer step, the same in every trainer: the loss must be finite
// (else one error suggesting a smaller lr or clipping), it joins the unlogged loss window
// (progress.pending_loss_*), the step's time joins progress.seconds, and throughput is measured
// over the window since the last restart (evaluations restart it, so they don't count).
class StepMeter {
 public:
  StepMeter() : window_start_(std::chrono::steady_clock::now()) {}
  void begin_step() { step_start_ = std::chrono::steady_clock::now(); }
  // Records step `step`; `units` is what it processed (tokens, molecules). Returns units per second
  // over the current window.
  double end_step(int64_t step, double loss, double units, TrainingProgress& progress);
  void restart_window();

 private:
  std::chrono::steady_clock::time_point window_start_, step_start_;
  double window_units_ = 0;
};

// What one validation pass reports: its loss and metric (the "valid" row of metrics.csv) and the
// line the progress display prints.
struct ValidationReport {
  double loss = 0, metric = 0;
  std::string message;
};

// The eval-and-checkpoint cadence, run after every optimizer step, the same in every trainer:
//  - every `eval_every` steps and at the last step: write the "train" row of metrics.csv (the
//    mean loss of the window since the last evaluation, and a train metric), run the validation
//    pass and write its row, print its line, save a checkpoint, and restart the throughput window
//    (so evaluations don't count in tokens/s);
//  - on Ctrl-C or at options.stop_after_step: save a checkpoint unless this step's evaluation
//    just did (between evaluations it also holds the unlogged loss window, so a resumed run logs
//    what an uninterrupted one would), print how to resume, and tell the loop to stop.
// While it exists, Ctrl-C only sets a flag (it holds a StopOnInterrupt). The trainer hands in what
// differs per model: how to save a checkpoint (the language model adds its stream position), the
// train metric and the validation pass.
class EvalCadence {
 public:
  EvalCadence(int64_t steps, int64_t eval_every, const TrainOptions& options, std::string out_dir,
              TrainingProgress& progress, MetricsLog& metrics, ProgressLine& line, StepMeter& meter,
              std::function<void()> save_checkpoint);

  // Call once after step `step`, trained at `lr`, with `units_per_s` from StepMeter::end_step.
  // `train_metric(mean train loss)` and `validate()` are called only on evaluation steps.
  // Returns true when the run must stop here (its checkpoint is saved).
  bool after_step(int64_t step, float lr, double units_per_s, const std::function<double(double)>& train_metric,
                  const std::function<ValidationReport()>& validate);

 private:
  const StopOnInterrupt interrupt_;
  int64_t steps_, eval_every_, stop_after_step_;
  std::string out_dir_;
  TrainingProgress& progress_;
  MetricsLog& metrics_;
  ProgressLine& line_;
  StepMeter& meter_;
  std::function<void()> save_checkpoint_;
};

// Adam and the learning-rate schedule from the common keys (weight_decay, clip; lr, warmup) for a
// run of `steps` steps. A trainer sets its family's own schedule keys (decay kind, end_lr) on the
// schedule, then calls validate().
AdamConfig adam_config_from(const Config& config);
LrSchedule lr_schedule_from(const Config& config, int64_t steps);

// The fields of results.json every trainer fills the same way (experiment, pe, seed, params,
// steps, seconds, device); the caller adds task, model and the metric.
ResultRow run_result_row(const TrainOptions& options, const Config& config, const TrainingProgress& progress,
                         int64_t params, const Device& device);
// Writes results.json (one row) and redraws the run's plots.
void write_run_result(const std::string& out_dir, const ResultRow& row);

}  // namespace urpe
