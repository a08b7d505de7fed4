// The --out directory of a grid command (`urpe repro`, `urpe demo`): claimed afresh (an OutputClaim:
// another run there is refused unless --overwrite), or, with --resume, reopened to continue the grid
// a signal stopped (docs/runs.md#interrupted-grids). Either way DIR is locked for the whole command.
#pragma once
#include <memory>
#include <string>

#include "app/cli/command_line.h"
#include "base/io/run_dir.h"
#include "app/repro/grid_cells.h"
#include "app/repro/synthetic.h"

namespace urpe::cli {

class GridOutput {
 public:
  // `out` is the directory as resolved once (normal_directory). Errors: --resume with --overwrite,
  // --resume of a directory that holds no grid, and everything OutputClaim and RunDirectoryLock refuse.
  GridOutput(const Args& args, const std::string& out);
  const GridContinuation& continuation() const { return continuation_; }
  // Whether a signal stopped a grid that replaces an old one (--overwrite) before any of its runs
  // saved a checkpoint: the grid wrote no results, and the old grid comes back when this ends.
  bool old_run_comes_back() const;
  // The command ran to its end (the claim is done: an old grid is deleted) or a signal stopped it
  // (the claim keeps what has a checkpoint, else puts an old grid back). Returns the exit code: 0,
  // or 130 / 143 / 129 when SIGINT / SIGTERM / SIGHUP stopped the grid.
  int finish();

 private:
  std::string out_;
  std::unique_ptr<OutputClaim> claim_;
  std::unique_ptr<RunDirectoryLock> lock_;
  GridContinuation continuation_;
};

// The command line that continues `args`'s grid: the same command, words and options, with --resume
// (and without --overwrite).
std::string grid_continue_command(const Args& args);

// Theorem 2's probe of a finished synthetic run (`urpe theory probe` with its defaults): the largest
// hidden-state spread over its layers and the accuracy on identical tokens (SyntheticGrid::probe).
GridProbe grid_probe(const std::string& run_dir, const std::string& command);

}  // namespace urpe::cli
