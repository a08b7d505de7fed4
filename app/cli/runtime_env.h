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
// One more, in-process (no re-execution needed), unless MALLOC_MMAP_THRESHOLD_ or
// MALLOC_TRIM_THRESHOLD_ is set:
//   glibc malloc       a step's host-side buffers (a batch's index maps, kernels' scratch vectors)
//                      are freed and allocated again every step; by default each one above 128 KiB
//                      is a fresh mmap whose pages the kernel clears on first touch, and the heap's
//                      top is returned early. With the mmap threshold at 32 MiB and the trim
//                      threshold at 512 MiB they stay in the heap: Graphormer's bench step spent 15%
//                      of its CPU time in the kernel (page clearing, faults), 9% after.
#pragma once

namespace urpe {

// Sets what is missing and re-executes the program (argv) when anything changed; returns only
// when nothing needed setting, or when the re-execution failed (the program then runs as it is).
void apply_runtime_environment(char** argv);

}  // namespace urpe
