// Proposition 4's URPE layer through SelfAttention and urpe_attention: weights set by hand, then
// one ordinary forward pass, read back as A·1 and as the layer's output.
#include "app/analysis/construction.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

#include "autograd/node.h"
#include "models/attention.h"
#include "ops/reduce.h"
#include "app/analysis/text_columns.h"
#include "base/io/run_dir.h"
#include "base/plot/charts.h"

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

ToeplitzC parse_toeplitz_c(const std::string& spec, int64_t n, const std::string& command) {
  URPE_CHECK(n >= 1 && n <= 4096, command << ": --n must be between 1 and 4096, got " << n);
  const size_t size = static_cast<size_t>(2 * n - 1);
  ToeplitzC c{spec, "", std::vector<float>(size, 1.0f)};
  auto number = [&](const std::string& text, const std::string& what) {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    URPE_CHECK(!text.empty() && *end == '\0' && std::isfinite(value),
               command << ": --c " << spec << ": " << what << " '" << text << "' is not a finite number");
    return value;
  };
  if (spec == "upper") {
    for (size_t k = 0; k < size; ++k) c.values[k] = k >= static_cast<size_t>(n - 1) ? 1.0f : 0.0f;
    c.description = "1 for j ≥ i, 0 below (Proposition 4)";
  } else if (spec == "ones") {
    c.description = "1 everywhere (RPE)";
  } else if (spec.rfind("linear:", 0) == 0) {
    const double a = number(spec.substr(7), "the slope");
    for (size_t k = 0; k < size; ++k)
      c.values[k] = static_cast<float>(1.0 + (n > 1 ? a * (static_cast<double>(k) - (n - 1)) / (n - 1) : 0.0));
    c.description = "1 + " + spec.substr(7) + "·(j − i)/(n − 1)";
  } else if (spec == "random" || spec.rfind("random:", 0) == 0) {
    const double seed = spec == "random" ? 1 : number(spec.substr(7), "the seed");
    URPE_CHECK(seed >= 0 && seed == std::floor(seed), command << ": --c " << spec << ": the seed must be a whole number ≥ 0");
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    std::uniform_real_distribution<double> uniform(0.0, 2.0);
    for (float& v : c.values) v = static_cast<float>(uniform(rng));
    c.description = "uniform in [0, 2], seed " + std::to_string(static_cast<uint64_t>(seed));
  } else {
    URPE_CHECK(path_exists(spec), command << ": --c '" << spec
                                          << "': expected upper, ones, linear:A, random[:SEED] or a file of 2n - 1 numbers");
    std::string text = read_text_file(spec);
    std::replace(text.begin(), text.end(), ',', ' ');
    std::istringstream in(text);
    std::vector<float> values;
    for (std::string word; in >> word;) values.push_back(static_cast<float>(number(word, "the value")));
    URPE_CHECK(values.size() == size, command << ": --c " << spec << " holds " << values.size() << " numbers; n = " << n
                                              << " needs 2n - 1 = " << size << " (offsets j - i from -" << n - 1
                                              << " to " << n - 1 << ")");
    c.values = values;
    c.description = "read from " + spec;
  }
  return c;
}

std::vector<double> toeplitz_row_means(const std::vector<float>& c, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) v[i] += c[j - i + n - 1];
    v[i] /= static_cast<double>(n);
  }
  return v;
}

double smallest_gap(const std::vector<double>& v, int64_t* at_i, int64_t* at_j) {
  double gap = v.size() < 2 ? 0.0 : INFINITY;
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = i + 1; j < v.size(); ++j)
      if (std::fabs(v[i] - v[j]) < gap) {
        gap = std::fabs(v[i] - v[j]);
        *at_i = static_cast<int64_t>(i);
        *at_j = static_cast<int64_t>(j);
      }
  return gap;
}

ConstructionResult proposition4_construction(int64_t n, const ToeplitzC* c) {
  URPE_CHECK(n >= 1 && n <= 4096, "urpe theory construction: --n must be between 1 and 4096, got " << n);
  ConstructionResult r;
  r.n = n;
  r.c = c ? *c : parse_toeplitz_c("upper", n, "urpe theory construction");
  URPE_CHECK(r.c.values.size() == static_cast<size_t>(2 * n - 1), "urpe theory construction: C has "
                                                                      << r.c.values.size() << " values for n = " << n);
  const std::vector<float> ones(static_cast<size_t>(2 * n - 1), 1.0f);
  const LayerRun urpe = run_layer(n, r.c.values), rpe = run_layer(n, ones);
  r.row_sums = urpe.row_sums;
  r.output_scale = urpe.output_scale;
  r.rpe_row_sums = rpe.row_sums;
  r.closed_form = toeplitz_row_means(r.c.values, n);
  for (int64_t i = 0; i < n; ++i) {
    r.max_error = std::max(r.max_error, std::fabs(r.row_sums[i] - r.closed_form[i]));
    r.output_max_error = std::max(r.output_max_error, std::fabs(r.output_scale[i] - r.closed_form[i]));
    r.rpe_max_error = std::max(r.rpe_max_error, std::fabs(r.rpe_row_sums[i] - 1.0));
  }
  r.min_gap = smallest_gap(r.output_scale, &r.gap_i, &r.gap_j);
  return r;
}

std::string construction_report(const ConstructionResult& r) {
  std::ostringstream out;
  char line[320];
  const bool proposition4 = r.c.spec == "upper";
  const std::string closed = proposition4 ? "(n − i)/n" : "mean_j C[i,j]";
  out << "Proposition 4 (appendix B): one URPE attention layer, n = " << r.n << ", W_Q = W_K = 0, B = 0, "
      << (proposition4 ? "C[i,j] = 1 for j ≥ i (0 below),\n" : "C[i,j] = c[j − i] = " + r.c.description + " (--c " + r.c.spec + "),\n")
      << "W_V = W_O = I, the same token u at every position (SelfAttention + urpe_attention).\n\n";
  out << pad("i", 5, true) << "  " << pad("(A·1)_i", 12, true) << "  " << pad(closed, 14, true) << "  "
      << pad("output_i / u", 16, true) << "  " << pad("C ≡ 1: (A·1)_i", 16, true) << "\n";
  for (int64_t i = 0; i < r.n; ++i) {
    std::snprintf(line, sizeof line, "%5lld  %12.9f  %14.9f  %16.9f  %16.9f\n", static_cast<long long>(i),
                  r.row_sums[i], r.closed_form[i], r.output_scale[i], r.rpe_row_sums[i]);
    out << line;
  }
  std::snprintf(line, sizeof line,
                "\nmax |A·1 − %s| = %.3g, max |output/u − %s| = %.3g; with C ≡ 1 (RPE): max |A·1 − 1| = %.3g\n",
                closed.c_str(), r.max_error, closed.c_str(), r.output_max_error, r.rpe_max_error);
  out << line;
  // Float rounding separates nothing: a gap this small is two positions C does not tell apart.
  const bool separated = r.min_gap > 1e-6;
  if (r.n < 2) {
    out << "One position: nothing to tell apart.\n";
  } else if (separated) {
    std::snprintf(line, sizeof line,
                  "URPE gives every position a different multiple of u (closest: positions %lld and %lld, %.3g apart); "
                  "RPE gives all of them u itself.\n",
                  static_cast<long long>(r.gap_i), static_cast<long long>(r.gap_j), r.min_gap);
    out << line;
  } else {
    std::snprintf(line, sizeof line,
                  "Positions %lld and %lld get the same multiple of u (%.3g apart): this C does not tell them apart, so "
                  "no later layer can.\n",
                  static_cast<long long>(r.gap_i), static_cast<long long>(r.gap_j), r.min_gap);
    out << line;
  }
  if (!proposition4) {
    std::snprintf(line, sizeof line,
                  "Changed from Proposition 4's C (upper, whose positions are 1/n = %.3g apart): C = %s.\n",
                  1.0 / static_cast<double>(r.n), r.c.description.c_str());
    out << line;
  }
  return out.str();
}

json::Value construction_to_json(const ConstructionResult& r) {
  auto array = [](const std::vector<double>& v) {
    json::Value a = json::Value::array();
    for (double x : v) a.push(x);
    return a;
  };
  json::Value doc = json::Value::object();
  json::Value c = json::Value::array();
  for (float x : r.c.values) c.push(static_cast<double>(x));
  doc.set("n", r.n).set("c_spec", r.c.spec).set("c_by_offset", c).set("min_gap", r.min_gap).set("row_sums", array(r.row_sums)).set("closed_form", array(r.closed_form))
      .set("output_scale", array(r.output_scale)).set("rpe_row_sums", array(r.rpe_row_sums))
      .set("max_error", r.max_error).set("output_max_error", r.output_max_error)
      .set("rpe_max_error", r.rpe_max_error);
  return doc;
}

plot::LineChartSpec construction_chart(const ConstructionResult& r) {
  plot::LineChartSpec spec;
  spec.title = "Proposition 4: row sums of A for identical tokens (n = " + std::to_string(r.n) +
               (r.c.spec == "upper" ? ")" : ", C = " + r.c.spec + ")");
  spec.x_label = "position i";
  spec.y_label = "(A·1)_i";
  spec.integer_x = true;
  plot::Series urpe{r.c.spec == "upper" ? "URPE, C upper-triangular ones: (n - i)/n" : "URPE, C = " + r.c.spec, {}, r.row_sums};
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
