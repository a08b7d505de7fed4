// Grouped bar charts (accuracy per task and model, like the paper's Figure 1): the value axis
// includes 0 and any reference line, with headroom for the value labels; labels turn vertical
// when there are many bars; reference lines (chance) are drawn over the bars. Bars are told apart
// without colour: a hatch pattern per series, or the series' names under the bars (one group);
// the single measurements behind a bar (its seeds) are dots with a whisker, and a mark (a
// diamond) flags the bars of some series ("bound by Theorem 2"), explained in the legend.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tensor/error.h"
#include "base/plot/chart_parts.h"
#include "base/plot/charts.h"

namespace urpe::plot {

using namespace parts;

namespace {

std::string bar_value_text(double v, int decimals) {
  char buf[64];
  if (decimals < 0) {
    decimals = v == 0 ? 0 : std::clamp(2 - static_cast<int>(std::floor(std::log10(std::fabs(v)))), 0, 4);
  }
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Data pixels under a text box: anything but the background and the grid (bars, their hatching,
// whiskers, points, the zero line).
int data_pixels(const Canvas& c, const Rect& box) {
  int n = 0;
  for (int y = std::max(0, box.y); y < std::min(c.height(), box.bottom()); ++y)
    for (int x = std::max(0, box.x); x < std::min(c.width(), box.right()); ++x) {
      const Color p = c.pixel(x, y);
      n += p != colors::white && p != colors::grid;
    }
  return n;
}

// Pixels in `box` of neither colour: inside a bar (its colour, its white hatching), a whisker or dot.
int pixels_other_than(const Canvas& c, const Rect& box, Color a, Color b) {
  int n = 0;
  for (int y = std::max(0, box.y); y < std::min(c.height(), box.bottom()); ++y)
    for (int x = std::max(0, box.x); x < std::min(c.width(), box.right()); ++x) {
      const Color p = c.pixel(x, y);
      n += p != a && p != b;
    }
  return n;
}

constexpr int kMarkRow = 18;  // the mark's row under the axis, above the names
constexpr MarkerShape kMark = MarkerShape::diamond;

}  // namespace

static Canvas draw_bar_chart(const BarChartSpec& spec, const std::string& path, ChartLayout* layout) {
  const std::string here = where(path, "bar chart", spec.title);
  const size_t groups = spec.groups.size(), n_series = spec.series.size();
  URPE_CHECK(groups > 0, here << " has no groups");
  URPE_CHECK(n_series > 0, here << " has no series");
  double lo = 0, hi = 0;
  bool any = false, any_marked = false;
  for (const ReferenceLine& r : spec.references) {
    URPE_CHECK(std::isfinite(r.value), here << ": reference line '" << r.label << "' is not finite");
    lo = std::min(lo, r.value);
    hi = std::max(hi, r.value);
  }
  // The highest (lowest, for a bar below 0) end of a bar with its points: where its label goes.
  auto reach = [&](size_t s, size_t g) {
    const double v = spec.series[s].values[g];
    double r = v;
    if (g < spec.series[s].points.size())
      for (double p : spec.series[s].points[g])
        if (std::isfinite(p)) r = v >= 0 ? std::max(r, p) : std::min(r, p);
    return r;
  };
  for (const BarSeries& s : spec.series) {
    URPE_CHECK(s.values.size() == groups, here << ": series '" << s.name << "' has " << s.values.size()
                                               << " values for " << groups << " groups");
    URPE_CHECK(s.points.empty() || s.points.size() == groups,
               here << ": series '" << s.name << "' has points for " << s.points.size() << " of " << groups << " groups");
    any_marked = any_marked || s.marked;
    for (const std::vector<double>& ps : s.points)
      for (double v : ps)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    for (double v : s.values) {
      if (!std::isfinite(v)) continue;
      any = true;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  URPE_CHECK(any, here << " has no finite values");
  const bool named = spec.name_bars == 1 || (spec.name_bars < 0 && groups == 1);
  const bool mark_below = named && any_marked;  // the mark goes under the axis, above the name

  // ---- bar width: room for the value labels; with many bars the labels turn vertical ----
  int widest_value = 0;
  for (const BarSeries& s : spec.series)
    for (double v : s.values)
      if (std::isfinite(v)) widest_value = std::max(widest_value, Canvas::text_width(bar_value_text(v, spec.decimals), kBody));
  int bar_w = spec.value_labels ? std::clamp(widest_value + 8, 24, 72) : 36;
  const bool vertical_labels = spec.value_labels && static_cast<int>(groups * n_series) * bar_w > 1400;
  if (vertical_labels) bar_w = Canvas::text_height(kBody) + 10;
  // How far a label reaches past its bar's end, in pixels (with the mark above it).
  const int label_len = (vertical_labels ? widest_value : Canvas::text_height(kBody)) + (any_marked && !named ? kMarkRow : 0);

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
  // Under the axis: the mark's row, then the bars' names (vertical), then the group labels.
  int names_len = 0;
  if (named)
    for (const BarSeries& s : spec.series) names_len = std::max(names_len, Canvas::text_width(s.name, kBody));
  const int under_axis = (mark_below ? kMarkRow : 0) + (named ? names_len + 10 : 0);
  const int height = spec.height + under_axis;

  std::vector<LegendEntry> legend;
  std::vector<int> hatches;
  for (size_t i = 0; i < n_series; ++i) {
    hatches.push_back(named ? 0 : static_cast<int>(i % kHatchPatterns));
    if (named) continue;  // the names under the bars say which is which
    SeriesStyle style;
    style.color = series_color(i);
    LegendEntry e{spec.series[i].name, style, false};
    e.hatch = hatches.back();
    legend.push_back(e);
  }
  // Reference lines are named in the legend (a label on the line would collide with the bars'
  // value labels).
  for (const ReferenceLine& r : spec.references) legend.push_back({r.label, {}, false, true});
  if (any_marked) {
    LegendEntry e{spec.mark_label.empty() ? "marked" : spec.mark_label, {}, false};
    e.style.marker = kMark;
    e.mark_only = true;
    legend.push_back(e);
  }
  const int side_w = std::max(legend_width(legend), spec.notes.empty() ? 0 : 300);
  Rect plot;
  plot.x = kMargin + (spec.y_label.empty() ? 0 : Canvas::text_height(kBody) + 14) +
           max_label_width(ticks, tick_step, false) + 12;
  const int width = std::max(640, plot.x + static_cast<int>(groups) * group_w + 16 + side_w + kMargin);
  plot.y = title_band(spec.title, width);
  plot.w = width - kMargin - side_w - 16 - plot.x;
  const int line_h = Canvas::text_height(kBody) + 8;
  plot.h = height - plot.y - kMargin - 10 - under_axis - line_h * label_lines - (spec.x_label.empty() ? 0 : line_h + 8);
  URPE_CHECK(plot.h >= 80, here << ": height " << spec.height << " is too small for this chart");
  const double slot = plot.w / static_cast<double>(groups);  // may exceed group_w on a min-width canvas

  const AxisMap ym{axis_lo, axis_hi, static_cast<double>(plot.bottom()), static_cast<double>(plot.y), false};
  Canvas c(width, height);
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
      fill_hatched(c, bx + 1, std::min(base, top), bx + bar_w - 1, std::max(base, top), series_color(s), hatches[s]);
    }
  // Each bar's single measurements: a whisker from the lowest to the highest, a dot per value
  // (white-ringed, so it shows on the bar and above it), spread across the bar when several.
  for (size_t g = 0; g < groups; ++g)
    for (size_t s = 0; s < n_series; ++s) {
      if (g >= spec.series[s].points.size()) continue;
      std::vector<double> ps;
      for (double p : spec.series[s].points[g])
        if (std::isfinite(p)) ps.push_back(p);
      if (ps.empty()) continue;
      const double cx = bar_left(g, s) + bar_w / 2.0;
      const auto [pmin, pmax] = std::minmax_element(ps.begin(), ps.end());
      if (ps.size() > 1) {
        c.line(cx, ym(*pmin), cx, ym(*pmax), colors::text, 1.5);
        for (double e : {*pmin, *pmax}) c.line(cx - 5, ym(e), cx + 5, ym(e), colors::text, 1.5);
      }
      for (size_t k = 0; k < ps.size(); ++k) {
        const double dx = ps.size() == 1 ? 0 : (k / (ps.size() - 1.0) - 0.5) * std::min(bar_w * 0.5, 8.0 * ps.size());
        c.disc(cx + dx, ym(ps[k]), 4, colors::white);
        c.disc(cx + dx, ym(ps[k]), 2.6, colors::text);
      }
    }
  c.reset_clip();
  // Value labels sit just past the end of each bar (and of its points); one that would leave the
  // plotting area (a bar reaching a fixed y_max) goes inside the bar's end, in white. The mark of
  // a marked series sits just past the label (under the axis when the bars are named).
  std::vector<int> label_covered;
  for (size_t g = 0; g < groups && spec.value_labels; ++g)
    for (size_t s = 0; s < n_series; ++s) {
      const double v = spec.series[s].values[g];
      if (!std::isfinite(v)) continue;
      const double bx = bar_left(g, s);
      const bool up = v >= 0;
      const double end = std::clamp(ym(reach(s, g)), static_cast<double>(plot.y), static_cast<double>(plot.bottom()));
      const std::string text = bar_value_text(v, spec.decimals);
      const int len = vertical_labels ? Canvas::text_width(text, kBody) : Canvas::text_height(kBody);
      const bool outside_plot = up ? end - 5 - len < plot.y + 2 : end + 5 + len > plot.bottom() - 2;
      const bool in_bar = outside_plot && std::fabs(base - ym(v)) >= len + 10;
      const bool goes_up = up != in_bar;  // the label extends up from its anchor
      const double anchor = in_bar ? ym(v) : end;
      double ly = goes_up ? anchor - 5 : anchor + 5;
      // A label the dashed reference line would cross (a bar at chance) moves past the line.
      for (const ReferenceLine& r : spec.references) {
        if (in_bar) break;
        const double row = ym(r.value);
        if (goes_up && row > ly - len - 3 && row < ly + 3) ly = row - 4;
        if (!goes_up && row > ly - 3 && row < ly + len + 3) ly = row + 4;
      }
      const Color color = in_bar ? colors::white : colors::text;
      const int tw = Canvas::text_width(text, kBody), th = Canvas::text_height(kBody);
      const Rect box = vertical_labels
                           ? Rect{int(bx + bar_w / 2.0 - th / 2.0), int(goes_up ? ly - tw : ly), th, tw}
                           : Rect{int(bx + bar_w / 2.0 - tw / 2.0), int(goes_up ? ly - th : ly), tw, th};
      // A label inside its bar covers that bar by design, but not its whisker or dots; elsewhere
      // it must cover nothing.
      label_covered.push_back(in_bar ? pixels_other_than(c, box, series_color(s), colors::white) : data_pixels(c, box));
      if (vertical_labels)
        c.text(bx + bar_w / 2.0, ly, text, color, kBody, goes_up ? HAlign::left : HAlign::right,
               VAlign::middle, true);
      else
        c.text(bx + bar_w / 2.0, ly, text, color, kBody, HAlign::center,
               goes_up ? VAlign::bottom : VAlign::top);
      if (spec.series[s].marked && !mark_below) {
        const double my = goes_up ? ly - len - 9 : ly + len + 9;
        c.marker(bx + bar_w / 2.0, my, kMark, 6, color, false);
      }
    }
  if (base > plot.y && base < plot.bottom()) c.fill_rect(plot.x, std::round(base), plot.right(), std::round(base) + 1, colors::axis);
  const std::vector<int> reference_rows = draw_references(c, plot, ym, spec.references, false, nullptr);
  c.outline_rect(plot.x, plot.y, plot.right() + 1, plot.bottom() + 1, colors::axis);

  if (named)
    for (size_t g = 0; g < groups; ++g)
      for (size_t s = 0; s < n_series; ++s) {
        const double cx = bar_left(g, s) + bar_w / 2.0;
        if (mark_below && spec.series[s].marked) c.marker(cx, plot.bottom() + 6 + kMarkRow / 2.0, kMark, 6, colors::text, false);
        c.text(cx, plot.bottom() + 8 + (mark_below ? kMarkRow : 0), spec.series[s].name, colors::text, kBody,
               HAlign::right, VAlign::middle, true);
      }
  const int groups_y = plot.bottom() + 10 + under_axis;
  for (size_t g = 0; g < groups; ++g) {
    const double cx = plot.x + slot * (g + 0.5);
    const std::vector<std::string> lines = wrap(spec.groups[g], group_w - 8);
    for (size_t l = 0; l < lines.size(); ++l)
      c.text(cx, groups_y + line_h * l, lines[l], colors::text, kBody, HAlign::center);
  }
  draw_plot_labels(c, plot, spec.title, spec.x_label, spec.y_label, groups_y + line_h * label_lines + 8);
  const Rect legend_box = draw_legend(c, plot.right() + 16, plot.y, legend, true);
  if (!spec.notes.empty()) draw_notes(c, plot.right() + 16, legend_box.bottom() + 12, side_w, spec.notes);
  if (layout) {
    *layout = {plot, legend_box, reference_rows, spec.notes, -1, std::vector<int>(reference_rows.size(), -1), true};
    layout->bar_hatches = hatches;
    layout->bars_named = named;
    layout->value_label_covered = label_covered;
  }
  return c;
}

Canvas render_bar_chart(const BarChartSpec& spec, ChartLayout* layout) { return draw_bar_chart(spec, "", layout); }
void bar_chart(const std::string& path, const BarChartSpec& spec) {
  draw_bar_chart(spec, path, nullptr).save_png(path);
}

}  // namespace urpe::plot
