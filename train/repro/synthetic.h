// The paper's synthetic-task comparison (Figure 1): noPE vs RPE vs URPE on PI and ETP, over a grid
// of vocabulary sizes and seeds; writes results.json, results.md (the table) and the plots.
// Shared by `urpe repro synthetic` and `urpe demo` (a one-task slice of the same grid).
#pragma once
#include <string>
#include <vector>

#include "train/io/run_dir.h"

namespace urpe {

struct SyntheticGrid {
  std::string scale;                // tiny | small | paper: picks the presets
  std::vector<std::string> tasks;   // pi, etp
  std::vector<int64_t> vocabs;      // V values
  std::vector<std::string> pes;     // none, rpe, urpe (ape too, if asked)
  int64_t seeds = 1;
  int64_t first_seed = 1;            // seeds run first_seed … first_seed + seeds − 1
  std::string device = "cpu";
  std::vector<std::string> overrides;  // extra key=value applied to every run
};

SyntheticGrid synthetic_grid_for_scale(const std::string& scale);

// Trains every (task, V, pe, seed) into out_dir/runs/<task>-V<V>-<pe>-s<seed>, printing one line
// per run, then writes out_dir/results.json, results.md and plots/. Returns the rows.
std::vector<ResultRow> run_synthetic_grid(const SyntheticGrid& grid, const std::string& out_dir,
                                          const std::string& experiment);

// The Figure-1-style table: one row per (task, V), one column per pe, mean ± spread over seeds.
std::string synthetic_results_markdown(const std::vector<ResultRow>& rows, const SyntheticGrid& grid);

}  // namespace urpe
