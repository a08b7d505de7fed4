// What the line and bar charts share (see chart_parts.h): the palette, nice ticks and their
// labels, the legend, title, axis labels, the y axis, reference lines and notes.
#include "base/plot/chart_parts.h"

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

namespace parts {

// ---- legend and notes ----

constexpr int kLegendRow = 26, kSwatch = 34;

int legend_width(const std::vector<LegendEntry>& entries) {
  int w = 0;
  for (const auto& e : entries) w = std::max(w, Canvas::text_width(e.name, kBody));
  return 12 + kSwatch + 8 + w + 12;
}

int legend_height(const std::vector<LegendEntry>& entries) { return 10 + kLegendRow * static_cast<int>(entries.size()); }

static bool hatch_pixel(int hatch, int x, int y) {
  const int d = ((x + y) % 8 + 8) % 8, b = ((x - y) % 8 + 8) % 8;
  switch (hatch % kHatchPatterns) {
    case 1: return d < 2;                           // ////
    case 2: return b < 2;                           // \\ (back-diagonal)
    case 3: return y % 7 < 2;                       // horizontal lines
    case 4: return x % 7 < 2;                       // vertical lines
    case 5: return d < 1 || b < 1;                  // crossed diagonals
    case 6: return y % 8 < 1 || x % 8 < 1;          // a square grid
    case 7: return x % 6 < 2 && y % 6 < 2;          // dots
    case 8: return (x + y) % 4 < 1;                 // dense ////
    case 9: return y % 4 < 1;                       // dense horizontal lines
    default: return false;                          // plain
  }
}

void fill_hatched(Canvas& c, double x0, double y0, double x1, double y1, Color color, int hatch) {
  c.fill_rect(x0, y0, x1, y1, color);
  if (hatch % kHatchPatterns == 0) return;
  for (int y = static_cast<int>(std::ceil(y0 - 0.5)); y + 0.5 < y1; ++y)
    for (int x = static_cast<int>(std::ceil(x0 - 0.5)); x + 0.5 < x1; ++x)
      if (x >= 0 && y >= 0 && hatch_pixel(hatch, x, y)) c.fill_rect(x, y, x + 1, y + 1, colors::white);
}

Rect draw_legend(Canvas& c, int x, int y, const std::vector<LegendEntry>& entries, bool bars) {
  const Rect box{x, y, legend_width(entries), legend_height(entries)};
  c.fill_rect(box.x, box.y, box.right(), box.bottom(), colors::white);
  c.outline_rect(box.x, box.y, box.right(), box.bottom(), colors::grid);
  for (size_t i = 0; i < entries.size(); ++i) {
    const double cy = y + 5 + kLegendRow * (i + 0.5);
    const SeriesStyle& s = entries[i].style;
    if (entries[i].reference) {
      const double row = std::floor(cy) + 0.5;  // on pixel centres, as on the plot
      c.dashed_polyline({x + 12.0, x + 12.0 + kSwatch}, {row, row}, colors::reference, 1.6, {9, 5});
    } else if (entries[i].mark_only) {
      c.marker(x + 12 + kSwatch / 2.0, cy, s.marker, 6, colors::text, false);
    } else if (bars) {
      fill_hatched(c, x + 19, cy - 9, x + 39, cy + 9, s.color, entries[i].hatch);
    } else {
      // The swatch in the series' own width (capped so it fits the row) and dash pattern.
      c.dashed_polyline({x + 12.0, x + 12.0 + kSwatch}, {cy, cy}, s.color, std::min(s.width, 7.0), s.dash);
      if (entries[i].markers) c.marker(x + 12 + kSwatch / 2.0, cy, s.marker, std::min(s.marker_radius, 6.0), s.color, s.hollow);
    }
    c.text(x + 12 + kSwatch + 8, cy, entries[i].name, colors::text, kBody, HAlign::left, VAlign::middle);
  }
  return box;
}

int notes_height(int width, const std::vector<std::string>& notes) {
  int lines = 0;
  for (const std::string& n : notes) lines += static_cast<int>(wrap(n, width).size());
  return notes.empty() ? 0 : lines * (Canvas::text_height(kBody) + 6) + 6 * static_cast<int>(notes.size());
}

int draw_notes(Canvas& c, int x, int y, int width, const std::vector<std::string>& notes) {
  int at = y;
  for (const std::string& n : notes) {
    for (const std::string& line : wrap(n, width)) {
      c.text(x, at, line, colors::text, kBody);
      at += Canvas::text_height(kBody) + 6;
    }
    at += 6;
  }
  return at - y;
}

// ---- title and labels ----

// The title's scale and lines: one line at the title scale when it fits the canvas, else the body
// scale, wrapped.
static std::vector<std::string> title_lines(const std::string& title, int canvas_width, int* scale) {
  *scale = kTitleScale;
  if (Canvas::text_width(title, kTitleScale) <= canvas_width - 2 * kMargin) return {title};
  *scale = kBody;
  return wrap(title, canvas_width - 2 * kMargin);
}

static void draw_title(Canvas& c, const std::string& title, int center_x) {
  if (title.empty()) return;
  int scale = kTitleScale;
  const std::vector<std::string> lines = title_lines(title, c.width(), &scale);
  int y = kMargin;
  for (const std::string& line : lines) {
    const int width = Canvas::text_width(line, scale);
    const int left = std::max(kMargin, std::min(center_x - width / 2, c.width() - kMargin - width));
    c.text(left, y, line, colors::text, scale, HAlign::left);
    y += Canvas::text_height(scale) + 8;
  }
}

void draw_plot_labels(Canvas& c, const Rect& plot, const std::string& title, const std::string& x_label,
                      const std::string& y_label, double x_label_y) {
  if (!x_label.empty()) c.text(plot.x + plot.w / 2.0, x_label_y, x_label, colors::text, kBody, HAlign::center);
  if (!y_label.empty())
    c.text(kMargin, plot.y + plot.h / 2.0, y_label, colors::text, kBody, HAlign::center, VAlign::top, true);
  draw_title(c, title, plot.x + plot.w / 2);
}

int title_band(const std::string& title, int canvas_width) {
  if (title.empty()) return kMargin + 8;
  int scale = kTitleScale;
  const int lines = static_cast<int>(title_lines(title, canvas_width, &scale).size());
  return kMargin + lines * (Canvas::text_height(scale) + 8) + 14;
}

// ---- y axis ----

void draw_y_axis(Canvas& c, const Rect& plot, const AxisMap& y, const std::vector<double>& ticks, double step,
                 bool per_tick_labels) {
  for (double t : ticks) {
    const double py = std::round(y(t));
    if (py < plot.y - 0.5 || py > plot.bottom() + 0.5) continue;
    c.fill_rect(plot.x, py, plot.right(), py + 1, colors::grid);
    c.fill_rect(plot.x - 6, py, plot.x, py + 1, colors::axis);
    c.text(plot.x - 10, py + 0.5, format_tick(t, per_tick_labels ? t : step), colors::text, kBody, HAlign::right,
           VAlign::middle);
  }
}

int max_label_width(const std::vector<double>& ticks, double step, bool per_tick_labels) {
  int w = 0;
  for (double t : ticks) w = std::max(w, Canvas::text_width(format_tick(t, per_tick_labels ? t : step), kBody));
  return w;
}

LinearAxis padded_axis(double lo, double hi, int target_ticks, double pad) {
  if (hi - lo <= 1e-12 * std::max(1.0, std::fabs(hi))) {  // one value: a window around it
    const double d = lo == 0 ? 1.0 : std::fabs(lo) * 0.1;
    lo -= d;
    hi += d;
  } else {
    const double span = hi - lo;
    lo -= pad * span;
    hi += pad * span;
  }
  const std::vector<double> all = nice_ticks(lo, hi, target_ticks);
  LinearAxis axis{lo, hi, all.size() > 1 ? all[1] - all[0] : (hi - lo) / 4, {}};
  for (double t : all)
    if (t >= lo - 1e-9 * axis.step && t <= hi + 1e-9 * axis.step) axis.ticks.push_back(t);
  return axis;
}

// ---- reference lines ----

std::vector<int> draw_references(Canvas& c, const Rect& plot, const AxisMap& y,
                                 const std::vector<ReferenceLine>& references, bool labels,
                                 std::vector<size_t>* unlabelled, const std::function<bool(size_t)>& legend_fits,
                                 std::vector<int>* label_covered) {
  std::vector<int> rows;
  if (label_covered) label_covered->assign(references.size(), -1);
  const int th = Canvas::text_height(kBody);
  // Pixels of data under a candidate label box: anything but the background and the grid.
  auto covered = [&](const Rect& box) {
    int n = 0;
    for (int py = std::max(box.y, plot.y + 1); py < std::min(box.bottom(), plot.bottom()); ++py)
      for (int px = std::max(box.x, plot.x + 1); px < std::min(box.right(), plot.right()); ++px) {
        const Color k = c.pixel(px, py);
        n += k != colors::white && k != colors::grid && k != colors::band;
      }
    return n;
  };
  for (size_t index = 0; index < references.size(); ++index) {
    const ReferenceLine& r = references[index];
    const int py = static_cast<int>(std::round(y(r.value)));
    rows.push_back(py);
    bool placed = r.label.empty();
    if (labels && !r.label.empty()) {
      // Candidates: the right end, the left end, then every 8 px from right to left; above the
      // line first, then below (inside the plot).
      const int w = Canvas::text_width(r.label, kBody);
      struct Place {
        Rect box;
        HAlign h;
        bool above;
      };
      std::vector<Place> places;
      for (bool above : {true, false}) {
        const int top = above ? py - 5 - th : py + 6;
        if (top < plot.y + 2 || top + th > plot.bottom() - 2 || w > plot.w - 12) continue;
        places.push_back({{plot.right() - 6 - w, top, w, th}, HAlign::right, above});
        places.push_back({{plot.x + 6, top, w, th}, HAlign::left, above});
      }
      for (bool above : {true, false}) {
        const int top = above ? py - 5 - th : py + 6;
        if (top < plot.y + 2 || top + th > plot.bottom() - 2 || w > plot.w - 12) continue;
        for (int x = plot.right() - 14 - w; x > plot.x + 6; x -= 8) places.push_back({{x, top, w, th}, HAlign::left, above});
      }
      auto put = [&](const Place& p) {
        if (label_covered) (*label_covered)[index] = covered(p.box);
        c.text(p.h == HAlign::right ? p.box.right() : p.box.x, p.above ? py - 5 : py + 6, r.label, colors::reference,
               kBody, p.h, p.above ? VAlign::bottom : VAlign::top);
        placed = true;
      };
      const Place* least = nullptr;
      int least_covered = 0;
      for (const Place& p : places) {
        const int n = covered(p.box);
        if (n == 0) {
          put(p);
          break;
        }
        if (!least || n < least_covered) least = &p, least_covered = n;
      }
      if (!placed && least && !(unlabelled && legend_fits && legend_fits(index))) put(*least);
    }
    if (!placed && unlabelled) unlabelled->push_back(index);
    c.set_clip({plot.x + 1, plot.y + 1, plot.w - 1, plot.h - 1});
    c.dashed_polyline({plot.x + 1.0, static_cast<double>(plot.right())}, {py + 0.5, py + 0.5}, colors::reference, 1.6,
                      {9, 5});
    c.reset_clip();
  }
  return rows;
}

// ---- text helpers ----

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

std::string where(const std::string& path, const std::string& kind, const std::string& title) {
  return (path.empty() ? "" : path + ": ") + kind + (title.empty() ? "" : " '" + title + "'");
}

}  // namespace parts
}  // namespace urpe::plot
