// The `urpe` binary: hands argv to the CLI and turns any urpe::Error into one readable line.
// First it puts the runtime settings of train/runtime_env.h in place (BLAS kernels, OpenMP
// spinning), re-executing itself once when one was missing.
#include <cstdio>
#include <exception>

#include "tensor/error.h"
#include "train/cli/command_line.h"
#include "train/io/printable.h"
#include "train/cli/runtime_env.h"

int main(int argc, char** argv) {
  urpe::apply_runtime_environment(argv);
  try {
    return urpe::cli::run(argc, argv);
  } catch (const urpe::Error& e) {
    // printable: one line whatever the message echoes (a file name with a newline, binary bytes).
    std::fprintf(stderr, "urpe: error: %s\n", urpe::printable(e.what()).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "urpe: internal error: %s\n", urpe::printable(e.what()).c_str());
    return 2;
  }
}
