// Heatmaps: one matrix per panel, cells coloured through a diverging or sequential map, a colour
// bar with a tick at every nice step (and at the centre), and a grid of panels (one per attention
// head) under one title. For URPE's C matrices use the diverging map centred at 1 (their initial value), so
// white means "unchanged" and red/blue show where training scaled attention up or down.
#include <algorithm>
#include <cmath>

#include "tensor/error.h"
#include "base/plot/charts.h"

namespace urpe::plot {

namespace {

constexpr int kMargin = 16;
constexpr int kBody = 2;
constexpr int kTitleScale = 3;

// Colour maps as piecewise-linear stops.
const Color kDiverging[] = {{5, 48, 97},     {33, 102, 172}, {67, 147, 195}, {146, 197, 222},
                            {209, 229, 240}, {247, 247, 247}, {253, 219, 199}, {244, 165, 130},
                            {214, 96, 77},   {178, 24, 43},  {103, 0, 31}};  // RdBu, blue low
const Color kViridis[] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},  {44, 113, 142}, {33, 144, 141},
                          {39, 173, 129}, {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};

template <size_t N>
Color interpolate(const Color (&stops)[N], double t) {
  t = std::clamp(t, 0.0, 1.0) * (N - 1);
  const size_t k = std::min(static_cast<size_t>(t), N - 2);
  return mix(stops[k], stops[k + 1], t - k);
}

// The value → colour mapping of one panel (or of all panels, when shared).
struct Scale {
  ColorMap map;
  double lo, mid, hi;  // mid: the diverging map's centre, the sequential map's midpoint
  int below = 0, above = 0;  // cells under lo and over hi (drawn in the end colours)

  double position(double v) const {
    if (map == ColorMap::sequential) return (v - lo) / (hi - lo);
    return v < mid ? 0.5 * (v - lo) / (mid - lo) : 0.5 + 0.5 * (v - mid) / (hi - mid);
  }
  Color color(double v) const {
    return std::isfinite(v) ? colormap_color(map, position(v)) : colors::missing;
  }
};

Scale make_scale(const std::vector<const HeatmapSpec*>& panels) {
  const HeatmapSpec& first = *panels[0];
  double lo = INFINITY, hi = -INFINITY;
  for (const HeatmapSpec* p : panels)
    for (float v : p->values)
      if (std::isfinite(v)) {
        lo = std::min(lo, static_cast<double>(v));
        hi = std::max(hi, static_cast<double>(v));
      }
  if (std::isfinite(first.vmin)) lo = first.vmin;
  if (std::isfinite(first.vmax)) hi = first.vmax;
  Scale s{first.map, lo, 0, hi};
  if (first.map == ColorMap::diverging) {
    const double c = first.center;
    if (!std::isfinite(first.vmin) && !std::isfinite(first.vmax)) {  // symmetric about the centre
      double r = std::max(std::fabs(hi - c), std::fabs(lo - c));
      if (!(r > 0)) r = std::max(std::fabs(c) * 0.1, 1e-6);
      s.lo = c - r;
      s.hi = c + r;
    }
    if (!(s.hi > s.lo)) { s.lo -= 0.5; s.hi += 0.5; }
    s.mid = (c > s.lo && c < s.hi) ? c : (s.lo + s.hi) / 2;
  } else {
    if (!(s.hi > s.lo)) { s.lo -= 0.5; s.hi += 0.5; }
    s.mid = (s.lo + s.hi) / 2;
  }
  // A quantile range: the colours stop short of the few most extreme cells.
  const double q = first.clip_quantile;
  if (std::isfinite(q) && q > 0 && q < 1 && !std::isfinite(first.vmin) && !std::isfinite(first.vmax)) {
    std::vector<double> v;
    for (const HeatmapSpec* p : panels)
      for (float x : p->values)
        if (std::isfinite(x)) v.push_back(first.map == ColorMap::diverging ? std::fabs(x - first.center) : x);
    std::sort(v.begin(), v.end());
    auto at = [&](double f) { return v[static_cast<size_t>(std::lround(f * static_cast<double>(v.size() - 1)))]; };
    if (first.map == ColorMap::diverging) {
      const double r = at(q);
      if (r > 0 && first.center - r > s.lo) s.lo = first.center - r, s.hi = first.center + r;
    } else if (at(q) > at(1 - q)) {
      s.lo = at(1 - q);
      s.hi = at(q);
      s.mid = (s.lo + s.hi) / 2;
    }
  }
  const double eps = 1e-9 * (s.hi - s.lo);
  for (const HeatmapSpec* p : panels)
    for (float x : p->values)
      if (std::isfinite(x)) {
        s.below += x < s.lo - eps;
        s.above += x > s.hi + eps;
      }
  return s;
}

// Row/column indices to label along an axis of n cells of `cell` pixels, cell k showing index
// k·step: a nice step, widened until the labels (which are about as wide as the last index
// written out) have room between them. A tick t is drawn at cell t / step.
std::vector<int> index_ticks(int n, int cell, int step) {
  if (n <= 1) return {0};
  const int last = (n - 1) * step;
  const int label_w = Canvas::text_width(std::to_string(last), kBody);
  std::vector<int> ticks;
  for (int target = std::min(5, n - 1); target >= 1; --target) {
    ticks.clear();
    const std::vector<double> nice = nice_ticks(0, last, target);
    for (double t : nice)
      if (t >= 0 && t <= last) ticks.push_back(static_cast<int>(std::lround(t)));
    if (ticks.size() < 2 || (nice[1] - nice[0]) / step * cell >= label_w + 10) break;
  }
  return ticks;
}

int widest_index_label(int n, int step) {
  return Canvas::text_width(std::to_string(std::max(0, n - 1) * step), kBody);
}

// Colour bar: a vertical gradient of height h at (x, y), tick labels on its right.
constexpr int kBarWidth = 18;
int bar_ticks_target(int h) { return std::clamp(h / 34, 2, 6); }
std::vector<std::string> bar_labels(const Scale& s, const std::vector<double>& ticks) {
  const double step = ticks.size() > 1 ? std::fabs(ticks[1] - ticks[0]) : (s.hi - s.lo) / 4;
  std::vector<std::string> labels;
  for (double t : ticks) labels.push_back(format_tick(t, step));
  return labels;
}
std::string beyond_text(const Scale& s) {
  const int n = s.above + s.below;
  return std::to_string(n) + (n == 1 ? " cell" : " cells");
}
int bar_extent(const Scale& s, int h) {  // horizontal space a bar and its labels take
  int w = 0;
  for (const std::string& l : bar_labels(s, colorbar_ticks(s.lo, s.mid, s.hi, bar_ticks_target(h))))
    w = std::max(w, Canvas::text_width(l, kBody));
  int extent = kBarWidth + 10 + w;
  if (s.above + s.below > 0)  // "N cells / beyond" under the bar
    extent = std::max({extent, Canvas::text_width(beyond_text(s), kBody), Canvas::text_width("beyond", kBody)});
  return extent;
}
// Cells beyond the range: the bar's end is pointed (a triangle in the end colour) at each side
// that data passes, and "N cells / beyond" is written under the bar. Returns whether it did so.
constexpr int kPoint = 12;
bool draw_bar(Canvas& c, const Scale& s, int x, int y, int h) {
  if (s.above > 0 || s.below > 0) {
    const int top = y, bottom = y + h;
    if (s.above > 0) y += kPoint, h -= kPoint;
    if (s.below > 0) h -= kPoint;
    for (int row = 0; row < kPoint; ++row) {  // the triangles, widening towards the bar
      const double half = kBarWidth / 2.0 * (row + 0.5) / kPoint;
      if (s.above > 0) c.fill_rect(x + kBarWidth / 2.0 - half, top + row, x + kBarWidth / 2.0 + half, top + row + 1, s.color(s.hi));
      if (s.below > 0)
        c.fill_rect(x + kBarWidth / 2.0 - half, bottom - row - 1, x + kBarWidth / 2.0 + half, bottom - row, s.color(s.lo));
    }
    if (s.above > 0) {
      c.line(x, y, x + kBarWidth / 2.0, top, colors::axis, 1);
      c.line(x + kBarWidth, y, x + kBarWidth / 2.0, top, colors::axis, 1);
    }
    if (s.below > 0) {
      c.line(x, y + h, x + kBarWidth / 2.0, bottom, colors::axis, 1);
      c.line(x + kBarWidth, y + h, x + kBarWidth / 2.0, bottom, colors::axis, 1);
    }
    c.text(x, bottom + 8, beyond_text(s), colors::text, kBody);
    c.text(x, bottom + 8 + Canvas::text_height(kBody) + 5, "beyond", colors::text, kBody);
  }
  for (int row = 0; row < h; ++row) {
    const double v = s.hi - (s.hi - s.lo) * (row + 0.5) / h;
    c.fill_rect(x, y + row, x + kBarWidth, y + row + 1, s.color(v));
  }
  c.outline_rect(x, y, x + kBarWidth, y + h, colors::axis);
  const std::vector<double> ticks = colorbar_ticks(s.lo, s.mid, s.hi, bar_ticks_target(h));
  const std::vector<std::string> labels = bar_labels(s, ticks);
  for (size_t k = 0; k < ticks.size(); ++k) {
    const double ty = y + h * (s.hi - ticks[k]) / (s.hi - s.lo);
    c.fill_rect(x + kBarWidth, std::round(ty), x + kBarWidth + 4, std::round(ty) + 1, colors::axis);
    c.text(x + kBarWidth + 7, ty, labels[k], colors::text, kBody, HAlign::left, VAlign::middle);
  }
  return s.above > 0 || s.below > 0;
}

std::string prefix(const std::string& path) { return path.empty() ? "" : path + ": "; }

void check_panel(const std::string& path, const HeatmapSpec& p) {
  const std::string here = prefix(path) + "heatmap" + (p.title.empty() ? "" : " '" + p.title + "'");
  URPE_CHECK(p.rows > 0 && p.cols > 0, here << " has no cells (" << p.rows << "x" << p.cols << ")");
  URPE_CHECK(p.index_step >= 1, here << " has index step " << p.index_step << " (expected at least 1)");
  URPE_CHECK(p.values.size() == static_cast<size_t>(p.rows) * p.cols,
             here << " has " << p.values.size() << " values for " << p.rows << "x" << p.cols << " cells");
  bool any = false;
  for (float v : p.values) any = any || std::isfinite(v);
  URPE_CHECK(any, here << " has no finite values");
}

}  // namespace

std::vector<double> colorbar_ticks(double lo, double mid, double hi, int target) {
  const std::vector<double> all = nice_ticks(lo, hi, target);
  const double step = all.size() > 1 ? all[1] - all[0] : hi - lo;
  std::vector<double> ticks;
  const bool mid_inside = mid > lo && mid < hi;
  for (double t : all) {
    if (t < lo - 1e-9 * step || t > hi + 1e-9 * step) continue;
    if (mid_inside && std::fabs(t - mid) < 0.75 * step && std::fabs(t - mid) > 1e-9 * step) continue;  // its label would touch the centre's
    ticks.push_back(t);
  }
  if (mid_inside && std::none_of(ticks.begin(), ticks.end(), [&](double t) { return std::fabs(t - mid) <= 1e-9 * step; })) {
    ticks.push_back(mid);
    std::sort(ticks.begin(), ticks.end());
  }
  return ticks;
}

Color colormap_color(ColorMap map, double t) {
  return map == ColorMap::diverging ? interpolate(kDiverging, t) : interpolate(kViridis, t);
}

// `path` only names the image in messages here ("" for an in-memory render).
static Canvas draw_heatmap_grid(const std::vector<HeatmapSpec>& panels, int columns,
                                const std::string& title, bool shared_scale, const std::string& path,
                                HeatmapLayout* layout = nullptr) {
  URPE_CHECK(!panels.empty(), prefix(path) << "heatmap grid has no panels");
  URPE_CHECK(columns > 0, prefix(path) << "heatmap grid needs at least 1 column, got " << columns);
  for (const HeatmapSpec& p : panels) check_panel(path, p);
  columns = std::min<int>(columns, static_cast<int>(panels.size()));
  const int grid_rows = (static_cast<int>(panels.size()) + columns - 1) / columns;

  // ---- colour scales ----
  std::vector<Scale> scales;
  if (shared_scale) {
    std::vector<const HeatmapSpec*> all;
    for (const HeatmapSpec& p : panels) {
      URPE_CHECK(p.map == panels[0].map && p.center == panels[0].center,
                 prefix(path) << "heatmap grid: panels with a shared colour scale must share the colour map and centre");
      all.push_back(&p);
    }
    scales.assign(panels.size(), make_scale(all));
  } else {
    for (const HeatmapSpec& p : panels) scales.push_back(make_scale({&p}));
  }

  // ---- layout: every panel slot has the same size ----
  int max_rows = 0, max_cols = 0;
  for (const HeatmapSpec& p : panels) {
    max_rows = std::max(max_rows, p.rows);
    max_cols = std::max(max_cols, p.cols);
  }
  const int side = columns >= 3 ? 220 : 300;
  const int cell = std::clamp(side / std::max(max_rows, max_cols), 1, 28);
  const int th = Canvas::text_height(kBody);
  bool any_title = false, any_x = false, any_y = false;
  int index_w = 0, bar_w = 0;
  for (size_t i = 0; i < panels.size(); ++i) {
    const HeatmapSpec& p = panels[i];
    any_title = any_title || (!p.title.empty() && !(panels.size() == 1 && title.empty()));
    any_x = any_x || !p.x_label.empty();
    any_y = any_y || !p.y_label.empty();
    index_w = std::max(index_w, widest_index_label(p.rows, p.index_step));
    bar_w = std::max(bar_w, bar_extent(scales[i], cell * max_rows) + (p.value_label.empty() ? 0 : th + 12));
  }
  const std::string main_title = panels.size() == 1 && title.empty() ? panels[0].title : title;
  const int top_pad = any_title ? th + 10 : 0;
  const int left_pad = (any_y ? th + 10 : 0) + index_w + 10;
  bool any_beyond = false;  // room under a bar for "N cells / beyond"
  for (const Scale& sc : scales) any_beyond = any_beyond || sc.above > 0 || sc.below > 0;
  const int bottom_pad = std::max(8 + th + (any_x ? 10 + th : 0), any_beyond ? 8 + 2 * th + 5 : 0);
  const int right_pad = shared_scale ? 0 : 16 + bar_w;
  const int slot_w = left_pad + max_cols * cell + right_pad + 28;
  const int slot_h = top_pad + max_rows * cell + bottom_pad + 20;
  const int title_band = main_title.empty() ? kMargin : kMargin + Canvas::text_height(kTitleScale) + 20;
  int width = kMargin + columns * slot_w + (shared_scale ? 16 + bar_w : 0) + kMargin;
  width = std::max(width, Canvas::text_width(main_title, kTitleScale) + 2 * kMargin);
  const int height = title_band + grid_rows * slot_h + kMargin;

  Canvas c(width, height);
  HeatmapLayout placed;
  for (size_t i = 0; i < panels.size(); ++i) {
    const HeatmapSpec& p = panels[i];
    const Scale& s = scales[i];
    const int sx = kMargin + static_cast<int>(i % columns) * slot_w;
    const int sy = title_band + static_cast<int>(i / columns) * slot_h;
    const int mx = sx + left_pad, my = sy + top_pad;  // matrix top-left
    const int mw = p.cols * cell, mh = p.rows * cell;

    for (int r = 0; r < p.rows; ++r)
      for (int col = 0; col < p.cols; ++col)
        c.fill_rect(mx + col * cell, my + r * cell, mx + (col + 1) * cell, my + (r + 1) * cell,
                    s.color(p.values[static_cast<size_t>(r) * p.cols + col]));
    c.outline_rect(mx - 1, my - 1, mx + mw + 1, my + mh + 1, colors::axis);
    placed.matrices.push_back({mx, my, mw, mh});

    for (int t : index_ticks(p.cols, cell, p.index_step)) {
      const double x = mx + (static_cast<double>(t) / p.index_step + 0.5) * cell;
      c.fill_rect(std::round(x), my + mh + 1, std::round(x) + 1, my + mh + 5, colors::axis);
      c.text(x, my + mh + 8, std::to_string(t), colors::text, kBody, HAlign::center);
    }
    for (int t : index_ticks(p.rows, cell, p.index_step)) {
      const double y = my + (static_cast<double>(t) / p.index_step + 0.5) * cell;
      c.fill_rect(mx - 5, std::round(y), mx - 1, std::round(y) + 1, colors::axis);
      c.text(mx - 8, y, std::to_string(t), colors::text, kBody, HAlign::right, VAlign::middle);
    }
    if (any_title && !p.title.empty())
      c.text(mx + mw / 2.0, sy, p.title, colors::text, kBody, HAlign::center);
    if (!p.x_label.empty())
      c.text(mx + mw / 2.0, my + mh + 8 + th + 10, p.x_label, colors::text, kBody, HAlign::center);
    if (!p.y_label.empty())
      c.text(sx, my + mh / 2.0, p.y_label, colors::text, kBody, HAlign::center, VAlign::top, true);
    if (!shared_scale) {
      placed.bars.push_back({mx + mw + 16, my, kBarWidth, mh});
      placed.cells_beyond.push_back(s.above + s.below);
      placed.beyond_marked.push_back(draw_bar(c, s, mx + mw + 16, my, mh));
      if (!p.value_label.empty())
        c.text(mx + mw + 16 + bar_extent(s, mh) + 8, my + mh / 2.0, p.value_label, colors::text, kBody, HAlign::center,
               VAlign::top, true);
    }
  }
  if (shared_scale) {
    const int bx = kMargin + columns * slot_w + 4, by = title_band + top_pad, bh = max_rows * cell;
    placed.bars.push_back({bx, by, kBarWidth, bh});
    placed.cells_beyond.push_back(scales[0].above + scales[0].below);
    placed.beyond_marked.push_back(draw_bar(c, scales[0], bx, by, bh));
    if (!panels[0].value_label.empty())
      c.text(bx + bar_extent(scales[0], bh) + 8, by + bh / 2.0, panels[0].value_label, colors::text, kBody,
             HAlign::center, VAlign::top, true);
  }
  if (!main_title.empty())
    c.text(width / 2.0, kMargin, main_title, colors::text, kTitleScale, HAlign::center);
  if (layout) *layout = placed;
  return c;
}

Canvas render_heatmap_grid(const std::vector<HeatmapSpec>& panels, int columns, const std::string& title,
                           bool shared_scale, HeatmapLayout* layout) {
  return draw_heatmap_grid(panels, columns, title, shared_scale, "", layout);
}

void heatmap_grid(const std::string& path, const std::vector<HeatmapSpec>& panels, int columns,
                  const std::string& title, bool shared_scale) {
  draw_heatmap_grid(panels, columns, title, shared_scale, path).save_png(path);
}

void heatmap(const std::string& path, const HeatmapSpec& spec) { heatmap_grid(path, {spec}, 1, "", true); }

}  // namespace urpe::plot
