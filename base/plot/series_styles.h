// How a line chart keeps every series visible (internal to the plot library). Series whose
// drawn lines mostly cover each other form a group; within a group the first series is drawn
// widest and solid, each later one narrower, dashed and with hollow markers on top, so the ones
// beneath show at the edges and through the gaps. Series with exactly the same points are found
// from the data, for the note that says so.
#pragma once
#include <string>
#include <vector>

#include "base/plot/charts.h"

namespace urpe::plot::parts {

// One series' points in pixels, split into runs at gaps (NaN points).
struct PixelPath {
  std::vector<std::vector<double>> xs, ys;
};

// The style of each series (colour, marker shape by index; width, dash, hollow markers and the
// drawing order by overlap group). `area` is the plotting area the paths lie in.
// `groups` (optional) receives the overlap groups of two or more series, in series order.
std::vector<SeriesStyle> overlap_styles(const std::vector<PixelPath>& paths, const Rect& area,
                                        std::vector<std::vector<size_t>>* groups = nullptr);

// The fraction of path a's drawn pixels (a stroke 4 px wide) that path b's stroke covers.
double covered_fraction(const PixelPath& a, const PixelPath& b, const Rect& area);

// Groups (two or more) of series with exactly the same x and y values, in series order.
std::vector<std::vector<size_t>> equal_series(const std::vector<Series>& series);

// The notes that say what overlaps: "RPE = URPE at every point (URPE drawn dashed on top)" for
// series with exactly equal values, "RPE drawn dashed over noPE: the lines overlap" for an
// overlap group that is not all equal.
std::vector<std::string> overlap_notes(const std::vector<Series>& series, const std::vector<std::string>& names,
                                       const std::vector<std::vector<size_t>>& overlap_groups);

}  // namespace urpe::plot::parts
