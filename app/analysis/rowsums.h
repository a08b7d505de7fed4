// Where a trained URPE model puts position (`urpe theory rowsums`): per layer and head, the row
// sums A·1 of its attention against the query position, on identical-token input (where they are
// all a layer passes on about position: docs/urpe_attention.md#why-c-fixes-it) and on the task's
// own random sequences; and the learned C's own prediction v_i = (1/n) Σ_j C[i,j] (A·1 when the
// softmax is uniform) with its smallest gap min_{i≠j} |v_i − v_j|: when every v_i differs, C alone
// can tell every position apart (the position-awareness condition). C is shared by all layers,
// so v is per head. Reads encoder runs with pe = urpe.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "app/analysis/analysis_model.h"
#include "base/io/json.h"
#include "base/plot/charts.h"

namespace urpe {

struct RowSumsHead {
  int64_t head = 0;
  std::vector<double> c_prediction;  // v_i, i = 0 … n − 1
  std::vector<double> c_by_offset;   // c at offset j − i = k − (n − 1), k = 0 … 2n − 2 (from C[i,j])
  double min_gap = 0;                // min_{i≠j} |v_i − v_j|
  int64_t gap_i = 0, gap_j = 0;      // the pair that attains it
  std::vector<std::vector<double>> identical;  // [layer − 1][i]: mean (A·1)_i over identical-token sequences
  std::vector<std::vector<double>> real;       // [layer − 1][i]: mean (A·1)_i over task sequences
};

struct RowSumsResult {
  std::string run;
  int64_t step = 0, n = 0, layers = 0;
  int64_t identical_sequences = 0, real_sequences = 0;
  std::vector<RowSumsHead> heads;
};

struct RowSumsOptions {
  int64_t max_tokens = 64;       // identical-token sequences: as the probe (every value, or a sample)
  int64_t real_sequences = 256;  // task sequences, drawn with `seed`
  uint64_t seed = 1;
};

RowSumsResult learned_row_sums(const AnalysisModel& model, const RowSumsOptions& options);

// v_i = (1/n) Σ_j C[i,j] of each head, from the C table and its (n, n) bucket map; (H, n).
std::vector<std::vector<double>> c_row_means(const std::vector<float>& c_table, int64_t heads,
                                             const std::vector<int32_t>& c_map, int64_t n);

std::string rowsums_report(const RowSumsResult& r);
// Without a run (`urpe theory rowsums --c SPEC`): one head whose C is given, no layers; v_i per
// position and whether it separates every position. `description` says what C is.
RowSumsResult c_only_row_sums(const std::string& name, const std::vector<float>& c_by_offset, int64_t n);
std::string c_only_rowsums_report(const RowSumsResult& r, const std::string& description);
json::Value rowsums_to_json(const RowSumsResult& r);
// One head's chart: C's prediction and every layer's A·1 (identical tokens, task data) against the
// query position, with RPE's row sum 1 as a reference line.
plot::LineChartSpec rowsums_chart(const RowSumsResult& r, size_t head_index);
// Why C's tilt carries position, every head: c against the offset j − i beside v_i against i.
// Row i averages c over the offsets −i … n − 1 − i, a window that slides left as i grows.
std::pair<plot::LineChartSpec, plot::LineChartSpec> c_window_charts(const RowSumsResult& r);
plot::Canvas render_c_window_page(const RowSumsResult& r);
// plots/rowsums_head<h>.png, one per head, and plots/c_window.png; returns the paths.
std::vector<std::string> draw_rowsums_plots(const std::string& plot_dir, const RowSumsResult& r);
// The largest |A·1 − layer 1's A·1 on identical tokens| over heads, positions and the layers from
// 2 on, on identical tokens (first) and on task data (second); NaN for a one-layer model. Layer 1
// on identical tokens is softmax(B) ⊙ C exactly (every key is the same vector).
std::pair<double, double> later_layers_against_first(const RowSumsResult& r);

}  // namespace urpe
