// `urpe bench peaks [--device cpu|cuda]`: the machine's measured ceilings for the roofline of
// `urpe profile` (base/profile/machine_peaks.h), stored in the peaks cache.
//
//   CPU  sgemm through urpe's own GEMM (OpenBLAS, or the blocked fallback) at large square sizes
//        and at the bench model's GEMM shapes (n = 128, d = 128, 4 heads, d_ff 512, batch 32:
//        the projections, the FFN, QKᵀ and A·V per head), median of several runs after a warm-up;
//        memory bandwidth by STREAM's copy (c = a: 8 bytes per element) and triad (a = b + s·c:
//        12 bytes) over arrays far larger than the caches, with the OpenMP threads urpe uses,
//        best of several runs (STREAM's convention).
//   CUDA the ceilings of app/bench/cuda_peaks.h (device-to-device copy, cuBLAS sgemm, TF32 and
//        BF16→FP32 at 8192³) and the same model GEMM shapes through urpe's cuBLAS path, timed with
//        CUDA events; then (run_peaks_bench) the GEMMs by dtype: FP32, TF32, BF16→FP32, BF16→BF16
//        with β = 0 and 1 at 8192³ and the Table 5 encoder's linear shapes (measure_dtype_gemms).
// The compute ceiling is the best sgemm rate measured (squares and model shapes alike); the memory
// ceiling the better of copy and triad. The tensor-core ceilings (a profile's bound for the GEMMs
// that ran in TF32 or BF16) are the best TF32 and BF16→FP32 rates measured, the dtype table's
// included when `urpe bench peaks` ran it.
#pragma once
#include <string>

#include "tensor/device.h"
#include "base/profile/machine_peaks.h"

namespace urpe::bench {

struct PeaksOptions {
  std::string device = "cpu";
  bool smoke = false;  // tiny sizes: checks that the measurement runs (tests, the CUDA simulator)
};

// How urpe's host code was compiled: "-march=native" (URPE_NATIVE) or "portable".
const char* host_code_name();

// What identifies the machine in the cache: the device, its CPU or GPU model, the threads, the
// BLAS core, how the host code was compiled and the host name.
std::string machine_key(const Device& device);

profile::MachinePeaks measure_peaks(const Device& device, bool smoke);

// The peaks of `device`'s machine from the cache, or measured now (full sizes) and stored there
// when the cache has none. `source` (if given) says which: the cache file, or "measured now".
profile::MachinePeaks peaks_for(const Device& device, std::string* source = nullptr);

// Measures, prints every rate and the two ceilings, stores them in the cache; returns 0.
int run_peaks_bench(const PeaksOptions& options);

}  // namespace urpe::bench
