// The `urpe` binary: hands argv to the CLI, which turns every failure into one readable line
// (cli::report_errors). First it puts the runtime settings of app/cli/runtime_env.h in place (BLAS
// kernels, OpenMP spinning), re-executing itself once when one was missing.
//
// Under mpirun (docs/distributed.md), a failure that every rank detected
// together (dist::check_collective) is reported by rank 0 alone and the ranks end normally; any
// other failure on one rank aborts every rank (MPI_Abort) instead of leaving them waiting forever.
// A run stopped by Ctrl-C or SIGTERM (exit code 130 or 143) stopped on every rank together, with
// its checkpoint saved.
#include <cstdio>

#include "app/cli/command_line.h"
#include "app/cli/runtime_env.h"
#include "app/cli/startup_limits.h"
#include "base/dist/communicator.h"
#include "base/io/stop_signals.h"

// Thread counts and the address-space limit, checked before OpenMP's and OpenBLAS's constructors
// run (they read the one and reserve their buffers within the other): .preinit_array functions of
// the executable run before any shared library's initialisers.
__attribute__((section(".preinit_array"), used)) static void (*const urpe_startup_limits)(int, char**, char**) =
    urpe::cli::apply_startup_limits;

int main(int argc, char** argv) {
  // A closed output pipe (`urpe train | head`) or a file-size limit (`ulimit -f`) must not kill a run
  // between two files of a checkpoint: the writes fail instead, and say why.
  urpe::ignore_output_signals();
  urpe::apply_runtime_environment(argv);
  // Ranks other than 0 hold their error text until they know whether rank 0 reports it.
  std::FILE* err = urpe::dist::launcher_rank() == 0 ? stderr : std::tmpfile();
  if (!err) err = stderr;
  int rc = urpe::cli::report_errors([&] { return urpe::cli::run(argc, argv); }, err);
  // What a command printed must have reached its destination: `urpe eval > /dev/full` is a failure.
  rc = urpe::cli::check_stdout_written(rc, err);
  const bool failed = rc != 0 && rc != 130 && rc != 143 && !urpe::dist::failure_was_collective();
  if (err != stderr) {
    if (failed) {
      std::rewind(err);
      char buffer[4096];
      size_t n;
      while ((n = std::fread(buffer, 1, sizeof buffer, err)) > 0) std::fwrite(buffer, 1, n, stderr);
      std::fflush(stderr);
    }
    std::fclose(err);
  }
  if (failed && urpe::dist::running_distributed())
    urpe::dist::world().abort(rc);
  urpe::dist::finalize();
  return rc;
}
