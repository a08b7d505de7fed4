// A synthetic grid's results on one page (`plots/summary.png` of `urpe demo` and `urpe repro
// synthetic`), because a learner would rather look than read: the accuracy bars with chance,
// the learning curves, the URPE model's learned C per head, and Theorem 2's probe of every run
// (the spread of identical tokens' hidden states per layer), side by side. Everything is read
// back from the grid's directory, so `urpe plot --run DIR` redraws it any time.
#pragma once
#include <string>

#include "base/plot/canvas.h"

namespace urpe {

// The page, in memory (the probe runs on the CPU: about a second per run at demo size).
plot::Canvas render_grid_summary(const std::string& grid_dir);
// Writes grid_dir/plots/summary.png and returns its path.
std::string draw_grid_summary(const std::string& grid_dir);

}  // namespace urpe
