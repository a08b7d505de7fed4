// Proposition 4's URPE layer through SelfAttention and urpe_attention: weights set by hand, then
// one ordinary forward pass, read back as A·1 and as the layer's output.
#include "train/analysis/construction.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "autograd/node.h"
#include "models/attention.h"
#include "ops/reduce.h"
#include "train/analysis/text_columns.h"
#include "train/plot/charts.h"

namespace urpe {

namespace {

constexpr int64_t kWidth = 2;  // d_model of the layer: u = (1, −0.5), so u·u ≠ 1 is exercised

void set_identity(Tensor& weight) {
  weight.fill(0.0f);
  float* w = weight.f32();  // (d, d)
  for (int64_t k = 0; k < weight.size(0); ++k) w[k * weight.size(1) + k] = 1.0f;
}

struct LayerRun {
  std::vector<double> row_sums, output_scale;
};

// The layer of the construction with C from `c_values` (H = 1, 2n − 1 Toeplitz entries).
LayerRun run_layer(int64_t n, const std::vector<float>& c_values) {
  autograd::NoGrad no_grad;
  ParameterSet params;
  Rng rng(0);
  SelfAttention layer(params, "construction", kWidth, 1, InitSpec{0.02f, &rng, Device::cpu()});
  layer.q_proj.weight.fill(0.0f);  // W_Q = W_K = 0: every score q_i·k_j is 0
  layer.k_proj.weight.fill(0.0f);
  set_identity(layer.v_proj.weight);
  set_identity(layer.out_proj.weight);
  for (Linear* l : {&layer.q_proj, &layer.k_proj, &layer.v_proj, &layer.out_proj}) l->bias.fill(0.0f);

  UrpeAttentionParams positional;
  positional.bias_table = Tensor::zeros({1, 2 * n - 1});  // B = 0
  positional.bias_map = toeplitz_map(n, n);
  positional.c_table = Tensor::from_vector(c_values, {1, 2 * n - 1});
  positional.c_map = toeplitz_map(n, n);

  const std::vector<float> u = {1.0f, -0.5f};
  std::vector<float> x(static_cast<size_t>(n * kWidth));
  for (int64_t i = 0; i < n; ++i) std::copy(u.begin(), u.end(), x.begin() + i * kWidth);  // identical tokens
  Tensor weights;
  const Tensor out = layer.forward(Tensor::from_vector(x, {1, n, kWidth}), positional, 0.0f, nullptr, false, &weights);

  LayerRun run;
  for (float s : sum(weights, 3).to_vector_f32()) run.row_sums.push_back(s);  // (1, 1, n): A·1
  const std::vector<float> o = out.to_vector_f32();
  const double uu = static_cast<double>(u[0]) * u[0] + static_cast<double>(u[1]) * u[1];
  for (int64_t i = 0; i < n; ++i)
    run.output_scale.push_back((static_cast<double>(o[i * kWidth]) * u[0] + static_cast<double>(o[i * kWidth + 1]) * u[1]) / uu);
  return run;
}

}  // namespace

ConstructionResult proposition4_construction(int64_t n) {
  URPE_CHECK(n >= 1 && n <= 4096, "urpe theory construction: --n must be between 1 and 4096, got " << n);
  // toeplitz_map(i, j) = (j − i) + (n − 1): entries k ≥ n − 1 are the keys at or after the query.
  std::vector<float> upper(static_cast<size_t>(2 * n - 1), 0.0f), ones(static_cast<size_t>(2 * n - 1), 1.0f);
  for (int64_t k = n - 1; k < 2 * n - 1; ++k) upper[k] = 1.0f;
  const LayerRun urpe = run_layer(n, upper), rpe = run_layer(n, ones);
  ConstructionResult r;
  r.n = n;
  r.row_sums = urpe.row_sums;
  r.output_scale = urpe.output_scale;
  r.rpe_row_sums = rpe.row_sums;
  for (int64_t i = 0; i < n; ++i) {
    r.closed_form.push_back(static_cast<double>(n - i) / static_cast<double>(n));
    r.max_error = std::max(r.max_error, std::fabs(r.row_sums[i] - r.closed_form[i]));
    r.output_max_error = std::max(r.output_max_error, std::fabs(r.output_scale[i] - r.closed_form[i]));
    r.rpe_max_error = std::max(r.rpe_max_error, std::fabs(r.rpe_row_sums[i] - 1.0));
  }
  return r;
}

std::string construction_report(const ConstructionResult& r) {
  std::ostringstream out;
  char line[256];
  out << "Proposition 4 (appendix B): one URPE attention layer, n = " << r.n
      << ", W_Q = W_K = 0, B = 0, C[i,j] = 1 for j ≥ i (0 below),\n"
         "W_V = W_O = I, the same token u at every position (SelfAttention + urpe_attention).\n\n";
  out << pad("i", 5, true) << "  " << pad("(A·1)_i", 12, true) << "  " << pad("(n − i)/n", 14, true) << "  "
      << pad("output_i / u", 16, true) << "  " << pad("C ≡ 1: (A·1)_i", 16, true) << "\n";
  for (int64_t i = 0; i < r.n; ++i) {
    std::snprintf(line, sizeof line, "%5lld  %12.9f  %14.9f  %16.9f  %16.9f\n", static_cast<long long>(i),
                  r.row_sums[i], r.closed_form[i], r.output_scale[i], r.rpe_row_sums[i]);
    out << line;
  }
  std::snprintf(line, sizeof line,
                "\nmax |A·1 − (n − i)/n| = %.3g, max |output/u − (n − i)/n| = %.3g; with C ≡ 1 (RPE): max |A·1 − 1| = %.3g\n",
                r.max_error, r.output_max_error, r.rpe_max_error);
  out << line;
  out << "URPE gives every position a different multiple of u; RPE gives all of them u itself.\n";
  return out.str();
}

json::Value construction_to_json(const ConstructionResult& r) {
  auto array = [](const std::vector<double>& v) {
    json::Value a = json::Value::array();
    for (double x : v) a.push(x);
    return a;
  };
  json::Value doc = json::Value::object();
  doc.set("n", r.n).set("row_sums", array(r.row_sums)).set("closed_form", array(r.closed_form))
      .set("output_scale", array(r.output_scale)).set("rpe_row_sums", array(r.rpe_row_sums))
      .set("max_error", r.max_error).set("output_max_error", r.output_max_error)
      .set("rpe_max_error", r.rpe_max_error);
  return doc;
}

plot::LineChartSpec construction_chart(const ConstructionResult& r) {
  plot::LineChartSpec spec;
  spec.title = "Proposition 4: row sums of A for identical tokens (n = " + std::to_string(r.n) + ")";
  spec.x_label = "position i";
  spec.y_label = "(A·1)_i";
  spec.integer_x = true;
  plot::Series urpe{"URPE, C upper-triangular ones: (n - i)/n", {}, r.row_sums};
  plot::Series rpe{"RPE, C = 1: all ones", {}, r.rpe_row_sums};
  for (int64_t i = 0; i < r.n; ++i) {
    urpe.x.push_back(static_cast<double>(i));
    rpe.x.push_back(static_cast<double>(i));
  }
  spec.series = {urpe, rpe};
  return spec;
}

void draw_construction_plot(const std::string& path, const ConstructionResult& r) {
  plot::line_chart(path, construction_chart(r));
}

}  // namespace urpe
