// Row sums of the learned attention, from the attention weights the encoder's forward pass hands
// out (HiddenStates::keep_attention), and C's own prediction from its table and bucket map.
#include "app/analysis/rowsums.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "autograd/node.h"
#include "data/synthetic.h"
#include "models/positional.h"
#include "ops/reduce.h"
#include "ops/urpe_attention.h"
#include "tensor/rng.h"
#include "app/analysis/probe.h"
#include "train/families/encoder/encoder_trainer.h"
#include "base/io/run_dir.h"
#include "app/analysis/text_columns.h"
#include "base/plot/charts.h"

namespace urpe {

namespace {

constexpr int64_t kBatch = 64;

// Adds the batch mean of (A·1) per (layer, head, i) of one forward pass into `into` [h][l][i].
void accumulate(const HiddenStates& states, int64_t batch, std::vector<std::vector<std::vector<double>>>& into) {
  for (size_t l = 0; l < states.attention.size(); ++l) {
    const Tensor sums = sum(states.attention[l], 3);  // (B, H, N)
    const std::vector<float> s = sums.to_vector_f32();
    const int64_t heads = sums.size(1), n = sums.size(2);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < n; ++i) into[h][l][i] += s[(b * heads + h) * n + i];
  }
}

// "1.2419 → 0.7478": the first and last position's value, so a tilt's direction shows.
std::string ends_text(const std::vector<double>& v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4f → %.4f", v.front(), v.back());
  return text;
}

// max_i |a_i − b_i|
double largest_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

}  // namespace

std::vector<std::vector<double>> c_row_means(const std::vector<float>& c_table, int64_t heads,
                                             const std::vector<int32_t>& c_map, int64_t n) {
  const int64_t buckets = static_cast<int64_t>(c_table.size()) / heads;
  std::vector<std::vector<double>> v(heads, std::vector<double>(n, 0.0));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < n; ++i) {
      double total = 0;
      for (int64_t j = 0; j < n; ++j) total += c_table[h * buckets + c_map[i * n + j]];
      v[h][i] = total / static_cast<double>(n);
    }
  return v;
}

RowSumsResult learned_row_sums(const AnalysisModel& model, const RowSumsOptions& options) {
  URPE_CHECK(model.encoder() && model.pe == "urpe",
             "urpe theory rowsums: '" << model.source << "' is a " << model.family << " run with pe = " << model.pe
                                      << "; rowsums reads encoder runs with pe = urpe (without C every row of A sums to 1)");
  URPE_CHECK(options.real_sequences > 0, "urpe theory rowsums: --sequences must be positive");
  autograd::NoGrad no_grad;
  const TransformerEncoder& encoder = *model.encoder();
  const EncoderConfig& c = encoder.config();
  RowSumsResult r;
  r.run = model.name;
  r.step = model.step;
  r.n = c.seq_len;
  r.layers = c.layers;
  const int64_t n = r.n, heads = c.heads;

  // C's prediction, from the table and the map the encoder gathers it through.
  const std::vector<float> c_table = encoder.c_table().to_vector_f32();
  const std::vector<int32_t> c_map = relative_bucket_map(n, c.urpe_kind, true).to_vector_i32();
  const std::vector<std::vector<double>> v = c_row_means(c_table, heads, c_map, n);
  const int64_t buckets = static_cast<int64_t>(c_table.size()) / heads;

  std::vector<std::vector<std::vector<double>>> identical(
      heads, std::vector<std::vector<double>>(c.layers, std::vector<double>(n, 0.0)));
  auto real = identical;

  const std::vector<int32_t> values = probe_token_values(c.vocab, options.max_tokens, options.seed);
  for (size_t start = 0; start < values.size(); start += kBatch) {
    const int64_t batch = std::min<int64_t>(kBatch, static_cast<int64_t>(values.size() - start));
    std::vector<int32_t> ids(static_cast<size_t>(batch * n));
    for (int64_t b = 0; b < batch; ++b) std::fill(ids.begin() + b * n, ids.begin() + (b + 1) * n, values[start + b]);
    HiddenStates states;
    states.keep_attention = true;
    encoder.forward(Tensor::from_vector(ids, {batch, n}), false, nullptr, &states);
    accumulate(states, batch, identical);
  }
  r.identical_sequences = static_cast<int64_t>(values.size());

  const SyntheticTask task = task_from_config(*model.config);
  Rng rng(options.seed);
  for (int64_t seen = 0; seen < options.real_sequences; seen += kBatch) {
    const int64_t batch = std::min(kBatch, options.real_sequences - seen);
    HiddenStates states;
    states.keep_attention = true;
    encoder.forward(task.sample(batch, rng).tokens, false, nullptr, &states);
    accumulate(states, batch, real);
  }
  r.real_sequences = options.real_sequences;

  for (int64_t h = 0; h < heads; ++h) {
    RowSumsHead head;
    head.head = h;
    head.c_prediction = v[h];
    for (int64_t k = 0; k < 2 * n - 1; ++k) {  // offset k − (n − 1): the pair (0, k − n + 1) or (n − 1 − k, 0)
      const int64_t i = k < n - 1 ? n - 1 - k : 0, j = k < n - 1 ? 0 : k - (n - 1);
      head.c_by_offset.push_back(c_table[h * buckets + c_map[i * n + j]]);
    }
    head.min_gap = INFINITY;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j)
        if (std::fabs(v[h][i] - v[h][j]) < head.min_gap) {
          head.min_gap = std::fabs(v[h][i] - v[h][j]);
          head.gap_i = i;
          head.gap_j = j;
        }
    if (n < 2) head.min_gap = 0;
    for (int64_t l = 0; l < c.layers; ++l) {
      for (double& x : identical[h][l]) x /= static_cast<double>(r.identical_sequences);
      for (double& x : real[h][l]) x /= static_cast<double>(r.real_sequences);
    }
    head.identical = identical[h];
    head.real = real[h];
    r.heads.push_back(head);
  }
  return r;
}

std::string rowsums_report(const RowSumsResult& r) {
  std::ostringstream out;
  out << r.run << " (step " << r.step << "), n = " << r.n << ": A·1 per layer and head, the mean over "
      << r.identical_sequences << " identical-token sequences and over " << r.real_sequences
      << " task sequences, from the first position to the last;\nv_i = (1/n) Σ_j C[i,j] is what A·1 would be under a "
         "uniform softmax; max |A·1 − v| over positions, on identical tokens / task data.\n\n";
  const std::string last = std::to_string(r.n - 1);
  out << pad("head", 4) << "  " << pad("v_0 → v_" + last + "; smallest gap (i, j)", 34) << "  " << pad("layer", 5) << "  "
      << pad("A·1 identical tokens", 20) << "  " << pad("A·1 task data", 18) << "  " << pad("max |A·1 − v|", 15) << "  "
      << "max |identical − task|\n";
  for (const RowSumsHead& h : r.heads) {
    for (int64_t l = 0; l < r.layers; ++l) {
      std::string left;
      if (l == 0) {
        char text[96];
        std::snprintf(text, sizeof text, "%s; %.3g (%lld, %lld)", ends_text(h.c_prediction).c_str(), h.min_gap,
                      static_cast<long long>(h.gap_i), static_cast<long long>(h.gap_j));
        left = text;
      }
      char deviations[64], between[32];
      std::snprintf(deviations, sizeof deviations, "%.3f / %.3f", largest_difference(h.identical[l], h.c_prediction),
                    largest_difference(h.real[l], h.c_prediction));
      std::snprintf(between, sizeof between, "%.4f", largest_difference(h.identical[l], h.real[l]));
      out << pad(l == 0 ? std::to_string(h.head) : "", 4) << "  " << pad(left, 34) << "  "
          << pad(std::to_string(l + 1), 5) << "  " << pad(ends_text(h.identical[l]), 20) << "  "
          << pad(ends_text(h.real[l]), 18) << "  " << pad(deviations, 15) << "  " << between << "\n";
    }
  }
  const auto [later_identical, later_task] = later_layers_against_first(r);
  if (std::isfinite(later_identical)) {
    char line[256];
    const std::string later = r.layers == 2 ? "Layer 2" : "Layers 2 to " + std::to_string(r.layers);
    std::snprintf(line, sizeof line,
                  " against layer 1 on identical tokens (there A = softmax(B) ⊙ C exactly): max |A·1 − layer 1's| "
                  "%.4f on identical tokens, %.4f on task data.\n",
                  later_identical, later_task);
    out << "\n" << later << line;
  }
  int64_t distinct = 0;
  for (const RowSumsHead& h : r.heads) distinct += h.min_gap > 0;
  out << "\n" << distinct << " of " << r.heads.size()
      << " heads have all v_i distinct (smallest gap > 0): their C alone separates every position.\n"
         "With C ≡ 1 (RPE) every A·1 is exactly 1.\n";
  return out.str();
}

std::pair<double, double> later_layers_against_first(const RowSumsResult& r) {
  if (r.layers < 2) return {NAN, NAN};
  double identical = 0, task = 0;
  for (const RowSumsHead& h : r.heads)
    for (int64_t l = 1; l < r.layers; ++l) {
      identical = std::max(identical, largest_difference(h.identical[l], h.identical[0]));
      task = std::max(task, largest_difference(h.real[l], h.identical[0]));
    }
  return {identical, task};
}

RowSumsResult c_only_row_sums(const std::string& name, const std::vector<float>& c_by_offset, int64_t n) {
  URPE_CHECK(c_by_offset.size() == static_cast<size_t>(2 * n - 1),
             "urpe theory rowsums: C has " << c_by_offset.size() << " values for n = " << n);
  RowSumsResult r;
  r.run = name;
  r.n = n;
  RowSumsHead head;
  for (float c : c_by_offset) head.c_by_offset.push_back(c);
  const std::vector<int32_t> map = toeplitz_map(n, n).to_vector_i32();
  head.c_prediction = c_row_means(c_by_offset, 1, map, n)[0];
  head.min_gap = n < 2 ? 0 : INFINITY;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j)
      if (std::fabs(head.c_prediction[i] - head.c_prediction[j]) < head.min_gap) {
        head.min_gap = std::fabs(head.c_prediction[i] - head.c_prediction[j]);
        head.gap_i = i;
        head.gap_j = j;
      }
  r.heads = {head};
  return r;
}

std::string c_only_rowsums_report(const RowSumsResult& r, const std::string& description) {
  const RowSumsHead& h = r.heads.at(0);
  std::ostringstream out;
  out << r.run << " (" << description << "), n = " << r.n
      << ": v_i = (1/n) Σ_j C[i,j], the row sums A·1 when the softmax is uniform (B = 0, no content);\n"
         "row i averages c over the offsets j − i = −i … n − 1 − i.\n\n"
      << pad("i", 5, true) << "  " << pad("v_i", 12, true) << "  " << pad("v_i − v_(i−1)", 14, true) << "\n";
  char line[160];
  for (int64_t i = 0; i < r.n; ++i) {
    if (i == 0) std::snprintf(line, sizeof line, "%5lld  %12.6f\n", 0LL, h.c_prediction[0]);
    else
      std::snprintf(line, sizeof line, "%5lld  %12.6f  %14.6f\n", static_cast<long long>(i), h.c_prediction[i],
                    h.c_prediction[i] - h.c_prediction[i - 1]);
    out << line;
  }
  if (r.n < 2) {
    out << "\nOne position: nothing to tell apart.\n";
  } else if (h.min_gap > 1e-6) {
    std::snprintf(line, sizeof line,
                  "\nEvery v_i differs (closest: positions %lld and %lld, %.3g apart): this C alone separates every "
                  "position.\n",
                  static_cast<long long>(h.gap_i), static_cast<long long>(h.gap_j), h.min_gap);
    out << line;
  } else {
    std::snprintf(line, sizeof line,
                  "\nPositions %lld and %lld get the same row sum (%.3g apart): this C alone cannot tell them apart.\n",
                  static_cast<long long>(h.gap_i), static_cast<long long>(h.gap_j), h.min_gap);
    out << line;
  }
  out << "With C ≡ 1 (RPE) every v_i is exactly 1.\n";
  return out.str();
}

json::Value rowsums_to_json(const RowSumsResult& r) {
  auto array = [](const std::vector<double>& v) {
    json::Value a = json::Value::array();
    for (double x : v) a.push(x);
    return a;
  };
  json::Value heads = json::Value::array();
  for (const RowSumsHead& h : r.heads) {
    json::Value layers = json::Value::array();
    for (int64_t l = 0; l < r.layers; ++l) {
      json::Value row = json::Value::object();
      row.set("layer", l + 1).set("identical_tokens", array(h.identical[l])).set("task_data", array(h.real[l]));
      layers.push(row);
    }
    json::Value row = json::Value::object();
    row.set("head", h.head).set("c_by_offset", array(h.c_by_offset)).set("c_prediction", array(h.c_prediction))
        .set("min_gap", h.min_gap)
        .set("min_gap_positions", json::Value::array().push(h.gap_i).push(h.gap_j)).set("layers", layers);
    heads.push(row);
  }
  json::Value doc = json::Value::object();
  doc.set("run", r.run).set("step", r.step).set("n", r.n).set("identical_sequences", r.identical_sequences)
      .set("real_sequences", r.real_sequences).set("heads", heads);
  return doc;
}

plot::LineChartSpec rowsums_chart(const RowSumsResult& r, size_t head_index) {
  const RowSumsHead& h = r.heads.at(head_index);
  plot::LineChartSpec spec;
  spec.title = "head " + std::to_string(h.head) + ": row sums A·1 per position, " + r.run;
  spec.x_label = "query position i";
  spec.y_label = "(A·1)_i";
  spec.integer_x = true;
  spec.references = {{1.0, "RPE (C = 1): A·1 = 1"}};
  std::vector<double> x;
  for (int64_t i = 0; i < r.n; ++i) x.push_back(static_cast<double>(i));
  spec.series.push_back({"C alone: v_i = mean_j C[i,j]", x, h.c_prediction});
  for (int64_t l = 0; l < r.layers; ++l) {
    spec.series.push_back({"layer " + std::to_string(l + 1) + ", identical tokens", x, h.identical[l]});
    spec.series.push_back({"layer " + std::to_string(l + 1) + ", task data", x, h.real[l]});
  }
  return spec;
}

std::pair<plot::LineChartSpec, plot::LineChartSpec> c_window_charts(const RowSumsResult& r) {
  plot::LineChartSpec c, v;
  c.title = "c[j - i]: the learned C along one row, per head";
  c.x_label = "offset j - i (key minus query)";
  c.y_label = "c[j - i]";
  c.integer_x = true;
  c.references = {{1.0, "C = 1 (RPE)"}};
  v.title = "v_i = mean of c[j - i] over the keys j = 0 ... n - 1";
  v.x_label = "query position i";
  v.y_label = "v_i";
  v.integer_x = true;
  v.references = c.references;
  for (const RowSumsHead& h : r.heads) {
    plot::Series offsets{"head " + std::to_string(h.head), {}, h.c_by_offset};
    for (int64_t k = 0; k < 2 * r.n - 1; ++k) offsets.x.push_back(static_cast<double>(k - (r.n - 1)));
    plot::Series means{"head " + std::to_string(h.head), {}, h.c_prediction};
    for (int64_t i = 0; i < r.n; ++i) means.x.push_back(static_cast<double>(i));
    c.series.push_back(offsets);
    v.series.push_back(means);
  }
  const std::string last = std::to_string(r.n - 1);
  c.notes = {"row i sees the offsets -i ... " + last + " - i: at i = 0 the right half (0 ... " + last +
             "), at i = " + last + " the left half (-" + last + " ... 0)"};
  v.notes = {"v_i averages the left panel over row i's window: where c is larger to the right, v falls as i grows"};
  c.width = v.width = 800;
  c.height = v.height = 520;
  return {c, v};
}

plot::Canvas render_c_window_page(const RowSumsResult& r) {
  const auto [c, v] = c_window_charts(r);
  return plot::render_page("Why C's tilt carries position: " + r.run + " (step " + std::to_string(r.step) + ")",
                           {{plot::render_line_chart(c), plot::render_line_chart(v)}});
}

std::vector<std::string> draw_rowsums_plots(const std::string& plot_dir, const RowSumsResult& r) {
  std::vector<std::string> paths;
  for (size_t k = 0; k < r.heads.size(); ++k) {
    const std::string path = join_path(plot_dir, "rowsums_head" + std::to_string(r.heads[k].head) + ".png");
    plot::line_chart(path, rowsums_chart(r, k));
    paths.push_back(path);
  }
  const std::string window = join_path(plot_dir, "c_window.png");
  render_c_window_page(r).save_png(window);
  paths.push_back(window);
  return paths;
}

}  // namespace urpe
