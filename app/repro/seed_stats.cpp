// Mean and half-range over seeds, and how repro tables print them.
#include "app/repro/seed_stats.h"

#include <algorithm>
#include <cstdio>

namespace urpe {

SeedStats seed_stats(const std::vector<double>& values) {
  SeedStats s;
  s.count = values.size();
  if (values.empty()) return s;
  for (double x : values) s.mean += x;
  s.mean /= static_cast<double>(values.size());
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.half_range = 0.5 * (*hi - *lo);
  return s;
}

std::string format_seed_stats(const SeedStats& s, int decimals, bool sign, double scale) {
  if (s.count == 0) return "–";
  char text[96];
  if (s.count == 1)
    std::snprintf(text, sizeof text, sign ? "%+.*f" : "%.*f", decimals, scale * s.mean);
  else
    std::snprintf(text, sizeof text, sign ? "%+.*f ± %.*f" : "%.*f ± %.*f", decimals, scale * s.mean, decimals,
                  scale * s.half_range);
  return text;
}

std::string seed_stats_legend(int64_t seeds) {
  return seeds >= 2 ? std::to_string(seeds) + " seeds per cell; mean ± half-range over seeds"
                    : "one seed per cell, so no spread (it needs two: --seeds 2)";
}

}  // namespace urpe
