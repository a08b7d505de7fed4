// The paper's synthetic-task comparison (Figure 1): noPE vs RPE vs URPE on PI and ETP, over a grid
// of vocabulary sizes and seeds; writes results.json, results.md (the table) and the plots.
// Shared by `urpe repro synthetic` and `urpe demo` (a one-task slice of the same grid).
#pragma once
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "base/io/run_dir.h"
#include "app/repro/grid_cells.h"
#include "app/repro/repro_overrides.h"

namespace urpe {

// What the probe measured on one run: the largest identical-token hidden-state spread over its
// layers, and the position-identification accuracy on identical tokens (NaN for ETP).
struct GridProbe {
  double spread = 0;
  double identical_accuracy = NAN;
};

struct SyntheticGrid {
  std::string scale;                // tiny | small | paper: picks the presets
  std::vector<std::string> tasks;   // pi, etp
  std::vector<int64_t> vocabs;      // V values
  std::vector<std::string> pes;     // none, rpe, urpe by default; any `pe` value (--pes)
  std::vector<int64_t> lengths;     // seq_len values (--lengths); empty: the preset's own
  int64_t seeds = 1;
  int64_t first_seed = 1;            // seeds run first_seed … first_seed + seeds − 1
  std::string device = "cpu";
  std::vector<std::string> overrides;  // extra key=value applied to every run (the demo's)
  ReproOverrides extra;                // the user's --set (after `overrides`) and --tf32, every run
  // Theorem 2's probe of a finished run directory (`urpe theory probe`). The CLI supplies it
  // (app/analysis sits beside app/repro); when set, results.md gets a line sorting the
  // encodings by their spread, and each PI row a row of accuracies on identical tokens under it.
  std::function<GridProbe(const std::string& run_dir)> probe;
};

// Where and when a grid ran, printed under results.md's table so that the file says by itself what
// was measured: the machine (CPU model and threads, or the GPU), the load averages (1, 5, 15 min)
// before and after (the development machines are shared), the wall time and the UTC date.
struct GridMachine {
  std::string machine;
  std::string load_before, load_after;
  std::string finished_utc;  // "2026-11-23 14:05 UTC"
  double wall_seconds = 0;
};

// The `urpe repro synthetic` command that runs `grid` (its scale, seeds, tasks, encodings and
// lengths; --out left to the reader), for results.md.
std::string synthetic_command(const SyntheticGrid& grid);

// A spread at most this is "zero up to float rounding" (the threshold of `urpe theory probe`).
constexpr double kSpreadZero = 1e-5;

// The line under the table: encodings sorted by their largest spread over the runs, split into
// those the theorem binds (spread ≤ kSpreadZero) and those that tell identical tokens apart.
// spreads: pe → largest spread over its runs, in the grid's pe order.
std::string theorem2_line(const std::vector<std::pair<std::string, double>>& spreads);

SyntheticGrid synthetic_grid_for_scale(const std::string& scale);

// One run of the grid: its directory name under runs/ (<task>-V<V>[-n<n>]-<pe>-s<seed>; length 0
// is the preset's own seq_len) and the assignments it adds to its preset <task>-<scale>: pe, vocab,
// seed, device, [seq_len], the grid's overrides, the user's --set.
std::string synthetic_run_name(const std::string& task, int64_t vocab, int64_t length, const std::string& pe,
                               int64_t seed);
std::vector<std::string> synthetic_run_sets(const SyntheticGrid& grid, const std::string& pe, int64_t vocab,
                                            int64_t length, int64_t seed);

// Trains every (task, V, n, pe, seed) into out_dir/runs/<task>-V<V>[-n<n>]-<pe>-s<seed> (-n<n> when
// lengths are given), printing one line per run, then writes out_dir/results.json, results.md and plots/. Returns the rows.
// Ctrl-C or SIGTERM stops the grid after the current run saves: the files then hold the finished
// runs only, and results.md starts with a note naming the stopped run and `continuation.command`.
// With continuation.continuing the runs already in out_dir/runs are reused or resumed
// (grid_cells.h).
std::vector<ResultRow> run_synthetic_grid(const SyntheticGrid& grid, const std::string& out_dir,
                                          const std::string& experiment, const GridContinuation& continuation = {});

// The Figure-1-style table: one row per (task, V[, n]), one column per pe, mean ± spread over
// seeds; above it the command and the model/training setting per (task, n), under it `probe_line`
// (theorem2_line, or empty) and, when given, where and when it ran. `identical` (one per row of
// `rows`, or empty) is each run's accuracy on identical tokens: a PI row then gets a row
// "pi (identical tokens)" under it, the accuracy Theorem 2 bounds by 1/n.
std::string synthetic_results_markdown(const std::vector<ResultRow>& rows, const SyntheticGrid& grid,
                                       const std::string& probe_line = "", const GridMachine* machine = nullptr,
                                       const std::vector<double>& identical = {});

}  // namespace urpe
