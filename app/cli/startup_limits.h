// Limits the process must respect before any library starts (docs/runs.md#limits). OpenMP and
// OpenBLAS read their thread count and reserve their buffers in their constructors, which run
// before main(), so urpe checks them even earlier: apply_startup_limits() runs from the
// executable's .preinit_array (app/cli/main.cpp), after the libraries are mapped and before
// any of their constructors.
//  - OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS above the CPUs this process may run
//    on are clamped to that count, with one warning: OMP_NUM_THREADS=100000 crashed in the first
//    GEMM, and more threads than CPUs only slow a run down.
//  - Under an address-space limit (ulimit -v), OpenBLAS reserves a 128 MiB buffer per thread at
//    start-up and, when that fails, retries forever: the program hung before main(). If the limit
//    leaves no room for the libraries already mapped plus those buffers, urpe stops at once with
//    one error line saying the limit it needs, and how many threads would fit a smaller one. (Below
//    about 0.75 GiB with the CUDA libraries, the dynamic loader itself cannot map them and says so.)
// Only plain C library calls are used: the C++ runtime is not initialised yet, and the C library's
// getenv() does not see the environment yet either (it is read from the envp argument).
#pragma once
#include <cstdint>

namespace urpe::cli {

// A .preinit_array function: called with the program's argc, argv and environment.
void apply_startup_limits(int argc, char** argv, char** envp);

// The address space the start-up needs with `threads` OpenBLAS threads, given what is mapped
// already (bytes): mapped + threads × the OpenBLAS buffer + a margin for the first allocations.
uint64_t startup_address_space(uint64_t mapped, int64_t threads);

}  // namespace urpe::cli
