// The roofline picture (see roofline_plot.h), drawn on train/plot's canvas with its log ticks.
#include "train/profile/roofline_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "tensor/error.h"
#include "train/plot/charts.h"

namespace urpe::profile {

namespace {

struct Point {
  double intensity, gflops, share;
  const OpAverage* op;
};

// A log axis from [lo, hi] onto pixels [p0, p1].
struct LogAxis {
  double lo, hi, p0, p1;
  double at(double v) const { return p0 + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (p1 - p0); }
};

plot::Color phase_color(Phase phase) { return plot::series_color(static_cast<size_t>(phase)); }

std::string rate_text(double gflops) {
  char text[64];
  if (gflops >= 1000) std::snprintf(text, sizeof text, "%.1f TFLOP/s", gflops / 1000);
  else std::snprintf(text, sizeof text, "%.3g GFLOP/s", gflops);
  return text;
}

}  // namespace

plot::Canvas render_roofline(const ProfileSummary& summary) {
  URPE_CHECK(summary.peaks.has_value(), "roofline: the profile has no machine peaks (run 'urpe bench peaks')");
  const MachinePeaks& peaks = *summary.peaks;
  const double step_ms = std::max(summary.step_ms, 1e-9);
  std::vector<Point> points;
  for (const OpAverage& op : summary.ops) {
    if (op.phase == Phase::communication || op.cost.flops <= 0 || op.cost.bytes <= 0 || op.self_ms <= 0) continue;
    points.push_back({op.cost.flops / op.cost.bytes, op.cost.flops / (op.self_ms * 1e6), op.self_ms / step_ms, &op});
  }
  const double ridge = peaks.gemm_gflops / peaks.bandwidth_gbs;  // FLOPs per byte where the ceilings meet
  double x_lo = ridge / 16, x_hi = ridge * 16, y_lo = peaks.gemm_gflops / 1000, y_hi = peaks.gemm_gflops * 2;
  for (const Point& p : points) {
    x_lo = std::min(x_lo, p.intensity / 2);
    x_hi = std::max(x_hi, p.intensity * 2);
    y_lo = std::min(y_lo, p.gflops / 2);
    y_hi = std::max(y_hi, p.gflops * 2);
  }
  x_lo = std::pow(10.0, std::floor(std::log10(x_lo)));
  x_hi = std::pow(10.0, std::ceil(std::log10(x_hi)));
  y_lo = std::pow(10.0, std::floor(std::log10(y_lo)));
  y_hi = std::pow(10.0, std::ceil(std::log10(y_hi)));

  const int width = 1040, height = 680;
  const plot::Rect area{100, 60, 720, 540};
  plot::Canvas c(width, height);
  const LogAxis x{x_lo, x_hi, double(area.x), double(area.right())};
  const LogAxis y{y_lo, y_hi, double(area.bottom()), double(area.y)};

  // grid and ticks
  const std::vector<double> xt = plot::log_ticks(x_lo, x_hi), yt = plot::log_ticks(y_lo, y_hi);
  for (double v : xt) {
    const double px = x.at(v);
    c.line(px, area.y, px, area.bottom(), plot::colors::grid, 1);
    c.text(px, area.bottom() + 8, plot::format_tick(v, v), plot::colors::text, 2, plot::HAlign::center);
  }
  for (double v : yt) {
    const double py = y.at(v);
    c.line(area.x, py, area.right(), py, plot::colors::grid, 1);
    c.text(area.x - 8, py, plot::format_tick(v, v), plot::colors::text, 2, plot::HAlign::right, plot::VAlign::middle);
  }
  c.outline_rect(area.x, area.y, area.right(), area.bottom(), plot::colors::axis);
  c.text(area.x + area.w / 2.0, area.bottom() + 34, "arithmetic intensity (FLOP per byte moved)", plot::colors::text, 2,
         plot::HAlign::center);
  c.text(24, area.y + area.h / 2.0, "achieved GFLOP/s (FLOPs / self time)", plot::colors::text, 2, plot::HAlign::center,
         plot::VAlign::middle, true);
  c.text(width / 2.0, 16, "roofline: " + summary.device + ", " + std::to_string(summary.ops.size()) + " ops",
         plot::colors::text, 3, plot::HAlign::center);

  // the roofline: bandwidth × intensity up to the ridge, then the compute ceiling
  c.set_clip(area);
  const plot::Color roof{40, 40, 40};
  c.line(x.at(x_lo), y.at(peaks.bandwidth_gbs * x_lo), x.at(ridge), y.at(peaks.gemm_gflops), roof, 2.5);
  c.line(x.at(ridge), y.at(peaks.gemm_gflops), x.at(x_hi), y.at(peaks.gemm_gflops), roof, 2.5);
  // The ceilings' labels, remembered so that no op label covers them.
  std::vector<plot::Rect> placed;
  const std::string compute_label = "sgemm " + rate_text(peaks.gemm_gflops);
  const int label_h = plot::Canvas::text_height(2);
  const int compute_w = plot::Canvas::text_width(compute_label, 2);
  c.text(x.at(x_hi) - 6, y.at(peaks.gemm_gflops) - 6, compute_label, roof, 2, plot::HAlign::right, plot::VAlign::bottom);
  placed.push_back({int(x.at(x_hi) - 6 - compute_w), int(y.at(peaks.gemm_gflops) - 6 - label_h), compute_w, label_h});
  char bw[64];
  std::snprintf(bw, sizeof bw, "memory %.3g GB/s", peaks.bandwidth_gbs);
  // Left of a point of the slanted part, at its height: above the line, which rises to the right.
  const int bw_w = plot::Canvas::text_width(bw, 2);
  double label_x = ridge / 4;
  while (x.at(label_x) - 18 - bw_w < area.x + 4 && label_x < ridge) label_x *= 1.5;
  const double bx = x.at(label_x) - 18 - bw_w, by = y.at(peaks.bandwidth_gbs * label_x) - label_h / 2.0;
  c.text(bx, by, bw, roof, 2);
  placed.push_back({int(bx), int(by), bw_w, label_h});

  // the ops, largest drawn first so small ones stay visible; the 8 largest labelled
  std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.share > b.share; });
  for (const Point& p : points) {
    const double r = 3 + 14 * std::sqrt(p.share);
    const plot::Color fill = plot::mix(phase_color(p.op->phase), plot::colors::white, 0.35);
    c.disc(x.at(p.intensity), y.at(p.gflops), r + 1, phase_color(p.op->phase));
    c.disc(x.at(p.intensity), y.at(p.gflops), r, fill);
  }
  c.reset_clip();
  // Labels right of the disc, else left, above or below: the first place that covers no disc and
  // no label already placed and stays inside the plot; an op with no such place goes unlabelled.
  for (const Point& p : points) {
    const double r = 3 + 14 * std::sqrt(p.share);
    placed.push_back({int(x.at(p.intensity) - r), int(y.at(p.gflops) - r), int(2 * r + 1), int(2 * r + 1)});
  }
  auto overlaps = [&](const plot::Rect& r) {
    if (r.x < area.x || r.y < area.y || r.right() > area.right() || r.bottom() > area.bottom()) return true;
    for (const plot::Rect& q : placed)
      if (r.x < q.right() && q.x < r.right() && r.y < q.bottom() && q.y < r.bottom()) return true;
    return false;
  };
  for (size_t k = 0; k < points.size() && k < 8; ++k) {
    const Point& p = points[k];
    const double r = 3 + 14 * std::sqrt(p.share), px = x.at(p.intensity), py = y.at(p.gflops);
    const int w = plot::Canvas::text_width(p.op->name, 2), h = plot::Canvas::text_height(2);
    const plot::Rect candidates[] = {
        {int(px + r + 3), int(py - h / 2.0), w, h},     {int(px - r - 3 - w), int(py - h / 2.0), w, h},
        {int(px - w / 2.0), int(py - r - 4 - h), w, h}, {int(px - w / 2.0), int(py + r + 4), w, h}};
    for (const plot::Rect& place : candidates) {
      if (overlaps(place)) continue;
      c.text(place.x, place.y, p.op->name, plot::colors::text, 2);
      placed.push_back(place);
      break;
    }
  }

  // legend: the phases, and what the disc size means
  int ly = area.y + 10;
  const int lx = area.right() + 24;
  for (Phase phase : {Phase::forward, Phase::backward, Phase::optimizer}) {
    c.disc(lx + 6, ly + 7, 6, phase_color(phase));
    c.text(lx + 18, ly, phase_name(phase), plot::colors::text, 2);
    ly += 26;
  }
  c.text(lx, ly + 10, "disc area: share", plot::colors::text, 2);
  c.text(lx, ly + 30, "of the step time", plot::colors::text, 2);
  c.text(lx, ly + 60, "ops without FLOPs", plot::colors::text, 2);
  c.text(lx, ly + 80, "(copies) not drawn", plot::colors::text, 2);
  return c;
}

void roofline_plot(const std::string& path, const ProfileSummary& summary) {
  render_roofline(summary).save_png(path);
}

}  // namespace urpe::profile
