// `urpe plot --run DIR`: redraw a run's plots from its metrics.csv and checkpoint, or a synthetic
// grid's (`urpe demo`, `urpe repro synthetic`: DIR/runs/) plots and its summary.png.
#include <cstdio>

#include "tensor/error.h"
#include "app/cli/handlers.h"
#include "base/io/run_dir.h"
#include "app/analysis/run_summary.h"
#include "base/io/run_lock.h"
#include "train/families/run_plots.h"
#include "train/families/encoder/encoder_plots.h"

namespace urpe::cli {

int run_plot(const Args& args) {
  const std::string dir = args.get("run");
  URPE_CHECK(!dir.empty(), "urpe plot: --run DIR is required");
  check_readable_run(dir, "--run");  // a run that trains meanwhile is drawn as far as it got
  if (!path_exists(join_path(dir, "metrics.csv")) && is_directory(join_path(dir, "runs")) &&
      path_exists(join_path(dir, "results.json"))) {
    std::vector<ResultRow> rows;
    const std::vector<RunCurve> curves = grid_runs_on_disk(dir, &rows);
    for (const std::string& path : draw_grid_plots(dir, rows, curves)) std::printf("wrote %s\n", path.c_str());
    std::printf("wrote %s\n", draw_grid_summary(dir).c_str());
    return 0;
  }
  URPE_CHECK(path_exists(join_path(dir, "metrics.csv")),
             "urpe plot: '" << dir << "' has no metrics.csv (is it a run directory written by urpe train?) "
             "and no runs/ with results.json (a directory of urpe demo or urpe repro synthetic)");
  for (const std::string& path : draw_run_plots(dir)) std::printf("wrote %s\n", path.c_str());
  return 0;
}

}  // namespace urpe::cli
