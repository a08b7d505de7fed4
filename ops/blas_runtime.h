// Which GEMM kernels OpenBLAS picked at load time, and the fix when it picked badly.
// OpenBLAS (DYNAMIC_ARCH) chooses its kernels from the CPU model when the library is loaded. On a
// CPU model it does not know — common in virtual machines, including the one this project is
// developed on — it falls back to its SSE3 "Prescott" kernels: measured here 11 GFLOP/s instead
// of 51 with the AVX-512 kernels on the same core. The choice can only be overridden through the
// OPENBLAS_CORETYPE environment variable, read before main(); `urpe` therefore re-executes itself
// once with it set (app/cli/main.cpp).
#pragma once
#include <string>

namespace urpe::kernels {

// The kernel family OpenBLAS runs ("SkylakeX", "Haswell", "Prescott", ...); "" without OpenBLAS.
std::string blas_core_name();
// The OPENBLAS_CORETYPE this CPU should use when OpenBLAS fell back to Prescott although the CPU
// supports AVX-512 ("SkylakeX") or AVX2 ("Haswell"); "" when nothing needs fixing.
std::string blas_core_override();

}  // namespace urpe::kernels
