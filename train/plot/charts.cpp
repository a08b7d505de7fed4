// Line charts and grouped bar charts, plus the axis machinery they share (nice ticks, tick labels,
// the legend). Heatmaps live in plots_heatmap.cpp.
//
// Layout of both charts, outside in: a title band on top; on the left the rotated y label and the
// y tick labels; below the plot the x tick labels and x label; on the right a legend box outside
// the plotting area, so it never hides data. Sizes follow from the measured text.
#include "train/plot/charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tensor/error.h"

namespace urpe::plot {

Color series_color(size_t index) {
  static const Color palette[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
                                  {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
                                  {188, 189, 34},  {23, 190, 207}};
  return palette[index % 10];
}

// ---- ticks ----

std::vector<double> nice_ticks(double lo, double hi, int target) {
  URPE_CHECK(std::isfinite(lo) && std::isfinite(hi), "plot: axis range [" << lo << ", " << hi << "] is not finite");
  if (lo > hi) std::swap(lo, hi);
  if (hi - lo <= 1e-12 * std::max(1.0, std::fabs(hi))) {  // one value: open a window around it
    const double d = lo == 0 ? 1.0 : std::fabs(lo) * 0.1;
    lo -= d;
    hi += d;
  }
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  const double step = (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last + 0.5; ++k) {
    const double v = k * step;
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  URPE_CHECK(lo > 0 && hi > 0 && std::isfinite(lo) && std::isfinite(hi),
             "plot: log axis range [" << lo << ", " << hi << "] must be positive");
  if (lo > hi) std::swap(lo, hi);
  const int e0 = static_cast<int>(std::floor(std::log10(lo))), e1 = static_cast<int>(std::ceil(std::log10(hi)));
  auto within = [&](const std::vector<int>& mantissas) {
    std::vector<double> t;
    for (int e = e0; e <= e1; ++e)
      for (int m : mantissas) {
        const double v = m * std::pow(10.0, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
      }
    return t;
  };
  std::vector<double> t = within({1});
  if (t.size() >= 3) {
    // Many decades: thin to at most ~8 labels, keeping every k-th power.
    const size_t k = (t.size() + 7) / 8;
    std::vector<double> thinned;
    for (size_t i = 0; i < t.size(); i += k) thinned.push_back(t[i]);
    return thinned;
  }
  t = within({1, 2, 5});
  if (t.size() >= 3) return t;
  t = within({1, 2, 3, 4, 5, 6, 7, 8, 9});
  if (t.size() >= 2) return t;
  // A narrow range inside one decade: linear ticks read better.
  t.clear();
  for (double v : nice_ticks(lo, hi, 4))
    if (v >= lo && v <= hi) t.push_back(v);
  return t;
}

std::string format_tick(double value, double step) {
  step = std::fabs(step);
  if (!(step > 0) || !std::isfinite(step)) step = value != 0 ? std::fabs(value) : 1.0;
  if (std::fabs(value) < step * 1e-6) value = 0;
  const int step_exp = static_cast<int>(std::floor(std::log10(step) + 1e-9));
  char buf[64];
  if (value != 0) {
    const int e = static_cast<int>(std::floor(std::log10(std::fabs(value)) + 1e-9));
    if (e >= 6 || e <= -5) {  // scientific, with the digits the step needs: "2.5e6", "1e-5"
      const int decimals = std::clamp(e - step_exp, 0, 6);
      std::snprintf(buf, sizeof buf, "%.*f", decimals, value / std::pow(10.0, e));
      std::string mantissa = buf;
      if (mantissa.find('.') != std::string::npos) {
        while (mantissa.back() == '0') mantissa.pop_back();
        if (mantissa.back() == '.') mantissa.pop_back();
      }
      return mantissa + "e" + std::to_string(e);
    }
  }
  std::snprintf(buf, sizeof buf, "%.*f", std::clamp(-step_exp, 0, 8), value);
  return buf;
}

namespace {

// ---- shared layout pieces ----

constexpr int kMargin = 16;
constexpr int kTitleScale = 3;
constexpr int kBody = 2;  // text scale for labels, ticks, legend

struct LegendEntry {
  std::string name;
  Color color;
};

int legend_width(const std::vector<LegendEntry>& entries) {
  int w = 0;
  for (const auto& e : entries) w = std::max(w, Canvas::text_width(e.name, kBody));
  return 12 + 30 + 8 + w + 12;
}

// A boxed legend with its top-left at (x, y). `bars`: square swatches; else line swatches.
void draw_legend(Canvas& c, int x, int y, const std::vector<LegendEntry>& entries, bool bars, bool dots) {
  const int row = 26, h = 10 + row * static_cast<int>(entries.size());
  c.fill_rect(x, y, x + legend_width(entries), y + h, colors::white);
  c.outline_rect(x, y, x + legend_width(entries), y + h, colors::grid);
  for (size_t i = 0; i < entries.size(); ++i) {
    const double cy = y + 5 + row * (i + 0.5);
    if (bars) {
      c.fill_rect(x + 18, cy - 8, x + 34, cy + 8, entries[i].color);
    } else {
      c.line(x + 12, cy, x + 42, cy, entries[i].color, 3);
      if (dots) c.disc(x + 27, cy, 4, entries[i].color);
    }
    c.text(x + 50, cy, entries[i].name, colors::text, kBody, HAlign::left, VAlign::middle);
  }
}

// Centred over the plot, but shifted to stay on the canvas when it is wider than the space to
// either side (a long title beside a legend would otherwise lose its first words).
void draw_title(Canvas& c, const std::string& title, int center_x) {
  if (title.empty()) return;
  const int width = Canvas::text_width(title, kTitleScale);
  const int left = std::max(kMargin, std::min(center_x - width / 2, c.width() - kMargin - width));
  c.text(left, kMargin, title, colors::text, kTitleScale, HAlign::left);
}

// The labels around a plot area: the title over it, the x label centred under it at height
// x_label_y, the y label turned along the left margin. Empty labels are left out.
void draw_plot_labels(Canvas& c, const Rect& plot, const std::string& title, const std::string& x_label,
                      const std::string& y_label, double x_label_y) {
  if (!x_label.empty()) c.text(plot.x + plot.w / 2.0, x_label_y, x_label, colors::text, kBody, HAlign::center);
  if (!y_label.empty())
    c.text(kMargin, plot.y + plot.h / 2.0, y_label, colors::text, kBody, HAlign::center, VAlign::top, true);
  draw_title(c, title, plot.x + plot.w / 2);
}

int title_band(const std::string& title) {
  return title.empty() ? kMargin + 8 : kMargin + Canvas::text_height(kTitleScale) + 22;
}

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

// Gridlines, frame, ticks and tick labels of a chart's plotting area.
void draw_y_axis(Canvas& c, const Rect& plot, const AxisMap& y, const std::vector<double>& ticks,
                 double step, bool log) {
  for (double t : ticks) {
    const double py = std::round(y(t));
    if (py < plot.y - 0.5 || py > plot.bottom() + 0.5) continue;
    c.fill_rect(plot.x, py, plot.right(), py + 1, colors::grid);
    c.fill_rect(plot.x - 6, py, plot.x, py + 1, colors::axis);
    c.text(plot.x - 10, py + 0.5, format_tick(t, log ? t : step), colors::text, kBody, HAlign::right,
           VAlign::middle);
  }
}

int max_label_width(const std::vector<double>& ticks, double step, bool log) {
  int w = 0;
  for (double t : ticks) w = std::max(w, Canvas::text_width(format_tick(t, log ? t : step), kBody));
  return w;
}

std::string where(const std::string& path, const std::string& kind, const std::string& title) {
  return (path.empty() ? "" : path + ": ") + kind + (title.empty() ? "" : " '" + title + "'");
}

}  // namespace

// ---- line chart ----

// `path` only names the chart in messages here ("" for an in-memory render).
static Canvas draw_line_chart(const LineChartSpec& spec, const std::string& path) {
  const std::string here = where(path, "line chart", spec.title);
  URPE_CHECK(!spec.series.empty(), here << " has no series");
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  size_t most_points = 0;
  auto usable = [&](double x, double y) { return std::isfinite(x) && std::isfinite(y) && (!spec.log_y || y > 0); };
  for (const Series& s : spec.series) {
    URPE_CHECK(s.x.size() == s.y.size(), here << ": series '" << s.name << "' has " << s.x.size()
                                              << " x values but " << s.y.size() << " y values");
    most_points = std::max(most_points, s.x.size());
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!usable(s.x[i], s.y[i])) continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]);
      y1 = std::max(y1, s.y[i]);
    }
  }
  URPE_CHECK(std::isfinite(x0), here << " has no finite data points" << (spec.log_y ? " (above 0, for the log axis)" : ""));
  const bool markers = spec.markers == 1 || (spec.markers == -1 && most_points <= 40);

  // ---- y axis range and ticks ----
  std::vector<double> y_ticks;
  double y_step = 0, ylo, yhi;
  bool per_tick_labels = false;  // log ticks (1, 2, 5 × 10^k) each get the digits they need
  if (spec.log_y) {
    double a = std::log10(y0), b = std::log10(y1);
    if (b - a < 1e-9) { a -= 0.5; b += 0.5; }
    const double pad = 0.04 * (b - a);
    ylo = std::pow(10.0, a - pad);
    yhi = std::pow(10.0, b + pad);
    y_ticks = log_ticks(ylo, yhi);
    per_tick_labels = true;
    for (double t : y_ticks) {
      const double m = t / std::pow(10.0, std::floor(std::log10(t) + 1e-9));
      if (std::fabs(m - std::round(m)) > 1e-6) per_tick_labels = false;
    }
    if (!per_tick_labels) y_step = y_ticks.size() > 1 ? y_ticks[1] - y_ticks[0] : (yhi - ylo) / 4;
  } else {
    y_ticks = nice_ticks(y0, y1, 6);
    y_step = y_ticks[1] - y_ticks[0];
    ylo = y_ticks.front();
    yhi = y_ticks.back();
  }

  // ---- layout ----
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < spec.series.size(); ++i)
    legend.push_back({spec.series[i].name.empty() ? "series " + std::to_string(i + 1) : spec.series[i].name,
                      series_color(i)});
  Rect plot;
  plot.y = title_band(spec.title);
  plot.x = kMargin + (spec.y_label.empty() ? 0 : Canvas::text_height(kBody) + 14) +
           max_label_width(y_ticks, y_step, per_tick_labels) + 12;
  const int right = spec.width - kMargin - legend_width(legend) - 16;
  plot.w = right - plot.x;
  plot.h = spec.height - plot.y - kMargin - Canvas::text_height(kBody) - 14 -
           (spec.x_label.empty() ? 0 : Canvas::text_height(kBody) + 12);
  URPE_CHECK(plot.w >= 100 && plot.h >= 80, here << ": a " << spec.width << "x" << spec.height
                                                  << " image is too small for this chart");

  // x ticks: fewer when their labels would touch.
  std::vector<double> x_ticks;
  double x_step = 1;
  for (int target = 8; target >= 2; --target) {
    x_ticks = nice_ticks(x0, x1, target);
    if (spec.integer_x && x_ticks[1] - x_ticks[0] < 1) {  // whole numbers only: every integer
      x_ticks.clear();
      const double a = std::floor(x0), b = std::max(std::ceil(x1), a + 1);
      for (double t = a; t <= b + 0.5; ++t) x_ticks.push_back(t);
    }
    x_step = x_ticks[1] - x_ticks[0];
    const double spacing = plot.w / static_cast<double>(x_ticks.size() - 1);
    if (spacing >= max_label_width(x_ticks, x_step, false) + 24) break;
  }
  const AxisMap xm{x_ticks.front(), x_ticks.back(), static_cast<double>(plot.x), static_cast<double>(plot.right()), false};
  const AxisMap ym{ylo, yhi, static_cast<double>(plot.bottom()), static_cast<double>(plot.y), spec.log_y};

  // ---- draw ----
  Canvas c(spec.width, spec.height);
  for (double t : x_ticks) {
    const double px = std::round(xm(t));
    c.fill_rect(px, plot.y, px + 1, plot.bottom(), colors::grid);
    c.fill_rect(px, plot.bottom(), px + 1, plot.bottom() + 6, colors::axis);
    c.text(px + 0.5, plot.bottom() + 10, format_tick(t, x_step), colors::text, kBody, HAlign::center);
  }
  draw_y_axis(c, plot, ym, y_ticks, y_step, per_tick_labels);

  c.set_clip({plot.x + 1, plot.y + 1, plot.w - 1, plot.h - 1});
  for (size_t si = 0; si < spec.series.size(); ++si) {
    const Series& s = spec.series[si];
    std::vector<double> px, py;
    auto flush = [&] {
      c.polyline(px, py, series_color(si), 2.5);
      if (markers)
        for (size_t k = 0; k < px.size(); ++k) c.disc(px[k], py[k], 3.5, series_color(si));
      px.clear();
      py.clear();
    };
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!usable(s.x[i], s.y[i])) {  // a gap: the line breaks here
        flush();
        continue;
      }
      px.push_back(xm(s.x[i]));
      py.push_back(ym(s.y[i]));
    }
    flush();
  }
  c.reset_clip();
  c.outline_rect(plot.x, plot.y, plot.right() + 1, plot.bottom() + 1, colors::axis);

  const int label_gap = 10 + Canvas::text_height(kBody) + 12;
  draw_plot_labels(c, plot, spec.title, spec.x_label, spec.y_label, plot.bottom() + label_gap);
  draw_legend(c, plot.right() + 16, plot.y, legend, false, markers);
  return c;
}

Canvas render_line_chart(const LineChartSpec& spec) { return draw_line_chart(spec, ""); }
void line_chart(const std::string& path, const LineChartSpec& spec) {
  draw_line_chart(spec, path).save_png(path);
}

// ---- grouped bar chart ----

namespace {

std::string bar_value_text(double v, int decimals) {
  char buf[64];
  if (decimals < 0) {
    decimals = v == 0 ? 0 : std::clamp(2 - static_cast<int>(std::floor(std::log10(std::fabs(v)))), 0, 4);
  }
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Splits `text` at spaces into lines no wider than `width` pixels (a long word stays whole).
std::vector<std::string> wrap(const std::string& text, int width) {
  std::vector<std::string> lines;
  std::string line, word;
  auto flush_word = [&] {
    if (word.empty()) return;
    const std::string candidate = line.empty() ? word : line + " " + word;
    if (!line.empty() && Canvas::text_width(candidate, kBody) > width) {
      lines.push_back(line);
      line = word;
    } else {
      line = candidate;
    }
    word.clear();
  };
  for (char ch : text) {
    if (ch == ' ') flush_word();
    else word += ch;
  }
  flush_word();
  if (!line.empty()) lines.push_back(line);
  return lines;
}

}  // namespace

static Canvas draw_bar_chart(const BarChartSpec& spec, const std::string& path) {
  const std::string here = where(path, "bar chart", spec.title);
  const size_t groups = spec.groups.size(), n_series = spec.series.size();
  URPE_CHECK(groups > 0, here << " has no groups");
  URPE_CHECK(n_series > 0, here << " has no series");
  double lo = 0, hi = 0;
  bool any = false;
  for (const BarSeries& s : spec.series) {
    URPE_CHECK(s.values.size() == groups, here << ": series '" << s.name << "' has " << s.values.size()
                                               << " values for " << groups << " groups");
    for (double v : s.values) {
      if (!std::isfinite(v)) continue;
      any = true;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  URPE_CHECK(any, here << " has no finite values");

  // ---- bar width: room for the value labels; with many bars the labels turn vertical ----
  int widest_value = 0;
  for (const BarSeries& s : spec.series)
    for (double v : s.values)
      if (std::isfinite(v)) widest_value = std::max(widest_value, Canvas::text_width(bar_value_text(v, spec.decimals), kBody));
  int bar_w = spec.value_labels ? std::clamp(widest_value + 8, 24, 72) : 36;
  const bool vertical_labels = spec.value_labels && static_cast<int>(groups * n_series) * bar_w > 1400;
  if (vertical_labels) bar_w = Canvas::text_height(kBody) + 10;
  // How far a label reaches past its bar's end, in pixels.
  const int label_len = vertical_labels ? widest_value : Canvas::text_height(kBody);

  // ---- value axis: from the data (with 0), headroom for the value labels, or as given ----
  if (spec.value_labels) {
    const double room = (label_len + 10.0) / std::max(100, spec.height - 170);
    if (hi > 0) hi += room * (hi - lo);
    if (lo < 0) lo -= room * (hi - lo);
  }
  std::vector<double> ticks = nice_ticks(lo, hi, 6);
  const double step = ticks[1] - ticks[0];
  double axis_lo = std::isfinite(spec.y_min) ? spec.y_min : ticks.front();
  double axis_hi = std::isfinite(spec.y_max) ? spec.y_max : ticks.back();
  URPE_CHECK(axis_hi > axis_lo, here << ": y range [" << axis_lo << ", " << axis_hi << "] is empty");
  if (std::isfinite(spec.y_min) || std::isfinite(spec.y_max)) {
    ticks = nice_ticks(axis_lo, axis_hi, 6);
    std::vector<double> inside;
    for (double t : ticks)
      if (t >= axis_lo - 1e-9 * std::fabs(axis_hi - axis_lo) && t <= axis_hi + 1e-9 * std::fabs(axis_hi - axis_lo))
        inside.push_back(t);
    ticks = inside;
  }
  const double tick_step = ticks.size() > 1 ? ticks[1] - ticks[0] : step;

  // ---- horizontal layout ----
  int longest_word = 0;
  for (const std::string& g : spec.groups)
    for (const std::string& w : wrap(g, 0)) longest_word = std::max(longest_word, Canvas::text_width(w, kBody));
  const int group_w = std::max(static_cast<int>(n_series) * bar_w + std::max(24, bar_w), longest_word + 16);
  int label_lines = 1;
  for (const std::string& g : spec.groups) label_lines = std::max(label_lines, static_cast<int>(wrap(g, group_w - 8).size()));

  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < n_series; ++i) legend.push_back({spec.series[i].name, series_color(i)});
  Rect plot;
  plot.y = title_band(spec.title);
  plot.x = kMargin + (spec.y_label.empty() ? 0 : Canvas::text_height(kBody) + 14) +
           max_label_width(ticks, tick_step, false) + 12;
  const int width = std::max(640, plot.x + static_cast<int>(groups) * group_w + 16 + legend_width(legend) + kMargin);
  plot.w = width - kMargin - legend_width(legend) - 16 - plot.x;
  const int line_h = Canvas::text_height(kBody) + 8;
  plot.h = spec.height - plot.y - kMargin - 10 - line_h * label_lines - (spec.x_label.empty() ? 0 : line_h + 8);
  URPE_CHECK(plot.h >= 80, here << ": height " << spec.height << " is too small for this chart");
  const double slot = plot.w / static_cast<double>(groups);  // may exceed group_w on a min-width canvas

  const AxisMap ym{axis_lo, axis_hi, static_cast<double>(plot.bottom()), static_cast<double>(plot.y), false};
  Canvas c(width, spec.height);
  draw_y_axis(c, plot, ym, ticks, tick_step, false);
  const double base = ym(std::clamp(0.0, axis_lo, axis_hi));

  c.set_clip({plot.x + 1, plot.y + 1, plot.w - 1, plot.h - 1});
  auto bar_left = [&](size_t g, size_t s) {
    return std::round(plot.x + slot * g + (slot - n_series * bar_w) / 2.0 + s * bar_w);
  };
  for (size_t g = 0; g < groups; ++g)
    for (size_t s = 0; s < n_series; ++s) {
      const double v = spec.series[s].values[g];
      if (!std::isfinite(v)) continue;
      const double bx = bar_left(g, s), top = ym(v);
      c.fill_rect(bx + 1, std::min(base, top), bx + bar_w - 1, std::max(base, top), series_color(s));
    }
  c.reset_clip();
  // Value labels sit just past the end of each bar; one that would leave the plotting area (a
  // bar reaching a fixed y_max) goes inside the bar's end, in white.
  for (size_t g = 0; g < groups && spec.value_labels; ++g)
    for (size_t s = 0; s < n_series; ++s) {
      const double v = spec.series[s].values[g];
      if (!std::isfinite(v)) continue;
      const double bx = bar_left(g, s);
      const double end = std::clamp(ym(v), static_cast<double>(plot.y), static_cast<double>(plot.bottom()));
      const bool up = v >= 0;
      const std::string text = bar_value_text(v, spec.decimals);
      const int len = vertical_labels ? Canvas::text_width(text, kBody) : Canvas::text_height(kBody);
      const bool outside_plot = up ? end - 5 - len < plot.y + 2 : end + 5 + len > plot.bottom() - 2;
      const bool in_bar = outside_plot && std::fabs(base - end) >= len + 10;
      const bool goes_up = up != in_bar;  // the label extends up from its anchor
      const double ly = goes_up ? end - 5 : end + 5;
      const Color color = in_bar ? colors::white : colors::text;
      if (vertical_labels)
        c.text(bx + bar_w / 2.0, ly, text, color, kBody, goes_up ? HAlign::left : HAlign::right,
               VAlign::middle, true);
      else
        c.text(bx + bar_w / 2.0, ly, text, color, kBody, HAlign::center,
               goes_up ? VAlign::bottom : VAlign::top);
    }
  if (base > plot.y && base < plot.bottom()) c.fill_rect(plot.x, std::round(base), plot.right(), std::round(base) + 1, colors::axis);
  c.outline_rect(plot.x, plot.y, plot.right() + 1, plot.bottom() + 1, colors::axis);

  for (size_t g = 0; g < groups; ++g) {
    const double cx = plot.x + slot * (g + 0.5);
    const std::vector<std::string> lines = wrap(spec.groups[g], group_w - 8);
    for (size_t l = 0; l < lines.size(); ++l)
      c.text(cx, plot.bottom() + 10 + line_h * l, lines[l], colors::text, kBody, HAlign::center);
  }
  draw_plot_labels(c, plot, spec.title, spec.x_label, spec.y_label, plot.bottom() + 10 + line_h * label_lines + 8);
  draw_legend(c, plot.right() + 16, plot.y, legend, true, false);
  return c;
}

Canvas render_bar_chart(const BarChartSpec& spec) { return draw_bar_chart(spec, ""); }
void bar_chart(const std::string& path, const BarChartSpec& spec) {
  draw_bar_chart(spec, path).save_png(path);
}

}  // namespace urpe::plot
