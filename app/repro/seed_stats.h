// One cell of a repro table over its seeds: the mean and half the range. A spread needs two
// seeds, so with one seed the cell shows the value alone ("3.03", not "3.03 ± 0.00", which would
// claim a measured spread of zero).
#pragma once
#include <string>
#include <vector>

namespace urpe {

struct SeedStats {
  double mean = 0, half_range = 0;
  size_t count = 0;  // seeds in the cell
};
SeedStats seed_stats(const std::vector<double>& values);

// "mean ± half_range" with `decimals` digits (each multiplied by `scale`, e.g. 100 for percent;
// `sign` forces a + on positive means); the mean alone for one seed; "–" for none.
std::string format_seed_stats(const SeedStats& stats, int decimals, bool sign = false, double scale = 1.0);

// The sentence repro tables print under their title about what a cell shows.
std::string seed_stats_legend(int64_t seeds);

}  // namespace urpe
