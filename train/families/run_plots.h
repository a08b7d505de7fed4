// The pictures of a run, drawn from its files on disk (so `urpe plot --run DIR` can redraw them
// any time): draw_run_plots asks the run's family (the registry's draw_run_plots), and each family
// draws its own, in its folder (encoder/encoder_plots.h, txl/txl_plots.h,
// graphormer/graphormer_plots.h). Here also the two readers those share.
#pragma once
#include <string>
#include <vector>

#include "base/io/config.h"
#include "base/io/run_dir.h"
#include "base/io/safetensors.h"
#include "base/plot/charts.h"

namespace urpe {

// plots/*.png of the run in `run_dir`, by its family; returns the paths written. A missing or
// malformed metrics.csv is the first error.
std::vector<std::string> draw_run_plots(const std::string& run_dir);

// One split's metric (or loss) of a run's metrics rows against step, times `scale`.
plot::Series metric_series(const std::vector<MetricsRow>& rows, const std::string& split, bool loss,
                           const std::string& name, double scale = 1.0);

// The resolved config a checkpoint carries.
Config config_of_checkpoint(const TensorFile& file);

}  // namespace urpe
