// Overlap groups and their styles (see series_styles.h). Overlap is measured on the picture, not
// on the data: two curves 0.2% apart on a 0–100% axis coincide on screen, and that is what hides
// one of them. Each series' stroke is rasterised (4 px wide) into a mask of the plotting area;
// a ∩ b over a's pixels says how much of a that b would cover.
#include "base/plot/series_styles.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace urpe::plot::parts {

namespace {

constexpr double kBaseWidth = 2.5, kBaseMarker = 3.5;
constexpr double kGroupThreshold = 0.5;  // share of one stroke covered by another that groups them
const MarkerShape kShapes[] = {MarkerShape::circle, MarkerShape::square, MarkerShape::triangle,
                               MarkerShape::diamond, MarkerShape::triangle_down};

std::vector<bool> stroke_mask(const PixelPath& p, const Rect& area) {
  Canvas scratch(std::max(1, area.w), std::max(1, area.h));
  for (size_t r = 0; r < p.xs.size(); ++r) {
    std::vector<double> xs = p.xs[r], ys = p.ys[r];
    for (double& x : xs) x -= area.x;
    for (double& y : ys) y -= area.y;
    if (xs.size() == 1) scratch.disc(xs[0], ys[0], 2, colors::black);
    scratch.polyline(xs, ys, colors::black, 4);
  }
  std::vector<bool> mask(static_cast<size_t>(scratch.width()) * scratch.height());
  for (int y = 0; y < scratch.height(); ++y)
    for (int x = 0; x < scratch.width(); ++x) mask[static_cast<size_t>(y) * scratch.width() + x] = scratch.pixel(x, y) != colors::white;
  return mask;
}

double covered(const std::vector<bool>& a, const std::vector<bool>& b) {
  size_t both = 0, total = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    total += a[k];
    both += a[k] && b[k];
  }
  return total ? static_cast<double>(both) / total : 0.0;
}

}  // namespace

double covered_fraction(const PixelPath& a, const PixelPath& b, const Rect& area) {
  return covered(stroke_mask(a, area), stroke_mask(b, area));
}

std::vector<SeriesStyle> overlap_styles(const std::vector<PixelPath>& paths, const Rect& area,
                                        std::vector<std::vector<size_t>>* groups_out) {
  const size_t n = paths.size();
  std::vector<SeriesStyle> styles(n);
  for (size_t i = 0; i < n; ++i) {
    styles[i].color = series_color(i);
    styles[i].marker = kShapes[i % 5];
    if (i >= 5) styles[i].dash = {8.0, 4.0};  // the shapes repeat from the sixth series on: dashed
  }
  // Groups: union-find over pairs where either stroke is mostly covered by the other.
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  if (n > 1) {
    std::vector<std::vector<bool>> masks;
    for (const PixelPath& p : paths) masks.push_back(stroke_mask(p, area));
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j)
        if (covered(masks[i], masks[j]) >= kGroupThreshold || covered(masks[j], masks[i]) >= kGroupThreshold)
          parent[root(j)] = root(i);
  }
  // Within a group of m (in series order), rank r: width steps down from the first, dashes and
  // hollow markers from the second on.
  if (groups_out) groups_out->clear();
  for (size_t i = 0; i < n; ++i) {
    std::vector<size_t> group;
    for (size_t j = 0; j < n; ++j)
      if (root(j) == root(i)) group.push_back(j);
    if (groups_out && group.size() > 1 && group[0] == i) groups_out->push_back(group);
    const size_t m = group.size(), r = static_cast<size_t>(std::find(group.begin(), group.end(), i) - group.begin());
    if (m < 2) continue;
    const double step = std::min(2.0, 6.0 / static_cast<double>(m - 1));
    const double above = static_cast<double>(m - 1 - r);  // series drawn on top of this one
    styles[i].width = kBaseWidth + step * above;
    styles[i].marker_radius = kBaseMarker + 0.75 * step * above;
    if (r > 0) {
      const int k = static_cast<int>((r - 1) % 3);
      styles[i].dash = {12.0 - 2 * k, 5.0 + 2 * k};
      styles[i].hollow = true;
    }
  }
  // Drawing order: widest first (stable in series order), so narrower lines go on top.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return styles[a].width > styles[b].width; });
  for (size_t k = 0; k < n; ++k) styles[order[k]].draw_rank = static_cast<int>(k);
  return styles;
}

std::vector<std::vector<size_t>> equal_series(const std::vector<Series>& series) {
  auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k)
      if (!(a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k])))) return false;
    return true;
  };
  std::vector<std::vector<size_t>> groups;
  std::vector<bool> taken(series.size(), false);
  for (size_t i = 0; i < series.size(); ++i) {
    if (taken[i] || series[i].x.empty()) continue;
    std::vector<size_t> group{i};
    for (size_t j = i + 1; j < series.size(); ++j)
      if (!taken[j] && same(series[i].x, series[j].x) && same(series[i].y, series[j].y)) {
        group.push_back(j);
        taken[j] = true;
      }
    if (group.size() > 1) groups.push_back(group);
  }
  return groups;
}

std::vector<std::string> overlap_notes(const std::vector<Series>& series, const std::vector<std::string>& names,
                                       const std::vector<std::vector<size_t>>& overlap_groups) {
  // Names that hold commas ("layer 1, task data") are listed with semicolons.
  bool commas = false;
  for (const std::string& name : names) commas = commas || name.find(',') != std::string::npos;
  auto listing = [&](const std::vector<size_t>& group, const char* separator) {
    std::string text;
    for (size_t k = 0; k < group.size(); ++k) text += (k ? separator : "") + names[group[k]];
    return text;
  };
  std::vector<std::string> notes;
  const std::vector<std::vector<size_t>> equal = equal_series(series);
  for (const std::vector<size_t>& group : overlap_groups) {
    bool all_equal = false;
    for (const std::vector<size_t>& e : equal) all_equal = all_equal || e == group;
    if (all_equal) continue;
    notes.push_back(group.size() == 2
                        ? names[group[1]] + " drawn dashed over " + names[group[0]] + ": the lines overlap"
                        : listing(group, commas ? "; " : ", ") + " overlap: each later one drawn narrower and dashed on top");
  }
  for (const std::vector<size_t>& group : equal)
    notes.push_back(listing(group, " = ") + " at every point (" + (group.size() > 2 ? "later ones" : names[group.back()]) +
                    " drawn dashed on top)");
  return notes;
}

}  // namespace urpe::plot::parts
