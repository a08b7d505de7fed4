// Device ceilings measured on the machine the benchmark runs on, and the CUDA timing helper of
// `urpe bench kernels --device cuda`: every kernel's GB/s and TFLOP/s are reported against these
// numbers, never against a datasheet.
//
//   time_cuda:         CUDA events on the context's stream around each run, an L2 flush before
//                      each run (outside the timed region), warm-up runs first, median of N.
//   copy bandwidth:    a large device-to-device copy; bytes read + bytes written per second.
//   sgemm TFLOP/s:     urpe's own cuBLAS GEMM path (kernels::gemm_cuda) on random n×n inputs
//                      (fill_by_tiling), full float32 and, separately, TF32 and BF16 (FP32 out)
//                      tensor cores: the roofline's ceiling for each GEMM math.
//   GEMMs by dtype:    the same product in FP32, TF32, BF16 in / FP32 out (linear's bf16 GEMM)
//                      and BF16 in / BF16 out, β = 0 and β = 1, at linear's shapes: which cuBLAS
//                      call makes precision=bf16 slow (issue 36, docs/cuda.md#mixed-precision).
// Host-only C++ (no CUDA headers here), so CPU-only builds compile callers too; there every
// function throws "this urpe build has no CUDA backend".
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensor/cuda_backend.h"
#include "tensor/tensor.h"

namespace urpe::bench {

struct CudaTiming {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
};

// Runs fn `warmup` times, then `runs` times each timed with CUDA events (an L2 flush before each
// run when flush_l2). fn must enqueue its work on the context's stream (every urpe CUDA op does).
CudaTiming time_cuda(cuda::Context* context, const std::function<void()>& fn, int runs = 50,
                     int warmup = 5, bool flush_l2 = true);

// Bytes read + written per second (GB/s, 1e9) of a device-to-device copy of `bytes` bytes.
double measure_copy_bandwidth_gbs(cuda::Context* context, size_t bytes = size_t(1) << 30);

// TFLOP/s (2·n³ per product) of an n×n×n float32 GEMM through urpe's cuBLAS path.
double measure_sgemm_tflops(cuda::Context* context, int n = 8192, bool tf32 = false);
// The same with BF16 operands, FP32 sums and an FP32 C (linear's GEMM under precision=bf16).
double measure_bf16_gemm_tflops(cuda::Context* context, int n = 8192);

// Random inputs for timing without drawing gigabytes on the host: fills the f32 CUDA tensor dst
// with `tile` (an f32 CUDA tensor of uniforms drawn once) repeated end to end, starting at tile
// element `shift` and wrapping, by device-to-device copies on dst's stream. With a tile of prime
// length the repeats never line up with rows. Timing needs non-zero, irregular values (never
// zeros, METHOD.md); checking results on fresh random inputs is the parity suite's job.
void fill_by_tiling(const Tensor& dst, const Tensor& tile, int64_t shift);
constexpr int64_t kTimingTile = 1048573;  // a prime just under 2^20: 4 MiB of f32

// One GEMM of the dtype table: C (m×n) = A·Bᵀ + β·C, laid out as linear's forward x·Wᵀ (A: m×k
// row-major, B: n×k row-major; cuBLAS's "TN" call), timed as above. `math`:
//   "fp32"       FP32 in and out, strict FP32 (cublasSgemm through kernels::gemm_cuda)
//   "tf32"       the same call with the context's TF32 switch on (on for the bf16 rows too, as
//                precision=bf16 runs; the switch sets cuBLAS's math mode, which BF16 calls ignore)
//   "bf16→f32"   BF16 in, FP32 out, FP32 accumulation: linear's GEMM under precision=bf16
//                (cublasGemmEx through kernels::gemm_cuda; linear runs it with β = 1 onto its bias)
//   "bf16→bf16"  BF16 in and out, FP32 accumulation, rounded once to BF16 (cublasGemmEx called
//                here); what autocast's GEMMs return
// and, β = 0, each math again on cuBLASLt with the bias as its epilogue ("…, Lt bias epilogue":
// kernels::gemm_lt_cuda, linear's forward on CUDA; the bf16→bf16 one writes D in bf16 itself),
// and the whole linear op forward with bf16 x, W and y, on cuBLASLt (β = 0) and with cuBLASLt
// switched off (its cuBLAS path: bias broadcast, β = 1, rounding pass; "β" 1), TFLOP/s counting
// the GEMM's 2·m·n·k alone.
struct DtypeGemmRate {
  std::string shape;  // "square 8192", "linear 16384×3072×768 (FFN in)"
  int64_t m = 0, n = 0, k = 0;
  std::string math;
  float beta = 0;
  double median_ms = 0, tflops = 0;  // tflops: 2·m·n·k per product
};
// Every math × β ∈ {0, 1}, the epilogue rows and the linear op rows, at 8192³ and at the Table 5
// encoder's linear shapes (16384 rows = batch 32 × n 512, d 768, d_ff 3072), or at tiny shapes
// when smoke (the simulator).
std::vector<DtypeGemmRate> measure_dtype_gemms(cuda::Context* context, bool smoke);

struct DevicePeaks {
  std::string device;        // e.g. "NVIDIA H100 80GB HBM3 (cuda:0)"
  double copy_gbs = 0;       // device-to-device copy, read + write
  double sgemm_tflops = 0;   // float32 GEMM
  double tf32_tflops = 0;    // TF32 tensor-core GEMM
  double bf16_tflops = 0;    // BF16 in, FP32 sums and out (measure_bf16_gemm_tflops)
};
// The copy of `copy_bytes` and the sgemm of sgemm_n³ above (the defaults are the real ceilings;
// smaller sizes only for checking that the benchmark runs).
DevicePeaks measure_device_peaks(cuda::Context* context, size_t copy_bytes = size_t(1) << 30,
                                 int sgemm_n = 8192);

}  // namespace urpe::bench
