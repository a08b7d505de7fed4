// What every trainer does the same way around its loop: open (or reopen) the run directory, and
// stop cleanly on Ctrl-C. Kept in one place so the three trainers (encoder, Transformer-XL,
// Graphormer) agree on when a run directory may be overwritten and how an interrupt is handled.
#pragma once
#include <string>

#include "train/config.h"
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

}  // namespace urpe
