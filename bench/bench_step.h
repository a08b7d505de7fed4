// `urpe bench step`: the median time of one full training step (forward, backward, Adam) of the
// URPE encoder at the bench configuration of the synthetic-tasks issue — n = 128, d = 128, 4 heads,
// 2 layers, d_ff 512, batch 32 — the number compared with PyTorch (tools/torch_reference.py
// --bench runs the same step with the same warm-up and step count). --seq-len and --batch change
// n and the batch (the long-sequence bench is n = 1024, batch 4), --attention the attention path;
// the peak memory of a step is printed beside the time.
#pragma once
#include <cstdint>
#include <string>

namespace urpe::bench {

struct StepBenchOptions {
  std::string device = "cpu";
  int warmup = 5;
  int steps = 20;
  bool tf32 = false;  // TF32 tensor-core GEMMs (CUDA only)
  int64_t seq_len = 128;
  int64_t batch = 32;
  std::string attention = "materialized";  // the training default; or fused (models/attention.h)
};

// Prints the configuration, the machine and `median X ms per step`; returns the median in ms.
double run_step_benchmark(const StepBenchOptions& options);

}  // namespace urpe::bench
