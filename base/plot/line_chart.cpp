// Line charts: training curves, per-layer probes, row sums against position. The axes are fitted
// to the data with headroom (and to the reference lines), a log axis can carry a "0" band for
// values it cannot show, and overlapping series get the styles of series_styles.h.
#include <algorithm>
#include <cmath>

#include "tensor/error.h"
#include "base/plot/chart_parts.h"
#include "base/plot/charts.h"
#include "base/plot/series_styles.h"

namespace urpe::plot {

using namespace parts;

namespace {

constexpr int kZeroBand = 44;  // height of the "0" band under a log axis, and the gap above it
constexpr int kBandGap = 10;

}  // namespace

// `path` only names the chart in messages here ("" for an in-memory render).
// `wide_column`: lay out with the notes' column beside the plot even without notes (a second try,
// when a reference label found no free place and the legend was too narrow to take it).
static Canvas draw_line_chart(const LineChartSpec& spec, const std::string& path, ChartLayout* layout,
                              std::vector<SeriesStyle>* styles_out, bool wide_column = false) {
  const std::string here = where(path, "line chart", spec.title);
  URPE_CHECK(!spec.series.empty(), here << " has no series");
  const bool band_allowed = spec.log_y && !spec.zero_band.empty();
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  size_t most_points = 0;
  bool any_zero = false;  // a value for the "0" band
  auto finite = [](double x, double y) { return std::isfinite(x) && std::isfinite(y); };
  auto usable = [&](double x, double y) { return finite(x, y) && (!spec.log_y || y > 0 || band_allowed); };
  for (const Series& s : spec.series) {
    URPE_CHECK(s.x.size() == s.y.size(), here << ": series '" << s.name << "' has " << s.x.size()
                                              << " x values but " << s.y.size() << " y values");
    most_points = std::max(most_points, s.x.size());
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!usable(s.x[i], s.y[i])) continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      if (spec.log_y && s.y[i] <= 0) {
        any_zero = true;
        continue;
      }
      y0 = std::min(y0, s.y[i]);
      y1 = std::max(y1, s.y[i]);
    }
  }
  URPE_CHECK(std::isfinite(x0), here << " has no finite data points" << (spec.log_y ? " (above 0, for the log axis)" : ""));
  for (const ReferenceLine& r : spec.references) {
    URPE_CHECK(std::isfinite(r.value) && (!spec.log_y || r.value > 0),
               here << ": reference line '" << r.label << "' at " << r.value << " cannot be drawn on this axis");
    y0 = std::min(y0, r.value);
    y1 = std::max(y1, r.value);
  }
  if (std::isfinite(spec.y_min) && (!spec.log_y || spec.y_min > 0)) y0 = std::min(y0, spec.y_min);
  if (std::isfinite(spec.y_max) && (!spec.log_y || spec.y_max > 0)) y1 = std::max(y1, spec.y_max);
  if (!std::isfinite(y0)) y0 = y1 = 1;  // log axis with only zeros: one decade around 1
  const bool markers = spec.markers == 1 || (spec.markers == -1 && most_points <= 40);
  const bool sparse_markers = !markers && spec.markers == -1 && spec.series.size() > 1;
  const bool band = band_allowed && any_zero;

  // ---- y axis range and ticks ----
  std::vector<double> y_ticks;
  double y_step = 0, ylo, yhi;
  bool per_tick_labels = false;  // log ticks (1, 2, 5 × 10^k) each get the digits they need
  if (spec.log_y) {
    double a = std::log10(y0), b = std::log10(y1);
    if (b - a < 1e-9) { a -= 0.5; b += 0.5; }
    const double pad = 0.05 * (b - a);
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
    const LinearAxis axis = padded_axis(y0, y1, 6);
    y_ticks = axis.ticks;
    y_step = axis.step;
    ylo = axis.lo;
    yhi = axis.hi;
  }

  // ---- legend, notes and layout ----
  std::vector<std::string> names;
  for (size_t i = 0; i < spec.series.size(); ++i)
    names.push_back(spec.series[i].name.empty() ? "series " + std::to_string(i + 1) : spec.series[i].name);
  std::vector<LegendEntry> legend;
  for (const std::string& name : names) legend.push_back({name, {}, markers || sparse_markers});
  int label_w = max_label_width(y_ticks, y_step, per_tick_labels);
  if (band) label_w = std::max(label_w, Canvas::text_width("0", kBody));

  // Everything that depends on the plot's size. The notes (what overlaps, from the styles) need a
  // column beside the legend, which makes the plot narrower: when notes turn up that the first
  // layout had no room for, it is done again with the column.
  Rect plot;
  int axis_bottom = 0, column_w = 0;
  double band_row = 0;
  AxisMap xm{}, ym{};
  std::vector<double> x_ticks;
  double x_step = 1;
  std::vector<PixelPath> paths;
  std::vector<SeriesStyle> styles;
  std::vector<std::string> notes;
  auto lay_out = [&](bool with_notes) {
    column_w = std::max(legend_width(legend), with_notes ? std::min(300, spec.width / 3) : 0);
    plot.y = title_band(spec.title, spec.width);
    plot.x = kMargin + (spec.y_label.empty() ? 0 : Canvas::text_height(kBody) + 14) + label_w + 12;
    plot.w = spec.width - kMargin - column_w - 16 - plot.x;
    plot.h = spec.height - plot.y - kMargin - Canvas::text_height(kBody) - 14 -
             (spec.x_label.empty() ? 0 : Canvas::text_height(kBody) + 12);
    URPE_CHECK(plot.w >= 100 && plot.h >= 80 + (band ? kZeroBand + kBandGap : 0),
               here << ": a " << spec.width << "x" << spec.height << " image is too small for this chart");
    // The log axis proper ends above the band; zero values sit in the band's upper part, its
    // label in the lower right.
    axis_bottom = band ? plot.bottom() - kZeroBand - kBandGap : plot.bottom();
    band_row = plot.bottom() - kZeroBand + 13;

    // x axis: the data range and a little room for the end markers; ticks inside it only, fewer
    // when their labels would touch.
    double xlo = x0, xhi = x1;
    if (std::isfinite(spec.x_min) && spec.x_min < x0) xlo = spec.x_min;
    const double data_lo = xlo;
    if (xhi - xlo < 1e-12 * std::max(1.0, std::fabs(xhi))) {
      xlo -= spec.integer_x ? 1 : std::max(0.5, std::fabs(xlo) * 0.1);
      xhi += spec.integer_x ? 1 : std::max(0.5, std::fabs(xhi) * 0.1);
    } else {
      const double pad = std::max(0.02 * (xhi - xlo), 8.0 * (xhi - xlo) / plot.w);  // at least 8 px
      xlo -= pad;
      xhi += pad;
    }
    for (int target = 8; target >= 2; --target) {
      std::vector<double> all = nice_ticks(data_lo, x1, target);
      if (spec.integer_x && all[1] - all[0] < 1) {  // whole numbers only: every integer
        all.clear();
        for (double t = std::ceil(xlo); t <= xhi; ++t) all.push_back(t);
      }
      x_step = all.size() > 1 ? all[1] - all[0] : 1;
      x_ticks.clear();
      for (double t : all)
        if (t >= xlo && t <= xhi) x_ticks.push_back(t);
      const double spacing = x_ticks.size() > 1 ? plot.w * x_step / (xhi - xlo) : plot.w;
      if (spacing >= max_label_width(x_ticks, x_step, false) + 24) break;
    }
    xm = {xlo, xhi, static_cast<double>(plot.x), static_cast<double>(plot.right()), false};
    ym = {ylo, yhi, static_cast<double>(axis_bottom), static_cast<double>(plot.y), spec.log_y};

    // The series in pixels, then their styles and the notes on what overlaps.
    paths.assign(spec.series.size(), {});
    for (size_t si = 0; si < spec.series.size(); ++si) {
      const Series& s = spec.series[si];
      PixelPath& p = paths[si];
      p.xs.emplace_back();
      p.ys.emplace_back();
      int side = -1;  // 1: the last point was in the zero band, 0: on the log axis
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!usable(s.x[i], s.y[i])) {  // a gap: the line breaks here
          if (!p.xs.back().empty()) {
            p.xs.emplace_back();
            p.ys.emplace_back();
          }
          side = -1;
          continue;
        }
        const int here_side = spec.log_y && s.y[i] <= 0 ? 1 : 0;
        if (side >= 0 && here_side != side && !p.xs.back().empty()) {  // no segment across the axis break
          p.xs.emplace_back();
          p.ys.emplace_back();
        }
        side = here_side;
        p.xs.back().push_back(xm(s.x[i]));
        p.ys.back().push_back(spec.log_y && s.y[i] <= 0 ? band_row : ym(s.y[i]));
      }
    }
    std::vector<std::vector<size_t>> groups;
    styles = overlap_styles(paths, plot, &groups);
    notes = overlap_notes(spec.series, names, groups);
    // A series on a reference line hides it: most of its points within 4 px of the line's row.
    for (const ReferenceLine& r : spec.references) {
      const double row = ym(r.value);
      std::string on;
      for (size_t si = 0; si < paths.size(); ++si) {
        size_t near = 0, total = 0;
        for (const std::vector<double>& ys : paths[si].ys)
          for (double y : ys) near += std::fabs(y - row) <= 4, ++total;
        if (total > 0 && near * 4 >= total * 3) on += (on.empty() ? "" : ", ") + names[si];
      }
      if (!on.empty() && !r.label.empty()) notes.push_back(on + " on the dashed line (" + r.label + ")");
    }
    notes.insert(notes.end(), spec.notes.begin(), spec.notes.end());
  };
  lay_out(!spec.notes.empty() || wide_column);
  if (!notes.empty() && spec.notes.empty() && !wide_column) lay_out(true);
  for (size_t i = 0; i < legend.size(); ++i) legend[i].style = styles[i];

  // ---- draw ----
  Canvas c(spec.width, spec.height);
  for (double t : x_ticks) {
    const double px = std::round(xm(t));
    c.fill_rect(px, plot.y, px + 1, plot.bottom(), colors::grid);
    c.fill_rect(px, plot.bottom(), px + 1, plot.bottom() + 6, colors::axis);
    c.text(px + 0.5, plot.bottom() + 10, format_tick(t, x_step), colors::text, kBody, HAlign::center);
  }
  draw_y_axis(c, {plot.x, plot.y, plot.w, axis_bottom - plot.y}, ym, y_ticks, y_step, per_tick_labels);
  if (band) {
    // The band: grey, a gap of white above it (the axis is broken there), "0" as its tick.
    c.fill_rect(plot.x + 1, plot.bottom() - kZeroBand, plot.right(), plot.bottom(), colors::band);
    c.fill_rect(plot.x + 1, axis_bottom + 1, plot.right(), plot.bottom() - kZeroBand, colors::white);
    for (int side : {plot.x, plot.right()}) {  // break marks on the frame
      c.line(side - 5, axis_bottom + 4, side + 5, axis_bottom - 1, colors::axis, 1.2);
      c.line(side - 5, axis_bottom + kBandGap + 1, side + 5, axis_bottom + kBandGap - 4, colors::axis, 1.2);
    }
    c.fill_rect(plot.x - 6, std::round(band_row), plot.x, std::round(band_row) + 1, colors::axis);
    c.text(plot.x - 10, band_row + 0.5, "0", colors::text, kBody, HAlign::right, VAlign::middle);
    c.text(plot.right() - 8, plot.bottom() - 4, spec.zero_band, colors::reference, kBody, HAlign::right, VAlign::bottom);
  }

  c.set_clip({plot.x + 1, plot.y + 1, plot.w - 1, plot.h - 1});
  for (const LineChartSpec::XBand& b : spec.x_bands) {
    const double a = std::max(xm(std::min(b.lo, b.hi)), static_cast<double>(plot.x + 1));
    const double e = std::min(xm(std::max(b.lo, b.hi)), static_cast<double>(plot.right()));
    if (e > a) c.fill_rect(a, plot.y + 1, e, axis_bottom, colors::band);
  }
  std::vector<size_t> order(spec.series.size());
  for (size_t i = 0; i < order.size(); ++i) order[styles[i].draw_rank] = i;
  for (size_t si : order) {
    const SeriesStyle& st = styles[si];
    for (size_t r = 0; r < paths[si].xs.size(); ++r) {
      const auto &xs = paths[si].xs[r], &ys = paths[si].ys[r];
      c.dashed_polyline(xs, ys, st.color, st.width, st.dash);
      // Zeros of several series share the band's row: there each one drawn before others is larger,
      // so concentric markers leave every series visible.
      const bool in_band = band && xs.size() == 1 && std::fabs(ys[0] - band_row) < 0.5;
      const double radius = st.marker_radius + (in_band ? 2.0 * static_cast<double>(order.size() - 1 - st.draw_rank) : 0.0);
      if (markers || xs.size() == 1) {
        for (size_t k = 0; k < xs.size(); ++k) c.marker(xs[k], ys[k], st.marker, radius, st.color, st.hollow);
      } else if (sparse_markers) {  // spaced out, each series starting elsewhere so they do not stack
        const size_t stride = std::max<size_t>(1, (xs.size() + 15) / 16);
        for (size_t k = si * stride / spec.series.size(); k < xs.size(); k += stride)
          c.marker(xs[k], ys[k], st.marker, st.marker_radius, st.color, st.hollow);
      }
    }
  }
  // Paths: the first point ringed, the last boxed, and arrowheads at the middle of every few
  // segments long enough to carry one, pointing from each point to the next.
  int arrows = 0;
  for (size_t si = 0; spec.path_marks && si < spec.series.size(); ++si) {
    const SeriesStyle& st = styles[si];
    std::vector<double> xs, ys;
    for (size_t r = 0; r < paths[si].xs.size(); ++r) {
      xs.insert(xs.end(), paths[si].xs[r].begin(), paths[si].xs[r].end());
      ys.insert(ys.end(), paths[si].ys[r].begin(), paths[si].ys[r].end());
    }
    if (xs.empty()) continue;
    c.marker(xs.front(), ys.front(), MarkerShape::circle, 9, st.color, true);
    c.marker(xs.back(), ys.back(), MarkerShape::square, 9, st.color, true);
    const size_t stride = std::max<size_t>(1, xs.size() / 8);
    for (size_t k = stride / 2; k + 1 < xs.size(); k += stride) {
      const double dx = xs[k + 1] - xs[k], dy = ys[k + 1] - ys[k], len = std::hypot(dx, dy);
      if (len < 18) continue;
      const double ux = dx / len, uy = dy / len, mx = xs[k] + dx * 0.55, my = ys[k] + dy * 0.55;
      for (double side : {-1.0, 1.0})  // two strokes back from the tip, 30° either side
        c.line(mx, my, mx - 9 * (ux * 0.866 - side * uy * 0.5), my - 9 * (uy * 0.866 + side * ux * 0.5), st.color, 2.2);
      ++arrows;
    }
  }
  c.reset_clip();
  std::vector<size_t> unlabelled;
  std::vector<int> label_covered;
  const std::vector<int> reference_rows =
      draw_references(c, plot, ym, spec.references, true, &unlabelled, [&](size_t k) {
        return legend_width({{spec.references[k].label, {}, false, true}}) <= column_w;
      }, &label_covered);
  // A label left over data because the legend column was too narrow for it: again, with the
  // wider column (where the legend can take it).
  const int wide = std::min(300, spec.width / 3);
  for (size_t k = 0; k < label_covered.size() && !wide_column; ++k)
    if (label_covered[k] > 0 && column_w < wide &&
        legend_width({{spec.references[k].label, {}, false, true}}) <= wide)
      return draw_line_chart(spec, path, layout, styles_out, true);
  for (size_t k : unlabelled) legend.push_back({spec.references[k].label, {}, false, true});
  c.outline_rect(plot.x, plot.y, plot.right() + 1, plot.bottom() + 1, colors::axis);

  const int label_gap = 10 + Canvas::text_height(kBody) + 12;
  draw_plot_labels(c, plot, spec.title, spec.x_label, spec.y_label, plot.bottom() + label_gap);
  const Rect legend_box = draw_legend(c, plot.right() + 16, plot.y, legend, false);
  draw_notes(c, legend_box.x, legend_box.bottom() + 12, std::max(column_w, legend_box.w), notes);
  if (layout)
    *layout = {plot, legend_box, reference_rows, notes, band ? static_cast<int>(std::round(band_row)) : -1,
               label_covered, markers || sparse_markers || spec.series.size() == 1};
  if (layout) layout->path_arrows = arrows;
  if (styles_out) *styles_out = styles;
  return c;
}

Canvas render_line_chart(const LineChartSpec& spec, ChartLayout* layout, std::vector<SeriesStyle>* styles) {
  return draw_line_chart(spec, "", layout, styles);
}

void line_chart(const std::string& path, const LineChartSpec& spec) {
  draw_line_chart(spec, path, nullptr, nullptr).save_png(path);
}

}  // namespace urpe::plot
