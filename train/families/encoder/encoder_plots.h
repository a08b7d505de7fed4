// The encoder family's pictures, of a run (the registry's draw_run_plots for `model = encoder`)
// and of a synthetic repro grid, drawn from the files on disk (so `urpe plot --run DIR` can redraw
// them any time; txl's are txl/txl_plots.h, Graphormer's graphormer/graphormer_plots.h):
//   run:  plots/curves.png (token accuracy against step), plots/loss.png (cross-entropy),
//         plots/rpe_bias.png and plots/urpe_c.png (the learned B and C matrices per head, gathered
//         through their bucket maps: the paper's Figure 2)
//   grid: plots/accuracy.png (grouped bars per task × V × pe: Figure 1),
//         plots/curves_<task>.png (validation accuracy of every variant, first seed),
//         plots/urpe_c_<task>.png (the URPE model's C per head, first seed, largest V)
// Encodings are named as readers know them (noPE, RPE, URPE: train/encoding_names.h), accuracy
// charts carry the chance line of position identification, and titles say how many seeds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/io/config.h"
#include "base/plot/charts.h"
#include "base/io/run_dir.h"
#include "tensor/tensor.h"

namespace urpe {

struct RunCurve {
  std::string name, task;
  int64_t vocab = 0;
  std::string pe;
  int64_t seed = 0;
  std::string dir;
};

// Return the paths written.
std::vector<std::string> draw_encoder_run_plots(const std::string& run_dir);
std::vector<std::string> draw_grid_plots(const std::string& out_dir, const std::vector<ResultRow>& rows,
                                         const std::vector<RunCurve>& curves);

// The grid's charts, one function each (draw_grid_plots and the run summary draw them; tests
// check what they teach):
//   accuracy: bars per (task, V) group and encoding, the seed mean, chance (1/n) on PI;
//   curves: validation accuracy against step of every encoding (first seed), chance on PI;
//   C panels: the task's URPE model's C per head (first seed, largest V), with its title.
plot::BarChartSpec grid_accuracy_chart(const std::vector<ResultRow>& rows, const std::vector<RunCurve>& curves);
plot::LineChartSpec grid_curves_chart(const std::string& task, const std::vector<RunCurve>& curves);
// The validation loss beside it (first seed), with chance ln n on PI: a model that cannot tell the
// positions apart sits exactly there, which says more than an accuracy near 3%.
plot::LineChartSpec grid_loss_chart(const std::string& task, const std::vector<RunCurve>& curves);
std::vector<plot::HeatmapSpec> grid_c_panels(const std::string& task, const std::vector<RunCurve>& curves,
                                             std::string* title);

// Chance accuracy of a run directory's position-identification config: 1 / scored positions
// (1/n; 1/(n − 1) under the official protocol). NaN for other tasks.
double chance_accuracy(const std::string& run_dir);
// The loss of a model that cannot tell positions apart, ln(scored positions), as a reference line
// "chance: ln 32 = 3.466" for a position-identification config; none for other tasks.
std::vector<plot::ReferenceLine> pi_chance_loss_lines(const Config& config);
// The number of distinct seeds among the runs.
int64_t seeds_of(const std::vector<RunCurve>& curves);

// The runs of a synthetic grid's directory (`urpe demo`, `urpe repro synthetic`) read back from
// its runs/*/config.txt and results.json, in the grid's order, with their result rows.
std::vector<RunCurve> grid_runs_on_disk(const std::string& out_dir, std::vector<ResultRow>* rows);

}  // namespace urpe
