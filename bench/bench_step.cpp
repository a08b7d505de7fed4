// One training step timed end to end with a host clock (synchronising the device first), so the
// number includes everything a real step pays: op dispatch, allocation, autograd bookkeeping.
#include "bench/bench_step.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "data/synthetic.h"
#include "models/encoder.h"
#include "ops/blas_runtime.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "tensor/cuda_backend.h"
#include "tensor/host_allocator.h"
#include "train/optimizer.h"
#include "train/process_memory.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace urpe::bench {

double run_step_benchmark(const StepBenchOptions& options) {
  const Device device = parse_device(options.device);
  if (device.is_cuda()) cuda::set_tf32(device.context(), options.tf32);
  EncoderConfig c;
  c.seq_len = options.seq_len;
  c.vocab = 100;
  c.layers = 2;
  c.d_model = 128;
  c.heads = 4;
  c.d_ff = 512;
  c.num_classes = options.seq_len;  // position identification: one class per position
  c.pe = PositionalKind::urpe;
  c.init_std = 0.02f;
  c.attention = parse_attention_path(options.attention);
  const int64_t batch = options.batch;
  TransformerEncoder model(c, 0, device);
  Adam optimizer(model.parameters().tensors());
  SyntheticTask task(SyntheticKind::position_identification, c.seq_len, c.vocab);
  Rng data_rng(1);

  URPE_CHECK(options.steps >= 1 && options.warmup >= 0,
             "bench step: needs at least one timed step, got " << options.steps);  // a median of none
  std::vector<double> times;
  size_t peak = 0;  // the most bytes a step held on top of what was live before it
  // The resident set's growth over the first step: every buffer then comes fresh from the
  // system (later steps reuse the host cache, so their growth is 0). The PyTorch bench reports
  // the same quantity, which makes the two comparable whatever their allocators keep.
  const double rss_before = resident_bytes();
  const bool rss_window = reset_peak_resident();
  double rss_first_step = -1;
  for (int step = 0; step < options.warmup + options.steps; ++step) {
    if (step == 1 && rss_window && rss_before >= 0) rss_first_step = peak_resident_bytes() - rss_before;
    const SyntheticBatch data = task.sample(batch, data_rng, device);
    if (device.is_cuda()) cuda::synchronize(device.context());
    size_t before = 0;
    if (device.is_cuda()) {
      cuda::reset_peak(device.context());
      before = cuda::bytes_in_use(device.context());
    } else {
      host::reset_peak();
      before = host::in_use_bytes();
    }
    const auto start = std::chrono::steady_clock::now();
    optimizer.zero_grad();
    const Tensor logits = model.forward(data.tokens, true, nullptr);
    const Tensor loss = cross_entropy(reshape(logits, {batch * c.seq_len, c.num_classes}),
                                      reshape(data.targets, {batch * c.seq_len}));
    loss.backward();
    optimizer.step(1e-4f);
    if (device.is_cuda()) cuda::synchronize(device.context());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (step >= options.warmup) times.push_back(ms);
    const size_t after = device.is_cuda() ? cuda::peak_bytes(device.context()) : host::peak_bytes();
    peak = std::max(peak, after - before);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  int threads = 1;
#if defined(_OPENMP)
  threads = omp_get_max_threads();
#endif
  const std::string blas = kernels::blas_core_name();
#if defined(URPE_NATIVE_BUILD)
  const char* host_code = "-march=native";
#else
  const char* host_code = "portable";
#endif
  std::printf("urpe %s, %s, %d threads, BLAS: %s, host code: %s\n", device.is_cpu() ? "cpu" : "cuda",
              cpu_model_name().c_str(), threads,
              blas.empty() ? "built-in blocked GEMM" : ("OpenBLAS " + blas).c_str(), host_code);
  if (device.is_cuda())
    std::printf("GPU: %s, TF32 tensor-core GEMMs %s\n", cuda::device_name(device.context()).c_str(),
                options.tf32 ? "on (--tf32)" : "off (full FP32)");
  std::printf("bench config: n=%lld d=%lld heads=%lld layers=%lld d_ff=%lld batch=%lld pe=urpe "
              "attention=%s; %d timed steps after %d warm-up\n",
              static_cast<long long>(c.seq_len), static_cast<long long>(c.d_model),
              static_cast<long long>(c.heads), static_cast<long long>(c.layers),
              static_cast<long long>(c.d_ff), static_cast<long long>(batch),
              attention_path_name(c.attention), options.steps, options.warmup);
  std::printf("median %.2f ms per step (min %.2f, max %.2f)\n", median, times.front(), times.back());
  std::printf("peak memory of a step: %.1f MiB (%s, tensor storage allocated during the step)\n",
              static_cast<double>(peak) / (1024.0 * 1024.0),
              device.is_cuda() ? "CUDA caching allocator" : "host allocator");
  if (rss_first_step >= 0)
    std::printf("peak RSS growth during the first step: %.1f MiB (from %.1f MiB resident before it)\n",
                rss_first_step / 1048576.0, rss_before / 1048576.0);
  std::printf("load averages (1, 5, 15 min) at the end: %s\n", load_averages().c_str());
  return median;
}

}  // namespace urpe::bench
