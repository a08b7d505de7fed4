// Asks OpenBLAS for its kernel family and compares it with what the CPU supports.
#include "ops/blas_runtime.h"

#if defined(URPE_WITH_OPENBLAS)
#include <cblas.h>
#endif

namespace urpe::kernels {

std::string blas_core_name() {
#if defined(URPE_WITH_OPENBLAS)
  const char* name = openblas_get_corename();
  return name ? name : "";
#else
  return "";
#endif
}

std::string blas_core_override() {
#if defined(URPE_WITH_OPENBLAS) && (defined(__x86_64__) || defined(__i386__))
  if (blas_core_name() != "Prescott") return "";
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2")) return "Haswell";
#endif
  return "";
}

}  // namespace urpe::kernels
