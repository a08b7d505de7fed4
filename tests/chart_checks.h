// What can be checked about a chart's picture without looking at it: that every series left
// pixels of its own colour in the plotting area (none is hidden under another), that a reference
// line's row is drawn in the reference colour, that every text lies inside the image, that series
// and bars are told apart without colour (marker shape, dash, hatch or a name), that no label
// covers data or another label, and that a heatmap's colour bar says when it cuts off cells. Each
// check returns what it measured, so a test can also show that it fails on a bad picture.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/plot/charts.h"

namespace urpe::test {

// Pixels of exactly `color` inside `area`.
inline size_t pixels_of(const plot::Canvas& c, plot::Color color, const plot::Rect& area) {
  size_t n = 0;
  for (int y = std::max(0, area.y); y < std::min(c.height(), area.bottom()); ++y)
    for (int x = std::max(0, area.x); x < std::min(c.width(), area.right()); ++x) n += c.pixel(x, y) == color;
  return n;
}

// The fewest pixels any of the first `series` series has in the plotting area (its own exact
// colour; antialiased edges do not count).
inline size_t least_visible_series(const plot::Canvas& c, const plot::ChartLayout& layout, size_t series) {
  size_t least = SIZE_MAX;
  for (size_t k = 0; k < series; ++k) least = std::min(least, pixels_of(c, plot::series_color(k), layout.plot));
  return least;
}

// The share of the plot's width along reference line k's row drawn in the reference colour (a
// dashed line covers about 9 in 14 pixels).
inline double reference_coverage(const plot::Canvas& c, const plot::ChartLayout& layout, size_t k) {
  if (k >= layout.reference_rows.size()) return 0;
  const int row = layout.reference_rows[k];
  if (row < 0 || row >= c.height()) return 0;
  return static_cast<double>(pixels_of(c, plot::colors::reference, {layout.plot.x, row, layout.plot.w, 1})) /
         layout.plot.w;
}

// The texts whose box leaves the image, as "text (x, y, w, h)".
inline std::vector<std::string> texts_outside(const plot::Canvas& c) {
  std::vector<std::string> out;
  for (const plot::Canvas::TextRecord& t : c.texts())
    if (t.box.x < 0 || t.box.y < 0 || t.box.right() > c.width() || t.box.bottom() > c.height())
      out.push_back(t.text + " (" + std::to_string(t.box.x) + ", " + std::to_string(t.box.y) + ", " +
                    std::to_string(t.box.w) + ", " + std::to_string(t.box.h) + ")");
  return out;
}

// Whether some text drawn on the canvas contains `part`.
inline bool has_text(const plot::Canvas& c, const std::string& part) {
  for (const plot::Canvas::TextRecord& t : c.texts())
    if (t.text.find(part) != std::string::npos) return true;
  return false;
}

// Pairs of series a reader without colour could not tell apart: the same marker shape (or no
// markers drawn) and the same dash pattern and fill. Returned as "i and j".
inline std::vector<std::string> series_alike_without_colour(const plot::ChartLayout& layout,
                                                           const std::vector<plot::SeriesStyle>& styles) {
  std::vector<std::string> alike;
  for (size_t i = 0; i < styles.size(); ++i)
    for (size_t j = i + 1; j < styles.size(); ++j) {
      const plot::SeriesStyle &a = styles[i], &b = styles[j];
      const bool same_marker = !layout.markers_drawn || (a.marker == b.marker && a.hollow == b.hollow);
      const bool same_dash = a.dash.on == b.dash.on && a.dash.off == b.dash.off;
      if (same_marker && same_dash) alike.push_back(std::to_string(i) + " and " + std::to_string(j));
    }
  return alike;
}

// Reference labels drawn over data: "label k covers N pixels".
inline std::vector<std::string> labels_over_data(const plot::ChartLayout& layout) {
  std::vector<std::string> over;
  for (size_t k = 0; k < layout.reference_label_covered.size(); ++k)
    if (layout.reference_label_covered[k] > 0)
      over.push_back("label " + std::to_string(k) + " covers " + std::to_string(layout.reference_label_covered[k]) +
                     " pixels");
  return over;
}

// Pairs of bar series a reader without colour could not tell apart: the same hatch pattern, and
// no name under the bars. Returned as "i and j".
inline std::vector<std::string> bars_alike_without_colour(const plot::ChartLayout& layout) {
  std::vector<std::string> alike;
  if (layout.bars_named) return alike;
  for (size_t i = 0; i < layout.bar_hatches.size(); ++i)
    for (size_t j = i + 1; j < layout.bar_hatches.size(); ++j)
      if (layout.bar_hatches[i] == layout.bar_hatches[j]) alike.push_back(std::to_string(i) + " and " + std::to_string(j));
  return alike;
}

// Bar value labels drawn over data (bars, whiskers, seed dots): "value label k covers N pixels".
inline std::vector<std::string> value_labels_over_data(const plot::ChartLayout& layout) {
  std::vector<std::string> over;
  for (size_t k = 0; k < layout.value_label_covered.size(); ++k)
    if (layout.value_label_covered[k] > 0)
      over.push_back("value label " + std::to_string(k) + " covers " + std::to_string(layout.value_label_covered[k]) +
                     " pixels");
  return over;
}

inline bool boxes_meet(const plot::Rect& a, const plot::Rect& b) {
  return a.x < b.right() && b.x < a.right() && a.y < b.bottom() && b.y < a.bottom();
}

// Pairs of texts whose boxes overlap: "'a' and 'b'" (one label written over another).
inline std::vector<std::string> texts_overlapping(const plot::Canvas& c) {
  std::vector<std::string> out;
  const auto& t = c.texts();
  for (size_t i = 0; i < t.size(); ++i)
    for (size_t j = i + 1; j < t.size(); ++j)
      if (boxes_meet(t[i].box, t[j].box)) out.push_back("'" + t[i].text + "' and '" + t[j].text + "'");
  return out;
}

// Texts drawn over a heatmap's cells or its colour bars: "'text' on matrix k" / "on bar k".
inline std::vector<std::string> texts_over_heatmap(const plot::Canvas& c, const plot::HeatmapLayout& layout) {
  std::vector<std::string> out;
  for (const plot::Canvas::TextRecord& t : c.texts()) {
    for (size_t k = 0; k < layout.matrices.size(); ++k)
      if (boxes_meet(t.box, layout.matrices[k])) out.push_back("'" + t.text + "' on matrix " + std::to_string(k));
    for (size_t k = 0; k < layout.bars.size(); ++k)
      if (boxes_meet(t.box, layout.bars[k])) out.push_back("'" + t.text + "' on colour bar " + std::to_string(k));
  }
  return out;
}

// Colour bars whose range cuts off cells without saying so (no pointed end, no count).
inline std::vector<std::string> unmarked_saturation(const plot::HeatmapLayout& layout) {
  std::vector<std::string> out;
  for (size_t k = 0; k < layout.cells_beyond.size(); ++k)
    if (layout.cells_beyond[k] > 0 && !(k < layout.beyond_marked.size() && layout.beyond_marked[k]))
      out.push_back("colour bar " + std::to_string(k) + ": " + std::to_string(layout.cells_beyond[k]) +
                    " cells beyond its range, unmarked");
  return out;
}

}  // namespace urpe::test
