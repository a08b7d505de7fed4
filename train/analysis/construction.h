// Proposition 4's construction (the paper's appendix B; docs/urpe_attention.md#why-c-fixes-it),
// built from the engine's own attention module and URPE core rather than written out by hand
// (`urpe theory construction --n N`):
//   one head, W_Q = W_K = 0 (so every score is 0), B = 0, hence P[i,j] = 1/n;
//   C[i,j] = 1 for keys j ≥ i and 0 below the diagonal (a Toeplitz C: c[δ] = [δ ≥ 0], δ = j − i);
//   W_V = W_O = I and identical input tokens u at every position.
// Then A·1 = (1, (n−1)/n, …, 1/n): row i keeps n − i of the n weights 1/n. The layer's output at
// position i is (A·1)_i·u, a different multiple of u at every position, which is what RPE (C ≡ 1,
// A·1 = all ones) can never produce.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "train/io/json.h"
#include "train/plot/charts.h"

namespace urpe {

struct ConstructionResult {
  int64_t n = 0;
  std::vector<double> row_sums;      // A·1 of the URPE layer, from the module's A
  std::vector<double> closed_form;   // (n − i)/n
  std::vector<double> output_scale;  // the layer output at i over u: (out_i · u) / (u · u)
  std::vector<double> rpe_row_sums;  // A·1 of the same layer with C ≡ 1
  double max_error = 0;              // max_i |A·1 − closed form|
  double output_max_error = 0;       // max_i |output scale − closed form|
  double rpe_max_error = 0;          // max_i |A·1 (C ≡ 1) − 1|
};

// n in [1, 4096].
ConstructionResult proposition4_construction(int64_t n);

std::string construction_report(const ConstructionResult& r);
json::Value construction_to_json(const ConstructionResult& r);
plot::LineChartSpec construction_chart(const ConstructionResult& r);
void draw_construction_plot(const std::string& path, const ConstructionResult& r);

}  // namespace urpe
