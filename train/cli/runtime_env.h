// Process-environment settings that must be in place before the OpenMP and OpenBLAS runtimes
// load (they read them in their constructors, before main), so `urpe` sets them and
// re-executes itself once. A setting the user already chose is never overridden.
//   OPENBLAS_CORETYPE  OpenBLAS 0.3.21 falls back to SSE3 kernels on CPU models it does not know
//                      (ops/blas_runtime.h): 11 vs 51 GFLOP/s measured here.
//   GOMP_SPINCOUNT     idle OpenMP threads spin 300,000 iterations by default before sleeping; when
//                      the machine has more runnable threads than cores, the spinning steals the
//                      core from the thread doing the work. Measured here on 2 busy cores: the
//                      bench training step 960 → 270 ms with 10,000 (PyTorch: 1190 → 390 ms), and
//                      150 demo-size steps 7.5 → 4.8 s going from 10,000 to 1,000 (bench step
//                      unchanged at ~205 ms), hence 1,000.
// tools/torch_reference.py --bench applies the same two settings, so comparisons stay fair.
#pragma once

namespace urpe {

// Sets what is missing and re-executes the program (argv) when anything changed; returns only
// when nothing needed setting, or when the re-execution failed (the program then runs as it is).
void apply_runtime_environment(char** argv);

}  // namespace urpe
