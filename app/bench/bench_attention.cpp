// The attention benchmark: one table row per (n, path, direction); see bench_attention.h.
#include "app/bench/bench_attention.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "autograd/node.h"
#include "app/bench/cuda_peaks.h"
#include "ops/cast.h"
#include "ops/matmul.h"
#include "ops/urpe_attention.h"
#include "ops/urpe_flash_attention.h"
#include "tensor/cuda_backend.h"
#include "tensor/host_allocator.h"
#include "app/bench/process_memory.h"

namespace urpe::bench {

namespace {

struct Row {
  double median_ms = 0;
  double peak_mib = 0;
};

int64_t in_use(const Device& device) {
  return static_cast<int64_t>(device.is_cuda() ? cuda::bytes_in_use(device.context()) : host::in_use_bytes());
}

// Runs `fn` once untimed, then `repeats` times, each after `reset` (which drops the previous
// run's gradients, so they are not counted as freed memory); the peak is the most storage in use
// above what was live before the call, over all runs.
Row measure_row(const Device& device, int repeats, const std::function<void()>& reset,
                const std::function<void()>& fn) {
  auto sync = [&] {
    if (device.is_cuda()) cuda::synchronize(device.context());
  };
  reset();
  fn();
  sync();
  std::vector<double> times;
  double peak = 0;
  for (int r = 0; r < repeats; ++r) {
    reset();
    const int64_t before = in_use(device);
    if (device.is_cuda()) cuda::reset_peak(device.context());
    else host::reset_peak();
    const auto start = std::chrono::steady_clock::now();
    fn();
    sync();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    const double top = static_cast<double>(device.is_cuda() ? cuda::peak_bytes(device.context()) : host::peak_bytes());
    peak = std::max(peak, top - static_cast<double>(before));
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], peak / (1024.0 * 1024.0)};
}

// A fused row's pipeline label from what the tensor-core kernels ran (cuda::TcKernelsRan, recorded
// by their launchers): "on" / "off" for the forward; a forward+backward row gives the backward's
// (both of its kernels; "dq" or "dkdv" when only that one was pipelined) and, when the two differ,
// forward/backward. "-" where no tensor-core kernel ran (the scalar FP32 path, the CPU).
std::string pipeline_label(const cuda::TcKernelsRan& ran, bool backward) {
  if (!ran.forward) return "-";
  const std::string forward = ran.forward_pipelined ? "on" : "off";
  if (!backward || !ran.backward) return forward;
  const std::string back = ran.dq_pipelined && ran.dkdv_pipelined ? "on"
                           : ran.dq_pipelined                     ? "dq"
                           : ran.dkdv_pipelined                   ? "dkdv"
                                                                  : "off";
  return back == forward ? forward : forward + "/" + back;
}

}  // namespace

double attention_flops(const AttentionBenchOptions& o, int64_t n, bool backward) {
  const double forward = 4.0 * double(o.batch) * double(o.heads) * double(n) * double(n) * double(o.head_dim) /
                         (o.causal ? 2.0 : 1.0);
  return backward ? 3.5 * forward : forward;
}

int run_attention_bench(const AttentionBenchOptions& o) {
  const Device device = parse_device(o.device);
  URPE_CHECK(o.math == "fp32" || o.math == "tf32" || o.math == "bf16",
             "bench attention: math '" << o.math << "': expected fp32, tf32 or bf16");
  URPE_CHECK(o.math == "fp32" || device.is_cuda(),
             "option --math " << o.math << ": a mode of the GPU's tensor cores; use it with --device cuda");
  const char* math = o.math.c_str();
  if (device.is_cuda()) {
    cuda::set_tf32(device.context(), o.math != "fp32");  // bf16: as precision=bf16 leaves it
    cuda::set_bf16_tiles(device.context(), o.math == "bf16");
    cuda::set_tc_pipeline(device.context(), o.tc_pipeline);
    cuda::set_tc_rows(device.context(), o.tc_rows);
  }
  const bool tensor_cores = device.is_cuda() && o.math != "fp32";
  const char* pipeline = tensor_cores ? cuda::tc_pipeline_name(o.tc_pipeline) : "-";
  const char* rows_mode = tensor_cores ? cuda::tc_rows_name(o.tc_rows) : "-";
  // The ceiling the rates are read against: cuBLAS's TF32 GEMM, measured here (never a datasheet).
  const double tf32_tflops = device.is_cuda() ? measure_sgemm_tflops(device.context(), o.smoke ? 256 : 8192, true) : 0.0;
  char ceiling[80] = "n/a on a CPU";
  if (device.is_cuda())
    std::snprintf(ceiling, sizeof ceiling, "%.1f TFLOP/s%s", tf32_tflops, o.smoke ? " (smoke: 256³, not a ceiling)" : "");
  std::printf("urpe bench attention — device %s, batch %lld, %lld heads, head dim %lld, %s, Toeplitz B and C, "
              "math %s, tc pipeline %s, tc rows %s; median of %d runs after one warm-up; load %s\n",
              o.device.c_str(), static_cast<long long>(o.batch), static_cast<long long>(o.heads),
              static_cast<long long>(o.head_dim), o.causal ? "causal" : "not causal", math, pipeline, rows_mode, o.repeats,
              load_averages().c_str());
  // precision=bf16 hands the fused op bf16 q, k, v (the projections' outputs) and gets O and the
  // gradients back in bf16: the fused rows feed it that way (no cast inside the timing; q, k, v
  // then need no gradient of their own, the tables' gradients keep the backward whole, ∂q, ∂k, ∂v
  // included). The materialised rows keep f32 tensors.
  const bool bf16_tensors = o.math == "bf16";
  if (bf16_tensors)
    std::printf("fused rows: bf16 q, k, v and dO in, bf16 O, dQ, dK, dV out (precision=bf16's activations); "
                "materialized rows: f32 tensors\n");
  std::printf("peak MiB: tensor storage the call allocates above what was live before it (%s allocator)\n",
              device.is_cuda() ? "CUDA caching" : "host");
  std::printf("GFLOP: FlashAttention's count, forward 4·B·H·n²·d%s, backward 2.5× forward; %% tf32: of the cuBLAS "
              "TF32 GEMM rate measured now, %s\n",
              o.causal ? " / 2 (causal)" : "", ceiling);
  std::printf("pipe: the tensor-core kernels' pipelined variants (--tc-pipeline; cp.async staging of the next tile: "
              "the forward's and dQ's key tiles, dK/dV's query tiles) as the kernels ran them, on the fused rows; a "
              "forward+backward row whose two differ says forward/backward\n");
  std::printf("rows: the tensor-core forward's 16-row blocks of queries per warp as it ran (--tc-rows; 1: 64 query "
              "rows a block, 2: 128, BF16 tiles at d 33-64 only), on the fused rows\n\n");
  std::printf("%-7s %-13s %-17s %10s %10s %5s %11s %9s %7s %6s %5s\n", "n", "path", "direction", "median ms",
              "peak MiB", "math", "GFLOP", "TFLOP/s", "% tf32", "pipe", "rows");
  std::printf("------------------------------------------------------------------------------------------------------------\n");
  for (int64_t n : o.lengths) {
    Rng rng(static_cast<uint64_t>(n));
    const Shape shape{o.batch, o.heads, n, o.head_dim};
    Tensor q = Tensor::uniform(shape, -1.0f, 1.0f, rng, device);
    Tensor k = Tensor::uniform(shape, -1.0f, 1.0f, rng, device);
    Tensor v = Tensor::uniform(shape, -1.0f, 1.0f, rng, device);
    Tensor bias = Tensor::uniform({o.heads, 2 * n - 1}, -1.0f, 1.0f, rng, device);
    Tensor c = Tensor::uniform({o.heads, 2 * n - 1}, 0.5f, 1.5f, rng, device);
    const Tensor grad = Tensor::uniform(shape, -1.0f, 1.0f, rng, device);
    Tensor q16, k16, v16, grad16;  // --math bf16: the fused rows' inputs
    if (bf16_tensors) {
      q16 = cast(q, DType::bf16), k16 = cast(k, DType::bf16), v16 = cast(v, DType::bf16);
      grad16 = cast(grad, DType::bf16);
    }
    UrpeAttentionParams fused, materialized;
    fused.scale = materialized.scale = 1.0f / std::sqrt(static_cast<float>(o.head_dim));
    fused.bias_table = materialized.bias_table = bias;
    fused.c_table = materialized.c_table = c;
    fused.bias_map = fused.c_map = toeplitz_relative_map(n, n, device);
    fused.causal = materialized.causal = o.causal;
    // Lengths above 4096 are the fused path's alone (the CLI refuses the materialised one there).
    if (n <= 4096) materialized.bias_map = materialized.c_map = toeplitz_map(n, n, device);
    for (const std::string& path_name : o.paths) {
      const char* path = path_name.c_str();
      const bool is_fused = path[0] == 'f';
      auto forward = [&] {
        if (is_fused && bf16_tensors) return urpe_flash_attention(q16, k16, v16, fused);
        return is_fused ? urpe_flash_attention(q, k, v, fused)
                        : matmul(urpe_attention(matmul(q, k, false, true), materialized), v);
      };
      for (const char* direction : {"forward", "forward+backward"}) {
        const bool backward = direction[7] == '+';
        for (Tensor* t : {&q, &k, &v, &bias, &c}) t->set_requires_grad(backward);
        auto reset = [&] {
          for (Tensor* t : {&q, &k, &v, &bias, &c}) t->zero_grad();
        };
        if (tensor_cores) cuda::clear_tc_kernels_ran(device.context());
        const Row row = measure_row(device, o.repeats, reset, [&] {
          if (backward) {
            forward().backward(is_fused && bf16_tensors ? grad16 : grad);
          } else {
            autograd::NoGrad no_grad;
            forward();
          }
        });
        const double gflop = attention_flops(o, n, backward) / 1e9;
        const double tflops = gflop / row.median_ms;  // GFLOP per ms = TFLOP/s
        char share[16] = "-";
        if (tf32_tflops > 0) std::snprintf(share, sizeof share, "%.1f%%", 100.0 * tflops / tf32_tflops);
        const cuda::TcKernelsRan ran = tensor_cores ? cuda::tc_kernels_ran(device.context()) : cuda::TcKernelsRan{};
        const std::string pipe = is_fused && tensor_cores ? pipeline_label(ran, backward) : "-";
        const std::string rows = is_fused && tensor_cores && ran.forward ? std::to_string(ran.forward_row_blocks) : "-";
        std::printf("%-7lld %-13s %-17s %10.2f %10.3f %5s %11.1f %9.2f %7s %6s %5s\n", static_cast<long long>(n), path,
                    direction, row.median_ms, row.peak_mib, math, gflop, tflops, share, pipe.c_str(), rows.c_str());
        std::fflush(stdout);
      }
    }
  }
  std::printf("\nload at the end: %s\n", load_averages().c_str());
  return 0;
}

}  // namespace urpe::bench
