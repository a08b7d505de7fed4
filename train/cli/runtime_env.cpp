// Environment defaults, then one execv of /proc/self/exe with them in place.
#include "train/cli/runtime_env.h"

#include <unistd.h>

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
}

}  // namespace urpe
