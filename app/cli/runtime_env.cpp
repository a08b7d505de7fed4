// Environment defaults, then one execv of /proc/self/exe with them in place.
#include "app/cli/runtime_env.h"

#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdlib>
#include <string>

#include "ops/blas_runtime.h"

namespace urpe {

static constexpr const char* kSpinCount = "1000";

void apply_runtime_environment(char** argv) {
  bool changed = false;
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    const std::string core = kernels::blas_core_override();
    if (!core.empty()) changed |= ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1) == 0;
  }
  if (std::getenv("GOMP_SPINCOUNT") == nullptr && std::getenv("OMP_WAIT_POLICY") == nullptr)
    changed |= ::setenv("GOMP_SPINCOUNT", kSpinCount, 1) == 0;
  if (changed) ::execv("/proc/self/exe", argv);  // returns only on failure
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr && std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) {
    ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
    ::mallopt(M_TRIM_THRESHOLD, 512 << 20);
  }
#endif
}

}  // namespace urpe
