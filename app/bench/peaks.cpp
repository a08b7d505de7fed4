// The machine's measured ceilings (see peaks.h).
#include "app/bench/peaks.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <vector>

#include <unistd.h>

#include "app/bench/cuda_peaks.h"
#include "ops/blas_runtime.h"
#include "ops/matmul.h"
#include "tensor/cuda_backend.h"
#include "tensor/error.h"
#include "app/bench/process_memory.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace urpe::bench {

namespace {

using profile::GemmRate;
using profile::MachinePeaks;

int threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

std::string host_name() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown host";
  return name;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The GEMMs measured: large squares (the compute ceiling) and the bench model's shapes.
std::vector<GemmRate> gemm_shapes(bool smoke, bool cuda) {
  if (smoke) return {{"square 64", 1, 64, 64, 64, 0}, {"square 96", 1, 96, 96, 96, 0}, {"heads (8 × 32×32·32×16)", 8, 32, 32, 16, 0}};
  std::vector<GemmRate> shapes;
  for (int n : cuda ? std::vector<int>{4096, 8192} : std::vector<int>{1024, 2048})
    shapes.push_back({"square " + std::to_string(n), 1, n, n, n, 0});
  // The bench step's encoder: 32 sequences of n = 128 (4096 rows), d = 128, 4 heads of 32, d_ff 512.
  shapes.push_back({"projection x·Wᵀ (4096×128)·(128×128)", 1, 4096, 128, 128, 0});
  shapes.push_back({"FFN in (4096×128)·(128×512)", 1, 4096, 512, 128, 0});
  shapes.push_back({"FFN out (4096×512)·(512×128)", 1, 4096, 128, 512, 0});
  shapes.push_back({"scores Q·Kᵀ (128 × 128×32·32×128)", 128, 128, 128, 32, 0});
  shapes.push_back({"context A·V (128 × 128×128·128×32)", 128, 128, 32, 128, 0});
  return shapes;
}

kernels::GemmArgs gemm_args(const GemmRate& g, const float* a, const float* b, float* c) {
  kernels::GemmArgs args;
  args.m = g.m;
  args.n = g.n;
  args.k = g.k;
  args.batch = g.batch;
  args.a = a; args.lda = g.k; args.stride_a = g.m * g.k;
  args.b = b; args.ldb = g.n; args.stride_b = g.k * g.n;
  args.c = c; args.ldc = g.n; args.stride_c = g.m * g.n;
  return args;
}

// ---- CPU ----

double cpu_gemm_gflops(const GemmRate& g, int runs) {
  std::vector<float> a(static_cast<size_t>(g.batch * g.m * g.k)), b(static_cast<size_t>(g.batch * g.k * g.n)),
      c(static_cast<size_t>(g.batch * g.m * g.n));
  uint32_t state = 12345;  // irregular non-zero values (a linear congruential sequence)
  for (std::vector<float>* v : {&a, &b})
    for (float& x : *v) x = static_cast<float>(((state = state * 1664525u + 1013904223u) >> 9) % 2001) / 1000.0f - 1.0f;
  const kernels::GemmArgs args = gemm_args(g, a.data(), b.data(), c.data());
  kernels::gemm_cpu(args);  // warm-up
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    kernels::gemm_cpu(args);
    times.push_back(seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  return 2.0 * double(g.batch) * g.m * g.n * g.k / times[times.size() / 2] / 1e9;
}

// STREAM copy (c = a) or triad (a = b + s·c) over n floats per array: best of `runs`, in GB/s
// counting each array read or written once (8 or 12 bytes per element).
double stream_gbs(int64_t n, int runs, bool triad) {
  std::unique_ptr<float[]> a(new float[static_cast<size_t>(n)]), b(new float[static_cast<size_t>(n)]),
      c(new float[static_cast<size_t>(n)]);
  float* pa = a.get();
  float* pb = b.get();
  float* pc = c.get();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {  // first touch by the threads that will use the pages
    pa[i] = 1.0f;
    pb[i] = 2.0f;
    pc[i] = 0.5f;
  }
  const float s = 3.0f;
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    if (triad) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    } else {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) pc[i] = pa[i];
    }
    best = std::min(best, seconds_since(start));
  }
  // Read the results back so the loops cannot be dropped.
  URPE_CHECK(pa[n / 2] > 0 && pc[n / 3] > 0, "bench peaks: STREAM arrays lost their values");
  return (triad ? 12.0 : 8.0) * double(n) / best / 1e9;
}

MachinePeaks measure_cpu(bool smoke) {
  MachinePeaks p;
  p.device = "cpu";
  p.gemms = gemm_shapes(smoke, false);
  for (GemmRate& g : p.gemms) {
    g.gflops = cpu_gemm_gflops(g, smoke ? 2 : 5);
    p.gemm_gflops = std::max(p.gemm_gflops, g.gflops);
  }
  const int64_t n = smoke ? (int64_t(1) << 18) : (int64_t(1) << 25);  // 1 MiB or 128 MiB per array
  p.copy_gbs = stream_gbs(n, smoke ? 3 : 10, false);
  p.triad_gbs = stream_gbs(n, smoke ? 3 : 10, true);
  p.bandwidth_gbs = std::max(p.copy_gbs, p.triad_gbs);
  return p;
}

// ---- CUDA ----

#if defined(URPE_WITH_CUDA)
MachinePeaks measure_cuda(const Device& device, bool smoke) {
  MachinePeaks p;
  p.device = "cuda";
  cuda::Context* context = device.context();
  const DevicePeaks d = measure_device_peaks(context, smoke ? (size_t(1) << 20) : (size_t(1) << 30), smoke ? 64 : 8192);
  p.copy_gbs = d.copy_gbs;
  p.bandwidth_gbs = d.copy_gbs;
  p.gemm_gflops = 1000.0 * d.sgemm_tflops;
  p.tf32_gflops = 1000.0 * d.tf32_tflops;
  p.bf16_gflops = 1000.0 * d.bf16_tflops;
  Rng rng(20221128);
  const int64_t tile_length = smoke ? 4099 : kTimingTile;  // primes
  const Tensor tile = Tensor::uniform({tile_length}, -1.0f, 1.0f, rng, device);
  p.gemms = gemm_shapes(smoke, true);
  for (GemmRate& g : p.gemms) {
    const Tensor a = Tensor::empty({g.batch * g.m * g.k}, DType::f32, device);
    const Tensor b = Tensor::empty({g.batch * g.k * g.n}, DType::f32, device);
    const Tensor c = Tensor::empty({g.batch * g.m * g.n}, DType::f32, device);
    fill_by_tiling(a, tile, 0);
    fill_by_tiling(b, tile, tile_length / 2);
    const kernels::GemmArgs args = gemm_args(g, a.f32(), b.f32(), c.f32());
    const CudaTiming t = time_cuda(context, [&] { kernels::gemm_cuda(device, args); }, smoke ? 3 : 20, smoke ? 1 : 3);
    g.gflops = 2.0 * double(g.batch) * g.m * g.n * g.k / (t.median_ms * 1e-3) / 1e9;
    p.gemm_gflops = std::max(p.gemm_gflops, g.gflops);
  }
  return p;
}
#else
MachinePeaks measure_cuda(const Device&, bool) {
  URPE_FAIL("bench peaks --device cuda: this urpe build has no CUDA backend");
}
#endif

// "  label ....   12.34 unit", the label padded to 50 characters (not bytes: labels hold × and ᵀ).
void print_rate(const std::string& label, double value, const char* unit) {
  size_t chars = 0;
  for (unsigned char c : label) chars += (c & 0xC0) != 0x80;
  std::printf("  %s%s %10.2f %s\n", label.c_str(), std::string(chars < 50 ? 50 - chars : 1, ' ').c_str(), value, unit);
}

}  // namespace

const char* host_code_name() {
#if defined(URPE_NATIVE_BUILD)
  return "-march=native";
#else
  return "portable";
#endif
}

std::string machine_key(const Device& device) {
  if (device.is_cuda()) return "cuda | " + cuda::device_name(device.context()) + " | " + host_name();
  const std::string blas = kernels::blas_core_name();
  return "cpu | " + cpu_model_name() + " | " + std::to_string(threads()) + " threads | " +
         (blas.empty() ? std::string("built-in GEMM") : "OpenBLAS " + blas) + " | " + host_code_name() + " | " +
         host_name();
}

profile::MachinePeaks measure_peaks(const Device& device, bool smoke) {
  MachinePeaks p = device.is_cuda() ? measure_cuda(device, smoke) : measure_cpu(smoke);
  p.key = machine_key(device);
  p.measured = utc_now();
  p.smoke = smoke;
  URPE_CHECK(p.gemm_gflops > 0 && p.bandwidth_gbs > 0, "bench peaks: measured no positive ceiling on " << p.key);
  return p;
}

profile::MachinePeaks peaks_for(const Device& device, std::string* source) {
  const std::string path = profile::peaks_cache_path();
  if (std::optional<MachinePeaks> cached = profile::cached_peaks(machine_key(device), path)) {
    if (source) *source = path;
    return *cached;
  }
  std::printf("no measured peaks for this machine in %s: measuring them now (urpe bench peaks)\n", path.c_str());
  std::fflush(stdout);
  MachinePeaks p = measure_peaks(device, false);
  profile::store_peaks(p, path);
  if (source) *source = "measured now, cached in " + path;
  return p;
}

int run_peaks_bench(const PeaksOptions& options) {
  const Device device = parse_device(options.device);
  MachinePeaks p = measure_peaks(device, options.smoke);
  std::printf("urpe bench peaks: %s%s\n", p.key.c_str(), options.smoke ? " (smoke sizes: not the machine's limits)" : "");
  for (const GemmRate& g : p.gemms) print_rate("sgemm " + g.label, g.gflops, "GFLOP/s");
  if (p.tf32_gflops > 0) print_rate("TF32 tensor-core GEMM (square)", p.tf32_gflops, "GFLOP/s");
  if (p.bf16_gflops > 0) print_rate("BF16→FP32 tensor-core GEMM (square)", p.bf16_gflops, "GFLOP/s");
  print_rate(device.is_cuda() ? "device-to-device copy" : "STREAM copy", p.copy_gbs, "GB/s");
  if (p.triad_gbs > 0) print_rate("STREAM triad", p.triad_gbs, "GB/s");
  std::printf("ceilings: compute %.2f GFLOP/s (the best sgemm above), memory %.2f GB/s (%s)\n", p.gemm_gflops,
              p.bandwidth_gbs, device.is_cuda() ? "copy" : "the better of copy and triad");
  if (device.is_cuda()) {
    // The table by dtype (issue 36's evidence of which cuBLAS call is slow, beside
    // bench/torch_gemm.py's PyTorch rows). Its best TF32 and BF16→FP32 rates raise the cached
    // tensor-core ceilings (a profile bounds those GEMMs by them); the FP32 ceiling stays the sgemm's.
    std::printf("GEMMs by dtype: C = A·Bᵀ + β·C as linear's forward (A m×k, B n×k), median of CUDA events:\n");
    std::printf("| shape | m×n×k | math | β | ms | TFLOP/s |\n|---|---|---|---|---|---|\n");
    for (const DtypeGemmRate& r : measure_dtype_gemms(device.context(), options.smoke)) {
      std::printf("| %s | %lld×%lld×%lld | %s | %g | %.4g | %.4g |\n", r.shape.c_str(), static_cast<long long>(r.m),
                  static_cast<long long>(r.n), static_cast<long long>(r.k), r.math.c_str(), double(r.beta), r.median_ms,
                  r.tflops);
      if (r.math == "tf32") p.tf32_gflops = std::max(p.tf32_gflops, 1000.0 * r.tflops);
      if (r.math == "bf16→f32") p.bf16_gflops = std::max(p.bf16_gflops, 1000.0 * r.tflops);
    }
    std::printf("tensor-core ceilings (the best of the square and the table): TF32 %.2f GFLOP/s, BF16→FP32 %.2f GFLOP/s\n",
                p.tf32_gflops, p.bf16_gflops);
  }
  std::printf("load averages (1, 5, 15 min): %s\n", load_averages().c_str());
  const std::string path = profile::peaks_cache_path();
  profile::store_peaks(p, path);
  std::printf("stored in %s\n", path.c_str());
  return 0;
}

}  // namespace urpe::bench
