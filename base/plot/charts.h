// Charts written as PNG files: line charts (training curves), heatmaps (the learned B and C
// matrices of the paper's Figure 2, one panel per head), grouped bar charts (accuracy per task
// and model, like Figure 1) and pages of several charts. Everything is drawn by
// base/plot/canvas.h; no plotting library.
//
//   plot::LineChartSpec s;
//   s.title = "copy task: validation loss"; s.x_label = "step"; s.y_label = "loss"; s.log_y = true;
//   s.series = {{"URPE", steps, urpe_loss}, {"RPE", steps, rpe_loss}};
//   s.references = {{3.47, "chance: ln 32"}};
//   plot::line_chart(run_dir + "/plots/loss.png", s);
//
// What the charts do so that a picture teaches rather than misleads:
// - series that lie on top of each other are drawn distinguishably: the first of a group of
//   overlapping lines widest and solid, each later one narrower and dashed on top, with its own
//   marker shape, so every one stays visible; series with exactly equal values get a note beside
//   the legend ("RPE = URPE at every point");
// - reference lines (chance, a theorem's bound) are dashed, labelled, and inside the axis range;
//   series that lie on one (noPE at chance) are named in a note, since the line hides there;
// - a log axis never invents a decade for zero: with `zero_band` set, values <= 0 sit in a band
//   under the axis labelled "0", and no line crosses the axis break between the band and the axis
//   (a segment there would pass through values nobody measured);
// - axis ranges have headroom (no line on the frame) and end near the data (no x axis running
//   to 35 for 32 positions);
// - colour bars have a tick every nice step, not only their ends.
//
// Bad input (no data, mismatched sizes, an unwritable path) throws urpe::Error naming the file.
// Files are written atomically (path.tmp, then rename).
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "base/plot/canvas.h"

namespace urpe::plot {

// The i-th series colour (a 10-colour qualitative palette, repeating).
Color series_color(size_t index);

// A horizontal line at y = value across the plot, dashed, with its label at the right end
// ("chance 1/n = 3.1%", "Theorem 2: 1e-5"). The value is always inside the axis range.
struct ReferenceLine {
  double value = 0;
  std::string label;
};

// Where a chart put its parts, for tests (and for pages that place charts side by side).
struct ChartLayout {
  Rect plot;                        // the plotting area, frame included
  Rect legend;                      // the legend box (w = 0: none)
  std::vector<int> reference_rows;  // pixel row of each reference line, in spec order
  std::vector<std::string> notes;   // the notes drawn under the legend (equal series, spec notes)
  int zero_band_row = -1;           // centre row of the "0" band of a log axis, -1 when not drawn
  std::vector<int> reference_label_covered;  // data pixels under each reference label (−1: in the legend)
  bool markers_drawn = false;       // every series shows its marker shape (at every point, or spaced out)
  int path_arrows = 0;              // arrowheads drawn along the series (path_marks)
  // Bar charts: each series' hatch pattern (0: plain), whether every bar has its series' name
  // under it, and the data pixels (bars, whiskers, points) under each value label.
  std::vector<int> bar_hatches = {};
  bool bars_named = false;
  std::vector<int> value_label_covered = {};
};

// ---- line chart ----

struct Series {
  std::string name;
  std::vector<double> x, y;  // same length; points with a NaN/inf coordinate are skipped
};

// How a series was drawn (chosen by the chart: see draw order above).
struct SeriesStyle {
  Color color;
  double width = 2.5;
  Dash dash;
  MarkerShape marker = MarkerShape::circle;
  double marker_radius = 3.5;
  bool hollow = false;
  int draw_rank = 0;  // position in the drawing order (0 first)
};

struct LineChartSpec {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  std::vector<ReferenceLine> references;
  std::vector<std::string> notes;  // extra lines under the legend, wrapped to its width
  bool log_y = false;    // points with y <= 0 are skipped on a log axis, unless zero_band is set
  // log_y only: draw values <= 0 in a band under the axis, with this text in it (e.g.
  // "exactly 0"); empty: skip them. The band appears only when such values exist.
  std::string zero_band;
  // draw a marker at each point: 1 yes, 0 no, -1 when a series has <= 40 points, and with more
  // points and several series, a marker every ~1/16 of a series (offset per series), so that the
  // series are told apart by shape, not by colour alone
  int markers = -1;
  bool integer_x = false;  // x ticks at whole numbers only (layers, positions), never 0.5
  double x_min = NAN;      // the x axis starts here when that is left of the data (training from step 0)
  double y_min = NAN, y_max = NAN;  // the y axis covers at least this range (panels that share a scale)
  // Ranges of x shaded grey behind the data (distances never seen in training); what they mean
  // goes in `notes`.
  struct XBand {
    double lo, hi;
  };
  std::vector<XBand> x_bands = {};
  // Each series is a path (a trajectory, like pos_t in the spiral), not a curve over x: its first
  // point gets a large ring, its last a large square, and arrowheads along it point the way it
  // goes. Say in `notes` what the first and last points are.
  bool path_marks = false;
  int width = 960, height = 600;
};

void line_chart(const std::string& path, const LineChartSpec& spec);
// The same image, in memory; `layout` (optional) receives where the parts went and `styles` how
// each series was drawn.
Canvas render_line_chart(const LineChartSpec& spec, ChartLayout* layout = nullptr,
                         std::vector<SeriesStyle>* styles = nullptr);

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
  // Cell (r, c) shows the matrix's row r·index_step and column c·index_step: a matrix too large
  // for the picture (one cell per pixel and more) drawn at a stride; the axes label the rows and
  // columns of the matrix, not the cells.
  int index_step = 1;
  std::string value_label;  // what the colours mean, written beside the colour bar ("C[i,j]")
  // With vmin/vmax unset: let the colours stop at this quantile of |value − center| (diverging;
  // of the values at both ends, sequential), so that a few extreme cells do not wash out the
  // rest. Cells beyond the range are drawn in the end colour, and the colour bar says so (a
  // pointed end and "N cells beyond"), as it does whenever vmin/vmax cut off data.
  double clip_quantile = NAN;
};

// Where a heatmap grid put its parts, for tests.
struct HeatmapLayout {
  std::vector<Rect> matrices;        // each panel's cells
  std::vector<Rect> bars;            // each colour bar (one when the scale is shared)
  std::vector<int> cells_beyond;     // per bar: cells outside its range (drawn in the end colour)
  std::vector<bool> beyond_marked;   // per bar: its ends pointed and "N cells beyond" written
};

// One heatmap with its colour bar.
void heatmap(const std::string& path, const HeatmapSpec& spec);

// Several heatmaps in a grid of `columns` panels per row (e.g. one per attention head), under a
// common title. With shared_scale, every panel uses the same colour range and one colour bar
// (panels must then share a colour map and centre); otherwise each panel has its own bar.
void heatmap_grid(const std::string& path, const std::vector<HeatmapSpec>& panels, int columns,
                  const std::string& title, bool shared_scale = true);
Canvas render_heatmap_grid(const std::vector<HeatmapSpec>& panels, int columns,
                           const std::string& title, bool shared_scale = true, HeatmapLayout* layout = nullptr);

// The colour of `t` in [0, 1] along a map (0.5 is the diverging map's centre). Exposed for tests.
Color colormap_color(ColorMap map, double t);
// The values labelled on a colour bar over [lo, hi]: about `target` nice steps inside the range,
// with the centre `mid` among them. Exposed for tests.
std::vector<double> colorbar_ticks(double lo, double mid, double hi, int target = 6);

// ---- grouped bar chart ----

struct BarSeries {
  std::string name;            // e.g. a model variant: "URPE"
  std::vector<double> values;  // one per group; NaN leaves a gap
  // Optional, one list per group: the single measurements the bar summarises (one per seed),
  // drawn as dots on the bar with a whisker from the lowest to the highest.
  std::vector<std::vector<double>> points = {};
  bool marked = false;  // carries the chart's mark (BarChartSpec::mark_label) above its bars
};

struct BarChartSpec {
  std::string title, x_label, y_label;
  std::vector<std::string> groups;  // e.g. tasks
  std::vector<BarSeries> series;
  std::vector<ReferenceLine> references;
  bool value_labels = true;  // the value above each bar
  int decimals = -1;         // digits after the point in value labels; -1: 3 significant digits
  double y_min = NAN, y_max = NAN;  // axis range; NaN: from the data (always including 0)
  int height = 560;                 // the width follows from the number of bars (and names)
  // Each bar's series name under it, turned vertical: 1 yes, 0 no, -1 when there is one group
  // (the legend then lists only the reference lines and the mark). Bars not named are hatched,
  // a pattern per series, so that they are told apart without colour.
  int name_bars = -1;
  // What the mark over the bars of `marked` series means, for the legend ("bound by Theorem 2").
  std::string mark_label;
  std::vector<std::string> notes;  // lines under the legend, wrapped to its width
};

void bar_chart(const std::string& path, const BarChartSpec& spec);
Canvas render_bar_chart(const BarChartSpec& spec, ChartLayout* layout = nullptr);

// ---- pages ----

// Charts side by side: each inner vector is one row, left to right, under a page title.
Canvas render_page(const std::string& title, const std::vector<std::vector<Canvas>>& rows);
// A paragraph of text wrapped to `width` pixels, for a page's caption.
Canvas render_caption(const std::string& text, int width);

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
