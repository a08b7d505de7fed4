// The set-up pieces of a training run that the loop (train/loop/training_loop.h) builds on: opening
// (or reopening) the run directory, and Adam and the schedule from the common keys (the Ctrl-C
// flag is base/io/stop_signals.h). Kept apart from the loop so that the rules for when a run
// directory may be overwritten read on their own.
#pragma once
#include <cstdint>
#include <string>

#include "tensor/device.h"
#include "train/loop/checkpoint.h"
#include "base/io/config.h"
#include "base/io/stop_signals.h"
#include "train/config/run_settings.h"
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

// StopOnInterrupt, stop_signal() and stop_exit_code(): base/io/stop_signals.h.

// Adam and the learning-rate schedule from the common settings (weight_decay, clip; lr, warmup) for a
// run of `steps` steps. A trainer sets its family's own schedule keys (decay kind, end_lr) on the
// schedule, then calls validate().
AdamConfig adam_config_from(const RunSettings& settings);
LrSchedule lr_schedule_from(const RunSettings& settings, int64_t steps);

}  // namespace urpe
