// The `urpe` binary: hands argv to the CLI and turns any urpe::Error into one readable line.
// Before anything else it makes sure OpenBLAS runs the kernels this CPU supports (see
// ops/blas_runtime.h): when OpenBLAS fell back to its SSE3 kernels on an AVX2/AVX-512 CPU, urpe
// re-executes itself once with OPENBLAS_CORETYPE set. A user's own OPENBLAS_CORETYPE is respected.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "ops/blas_runtime.h"
#include "tensor/error.h"
#include "train/cli.h"

int main(int argc, char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    const std::string core = urpe::kernels::blas_core_override();
    if (!core.empty() && ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1) == 0) {
      ::execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
    }
  }
  try {
    return urpe::cli::run(argc, argv);
  } catch (const urpe::Error& e) {
    std::fprintf(stderr, "urpe: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "urpe: internal error: %s\n", e.what());
    return 2;
  }
}
