// The `urpe` binary: hands argv to the CLI, which turns every failure into one readable line
// (cli::report_errors). First it puts the runtime settings of train/runtime_env.h in place (BLAS
// kernels, OpenMP spinning), re-executing itself once when one was missing.
#include <cstdio>

#include "train/cli/command_line.h"
#include "train/cli/runtime_env.h"

int main(int argc, char** argv) {
  urpe::apply_runtime_environment(argv);
  return urpe::cli::report_errors([&] { return urpe::cli::run(argc, argv); }, stderr);
}
