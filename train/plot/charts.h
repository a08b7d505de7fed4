// Charts written as PNG files: line charts (training curves), heatmaps (the learned B and C
// matrices of the paper's Figure 2, one panel per head) and grouped bar charts (accuracy per task
// and model, like Figure 1). Everything is drawn by train/plots_canvas.h; no plotting library.
//
//   plot::LineChartSpec s;
//   s.title = "copy task: validation loss"; s.x_label = "step"; s.y_label = "loss"; s.log_y = true;
//   s.series = {{"URPE", steps, urpe_loss}, {"RPE", steps, rpe_loss}};
//   plot::line_chart(run_dir + "/plots/loss.png", s);
//
// Bad input (no data, mismatched sizes, an unwritable path) throws urpe::Error naming the file.
// Files are written atomically (path.tmp, then rename).
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "train/plot/canvas.h"

namespace urpe::plot {

// The i-th series colour (a 10-colour qualitative palette, repeating).
Color series_color(size_t index);

// ---- line chart ----

struct Series {
  std::string name;
  std::vector<double> x, y;  // same length; points with a NaN/inf coordinate are skipped
};

struct LineChartSpec {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool log_y = false;    // points with y <= 0 are skipped on a log axis
  int markers = -1;      // draw a dot at each point: 1 yes, 0 no, -1 when a series has <= 40 points
  bool integer_x = false;  // x ticks at whole numbers only (layers, positions), never 0.5
  int width = 960, height = 600;
};

void line_chart(const std::string& path, const LineChartSpec& spec);
Canvas render_line_chart(const LineChartSpec& spec);  // the same image, in memory

// ---- heatmaps ----

enum class ColorMap {
  diverging,   // blue (below centre) - white (centre) - red (above), symmetric about `center`
  sequential,  // viridis, from the minimum to the maximum
};

struct HeatmapSpec {
  std::string title, x_label, y_label;
  int rows = 0, cols = 0;
  std::vector<float> values;  // (rows, cols) row-major; NaN cells are drawn grey
  ColorMap map = ColorMap::diverging;
  double center = 0;   // the diverging map's white point (1 for URPE's C, which starts at ones)
  double vmin = NAN;   // fixed colour range; NaN: from the data
  double vmax = NAN;
};

// One heatmap with its colour bar.
void heatmap(const std::string& path, const HeatmapSpec& spec);

// Several heatmaps in a grid of `columns` panels per row (e.g. one per attention head), under a
// common title. With shared_scale, every panel uses the same colour range and one colour bar
// (panels must then share a colour map and centre); otherwise each panel has its own bar.
void heatmap_grid(const std::string& path, const std::vector<HeatmapSpec>& panels, int columns,
                  const std::string& title, bool shared_scale = true);
Canvas render_heatmap_grid(const std::vector<HeatmapSpec>& panels, int columns,
                           const std::string& title, bool shared_scale = true);

// The colour of `t` in [0, 1] along a map (0.5 is the diverging map's centre). Exposed for tests.
Color colormap_color(ColorMap map, double t);

// ---- grouped bar chart ----

struct BarSeries {
  std::string name;            // e.g. a model variant: "URPE"
  std::vector<double> values;  // one per group; NaN leaves a gap
};

struct BarChartSpec {
  std::string title, x_label, y_label;
  std::vector<std::string> groups;  // e.g. tasks
  std::vector<BarSeries> series;
  bool value_labels = true;  // the value above each bar
  int decimals = -1;         // digits after the point in value labels; -1: 3 significant digits
  double y_min = NAN, y_max = NAN;  // axis range; NaN: from the data (always including 0)
  int height = 560;                 // the width follows from the number of bars
};

void bar_chart(const std::string& path, const BarChartSpec& spec);
Canvas render_bar_chart(const BarChartSpec& spec);

// ---- axis helpers (exposed for tests) ----

// "Nice" tick values (steps of 1, 2 or 5 × 10^k) covering [lo, hi] with about `target` ticks;
// the first tick is <= lo and the last >= hi.
std::vector<double> nice_ticks(double lo, double hi, int target);
// Tick values for a log axis over [lo, hi] (both > 0): powers of ten, with 2 and 5 (or every
// digit) in between when the range spans few decades.
std::vector<double> log_ticks(double lo, double hi);
// A tick label: as few digits as the spacing `step` needs ("0.25", "1500", "2e6", "1e-5").
std::string format_tick(double value, double step);

}  // namespace urpe::plot
