// The txl family's pictures of a language-model run (the registry's draw_run_plots for
// `model = txl`), drawn from the run's files:
//   plots/perplexity.png  training and validation perplexity against step (log axis)
//   plots/urpe_c.png      the learned C per head against the relative distance (pe = urpe)
#pragma once
#include <string>
#include <vector>

#include "base/plot/charts.h"
#include "tensor/tensor.h"

namespace urpe {

std::vector<std::string> draw_txl_run_plots(const std::string& run_dir);

// The Transformer-XL URPE table (H, max_klen) as one line per head against the distance (also
// the LM grid's picture, app/repro/lm.cpp).
plot::LineChartSpec urpe_c_chart(const Tensor& c_table, const std::string& title);

}  // namespace urpe
