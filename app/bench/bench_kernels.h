// Kernel micro-benchmarks (`urpe bench kernels [--device cpu|cuda] [--repeats N] [--tf32]`): the
// table of the kernels that bound a URPE training step (GEMMs, the URPE attention core forward and
// backward, and the same core as a plain softmax), on either device.
//
// CPU (this file's harness, measure()): warm-up runs, then timed runs (up to --repeats, fewer when
// a row would exceed its time budget), the median and the minimum, and a rate: GFLOP/s for GEMMs,
// GB/s of the minimal memory traffic for the rest, both also as a % of a reference *measured in
// the same run* (a 1024³ sgemm and a 64 MiB copy), never a datasheet number.
// CUDA (bench_kernels_cuda.cpp, timed by cuda_peaks.h): CUDA events, an L2 flush before every
// run, median of --repeats (default 50) runs, at the sizes of the paper's Table 5, against the copy
// bandwidth and cuBLAS sgemm rate measured at start on the same device.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>

#include "tensor/device.h"

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

// `urpe bench kernels`: the options the command line hands over (app/cli/bench.cpp parses them).
struct KernelBenchOptions {
  std::string device = "cpu";
  int repeats = 50;              // timed runs per row
  bool tf32 = false;             // CUDA only
  std::string sizes = "table5";  // CUDA only: "table5" or "smoke"
};
// Prints the kernel table; returns the process exit code.
int run_kernel_bench(const KernelBenchOptions& options);

// Checks that `device_text` ("cuda" or "cuda:N") can be used by `what` (e.g. "bench kernels")
// before any work starts: one clear error when the build has no CUDA backend ("built without
// CUDA") or when no GPU is visible ("no CUDA device"). Other spellings are left to parse_device.
void require_cuda_device(const std::string& what, const std::string& device_text);

// `urpe bench kernels --device cuda[:N]` (bench_kernels_cuda.cpp): measured peaks, then every
// row; `runs` timed runs per row; tf32 turns on the context's TF32 tensor-core GEMMs.
// `sizes`: "table5" (the paper's Table 5 model) or "smoke" (a tiny model that checks the table
// runs, e.g. on the CUDA simulator; its numbers mean nothing).
int bench_kernels_cuda(const Device& device, int runs, bool tf32, const std::string& sizes);

// Text helpers shared by the CPU and CUDA tables.
std::string pad(const std::string& text, size_t width);  // UTF-8 aware left-justify
std::string dims(std::initializer_list<int64_t> sizes, const char* sep = "×");

}  // namespace urpe::bench
