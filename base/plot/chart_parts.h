// The pieces every chart in base/plot shares (internal to the plot library): sizes, the legend,
// the title and axis labels, the value → pixel map of an axis, the y axis with its grid, word
// wrapping, reference lines and notes. Charts are laid out outside in: a title band on top; on
// the left the rotated y label and the y tick labels; below the plot the x tick labels and the x
// label; on the right a legend box (and notes) outside the plotting area, so it never hides data.
#pragma once
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "base/plot/charts.h"

namespace urpe::plot::parts {

constexpr int kMargin = 16;
constexpr int kTitleScale = 3;
constexpr int kBody = 2;  // text scale for labels, ticks, legend

// One legend row: a line swatch in the series' style, a square swatch for bars, or a reference
// line's dashed grey swatch.
struct LegendEntry {
  std::string name;
  SeriesStyle style;
  bool markers = false;
  bool reference = false;
  int hatch = 0;           // a bar swatch's hatch pattern (bar_hatch)
  bool mark_only = false;  // the swatch is the marker alone, in the text colour (a bar chart's mark)
};

// Hatch patterns for bars, so that bars are told apart without colour: 0 is plain, 1..9 lines
// and dots in white over the bar's colour; series k gets pattern k mod 10.
constexpr int kHatchPatterns = 10;
// Fills [x0, x1) × [y0, y1) with `c`, then the pattern in white (the pattern is anchored at the
// canvas origin, so adjacent bars of one series line up).
void fill_hatched(Canvas& c, double x0, double y0, double x1, double y1, Color color, int hatch);

int legend_width(const std::vector<LegendEntry>& entries);
int legend_height(const std::vector<LegendEntry>& entries);
// A boxed legend with its top-left at (x, y); returns its box.
Rect draw_legend(Canvas& c, int x, int y, const std::vector<LegendEntry>& entries, bool bars);

// Notes under the legend at (x, y), each wrapped to `width`; returns the height used.
int draw_notes(Canvas& c, int x, int y, int width, const std::vector<std::string>& notes);
int notes_height(int width, const std::vector<std::string>& notes);

// The title centred over the plot, shifted to stay on the canvas when it is wider than the space
// to either side (and set smaller, then wrapped, when it is wider than the canvas); the x label
// centred under the plot at x_label_y; the y label turned along the left margin. Empty labels
// are left out.
void draw_plot_labels(Canvas& c, const Rect& plot, const std::string& title, const std::string& x_label,
                      const std::string& y_label, double x_label_y);
// The height above the plot that the title takes on a canvas `canvas_width` wide.
int title_band(const std::string& title, int canvas_width);

// Maps a data value to a pixel along an axis: [lo, hi] → [p0, p1].
struct AxisMap {
  double lo, hi, p0, p1;
  bool log = false;
  double operator()(double v) const {
    const double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi;
    const double t = ((log ? std::log10(v) : v) - a) / (b - a);
    return p0 + t * (p1 - p0);
  }
};

// Gridlines, ticks and tick labels of the y axis over the rows [top, bottom] of `plot`.
void draw_y_axis(Canvas& c, const Rect& plot, const AxisMap& y, const std::vector<double>& ticks, double step,
                 bool per_tick_labels);
int max_label_width(const std::vector<double>& ticks, double step, bool per_tick_labels);

// A linear axis over the data range [lo, hi] with headroom: `pad` of the span on each side, so
// no data point lies on the frame. Ticks are nice steps inside the padded range.
struct LinearAxis {
  double lo, hi, step;
  std::vector<double> ticks;
};
LinearAxis padded_axis(double lo, double hi, int target_ticks, double pad = 0.05);

// Reference lines across the plot, dashed. Each label goes at one end of its line, above or
// below it, where it covers no pixel already drawn (data). Where every place would, the line's
// index goes to `unlabelled` (the caller names it in its legend) when `legend_fits(index)`, else
// the label goes where it covers the fewest. `labels` false: every line goes to `unlabelled`.
// Returns each line's pixel row; `label_covered` (optional) gets, per line, the data pixels under
// its label (0: clear; −1: no label in the plot).
std::vector<int> draw_references(Canvas& c, const Rect& plot, const AxisMap& y,
                                 const std::vector<ReferenceLine>& references, bool labels,
                                 std::vector<size_t>* unlabelled, const std::function<bool(size_t)>& legend_fits = {},
                                 std::vector<int>* label_covered = nullptr);

// Splits `text` at spaces into lines no wider than `width` pixels (a long word stays whole).
std::vector<std::string> wrap(const std::string& text, int width);

// "path: kind 'title'" for error messages.
std::string where(const std::string& path, const std::string& kind, const std::string& title);

}  // namespace urpe::plot::parts
