// `urpe bench` dispatch, the shared harness, and the CPU kernel table of `urpe bench kernels`
// (the CUDA table is bench_kernels_cuda.cpp): machine header, reference rows (copy, a large
// sgemm), the attention GEMMs, then the URPE attention core at a few sizes, with its plain-softmax
// mode (no B, C ≡ 1) beside it. Kernels are called through URPE_DISPATCH on preallocated outputs,
// so rows time the kernel, not allocation; one row per size also times the public op
// (validation of the maps + allocation + kernel) to show what the checks cost.
// Runs are back to back (warm caches); on the CPU the largest working sets exceed L2 but not
// necessarily a large shared L3, which the header prints.
#include "app/bench/bench_kernels.h"
#include "app/bench/bench_step.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(URPE_WITH_OPENBLAS)
#include <cblas.h>
#endif

#include "autograd/node.h"
#include "ops/dispatch.h"
#include "ops/matmul.h"
#include "ops/urpe_attention.h"
#include "tensor/cuda_backend.h"

namespace urpe::bench {

// ---- the harness ----

Timing measure(const std::function<void()>& fn, const Device& device, int repeats, int warmup,
               double budget_s) {
  using Clock = std::chrono::steady_clock;
  URPE_CHECK(repeats >= 1, "bench: at least one timed run is needed, got " << repeats);  // a median of none
  auto sync = [&] {
    if (device.is_cuda()) cuda::synchronize(device.context());
  };
  for (int k = 0; k < warmup; ++k) fn();
  sync();
  const int minimum_runs = std::min(repeats, 5);
  std::vector<double> ms;
  double spent_s = 0;
  while (static_cast<int>(ms.size()) < repeats &&
         (static_cast<int>(ms.size()) < minimum_runs || spent_s < budget_s)) {
    const auto start = Clock::now();
    fn();
    sync();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ms.push_back(seconds * 1e3);
    spent_s += seconds;
  }
  Timing t;
  t.runs = static_cast<int>(ms.size());
  std::sort(ms.begin(), ms.end());
  t.min_ms = ms.front();
  t.median_ms = t.runs % 2 ? ms[t.runs / 2] : 0.5 * (ms[t.runs / 2 - 1] + ms[t.runs / 2]);
  return t;
}

// ---- text helpers (shared with the CUDA table) ----

// Left-justifies UTF-8 text in `width` columns (printf's %-Ns counts bytes, not characters).
std::string pad(const std::string& text, size_t width) {
  size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;  // count lead bytes only
  return text + std::string(chars < width ? width - chars : 1, ' ');
}

std::string dims(std::initializer_list<int64_t> sizes, const char* sep) {
  std::string s;
  for (int64_t v : sizes) s += (s.empty() ? "" : sep) + std::to_string(v);
  return s;
}

// ---- device checks ----

void require_cuda_device(const std::string& what, const std::string& device_text) {
  const bool names_cuda = device_text == "cuda" || device_text.rfind("cuda:", 0) == 0;
  if (!names_cuda) return;
  URPE_CHECK(cuda::built_with_cuda(),
             what << " --device " << device_text
                  << ": this urpe build has no CUDA backend (built without CUDA); rebuild with "
                     "'make build BUILD=build-cuda URPE_CUDA=ON' on a machine with nvcc, or use "
                     "--device cpu");
  URPE_CHECK(cuda::device_count() > 0,
             what << " --device " << device_text
                  << ": no CUDA device is visible (no GPU, or no NVIDIA driver); run it on a GPU "
                     "machine, or use --device cpu");
}

namespace {

// ---- machine description ----

std::string first_line_with(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t colon = line.find(':');
    return colon == std::string::npos ? line : line.substr(colon + 2);
  }
  return "unknown";
}

std::string read_word(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  return (in >> word) ? word : "unknown";
}

void print_machine(const Device& device, int repeats) {
  int threads = 1;
#if defined(_OPENMP)
  threads = omp_get_max_threads();
#endif
  std::printf("urpe bench kernels — device %s, up to %d timed runs per row (median reported)\n",
              device.name().c_str(), repeats);
  std::printf("CPU: %s, %u hardware threads, %d OpenMP threads, caches L2 %s, L3 %s\n",
              first_line_with("/proc/cpuinfo", "model name").c_str(),
              std::thread::hardware_concurrency(), threads,
              read_word("/sys/devices/system/cpu/cpu0/cache/index2/size").c_str(),
              read_word("/sys/devices/system/cpu/cpu0/cache/index3/size").c_str());
#if defined(URPE_WITH_OPENBLAS)
  std::printf("BLAS: OpenBLAS, %d threads (%s)\n", openblas_get_num_threads(), openblas_get_config());
#else
  std::printf("BLAS: none (blocked fallback GEMM)\n");
#endif
}

// ---- the table ----

struct Row {
  std::string kernel, shape;
  Timing t;
  double rate = 0;      // GFLOP/s or GB/s
  const char* unit = "";
  double percent = 0;   // of the reference for that unit
};

constexpr size_t kKernelWidth = 37, kShapeWidth = 28;

void print_header() {
  std::printf("\n%s%s%9s %9s %5s %13s %6s\n", pad("kernel", kKernelWidth).c_str(),
              pad("shape", kShapeWidth).c_str(), "median ms", "min ms", "runs", "rate", "% ref");
  std::printf("%s\n", std::string(kKernelWidth + kShapeWidth + 47, '-').c_str());
}

void print_row(const Row& r) {
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f %s", r.rate, r.unit);
  const bool noisy = r.t.median_ms > 1.5 * r.t.min_ms;
  std::printf("%s%s%9.3f %9.3f %5d %13s %5.0f%%%s\n", pad(r.kernel, kKernelWidth).c_str(),
              pad(r.shape, kShapeWidth).c_str(), r.t.median_ms, r.t.min_ms, r.t.runs, rate,
              r.percent, noisy ? " *" : "");
  std::fflush(stdout);
}

struct Bench {
  Device device;
  int repeats;
  double copy_gbs = 0;    // measured reference bandwidth
  double sgemm_gflops = 0;  // measured reference GEMM rate

  Tensor random(const Shape& shape, float low, float high, uint64_t seed) const {
    Rng rng(seed);
    return Tensor::uniform(shape, low, high, rng, device);
  }

  Row bandwidth_row(const std::string& kernel, const std::string& shape, const Timing& t, double bytes) {
    Row r{kernel, shape, t, bytes / (t.median_ms * 1e-3) / 1e9, "GB/s", 0};
    r.percent = copy_gbs > 0 ? 100.0 * r.rate / copy_gbs : 100.0;
    return r;
  }

  Row gemm_row(const std::string& kernel, const std::string& shape, const Timing& t, double flops) {
    Row r{kernel, shape, t, flops / (t.median_ms * 1e-3) / 1e9, "GFLOP/s", 0};
    r.percent = sgemm_gflops > 0 ? 100.0 * r.rate / sgemm_gflops : 100.0;
    return r;
  }

  // ---- references: device copy and a large sgemm ----
  void references() {
    const int64_t n = int64_t(16) << 20;  // 64 MiB of f32
    Tensor src = random({n}, -1, 1, 1), dst = Tensor::empty({n}, DType::f32, device);
    const Row copy = bandwidth_row("copy (reference)", "64 MiB", measure([&] { dst.copy_from(src); }, device, repeats),
                                   2.0 * n * sizeof(float));
    print_row(copy);
    copy_gbs = copy.rate;
    Tensor a = random({1024, 1024}, -1, 1, 2), b = random({1024, 1024}, -1, 1, 3);
    const Row gemm = gemm_row("sgemm (reference)", "1024×1024×1024",
                              measure([&] { matmul(a, b); }, device, repeats), 2.0 * 1024 * 1024 * 1024);
    print_row(gemm);
    sgemm_gflops = gemm.rate;
  }

  // ---- GEMMs: a square one and the two products of attention ----
  void gemms() {
    Tensor a = random({512, 512}, -1, 1, 4), b = random({512, 512}, -1, 1, 5);
    print_row(gemm_row("matmul", "512×512×512", measure([&] { matmul(a, b); }, device, repeats),
                       2.0 * 512 * 512 * 512));
    const int64_t bsz = 8, heads = 12, n = 256, dh = 64;
    Tensor q = random({bsz, heads, n, dh}, -1, 1, 6), k = random({bsz, heads, n, dh}, -1, 1, 7);
    Tensor p = random({bsz, heads, n, n}, 0, 1, 8);
    const double flops = 2.0 * bsz * heads * n * n * dh;
    print_row(gemm_row("matmul Q·Kᵀ (batched)", dims({bsz, heads, n, dh}) + " · Kᵀ",
                       measure([&] { matmul(q, k, false, true); }, device, repeats), flops));
    print_row(gemm_row("matmul P·V (batched)", dims({bsz, heads, n, n}) + " · V",
                       measure([&] { matmul(p, q); }, device, repeats), flops));
  }

  // ---- the URPE attention core at one size ----
  void urpe_core(int64_t bsz, int64_t heads, int64_t n, uint64_t seed) {
    autograd::NoGrad no_grad;
    const Shape shape{bsz, heads, n, n};
    const std::string s = dims({bsz, heads, n, n});
    const double elements = static_cast<double>(bsz * heads * n * n);
    const double map_bytes = 2.0 * n * n * sizeof(int32_t);  // the two (N, N) maps, read once
    Tensor scores = random(shape, -2, 2, seed), grad = random(shape, -1, 1, seed + 1);
    Tensor probs = Tensor::empty(shape, DType::f32, device), out = Tensor::empty(shape, DType::f32, device);
    Tensor grad_scores = Tensor::empty(shape, DType::f32, device);

    UrpeAttentionParams plain;  // no B, C ≡ 1: the softmax the URPE core generalises
    plain.scale = 0.125f;
    UrpeAttentionParams urpe = plain;
    urpe.bias_map = toeplitz_map(n, n, device);
    urpe.c_map = urpe.bias_map;
    urpe.bias_table = random({heads, 2 * n - 1}, -1, 1, seed + 2);
    urpe.c_table = random({heads, 2 * n - 1}, 0.5f, 1.5f, seed + 3);
    Tensor grad_bias = Tensor::empty(urpe.bias_table.shape(), DType::f32, device);
    Tensor grad_c = Tensor::empty(urpe.c_table.shape(), DType::f32, device);

    auto forward = [&](const UrpeAttentionParams& p) {
      return measure([&] {
        URPE_DISPATCH("urpe_attention", device, kernels::urpe_attention_forward_cpu(scores, p, probs, out),
                      kernels::urpe_attention_forward_cuda(scores, p, probs, out));
      }, device, repeats);
    };
    auto backward = [&](const UrpeAttentionParams& p, Tensor* gb, Tensor* gc) {
      return measure([&] {
        URPE_DISPATCH("urpe_attention", device,
                      kernels::urpe_attention_backward_cpu(grad, probs, p, grad_scores, gb, gc),
                      kernels::urpe_attention_backward_cuda(grad, probs, p, grad_scores, gb, gc));
      }, device, repeats);
    };
    // Forward: read S, write P and A (12 B/element); backward: read G and P, write ∂S (12 B/element).
    print_row(bandwidth_row("softmax (URPE core: no B, C ≡ 1) fwd", s, forward(plain), 12 * elements));
    print_row(bandwidth_row("URPE core fwd (Toeplitz B, C)", s, forward(urpe), 12 * elements + map_bytes));
    print_row(bandwidth_row("  urpe_attention() op (checks+alloc)", s,
                            measure([&] { urpe_attention(scores, urpe); }, device, repeats),
                            12 * elements + map_bytes));
    print_row(bandwidth_row("softmax (URPE core: no B, C ≡ 1) bwd", s, backward(plain, nullptr, nullptr),
                            12 * elements));
    print_row(bandwidth_row("URPE core bwd (∂S, ∂B, ∂C)", s, backward(urpe, &grad_bias, &grad_c),
                            12 * elements + map_bytes));
  }
};

}  // namespace

int run_kernel_bench(const KernelBenchOptions& options) {
  require_cuda_device("bench kernels", options.device);
  const Device device = parse_device(options.device);
  const int repeats = options.repeats;
  URPE_CHECK(repeats >= 1, "option --repeats: expected a count ≥ 1, got " << repeats);
  if (device.is_cuda()) return bench_kernels_cuda(device, repeats, options.tf32, options.sizes);
  URPE_CHECK(options.sizes == "table5", "option --sizes: the CUDA table's sizes; the CPU table has its "
                                        "own (use it with --device cuda)");
  URPE_CHECK(!options.tf32, "option --tf32: TF32 is a mode of the GPU's tensor cores; use it "
                            "with --device cuda");
  Bench bench{device, static_cast<int>(repeats)};
  const auto start = std::chrono::steady_clock::now();
  print_machine(device, bench.repeats);
  print_header();
  bench.references();
  bench.gemms();
  const int64_t sizes[][3] = {{4, 4, 128}, {8, 12, 128}, {8, 12, 256}};
  uint64_t seed = 100;
  for (const auto& size : sizes) bench.urpe_core(size[0], size[1], size[2], seed += 10);
  std::printf("\nrates: GB/s of minimal traffic (f32 tensors read + written once, maps included), "
              "GFLOP/s = 2·M·N·K/time; %% ref = of the copy / 1024³ sgemm rows above.\n"
              "* median > 1.5 × min: the runs were disturbed (a busy machine); rerun to compare. "
              "Total %.1f s.\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

}  // namespace urpe::bench
