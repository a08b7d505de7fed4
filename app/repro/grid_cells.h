// The runs of a repro grid (synthetic, demo, lm, molecules) when the grid is stopped and continued
// (docs/runs.md#interrupted-grids). Ctrl-C or SIGTERM stops a grid after its current run has saved
// its checkpoint; `urpe repro ... --resume` (the same options again, plus --resume) then walks the
// grid once more and, cell by cell, reuses a run that finished, resumes one that stopped part-way
// and starts the ones never begun. A cell whose run was trained with another config than the grid
// now asks for (other options, another scale) is refused, naming the run and the keys.
#pragma once
#include <string>

#include "base/io/config.h"
#include "base/io/run_dir.h"
#include "train/loop/train_options.h"

namespace urpe {

// How a grid command runs its cells: afresh, or continuing the grid already in its --out.
struct GridContinuation {
  bool continuing = false;  // --resume: reuse or resume the runs already in DIR/runs/
  std::string command;      // the command line that continues this grid, for the interruption note
};

struct GridCellStart {
  enum Kind { fresh, resume, finished } kind = fresh;
  ResultRow result;  // finished: the run's own results.json row
  int64_t step = 0;  // resume: the step its checkpoint holds
};

// How the cell with run directory `dir` and config `config` starts. When the grid does not
// continue (`continuing` false) every cell is fresh (its --out was claimed empty).
GridCellStart grid_cell_start(const std::string& dir, const Config& config, bool continuing);

// Sets options.resume (and leaves options.overwrite on) for a cell that resumes.
void apply_cell_start(const GridCellStart& start, TrainOptions& options);

// The line a grid prints and puts at the top of results.md when a signal stopped it, e.g.
// "**Interrupted** by SIGINT: 3 of 6 runs finished; pi-V100-urpe-s1 stopped at step 481 of 800 and
// is not in the results. Continue the grid with: urpe repro synthetic ... --resume".
std::string grid_interruption_note(int signal, int64_t finished, int64_t total, const std::string& stopped_run,
                                   int64_t stopped_step, int64_t run_steps, const std::string& continue_command);

}  // namespace urpe
