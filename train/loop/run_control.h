// The set-up pieces of a training run that the loop (train/loop/training_loop.h) builds on: opening
// (or reopening) the run directory, the Ctrl-C flag, and Adam and the schedule from the common
// keys. Kept apart from the loop so that the rules for when a run directory may be overwritten
// and how an interrupt is caught read on their own.
#pragma once
#include <cstdint>
#include <string>

#include "tensor/device.h"
#include "train/loop/checkpoint.h"
#include "train/io/config.h"
#include "train/optim/optimizer.h"
#include "train/loop/schedule.h"
#include "train/loop/train_options.h"

namespace urpe {

// Creates out_dir and returns its checkpoint path. Refuses to overwrite an existing run unless
// options.resume or options.overwrite; with resume, checks that the directory's files belong to
// one run (train/loop/checkpoint_identity.h) and replaces `config` by the one stored in the checkpoint,
// with options.resume_overrides applied (errors name the directory, file or key and what to do).
std::string open_run_directory(const std::string& out_dir, const TrainOptions& options, Config& config);

// The resolved config a run directory's checkpoint carries (errors name the directory: missing,
// or no checkpoint yet).
Config stored_run_config(const std::string& run_dir);

// While alive, SIGINT (Ctrl-C) and SIGTERM (kill, a batch system's time limit) set a flag instead
// of killing the process; the trainer polls requested() between steps, saves a checkpoint and
// stops, and a repro grid stops after that run (docs/runs.md#interrupted-grids). Scopes nest: the
// outermost one installs the handlers and clears the flag, inner ones (each run of a grid) share
// them, so a signal that arrives between two runs still stops the grid. The previous handlers are
// restored when the outermost scope ends; the flag stays readable (stop_signal) after it.
// (A signal handler can only talk to the program through such a flag.)
class StopOnInterrupt {
 public:
  StopOnInterrupt();
  ~StopOnInterrupt();
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;
  bool requested() const;

 private:
  void (*previous_interrupt_)(int) = nullptr;
  void (*previous_terminate_)(int) = nullptr;
};

// The signal that asked the last (or current) StopOnInterrupt scope to stop: SIGINT, SIGTERM or 0.
int stop_signal();
// The exit code of a command stopped that way, as a shell reports a process killed by the signal:
// 130 for SIGINT, 143 for SIGTERM.
int stop_exit_code();

// Adam and the learning-rate schedule from the common keys (weight_decay, clip; lr, warmup) for a
// run of `steps` steps. A trainer sets its family's own schedule keys (decay kind, end_lr) on the
// schedule, then calls validate().
AdamConfig adam_config_from(const Config& config);
LrSchedule lr_schedule_from(const Config& config, int64_t steps);

}  // namespace urpe
