// `urpe bench step [--model encoder|txl|graphormer]`: the median time of one full training step
// (forward, backward, Adam) of a model family at its bench configuration (app/bench/step_models.h),
// the number compared with PyTorch (tools/torch_bench.py runs the same steps with the same
// warm-up and step count; bench/cpu_vs_torch.py alternates the two).
//
// Besides the wall-clock median it prints what explains it:
//   - the GEMM kernels (OpenBLAS core), threads and how the host code was compiled;
//   - the CPU time of a step (both threads): on a shared machine wall time waits for cores, the
//     CPU time much less so;
//   - the step's FLOPs, counted by the ops' own cost formulas over one recorded step (the per-op
//     profiler's hooks, tensor/op_profile.h; GEMMs are exactly 2·m·n·k), its FLOP rate and that
//     rate as a share of the machine's measured sgemm rate (`urpe bench peaks`' cache);
//   - memory: the peak tensor storage a step allocates, the RSS growth over the first step, and
//     the host allocator's reuse over the timed steps (blocks from its cache vs from the system:
//     0 from the system means a steady state without allocations).
#pragma once
#include <cstdint>
#include <string>

namespace urpe::bench {

struct StepBenchOptions {
  std::string device = "cpu";
  std::string model = "encoder";  // encoder | txl | graphormer (app/bench/step_models.h)
  int warmup = 5;
  int steps = 20;
  bool tf32 = false;  // TF32 tensor-core GEMMs (CUDA only)
  int64_t seq_len = 0;  // 0: the model's bench default (encoder n = 128, txl tgt_len = 128)
  int64_t batch = 0;    // 0: the model's bench default (encoder 32, txl 16, graphormer 128 graphs)
  std::string attention = "materialized";  // the training default; or fused (encoder only)
  // --set cuda_graph=on (CUDA; families whose bench step can be captured): the step captured once
  // as a CUDA graph and replayed, timed against the eager step of a second copy of the model in
  // alternating rounds in this process; prints both medians and their ratio.
  bool cuda_graph = false;
};

// Prints the configuration, the machine and `median X ms per step`; returns the median in ms.
double run_step_benchmark(const StepBenchOptions& options);

}  // namespace urpe::bench
