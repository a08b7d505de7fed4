// The pictures of a run and of a repro grid, drawn from the files on disk (so `urpe plot --run DIR`
// can redraw them any time):
//   run:  plots/curves.png (token accuracy against step), plots/loss.png (cross-entropy),
//         plots/rpe_bias.png and plots/urpe_c.png (the learned B and C matrices per head, gathered
//         through their bucket maps: the paper's Figure 2)
//   language-model run (model = txl): plots/perplexity.png (training and validation perplexity
//         against step), plots/urpe_c.png (the learned C per head against the relative distance)
//   grid: plots/accuracy.png (grouped bars per task × V × pe: Figure 1),
//         plots/curves_<task>.png (validation accuracy of every variant, first seed),
//         plots/urpe_c_<task>.png (the URPE model's C per head, first seed, largest V)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "train/plot/charts.h"
#include "train/io/run_dir.h"
#include "tensor/tensor.h"

namespace urpe {

struct RunCurve {
  std::string name, task;
  int64_t vocab = 0;
  std::string pe;
  int64_t seed = 0;
  std::string dir;
};

// The Transformer-XL URPE table (H, max_klen) as one line per head against the distance.
plot::LineChartSpec urpe_c_chart(const Tensor& c_table, const std::string& title);

// Returns the paths written.
std::vector<std::string> draw_run_plots(const std::string& run_dir);
std::vector<std::string> draw_grid_plots(const std::string& out_dir, const std::vector<ResultRow>& rows,
                                         const std::vector<RunCurve>& curves);

}  // namespace urpe
