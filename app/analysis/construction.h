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

#include "base/io/json.h"
#include "base/plot/charts.h"

namespace urpe {

// A Toeplitz C for the theory commands: c at the offsets j − i = −(n − 1) … n − 1 (2n − 1 values),
// from a spec a learner types (`--c`):
//   upper       Proposition 4's: 1 for keys at or after the query (j ≥ i), 0 before
//   ones        C ≡ 1: RPE
//   linear:A    1 + A·(j − i)/(n − 1): a straight tilt from 1 − A to 1 + A
//   random[:S]  uniform in [0, 2], drawn with seed S (default 1)
//   FILE        a text file of 2n − 1 numbers (spaces, commas or new lines), offsets −(n − 1) first
struct ToeplitzC {
  std::string spec;           // as typed
  std::string description;    // for the report: "1 for j ≥ i, 0 below (Proposition 4)"
  std::vector<float> values;  // (2n − 1): entry j − i + n − 1 is c at offset j − i
};
ToeplitzC parse_toeplitz_c(const std::string& spec, int64_t n, const std::string& command);

// v_i = (1/n) Σ_j c[j − i] for each position, in double, and its smallest gap between two
// positions (the pair that attains it); a gap of 0 means C cannot tell those two apart.
std::vector<double> toeplitz_row_means(const std::vector<float>& c, int64_t n);
double smallest_gap(const std::vector<double>& v, int64_t* at_i, int64_t* at_j);

struct ConstructionResult {
  int64_t n = 0;
  ToeplitzC c;                       // the C the layer used
  std::vector<double> row_sums;      // A·1 of the URPE layer, from the module's A
  std::vector<double> closed_form;   // v_i = (1/n) Σ_j c[j − i]; (n − i)/n for Proposition 4's C
  std::vector<double> output_scale;  // the layer output at i over u: (out_i · u) / (u · u)
  std::vector<double> rpe_row_sums;  // A·1 of the same layer with C ≡ 1
  double max_error = 0;              // max_i |A·1 − closed form|
  double output_max_error = 0;       // max_i |output scale − closed form|
  double rpe_max_error = 0;          // max_i |A·1 (C ≡ 1) − 1|
  double min_gap = 0;                // smallest |output_i − output_j| / u over i ≠ j (0 for n = 1)
  int64_t gap_i = 0, gap_j = 0;
};

// n in [1, 4096]; without `c`, Proposition 4's upper-triangular ones.
ConstructionResult proposition4_construction(int64_t n, const ToeplitzC* c = nullptr);

std::string construction_report(const ConstructionResult& r);
json::Value construction_to_json(const ConstructionResult& r);
plot::LineChartSpec construction_chart(const ConstructionResult& r);
void draw_construction_plot(const std::string& path, const ConstructionResult& r);

}  // namespace urpe
