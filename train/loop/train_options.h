// The options of one training run that are not part of its config (they don't change what is
// learned): resume, output, profiling and TF32. Shared by every trainer (encoder, Transformer-XL,
// Graphormer), with the one function that applies the device-side ones.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "train/loop/profiling.h"
#include "train/loop/progress.h"

namespace urpe {

struct TrainOptions {
  bool resume = false;  // continue from out_dir/model.safetensors
  // With resume: `key=value` changes to the stored config (--resume DIR --set steps=N), for the
  // keys train/loop/checkpoint_identity.h allows.
  std::vector<std::string> resume_overrides;
  bool quiet = false;   // no progress output (tests)
  const GridProgress* grid = nullptr;  // the grid this run belongs to (repro, demo), for the progress line
  std::string label;    // prefix of progress lines
  std::string experiment = "train";
  std::string profile_steps;    // "A:B": wrap steps A..B in cudaProfilerStart/Stop (--profile-steps)
  bool tf32 = false;            // allow TF32 tensor-core GEMMs on CUDA (--tf32: precision=tf32)
  bool overwrite = false;       // replace an existing run in out_dir (repro, demo) instead of refusing
  int64_t stop_after_step = 0;  // > 0: act as if Ctrl-C arrived during this step (tests)
  // A fresh run's parameters start from this run directory's last checkpoint (--init-from; see
  // train/loop/init_from.h), and the loop logs a step-0 validation. Ignored on resume.
  std::string init_from;
  // Called after every step with its training loss, before the loop checks that it is finite (so
  // an experiment can record the first non-finite step before the run stops with its error).
  std::function<void(int64_t step, double loss)> on_step;
  // --trace (urpe profile too): urpe's per-op recorder over the --profile-steps window, or over
  // default_trace_window without one; after the window's last step its recording goes here (the
  // command writes profile.md, trace.json and the roofline). Every rank of a data-parallel run
  // records its own steps.
  std::function<void(profile::Recording&&)> on_trace;
};

// The steps --trace records without --profile-steps: from the second step (the first pays for
// every first allocation) to at most the sixth.
std::string default_trace_window(int64_t steps);

// Whether a CUDA run's context has the TF32 switch on: precision=tf32 (or --tf32), and bf16 too,
// for everything bf16 leaves in FP32 (the attention's matmuls, the fused attention's tensor-core
// kernels), as PyTorch's autocast with allow_tf32 (docs/cuda.md#mixed-precision).
bool tf32_under(const std::string& precision, bool tf32_flag);

// Validates --tf32, the config's `precision` (fp32, tf32 or bf16) and --profile-steps against the
// run's device and length, switches TF32 on where tf32_under says so on a CUDA device (--tf32 with
// precision=bf16 is an error: bf16 has it already), and returns the profiling window (disabled
// when neither --profile-steps nor --trace was given), with the per-op recorder attached for
// --trace. The models' linear layers read bf16 from the config (linear_dtype_of).
ProfileWindow apply_device_options(const TrainOptions& options, const Device& device, int64_t steps,
                                   const std::string& precision = "fp32");

}  // namespace urpe
