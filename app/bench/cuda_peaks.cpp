// Measured device ceilings and the CUDA event timer (see cuda_peaks.h). Plain host C++ calling
// the CUDA runtime, so it lives in a .cpp beside the other bench sources; in a build without CUDA
// every entry point throws a clear error instead.
#include "app/bench/cuda_peaks.h"

#include "tensor/error.h"

#if defined(URPE_WITH_CUDA)
#include <algorithm>
#include <utility>
#include <vector>

#include "ops/cast.h"
#include "ops/matmul.h"
#include "tensor/cuda_context.h"
#include "tensor/tensor.h"
#endif

namespace urpe::bench {

#if defined(URPE_WITH_CUDA)

namespace {

// A pair of CUDA events, destroyed with the object.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

}  // namespace

CudaTiming time_cuda(cuda::Context* context, const std::function<void()>& fn, int runs,
                     int warmup, bool flush_l2) {
  URPE_CHECK(context != nullptr && runs > 0, "time_cuda: needs a CUDA context and runs > 0");
  context->activate();
  cudaStream_t stream = context->stream();
  // Twice the L2 size, rewritten before every run, evicts whatever the previous run left there.
  const size_t flush_bytes = flush_l2 ? 2 * static_cast<size_t>(context->properties().l2CacheSize) : 0;
  cuda::DeviceBuffer flush(*context, flush_bytes);
  for (int i = 0; i < warmup; ++i) fn();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  URPE_CHECK(runs >= 1, "bench: at least one timed run is needed, got " << runs);  // a median of none
  std::vector<double> times;
  times.reserve(runs);
  EventPair events;
  for (int i = 0; i < runs; ++i) {
    if (flush_bytes) CUDA_CHECK(cudaMemsetAsync(flush.as<void>(), i & 0xFF, flush_bytes, stream));
    CUDA_CHECK(cudaEventRecord(events.start, stream));
    fn();
    CUDA_CHECK(cudaEventRecord(events.stop, stream));
    CUDA_CHECK(cudaEventSynchronize(events.stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, events.start, events.stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  CudaTiming t;
  t.runs = runs;
  t.min_ms = times.front();
  t.max_ms = times.back();
  t.median_ms = runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
  return t;
}

void fill_by_tiling(const Tensor& dst, const Tensor& tile, int64_t shift) {
  URPE_CHECK(dst.device().is_cuda() && tile.device().is_cuda() && dst.dtype() == DType::f32 &&
                 tile.dtype() == DType::f32 && tile.numel() > 0,
             "fill_by_tiling: needs f32 CUDA tensors and a non-empty tile, got " << dst.describe()
                                                                                 << " and " << tile.describe());
  cuda::Context* context = dst.device().context();
  const int64_t n = dst.numel(), period = tile.numel();
  int64_t done = 0, from = ((shift % period) + period) % period;
  while (done < n) {
    const int64_t count = std::min(n - done, period - from);
    cuda::copy_device_to_device(context, dst.f32() + done, tile.f32() + from,
                                static_cast<size_t>(count) * sizeof(float));
    done += count;
    from = 0;
  }
}

double measure_copy_bandwidth_gbs(cuda::Context* context, size_t bytes) {
  URPE_CHECK(context != nullptr && bytes >= 4, "measure_copy_bandwidth_gbs: bad arguments");
  context->activate();
  const size_t n = bytes / sizeof(float);
  cuda::DeviceBuffer src(*context, n * sizeof(float)), dst(*context, n * sizeof(float));
  cuda::fill_f32(context, src.as<float>(), n, 1.5f);  // not zeros
  cuda::fill_f32(context, dst.as<float>(), n, -2.5f);
  const CudaTiming t = time_cuda(
      context,
      [&] {
        CUDA_CHECK(cudaMemcpyAsync(dst.as<void>(), src.as<void>(), n * sizeof(float),
                                   cudaMemcpyDeviceToDevice, context->stream()));
      },
      20, 3, true);
  return 2.0 * static_cast<double>(n * sizeof(float)) / (t.median_ms * 1e-3) / 1e9;
}

namespace {

// The square timings' operands: two n×n f32 matrices tiled from one seeded random tile (b
// offset by half a tile), filled on the device.
std::pair<Tensor, Tensor> square_operands(const Device& device, int n) {
  Rng rng(20221128);
  const Tensor tile = Tensor::uniform({kTimingTile}, -1.0f, 1.0f, rng, device);
  Tensor a = Tensor::empty({n, n}, DType::f32, device), b = Tensor::empty({n, n}, DType::f32, device);
  fill_by_tiling(a, tile, 0);
  fill_by_tiling(b, tile, kTimingTile / 2);
  return {a, b};
}

}  // namespace

double measure_sgemm_tflops(cuda::Context* context, int n, bool tf32) {
  URPE_CHECK(context != nullptr && n > 0, "measure_sgemm_tflops: bad arguments");
  std::shared_ptr<cuda::Context> keep(std::shared_ptr<cuda::Context>(), context);  // non-owning
  const Device device = Device::cuda(keep);
  const auto [a, b] = square_operands(device, n);
  Tensor c = Tensor::empty({n, n}, DType::f32, device);
  kernels::GemmArgs g;
  g.m = g.n = g.k = n;
  g.a = a.f32(); g.lda = n;
  g.b = b.f32(); g.ldb = n;
  g.c = c.f32(); g.ldc = n;
  const bool previous = context->tf32();
  context->set_tf32(tf32);
  CudaTiming t;
  try {
    t = time_cuda(context, [&] { kernels::gemm_cuda(device, g); }, 20, 3, true);
  } catch (...) {
    context->set_tf32(previous);
    throw;
  }
  context->set_tf32(previous);
  return 2.0 * double(n) * double(n) * double(n) / (t.median_ms * 1e-3) / 1e12;
}

double measure_bf16_gemm_tflops(cuda::Context* context, int n) {
  URPE_CHECK(context != nullptr && n > 0, "measure_bf16_gemm_tflops: bad arguments");
  std::shared_ptr<cuda::Context> keep(std::shared_ptr<cuda::Context>(), context);  // non-owning
  const Device device = Device::cuda(keep);
  const auto [a, b] = square_operands(device, n);
  const Tensor a16 = cast(a, DType::bf16), b16 = cast(b, DType::bf16);
  Tensor c = Tensor::empty({n, n}, DType::f32, device);
  kernels::GemmArgs g;
  g.m = g.n = g.k = n;
  g.a_bf16 = a16.data<bf16>(); g.lda = n;
  g.b_bf16 = b16.data<bf16>(); g.ldb = n;
  g.c = c.f32(); g.ldc = n;
  const CudaTiming t = time_cuda(context, [&] { kernels::gemm_cuda(device, g); }, 20, 3, true);
  return 2.0 * double(n) * double(n) * double(n) / (t.median_ms * 1e-3) / 1e12;
}

std::vector<DtypeGemmRate> measure_dtype_gemms(cuda::Context* context, bool smoke) {
  URPE_CHECK(context != nullptr, "measure_dtype_gemms: needs a CUDA context");
  std::shared_ptr<cuda::Context> keep(std::shared_ptr<cuda::Context>(), context);  // non-owning
  const Device device = Device::cuda(keep);
  struct Shape3 {
    const char* name;
    int64_t m, n, k;
  };
  const std::vector<Shape3> shapes =
      smoke ? std::vector<Shape3>{{"square 64", 64, 64, 64}, {"linear 96×80×48", 96, 80, 48}}
            : std::vector<Shape3>{{"square 8192", 8192, 8192, 8192},
                                  {"linear 16384×768×768 (projection)", 16384, 768, 768},
                                  {"linear 16384×3072×768 (FFN in)", 16384, 3072, 768},
                                  {"linear 16384×768×3072 (FFN out)", 16384, 768, 3072}};
  const int runs = smoke ? 2 : 20, warmup = smoke ? 1 : 3;
  Rng rng(20221128);
  const int64_t tile_length = smoke ? 4099 : kTimingTile;  // primes
  const Tensor tile = Tensor::uniform({tile_length}, -1.0f, 1.0f, rng, device);
  const bool previous_tf32 = context->tf32();
  std::vector<DtypeGemmRate> rates;
  const auto timed_row = [&](const Shape3& s, const std::string& math, float beta, const std::function<void()>& call) {
    const CudaTiming t = time_cuda(context, call, runs, warmup, true);
    DtypeGemmRate r;
    r.shape = s.name;
    r.m = s.m; r.n = s.n; r.k = s.k;
    r.math = math;
    r.beta = beta;
    r.median_ms = t.median_ms;
    r.tflops = 2.0 * double(s.m) * double(s.n) * double(s.k) / (t.median_ms * 1e-3) / 1e12;
    return r;
  };
  try {
    for (const Shape3& s : shapes) {
      // a: (m, k), b: (n, k), c: (m, n), each f32 and its bf16 rounding (cast).
      const Tensor a = Tensor::empty({s.m, s.k}, DType::f32, device), b = Tensor::empty({s.n, s.k}, DType::f32, device);
      const Tensor c = Tensor::empty({s.m, s.n}, DType::f32, device);
      fill_by_tiling(a, tile, 0);
      fill_by_tiling(b, tile, tile_length / 3);
      fill_by_tiling(c, tile, 2 * tile_length / 3);  // β = 1 reads it: values, never garbage
      const Tensor a16 = cast(a, DType::bf16), b16 = cast(b, DType::bf16), c16 = cast(c, DType::bf16);
      const Tensor bias = Tensor::empty({s.n}, DType::f32, device);  // the epilogue rows' bias
      fill_by_tiling(bias, tile, tile_length / 5);
      const Tensor bias16 = cast(bias, DType::bf16);  // a bf16 D's epilogue takes a bias of D's type
      for (const char* math : {"fp32", "tf32", "bf16→f32", "bf16→bf16"}) {
        for (const float beta : {0.0f, 1.0f}) {
          const std::string m = math;
          kernels::GemmArgs g;
          g.trans_b = true;
          g.m = s.m; g.n = s.n; g.k = s.k;
          g.beta = beta;
          g.lda = s.k; g.ldb = s.k; g.ldc = s.n;
          g.c = c.f32();
          if (m == "fp32" || m == "tf32") {
            g.a = a.f32(); g.b = b.f32();
          } else {
            g.a_bf16 = a16.data<bf16>(); g.b_bf16 = b16.data<bf16>();
          }
          // The context's switch as precision=bf16 leaves it (on: docs/cuda.md#mixed-precision); it
          // sets cuBLAS's math mode, which the BF16 calls do not use.
          context->set_tf32(m != "fp32");
          std::function<void()> call = [&] { kernels::gemm_cuda(device, g); };
          if (m == "bf16→bf16") {
            // As gemm_cuda's bf16 call (operands swapped for cuBLAS's column-major view: Cᵀ = B·Aᵀ),
            // with C in CUDA_R_16BF.
            call = [&] {
              context->activate();
              const float alpha = 1.0f;
              CUBLAS_CHECK(cublasSetMathMode(context->cublas(), CUBLAS_DEFAULT_MATH));
              CUBLAS_CHECK(cublasGemmEx(context->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(s.n), int(s.m), int(s.k),
                                        &alpha, b16.data<bf16>(), CUDA_R_16BF, int(s.k), a16.data<bf16>(),
                                        CUDA_R_16BF, int(s.k), &beta, c16.data<bf16>(), CUDA_R_16BF, int(s.n),
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            };
          }
          rates.push_back(timed_row(s, m, beta, call));
        }
      }
      // linear's GEMM on cuBLASLt: β = 0 and the bias (n values of D's type) added by the epilogue,
      // D in f32 or written in bf16 directly (kernels::gemm_lt_cuda), beside the β = 1 rows above that linear's
      // cuBLAS path runs onto its broadcast bias. A layout cuBLASLt has no plan for is left out
      // (gemm_lt_available says so on stderr).
      bool lt_bf16 = false;  // the bf16→bf16 epilogue has a plan: the linear op row below runs on it
      for (const char* math : {"fp32", "tf32", "bf16→f32", "bf16→bf16"}) {
        const std::string m = math;
        kernels::GemmArgs g;
        g.trans_b = true;
        g.m = s.m; g.n = s.n; g.k = s.k;
        g.lda = s.k; g.ldb = s.k; g.ldc = s.n;
        if (m == "fp32" || m == "tf32") {
          g.a = a.f32(); g.b = b.f32();
        } else {
          g.a_bf16 = a16.data<bf16>(); g.b_bf16 = b16.data<bf16>();
        }
        if (m == "bf16→bf16") {
          g.c_bf16 = c16.data<bf16>();
          g.bias_bf16 = bias16.data<bf16>();
        } else {
          g.c = c.f32();
          g.bias = bias.f32();
        }
        context->set_tf32(m != "fp32");
        if (!kernels::gemm_lt_available(device, g)) continue;
        lt_bf16 = lt_bf16 || m == "bf16→bf16";
        rates.push_back(timed_row(s, m + ", Lt bias epilogue", 0.0f, [&] { kernels::gemm_lt_cuda(device, g); }));
      }
      // The whole linear op forward, y = x·Wᵀ + b with bf16 x, W and y (precision=bf16's fc1): one
      // cublasLtMatmul, against the same op with the context's cuBLASLt switched off (the bias
      // broadcast, the GEMM with β = 1 into an FP32 y, and the rounding pass).
      const bool previous_lt = context->lt_epilogues();
      for (const bool lt : {true, false}) {
        if (lt && !lt_bf16) continue;  // it would run the cuBLAS path under the cuBLASLt label
        context->set_lt_epilogues(lt);
        const std::string m = std::string("linear op bf16→bf16, ") + (lt ? "cuBLASLt" : "cuBLAS path");
        rates.push_back(timed_row(s, m, lt ? 0.0f : 1.0f, [&] { linear(a16, b16, bias, DType::bf16, DType::bf16); }));
      }
      context->set_lt_epilogues(previous_lt);
    }
  } catch (...) {
    context->set_tf32(previous_tf32);
    context->set_lt_epilogues(true);
    throw;
  }
  context->set_tf32(previous_tf32);
  return rates;
}

DevicePeaks measure_device_peaks(cuda::Context* context, size_t copy_bytes, int sgemm_n) {
  DevicePeaks p;
  p.device = cuda::device_name(context);
  p.copy_gbs = measure_copy_bandwidth_gbs(context, copy_bytes);
  p.sgemm_tflops = measure_sgemm_tflops(context, sgemm_n, false);
  p.tf32_tflops = measure_sgemm_tflops(context, sgemm_n, true);
  p.bf16_tflops = measure_bf16_gemm_tflops(context, sgemm_n);
  return p;
}

#else  // no CUDA backend in this build

[[noreturn]] static void no_cuda(const char* what) {
  URPE_FAIL(what << ": this urpe build has no CUDA backend (configure with -DURPE_CUDA=ON on a "
                    "machine with nvcc)");
}

CudaTiming time_cuda(cuda::Context*, const std::function<void()>&, int, int, bool) {
  no_cuda("time_cuda");
}
double measure_copy_bandwidth_gbs(cuda::Context*, size_t) { no_cuda("measure_copy_bandwidth_gbs"); }
double measure_sgemm_tflops(cuda::Context*, int, bool) { no_cuda("measure_sgemm_tflops"); }
double measure_bf16_gemm_tflops(cuda::Context*, int) { no_cuda("measure_bf16_gemm_tflops"); }
DevicePeaks measure_device_peaks(cuda::Context*, size_t, int) { no_cuda("measure_device_peaks"); }
std::vector<DtypeGemmRate> measure_dtype_gemms(cuda::Context*, bool) { no_cuda("measure_dtype_gemms"); }
void fill_by_tiling(const Tensor&, const Tensor&, int64_t) { no_cuda("fill_by_tiling"); }

#endif

}  // namespace urpe::bench
