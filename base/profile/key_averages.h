// A recording summed per op, as torch.profiler's key_averages: each (op, phase) with its calls,
// self time (its span minus the ops nested in it), total time, FLOPs and bytes, and how far it is
// from the machine's roofline. Times are the host's on a CPU run and the CUDA stream's (from the
// ops' events) on a GPU run; all are per recorded step.
//
//   achieved  GFLOP/s = flops / self time,  GB/s = bytes / self time
//   bound     max(flops / compute ceiling, bytes / memory ceiling)  (machine_peaks.h); the FLOPs
//             of GEMMs that ran on tensor cores (TF32, BF16) at that math's measured rate
//   % of roofline = bound / self time: 100% means the op runs at the machine's limit for its
//             FLOPs and bytes; 5% means it could in principle be 20× faster.
// Communication ops carry bytes but no roofline (their limit is the interconnect, not memory).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/op_profile.h"
#include "base/profile/machine_peaks.h"
#include "base/profile/op_recorder.h"

namespace urpe::profile {

struct OpAverage {
  std::string name;
  Phase phase = Phase::forward;
  double calls = 0;               // per step
  double self_ms = 0, total_ms = 0;  // per step
  Cost cost;                      // per step, the op's own (nested ops carry theirs)
  double bound_ms = 0;            // per step, 0 without peaks or for communication
  bool has_bound() const { return bound_ms > 0; }
};

struct ScopeAverage {  // the ops' self time under each innermost model scope, per step
  std::string scope;   // "" for ops outside every scope (embedding, loss, optimizer)
  Phase phase = Phase::forward;
  double self_ms = 0;
};

struct ProfileSummary {
  std::string device;
  bool device_times = false;  // op times are the CUDA stream's
  int steps = 0;
  std::vector<int64_t> step_numbers;
  double step_ms = 0;         // mean wall time of a recorded step (host clock)
  double median_step_ms = 0;
  double ops_self_ms = 0;     // Σ self time of every op, per step
  double bound_ms = 0;        // Σ roofline bounds of every op, per step (0 without peaks)
  double phase_self_ms[kPhaseCount] = {0, 0, 0, 0};
  std::vector<OpAverage> ops;  // sorted by self time, largest first
  std::vector<ScopeAverage> scopes;  // sorted by self time
  std::optional<MachinePeaks> peaks;
};

ProfileSummary summarize(const Recording& recording, const std::optional<MachinePeaks>& peaks);

}  // namespace urpe::profile
