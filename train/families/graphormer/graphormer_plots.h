// The pictures of a Graphormer run (model = graphormer), drawn from its files, so `urpe plot --run
// DIR` can redraw them any time:
//   plots/curves.png        MAE against step: training batches (with dropout), validation, and
//                           the test MAE at the last step
//   plots/spatial_bias.png  the learned spatial bias per head against the shortest-path distance
//                           (Spatial[SPD + 1, h], the term added to the attention logits)
//   plots/urpe_c.png        URPE runs: the learned c_h[SPD] per head against the distance (the
//                           factor multiplying the attention probabilities; 1 = plain Graphormer),
//                           with the distances that no training molecule has shaded (their
//                           entries never get a gradient: they stay at 1, shrunk by weight decay)
// Distances run from 0 to `max_distance` (−1: every row the tables hold).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/plot/charts.h"
#include "base/io/safetensors.h"

namespace urpe {

std::vector<std::string> draw_graphormer_run_plots(const std::string& run_dir, int64_t max_distance = -1);

// One series per head from a checkpoint: x = distance, y = the table entry. Empty when the
// checkpoint has no such table (urpe_c of a baseline run).
std::vector<plot::Series> spatial_bias_series(const TensorFile& checkpoint, int64_t max_distance = -1);
std::vector<plot::Series> urpe_c_series(const TensorFile& checkpoint, int64_t max_distance = -1);

struct GraphormerData;
// Atom pairs (i, j), i = j included, per URPE C bucket over the training molecules: bucket
// min(SPD, max_spd), pairs in different components in max_spd (models/graphormer.h).
std::vector<int64_t> training_bucket_counts(const GraphormerData& data, int64_t max_spd);
// The chart of urpe_c_series, with the buckets that `counts` (training_bucket_counts) says no
// training pair falls in shaded and named in a note; `counts` empty: nothing shaded, a note says
// the training data was not read.
plot::LineChartSpec urpe_c_chart(const std::string& title, std::vector<plot::Series> series,
                                 const std::vector<int64_t>& counts);

}  // namespace urpe
