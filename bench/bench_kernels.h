// Kernel micro-benchmarks (`urpe bench kernels [--device cpu|cuda] [--repeats N]`): one harness
// that times any op on any device, and the table of the kernels that bound a URPE training step
// (GEMMs, the URPE attention core forward and backward, and the same core as a plain softmax).
//
// Each row: warm-up runs, then timed runs (up to --repeats, fewer when a row would exceed its time
// budget), the median and the minimum, and a rate: GFLOP/s for GEMMs, GB/s of the minimal memory
// traffic for the rest, both also as a % of a reference *measured in the same run* (a 1024³ sgemm
// and a 64 MiB device copy), never a datasheet number.
#pragma once
#include <functional>

#include "tensor/device.h"
#include "train/cli.h"

namespace urpe::bench {

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  int runs = 0;
};

// Times fn on `device`: `warmup` untimed calls, then up to `repeats` timed calls, stopping early
// (after at least min(repeats, 5)) once the timed calls add up to `budget_s`. For a CUDA device
// the device is synchronised before each clock read, so the time covers the queued kernels.
Timing measure(const std::function<void()>& fn, const Device& device, int repeats,
               int warmup = 2, double budget_s = 1.0);

// The `urpe bench` handler: "kernels" prints the table; "step" is not built yet (exit code 3).
int run_bench_command(const cli::Args& args);

}  // namespace urpe::bench
