// The machine's measured limits, which a profile cites for its roofline: the compute ceiling
// (sgemm GFLOP/s, the best GEMM rate measured: large squares and the model's own shapes) and the
// memory ceiling (the better of a STREAM copy and triad, GB/s), with every rate measured.
// `urpe bench peaks` measures them (app/bench/peaks.h) and keeps them in a small JSON cache, one entry
// per machine (its key names the device, CPU or GPU model, threads and BLAS), so that every later
// profile on the same machine reads them instead of measuring again.
//
// The cache file: $URPE_PEAKS_CACHE, else $XDG_CACHE_HOME/urpe/peaks.json, else
// ~/.cache/urpe/peaks.json; written atomically.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/op_profile.h"

namespace urpe::profile {

struct GemmRate {
  std::string label;  // e.g. "square 2048", "encoder FFN in (4096×128)·(128×512)"
  int64_t batch = 1, m = 0, n = 0, k = 0;
  double gflops = 0;
};

struct MachinePeaks {
  std::string key;       // the machine they were measured on (machine_key)
  std::string device;    // "cpu" or "cuda"
  std::string measured;  // when (UTC, ISO 8601)
  double gemm_gflops = 0;    // compute ceiling
  double bandwidth_gbs = 0;  // memory ceiling: max(copy, triad)
  double copy_gbs = 0, triad_gbs = 0;
  double tf32_gflops = 0;    // CUDA: TF32 tensor-core GEMM (0 when not measured)
  double bf16_gflops = 0;    // CUDA: BF16 in, FP32 sums and out, as linear's bf16 GEMM (0: not measured)
  bool smoke = false;        // measured at tiny sizes (`--sizes smoke`): not the machine's limits
  std::vector<GemmRate> gemms;  // every GEMM measured
};

// Where the cache lives (see above).
std::string peaks_cache_path();
// The entry measured on the machine `key`, if the cache (a missing file is an empty cache) has
// one. A cache that is not urpe's JSON is an error naming the file.
std::optional<MachinePeaks> cached_peaks(const std::string& key, const std::string& path = peaks_cache_path());
// Adds or replaces the entry of peaks.key (the other machines' entries stay).
void store_peaks(const MachinePeaks& peaks, const std::string& path = peaks_cache_path());

// The roofline bound of an op that performs `flops` and moves `bytes`: the time it would take at
// the machine's ceilings, max(flops / compute, bytes / bandwidth), in milliseconds.
double roofline_bound_ms(const MachinePeaks& peaks, double flops, double bytes);

// The compute ceiling of a GEMM math (GFLOP/s): FP32 the sgemm rate; TF32 the measured TF32 rate;
// BF16 the measured BF16→FP32 rate. A rate the entry lacks (an older cache entry, a CPU) falls
// back to the next one measured, BF16 → TF32 → FP32: a lower ceiling than the math's own, so such
// an op's % of roofline reads high. `source` (if given) names the rate used.
double gemm_ceiling_gflops(const MachinePeaks& peaks, GemmMath math, std::string* source = nullptr);
// The same bound with each part of the FLOPs at its own math's ceiling: the compute time is
//   (flops − tf32_flops − bf16_flops) / FP32 + tf32_flops / TF32 + bf16_flops / BF16
// and the bound is max(compute time, bytes / bandwidth), in milliseconds.
double roofline_bound_ms(const MachinePeaks& peaks, const Cost& cost);

// A one-line description of the peaks for a report: "sgemm 101.3 GFLOP/s, bandwidth 12.1 GB/s
// (copy 11.0, triad 12.1), measured 2026-11-26T10:00:00Z".
std::string describe(const MachinePeaks& peaks);

}  // namespace urpe::profile
