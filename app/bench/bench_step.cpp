// One training step timed end to end with a host clock (synchronising the device first), so the
// number includes everything a real step pays: op dispatch, allocation, autograd bookkeeping.
#include "app/bench/bench_step.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "app/bench/peaks.h"
#include "app/bench/step_models.h"
#include "ops/blas_runtime.h"
#include "tensor/cuda_backend.h"
#include "tensor/host_allocator.h"
#include "app/bench/process_memory.h"
#include "base/profile/cuda_event_timer.h"
#include "base/profile/key_averages.h"
#include "base/profile/op_recorder.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace urpe::bench {

namespace {

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct StepFlops {
  double total = 0;  // every op's cost formula
  double gemm = 0;   // of which the products of matmul and linear (forward and backward)
};

// The FLOPs of one step, from the ops' cost formulas: the step runs once under the per-op
// recorder (after the timed steps, so they ran without it), and its op spans' costs are summed.
StepFlops count_step_flops(StepModel& model, const Device& device) {
  model.next_batch();
  profile::OpRecorder recorder(device);
  recorder.begin_step(0);
  model.step();
  recorder.end_step();
  const profile::Recording recording = recorder.take();
  StepFlops flops;
  for (const profile::Span& span : recording.spans) {
    if (span.kind != profile::SpanKind::op) continue;
    flops.total += span.cost.flops;
    const std::string& name = recording.name_of(span);
    if (name.rfind("matmul", 0) == 0 || name.rfind("linear", 0) == 0) flops.gemm += span.cost.flops;
  }
  return flops;
}


// One step's wall time with a host clock, from a synchronised device to a synchronised device.
template <typename Step>
double timed_ms(const Device& device, Step&& step) {
  cuda::synchronize(device.context());
  const auto start = std::chrono::steady_clock::now();
  step();
  cuda::synchronize(device.context());
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The ops' GPU time of a step: `steps` eager steps of `model` under the per-op recorder (a pair
// of CUDA events on the stream around each op: its kernels and any gap inside it), the self time
// of every op summed, per step. A replayed step runs the same kernels, so the share of a step the
// stream is idle is about 1 − this / the step's time.
double ops_gpu_ms_per_step(StepModel& model, const Device& device, int steps) {
  profile::OpRecorder recorder(device);
  for (int k = 0; k < steps; ++k) {
    model.next_batch();
    recorder.begin_step(k);
    model.step();
    recorder.end_step();
  }
  return profile::summarize(recorder.take(), std::nullopt).ops_self_ms;
}

// --set cuda_graph=on: two copies of the model (the same initialisation and data), one stepped
// eagerly, the other captured once (after two eager steps, the second counting the blocks the
// graph's pool needs) and replayed; timed in alternating rounds so that both see the same
// machine. A replayed step's host work: drop the gradients, upload Adam's scalars, one launch.
double run_graph_comparison(const StepBenchOptions& options, const Device& device, const StepModelOptions& model_options) {
  const std::unique_ptr<StepModel> eager = make_step_model(model_options, device);
  const std::unique_ptr<StepModel> graphed = make_step_model(model_options, device);
  const std::string why = graphed->not_captured_because();
  URPE_CHECK(why.empty(), "bench step --set cuda_graph=on: the " << options.model << " bench step " << why
                                                                 << "; use cuda_graph=off");
  cuda::Context* context = device.context();
  for (int k = 0; k < std::max(options.warmup, 2); ++k) {
    eager->next_batch();
    eager->step();
  }
  graphed->next_batch();
  graphed->step();
  graphed->next_batch();
  cuda::begin_allocation_demand(context);
  graphed->step();
  const cuda::AllocationDemand demand = cuda::end_allocation_demand(context);
  graphed->next_batch();
  graphed->host_part();
  cuda::CapturedGraphPtr graph;
  try {
    cuda::begin_capture(context, demand);
    graphed->device_part();
    graph = cuda::end_capture(context);
  } catch (const Error& e) {
    cuda::abort_capture(context);
    URPE_FAIL("bench step --set cuda_graph=on: the " << options.model << " step could not be captured: " << e.what());
  }
  cuda::launch_graph(*graph);
  for (int k = 0; k < std::max(options.warmup, 2); ++k) {  // the replays' warm-up
    graphed->next_batch();
    graphed->host_part();
    cuda::launch_graph(*graph);
  }
  constexpr int kRounds = 5;
  const int per_round = std::max(1, (options.steps + kRounds - 1) / kRounds);
  // Each replay's GPU span: a CUDA event on the stream just before the launch and one after it, so
  // the span is the graph's kernels and the gaps between them, and a replayed step's idle share is
  // 1 − span / step (the per-op recorder cannot see inside a replay: docs/cuda.md#cuda-graphs).
  profile::CudaEventTimer span_events(context);
  std::vector<double> eager_ms, graph_ms, span_ms, replay_idle;
  for (int round = 0; round < kRounds; ++round) {
    for (int k = 0; k < per_round; ++k) {
      eager->next_batch();
      eager_ms.push_back(timed_ms(device, [&] { eager->step(); }));
    }
    for (int k = 0; k < per_round; ++k) {
      graphed->next_batch();
      int launched = 0, finished = 0;
      graph_ms.push_back(timed_ms(device, [&] {
        graphed->host_part();
        launched = span_events.record();
        cuda::launch_graph(*graph);
        finished = span_events.record();
      }));
      span_ms.push_back(span_events.elapsed_ms(launched, finished));  // both passed: timed_ms synchronised
      span_events.reset();
      replay_idle.push_back(1.0 - span_ms.back() / graph_ms.back());
    }
  }
  const double eager_median = median_of(eager_ms), graph_median = median_of(graph_ms);
  constexpr int kRecordedSteps = 3;
  const double ops_ms = ops_gpu_ms_per_step(*eager, device, kRecordedSteps);
  std::printf("GPU: %s, TF32 tensor-core GEMMs %s\n", cuda::device_name(context).c_str(),
              options.tf32 ? "on (--tf32)" : "off (full FP32)");
  std::printf("bench config: %s; cuda_graph: %d alternating rounds of %d eager then %d replayed steps, after %d "
              "warm-up steps each\n",
              graphed->description().c_str(), kRounds, per_round, per_round, std::max(options.warmup, 2));
  std::printf("eager: median %.3f ms per step (min %.3f, max %.3f)\n", eager_median,
              *std::min_element(eager_ms.begin(), eager_ms.end()), *std::max_element(eager_ms.begin(), eager_ms.end()));
  std::printf("cuda_graph: median %.3f ms per step (min %.3f, max %.3f); graph pool %.1f MiB\n", graph_median,
              *std::min_element(graph_ms.begin(), graph_ms.end()), *std::max_element(graph_ms.begin(), graph_ms.end()),
              static_cast<double>(cuda::graph_pool_bytes(*graph)) / (1024.0 * 1024.0));
  std::printf("cuda_graph / eager: %.3f\n", graph_median / eager_median);
  std::printf("ops' GPU time: %.3f ms per step (the eager copy, %d more steps under the per-op recorder: CUDA "
              "events around each op, the ops' self times summed)\n",
              ops_ms, kRecordedSteps);
  std::printf("GPU idle share (1 - ops' GPU time / median step, host clock): eager %.1f%%, cuda_graph %.1f%%\n",
              100.0 * (1.0 - ops_ms / eager_median), 100.0 * (1.0 - ops_ms / graph_median));
  std::printf("cuda_graph: the graph's GPU span median %.3f ms per step (CUDA events on the stream before and after "
              "each launch); GPU idle share of a replayed step (1 - span / step, per step): median %.1f%%\n",
              median_of(span_ms), 100.0 * median_of(replay_idle));
  std::printf("load averages (1, 5, 15 min) at the end: %s\n", load_averages().c_str());
  return graph_median;
}

}  // namespace

double run_step_benchmark(const StepBenchOptions& options) {
  const Device device = parse_device(options.device);
  if (device.is_cuda()) cuda::set_tf32(device.context(), options.tf32);
  URPE_CHECK(options.steps >= 1 && options.warmup >= 0,
             "bench step: needs at least one timed step, got " << options.steps);  // a median of none
  StepModelOptions model_options;
  model_options.model = options.model;
  model_options.seq_len = options.seq_len;
  model_options.batch = options.batch;
  model_options.attention = options.attention;
  if (options.cuda_graph) {
    URPE_CHECK(device.is_cuda(), "bench step --set cuda_graph=on: a CUDA graph replays GPU work; use --device cuda");
    return run_graph_comparison(options, device, model_options);
  }
  const std::unique_ptr<StepModel> model = make_step_model(model_options, device);

  std::vector<double> times, cpu_times;
  size_t peak = 0;  // the most bytes a step held on top of what was live before it
  // The resident set's growth over the first step: every buffer then comes fresh from the
  // system (later steps reuse the host cache, so their growth is 0). The PyTorch bench reports
  // the same quantity, which makes the two comparable whatever their allocators keep.
  const double rss_before = resident_bytes();
  const bool rss_window = reset_peak_resident();
  double rss_first_step = -1;
  host::CacheStats cache_at_start;
  for (int step = 0; step < options.warmup + options.steps; ++step) {
    if (step == 1 && rss_window && rss_before >= 0) rss_first_step = peak_resident_bytes() - rss_before;
    if (step == options.warmup) cache_at_start = host::cache_stats();
    model->next_batch();
    if (device.is_cuda()) cuda::synchronize(device.context());
    size_t before = 0;
    if (device.is_cuda()) {
      cuda::reset_peak(device.context());
      before = cuda::bytes_in_use(device.context());
    } else {
      host::reset_peak();
      before = host::in_use_bytes();
    }
    const double cpu_start = process_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    model->step();
    if (device.is_cuda()) cuda::synchronize(device.context());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const double cpu_ms = (process_cpu_seconds() - cpu_start) * 1e3;
    if (step >= options.warmup) {
      times.push_back(ms);
      cpu_times.push_back(cpu_ms);
    }
    const size_t after = device.is_cuda() ? cuda::peak_bytes(device.context()) : host::peak_bytes();
    peak = std::max(peak, after - before);
  }
  const host::CacheStats cache_at_end = host::cache_stats();
  const StepFlops flops = count_step_flops(*model, device);

  const double median = median_of(times);
  int threads = 1;
#if defined(_OPENMP)
  threads = omp_get_max_threads();
#endif
  const std::string blas = kernels::blas_core_name();
  std::printf("urpe %s, %s, %d threads, BLAS: %s, host code: %s\n", device.is_cpu() ? "cpu" : "cuda",
              cpu_model_name().c_str(), threads,
              blas.empty() ? "built-in blocked GEMM" : ("OpenBLAS " + blas).c_str(), host_code_name());
  if (device.is_cuda())
    std::printf("GPU: %s, TF32 tensor-core GEMMs %s\n", cuda::device_name(device.context()).c_str(),
                options.tf32 ? "on (--tf32)" : "off (full FP32)");
  std::printf("bench config: %s; %d timed steps after %d warm-up\n", model->description().c_str(),
              options.steps, options.warmup);
  std::printf("median %.2f ms per step (min %.2f, max %.2f)\n", median,
              *std::min_element(times.begin(), times.end()), *std::max_element(times.begin(), times.end()));
  if (device.is_cpu())
    std::printf("CPU time per step: median %.2f ms (all threads; wall × threads = %.2f ms)\n", median_of(cpu_times),
                median * threads);
  std::printf("FLOPs per step: %.3f GFLOP (GEMMs %.3f; the ops' cost formulas) = %.1f GFLOP/s\n", flops.total / 1e9,
              flops.gemm / 1e9, flops.total / (median * 1e-3) / 1e9);
  std::string peaks_source;
  const std::optional<profile::MachinePeaks> peaks = profile::cached_peaks(machine_key(device));
  if (peaks && !peaks->smoke)
    std::printf("of the measured sgemm rate: %.1f%% (%.1f GFLOP/s, urpe bench peaks %s)\n",
                100.0 * flops.total / (median * 1e-3) / 1e9 / peaks->gemm_gflops, peaks->gemm_gflops,
                peaks->measured.c_str());
  else
    std::printf("of the measured sgemm rate: unknown (no peaks for this machine: run urpe bench peaks)\n");
  std::printf("peak memory of a step: %.1f MiB (%s, tensor storage allocated during the step)\n",
              static_cast<double>(peak) / (1024.0 * 1024.0),
              device.is_cuda() ? "CUDA caching allocator" : "host allocator");
  if (rss_first_step >= 0)
    std::printf("peak RSS growth during the first step: %.1f MiB (from %.1f MiB resident before it)\n",
                rss_first_step / 1048576.0, rss_before / 1048576.0);
  if (device.is_cpu())
    std::printf("host allocator over the timed steps: %zu blocks reused from its cache, %zu from the system "
                "(+ %zu below %zu bytes from malloc)\n",
                cache_at_end.hits - cache_at_start.hits, cache_at_end.misses - cache_at_start.misses,
                cache_at_end.small - cache_at_start.small, host::kMinCachedBytes);
  std::printf("load averages (1, 5, 15 min) at the end: %s\n", load_averages().c_str());
  return median;
}

}  // namespace urpe::bench
