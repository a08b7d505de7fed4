// `urpe bench step`: the median time of one full training step (forward, backward, Adam) of the
// URPE encoder at the bench configuration of the synthetic-tasks issue — n = 128, d = 128, 4 heads,
// 2 layers, d_ff 512, batch 32 — the number compared with PyTorch (tools/torch_reference.py
// --bench runs the same step with the same warm-up and step count).
#pragma once
#include <string>

namespace urpe::bench {

struct StepBenchOptions {
  std::string device = "cpu";
  int warmup = 5;
  int steps = 20;
  bool tf32 = false;  // TF32 tensor-core GEMMs (CUDA only)
};

// Prints the configuration, the machine and `median X ms per step`; returns the median in ms.
double run_step_benchmark(const StepBenchOptions& options);

}  // namespace urpe::bench
