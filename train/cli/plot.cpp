// `urpe plot --run DIR`: redraw a run's plots from its metrics.csv and checkpoint.
#include <cstdio>

#include "tensor/error.h"
#include "train/cli/handlers.h"
#include "train/io/run_dir.h"
#include "train/io/run_lock.h"
#include "train/run_plots.h"

namespace urpe::cli {

int run_plot(const Args& args) {
  const std::string dir = args.get("run");
  URPE_CHECK(!dir.empty(), "urpe plot: --run DIR is required");
  const auto lock = lock_for_reading(dir, "--run");  // no writer may change the run meanwhile
  URPE_CHECK(path_exists(join_path(dir, "metrics.csv")),
             "urpe plot: '" << dir << "' has no metrics.csv (is it a run directory written by urpe train?)");
  for (const std::string& path : draw_run_plots(dir)) std::printf("wrote %s\n", path.c_str());
  return 0;
}

}  // namespace urpe::cli
