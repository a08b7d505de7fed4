// The roofline picture (see roofline_plot.h), drawn on base/plot's canvas with its log ticks.
#include "base/profile/roofline_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "tensor/error.h"
#include "base/plot/charts.h"

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
  // The tensor-core ceilings of the maths the profile's GEMMs ran in (TF32, BF16), drawn thinner
  // above the sgemm line: those GEMMs are bounded by them (machine_peaks.h, gemm_ceiling_gflops).
  struct Ceiling {
    double gflops;
    std::string label;
  };
  std::vector<Ceiling> tensor_ceilings;
  {
    double tf32 = 0, bf16 = 0;
    for (const OpAverage& op : summary.ops) {
      tf32 += op.cost.tf32_flops;
      bf16 += op.cost.bf16_flops;
    }
    for (const auto& [flops, math] : {std::pair<double, GemmMath>{tf32, GemmMath::tf32}, {bf16, GemmMath::bf16}}) {
      const double rate = gemm_ceiling_gflops(peaks, math);
      if (flops <= 0 || rate <= peaks.gemm_gflops) continue;
      bool same = false;
      for (Ceiling& t : tensor_ceilings)
        if (t.gflops == rate) same = true, t.label += std::string(" / ") + gemm_math_name(math);
      if (!same) tensor_ceilings.push_back({rate, gemm_math_name(math)});
    }
    for (Ceiling& t : tensor_ceilings) {
      t.label += " " + rate_text(t.gflops);
      x_hi = std::max(x_hi, 4 * t.gflops / peaks.bandwidth_gbs);
      y_hi = std::max(y_hi, 2 * t.gflops);
    }
  }
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

  const int width = 1100, height = 680;
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
  const plot::Color tensor_roof{110, 110, 110};
  for (const Ceiling& t : tensor_ceilings) {
    const double tc_ridge = t.gflops / peaks.bandwidth_gbs;
    c.line(x.at(ridge), y.at(peaks.gemm_gflops), x.at(tc_ridge), y.at(t.gflops), tensor_roof, 1.2);
    c.line(x.at(tc_ridge), y.at(t.gflops), x.at(x_hi), y.at(t.gflops), tensor_roof, 1.2);
  }
  // The ceilings' labels, remembered so that no op label covers them.
  std::vector<plot::Rect> placed;
  bool legend_memory = false, legend_compute = false;
  std::vector<std::string> unlabelled_above;  // ringed ops with no free place for a label
  const std::string compute_label = "sgemm " + rate_text(peaks.gemm_gflops);
  const int label_h = plot::Canvas::text_height(2);
  const int compute_w = plot::Canvas::text_width(compute_label, 2);
  char bw[64];
  std::snprintf(bw, sizeof bw, "memory %.3g GB/s", peaks.bandwidth_gbs);
  const int bw_w = plot::Canvas::text_width(bw, 2);

  // the ops, largest drawn first so small ones stay visible; the 8 largest labelled
  std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.share > b.share; });
  // An op above the memory line moved its bytes faster than DRAM can: they came from the caches
  // (the line is STREAM's bandwidth over arrays far larger than them). Such ops are ringed, always
  // labelled, and the legend says why.
  auto above_roof = [&](const Point& p) { return p.gflops > 1.05 * peaks.bandwidth_gbs * p.intensity; };
  auto radius = [](const Point& p) { return 3 + 14 * std::sqrt(p.share); };
  bool any_above = false;
  for (const Point& p : points) {
    const double r = radius(p);
    const plot::Color fill = plot::mix(phase_color(p.op->phase), plot::colors::white, 0.35);
    c.disc(x.at(p.intensity), y.at(p.gflops), r + 1, phase_color(p.op->phase));
    c.disc(x.at(p.intensity), y.at(p.gflops), r, fill);
    if (above_roof(p)) {
      c.marker(x.at(p.intensity), y.at(p.gflops), plot::MarkerShape::circle, r + 5, plot::colors::text, true);
      any_above = true;
    }
  }
  c.reset_clip();
  // Every disc (with its ring) is an obstacle for the labels.
  for (const Point& p : points) {
    const double r = radius(p) + (above_roof(p) ? 6 : 0);
    placed.push_back({int(x.at(p.intensity) - r), int(y.at(p.gflops) - r), int(2 * r + 1), int(2 * r + 1)});
  }
  // Points every 2 px along the two ceilings: a label must not sit on a line either.
  std::vector<std::pair<double, double>> roof_points;
  {
    const double ax = x.at(x_lo), ay = y.at(peaks.bandwidth_gbs * x_lo), rx = x.at(ridge), ry = y.at(peaks.gemm_gflops);
    const int steps = static_cast<int>(std::hypot(rx - ax, ry - ay) / 2) + 1;
    for (int k = 0; k <= steps; ++k) roof_points.push_back({ax + (rx - ax) * k / steps, ay + (ry - ay) * k / steps});
    for (double px = rx; px <= area.right(); px += 2) roof_points.push_back({px, ry});
  }
  // Labels keep 4 px from every disc, label and the frame, and 3 px from the ceilings.
  bool avoid_roof = true;  // off for an op label that found no place clear of the ceilings
  auto overlaps = [&](const plot::Rect& r) {
    const int pad = 4;
    if (r.x < area.x + pad || r.y < area.y + pad || r.right() > area.right() - pad || r.bottom() > area.bottom() - pad) return true;
    for (const auto& [px, py] : roof_points)
      if (avoid_roof && px > r.x - 3 && px < r.right() + 3 && py > r.y - 3 && py < r.bottom() + 3) return true;
    for (const plot::Rect& q : placed)
      if (r.x < q.right() + pad && q.x < r.right() + pad && r.y < q.bottom() + pad && q.y < r.bottom() + pad) return true;
    return false;
  };
  // The compute line's label: above the flat part, from its right end leftwards, else below it.
  {
    bool done = false;
    const double py = y.at(peaks.gemm_gflops);
    for (int side = 0; side < 2 && !done; ++side)
      for (double right = area.right() - 6; right - compute_w > x.at(ridge) + 6 && !done; right -= 16) {
        const plot::Rect r{int(right - compute_w), int(side == 0 ? py - 6 - label_h : py + 7), compute_w, label_h};
        if (overlaps(r)) continue;
        c.text(r.x, r.y, compute_label, roof, 2);
        placed.push_back(r);
        done = true;
      }
    if (!done) legend_compute = true;
  }
  // The tensor-core lines' labels: above each line's right end (no legend fallback: the header of
  // profile.md names the rates too).
  for (const Ceiling& t : tensor_ceilings) {
    const int w = plot::Canvas::text_width(t.label, 2);
    const double py = y.at(t.gflops);
    for (double right = area.right() - 6; right - w > area.x + 6; right -= 16) {
      const plot::Rect r{int(right - w), int(py - 6 - label_h), w, label_h};
      if (overlaps(r)) continue;
      c.text(r.x, r.y, t.label, tensor_roof, 2);
      placed.push_back(r);
      break;
    }
  }
  // The memory line's label: above-left of a point of the slanted part (the line rises to the
  // right), trying points from the left until one touches nothing; below-right as a second choice.
  {
    bool done = false;
    for (int side = 0; side < 2 && !done; ++side)
      for (double at = x_lo * 1.25; at < ridge && !done; at *= 1.25) {
        const double px = x.at(at), py = y.at(peaks.bandwidth_gbs * at);
        const plot::Rect r = side == 0 ? plot::Rect{int(px - 10 - bw_w), int(py - 6 - label_h), bw_w, label_h}
                                       : plot::Rect{int(px + 10), int(py + 6), bw_w, label_h};
        if (overlaps(r)) continue;
        c.text(r.x, r.y, bw, roof, 2);
        placed.push_back(r);
        done = true;
      }
    if (!done) legend_memory = true;
  }
  // Op labels beside the disc (right, left, above, below, then the corners), near first, then
  // further out with a leader line: the first place that covers no disc and no label already
  // placed and stays inside the plot; an op with no such place goes unlabelled.
  for (size_t k = 0; k < points.size(); ++k) {
    const Point& p = points[k];
    if (k >= 8 && !above_roof(p)) continue;
    const double r = radius(p) + (above_roof(p) ? 6 : 0), px = x.at(p.intensity), py = y.at(p.gflops);
    const int w = plot::Canvas::text_width(p.op->name, 2), h = plot::Canvas::text_height(2);
    bool done = false;
    if (above_roof(p)) unlabelled_above.push_back(p.op->name);  // taken off below once labelled
    // Clear of the ceilings first; a label that finds no such place may cross one.
    for (int pass = 0; pass < 2 && !done; ++pass)
    for (double gap : {3.0, 16.0, 32.0, 56.0, 84.0, 120.0, 160.0, 220.0}) {
      avoid_roof = pass == 0;
      const double d = r + gap;
      const plot::Rect candidates[] = {
          {int(px + d), int(py - h / 2.0), w, h},           {int(px - d - w), int(py - h / 2.0), w, h},
          {int(px - w / 2.0), int(py - d - h), w, h},       {int(px - w / 2.0), int(py + d), w, h},
          {int(px + d * 0.7), int(py - d * 0.7 - h), w, h}, {int(px + d * 0.7), int(py + d * 0.7), w, h},
          {int(px - d * 0.7 - w), int(py - d * 0.7 - h), w, h}, {int(px - d * 0.7 - w), int(py + d * 0.7), w, h}};
      for (const plot::Rect& place : candidates) {
        if (overlaps(place)) continue;
        // Further out, a leader from the disc's edge to the label's nearest point, which must
        // cross no other disc or label.
        const double lx = std::clamp(px, double(place.x), double(place.right()));
        const double ly = std::clamp(py, double(place.y), double(place.bottom()));
        const double len = std::max(1e-9, std::hypot(lx - px, ly - py));
        bool crosses = false;
        for (double t = (r + 2) / len; gap > 3 && t < 1 && !crosses; t += 2 / len) {
          const double qx = px + (lx - px) * t, qy = py + (ly - py) * t;
          for (const plot::Rect& q : placed)
            if (qx > q.x && qx < q.right() && qy > q.y && qy < q.bottom() && !(q.x <= px && px <= q.right() && q.y <= py && py <= q.bottom()))
              crosses = true;
        }
        if (crosses) continue;
        if (gap > 3) c.line(px + (lx - px) * r / len, py + (ly - py) * r / len, lx, ly, plot::colors::reference, 1);
        c.text(place.x, place.y, p.op->name, plot::colors::text, 2);
        placed.push_back(place);
        if (above_roof(p)) unlabelled_above.pop_back();
        done = true;
        break;
      }
      if (done) break;
    }
  }

  // legend: the phases, what the disc size means, and the ring
  int ly = area.y + 10;
  const int lx = area.right() + 24;
  for (Phase phase : {Phase::forward, Phase::backward, Phase::optimizer}) {
    c.disc(lx + 6, ly + 7, 6, phase_color(phase));
    c.text(lx + 18, ly, phase_name(phase), plot::colors::text, 2);
    ly += 26;
  }
  std::vector<std::string> lines = {"", "disc area: share", "of the step time", "", "ops without FLOPs",
                                    "(copies) not drawn"};
  if (legend_memory) lines.insert(lines.end(), {"", "slanted line:", bw});
  if (legend_compute) lines.insert(lines.end(), {"", "flat line:", compute_label});
  for (const std::string& line : lines) {
    if (line.empty()) {
      ly += 10;
      continue;
    }
    c.text(lx, ly, line, plot::colors::text, 2);
    ly += 20;
  }
  if (any_above) {
    ly += 14;
    c.marker(lx + 6, ly + 7, plot::MarkerShape::circle, 7, plot::colors::text, true);
    for (const char* line : {"ringed: above the", "memory line, so its", "bytes came from the", "caches (the line is",
                             "DRAM's bandwidth)"}) {
      c.text(lx + 18, ly, line, plot::colors::text, 2);
      ly += 20;
    }
    if (!unlabelled_above.empty()) {
      c.text(lx + 18, ly + 6, "ringed, unlabelled:", plot::colors::text, 2);
      ly += 26;
      for (const std::string& name : unlabelled_above) {
        c.text(lx + 18, ly, name, plot::colors::text, 2);
        ly += 20;
      }
    }
  }
  return c;
}

void roofline_plot(const std::string& path, const ProfileSummary& summary) {
  render_roofline(summary).save_png(path);
}

}  // namespace urpe::profile
