// What every trainer does the same way around its loop: open (or reopen) the run directory, and
// stop cleanly on Ctrl-C. Kept in one place so the three trainers (encoder, Transformer-XL,
// Graphormer) agree on when a run directory may be overwritten and how an interrupt is handled.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include "tensor/device.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/run_dir.h"
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

// The fields of results.json every trainer fills the same way (experiment, pe, seed, params,
// steps, seconds, device); the caller adds task, model and the metric.
ResultRow run_result_row(const TrainOptions& options, const Config& config, const TrainingProgress& progress,
                         int64_t params, const Device& device);
// Writes results.json (one row) and redraws the run's plots.
void write_run_result(const std::string& out_dir, const ResultRow& row);

}  // namespace urpe
