// The one-page summary of a synthetic grid (see run_summary.h). The charts are the grid's own
// (train/families/encoder/encoder_plots.h) and the probe's (probe.h), drawn smaller and placed
// two by two:
//   accuracy with chance      | learning curves (first task) with chance
//   learned C per head (URPE) | Theorem 2 probe of every run (first seed)
#include "app/analysis/run_summary.h"

#include <algorithm>

#include "app/analysis/analysis_model.h"
#include "app/analysis/probe.h"
#include "base/io/run_dir.h"
#include "base/plot/charts.h"
#include "train/families/encoder/encoder_plots.h"

namespace urpe {

plot::Canvas render_grid_summary(const std::string& grid_dir) {
  std::vector<ResultRow> rows;
  const std::vector<RunCurve> curves = grid_runs_on_disk(grid_dir, &rows);
  const std::string task = curves.front().task;

  std::vector<plot::Canvas> top, bottom;
  plot::BarChartSpec accuracy = grid_accuracy_chart(rows, curves);
  accuracy.height = 480;
  top.push_back(plot::render_bar_chart(accuracy));
  plot::LineChartSpec learning = grid_curves_chart(task, curves);
  learning.width = 900;
  learning.height = 480;
  top.push_back(plot::render_line_chart(learning));

  std::string c_title;
  const std::vector<plot::HeatmapSpec> c_panels = grid_c_panels(task, curves, &c_title);
  if (!c_panels.empty())
    bottom.push_back(plot::render_heatmap_grid(c_panels, static_cast<int>(std::min<size_t>(c_panels.size(), 4)), c_title));

  std::vector<ProbeRun> probed;
  for (const RunCurve& c : curves)
    if (c.task == task && c.seed == 1)
      probed.push_back(probe_identical_tokens(load_run_model(c.dir, "summary.png", {"encoder"}), ProbeOptions{}));
  if (!probed.empty()) {
    plot::LineChartSpec probe = probe_chart(probed);
    probe.width = 900;
    probe.height = 480;
    bottom.push_back(plot::render_line_chart(probe));
  }

  const int64_t seeds = seeds_of(curves);
  std::string title = "Summary of " + grid_dir + ": " + std::to_string(curves.size()) + " runs, " +
                      (seeds == 1 ? "1 seed" : std::to_string(seeds) + " seeds") + " per cell";
  std::vector<std::vector<plot::Canvas>> page_rows = {top};
  if (!bottom.empty()) page_rows.push_back(bottom);
  return plot::render_page(title, page_rows);
}

std::string draw_grid_summary(const std::string& grid_dir) {
  const std::string plots = join_path(grid_dir, "plots");
  make_directories(plots);
  const std::string path = join_path(plots, "summary.png");
  render_grid_summary(grid_dir).save_png(path);
  return path;
}

}  // namespace urpe
