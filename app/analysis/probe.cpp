// Theorem 2's probe: identical-token sequences through the model's own forward pass, the spread of
// each layer's hidden states, the position-identification accuracy, and the report, JSON and plot.
#include "app/analysis/probe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "autograd/node.h"
#include "models/transformer_xl.h"
#include "ops/urpe_attention.h"
#include "tensor/rng.h"
#include "train/encoding_names.h"
#include "train/families/encoder/encoder_config.h"
#include "base/plot/charts.h"

namespace urpe {

namespace {

constexpr int64_t kProbeBatch = 64;      // sequences per forward pass

std::string percent(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * x);
  return text;
}

std::string spread_text(double s) {
  if (s == 0) return "0";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", s);
  return text;
}

bool table_is_ones(const Tensor& table) {
  if (!table.defined()) return false;
  for (float v : table.to_vector_f32())
    if (v != 1.0f) return false;
  return true;
}

std::string reason(const ProbeRun& r) {
  if (r.attention_norm == "exp") return "attention without the softmax denominator: rows of A sum to anything";
  if (r.pe == "none") return "no positional encoding";
  if (r.pe == "rpe") return r.transformer_xl ? "Transformer-XL's relative attention: softmax rows sum to 1"
                                              : "RPE: softmax rows sum to 1";
  if (r.pe == "ape") return "APE: positions are added to the input";
  if (r.pe == "sinusoidal") return "sinusoidal: positions are added to the input";
  if (r.pe == "alibi") return "ALiBi: a fixed bias before the softmax, rows sum to 1";
  if (r.pe == "rope") return "RoPE: rotations change only q·k, rows sum to 1";
  if (r.pe == "shaw") return "Shaw: relative embeddings added to the values, Σ_j A_ij·a^V_ij depends on i";
  const size_t plus = r.pe.find("+urpe");
  if (plus != std::string::npos)
    return r.c_is_ones ? "URPE with C still all ones: a " + r.pe.substr(0, plus) + " model"
                       : "URPE (a learned C) on top of " + r.pe.substr(0, plus);
  return r.c_is_ones ? "URPE with C still all ones: an RPE model" : "URPE with a learned C";
}

}  // namespace

// Position-identification predictions: argmax over classes == position. Under Theorem 2 the n
// rows of one sequence are equal, so exact arithmetic gives them one argmax; in floats they differ
// by rounding (the spread, ~3e-7), and where a row's two best classes tie that closely the plain
// argmax would flip between rows and score a second position by chance, on one CPU and not another.
// So a row whose logit for the sequence's own choice (the argmax of the rows' mean) is within
// kPredictionTieTolerance × max |logit| of its maximum takes that choice; any other row keeps its
// argmax. Rows that really differ (APE, a learned C) differ far beyond the tolerance.
int64_t identified_positions(const Tensor& logits) {
  const std::vector<float> l = logits.to_vector_f32();  // (B, N, classes)
  const int64_t batch = logits.size(0), n = logits.size(1), classes = logits.size(2);
  int64_t correct = 0;
  std::vector<double> mean(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    const float* seq = l.data() + b * n * classes;
    std::fill(mean.begin(), mean.end(), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < classes; ++c) mean[c] += seq[i * classes + c];
    const int64_t shared = std::max_element(mean.begin(), mean.end()) - mean.begin();
    for (int64_t i = 0; i < n; ++i) {
      const float* p = seq + i * classes;
      const int64_t best = std::max_element(p, p + classes) - p;
      float scale = 0;
      for (int64_t c = 0; c < classes; ++c) scale = std::max(scale, std::fabs(p[c]));
      const bool tied = p[best] - p[shared] <= kPredictionTieTolerance * scale;
      correct += (tied ? shared : best) == i;
    }
  }
  return correct;
}

double hidden_spread(const Tensor& states) {
  URPE_CHECK(states.dim() == 3, "hidden_spread: states " << states.describe() << " must be (B, N, d)");
  const std::vector<float> h = states.to_vector_f32();
  const int64_t batch = states.size(0), n = states.size(1), d = states.size(2);
  double worst = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const float* x = h.data() + b * n * d;
    double norm_sum = 0, max_dist2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      double norm2 = 0;
      for (int64_t k = 0; k < d; ++k) norm2 += static_cast<double>(x[i * d + k]) * x[i * d + k];
      norm_sum += std::sqrt(norm2);
      for (int64_t j = 0; j < i; ++j) {
        double dist2 = 0;
        for (int64_t k = 0; k < d; ++k) {
          const double diff = static_cast<double>(x[i * d + k]) - x[j * d + k];
          dist2 += diff * diff;
        }
        max_dist2 = std::max(max_dist2, dist2);
      }
    }
    const double mean_norm = norm_sum / static_cast<double>(n);
    if (mean_norm > 0) worst = std::max(worst, std::sqrt(max_dist2) / mean_norm);
  }
  return worst;
}

std::vector<int32_t> probe_token_values(int64_t vocab, int64_t count, uint64_t seed) {
  URPE_CHECK(vocab > 0 && count > 0, "probe: vocab and the token count must be positive");
  std::vector<int32_t> values(static_cast<size_t>(vocab));
  for (int64_t v = 0; v < vocab; ++v) values[v] = static_cast<int32_t>(v);
  if (vocab <= count) return values;
  Rng rng(seed);  // a partial Fisher–Yates shuffle: the first `count` are a uniform sample
  for (int64_t k = 0; k < count; ++k) std::swap(values[k], values[k + rng.below(vocab - k)]);
  values.resize(static_cast<size_t>(count));
  std::sort(values.begin(), values.end());
  return values;
}

ProbeRun probe_identical_tokens(const AnalysisModel& model, const ProbeOptions& options) {
  autograd::NoGrad no_grad;
  ProbeRun r;
  r.run = model.name;
  r.source = model.source;
  r.family = model.family;
  r.pe = model.pe;
  r.transformer_xl = dynamic_cast<const TransformerXL*>(model.model.get()) != nullptr;  // its relative attention, for the theorem line
  if (model.encoder()) r.attention_norm = attention_norm_name(encoder_settings_from(*model.config).attention_norm);
  r.step = model.step;
  r.n = model.seq_len();
  r.c_is_ones = table_is_ones(model.model->c_table());
  const bool pi = model.encoder() && encoder_settings_from(*model.config).task == "pi";
  const std::vector<int32_t> values = probe_token_values(model.vocab(), options.max_tokens, options.seed);
  r.tokens_probed = static_cast<int64_t>(values.size());

  std::vector<double> spreads;
  int64_t correct = 0;
  for (size_t start = 0; start < values.size(); start += kProbeBatch) {
    const int64_t batch = std::min<int64_t>(kProbeBatch, static_cast<int64_t>(values.size() - start));
    std::vector<int32_t> ids(static_cast<size_t>(batch * r.n));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < r.n; ++i) ids[b * r.n + i] = values[start + b];  // (B, N): row b is token b
    HiddenStates states;
    const Tensor output = model.model->forward_tokens(Tensor::from_vector(ids, {batch, r.n}), &states);
    if (pi) correct += identified_positions(output);  // the encoder's logits
    if (spreads.empty()) spreads.assign(states.blocks.size(), 0.0);
    for (size_t l = 0; l < states.blocks.size(); ++l) spreads[l] = std::max(spreads[l], hidden_spread(states.blocks[l]));
  }
  for (size_t l = 0; l < spreads.size(); ++l) r.layers.push_back({static_cast<int64_t>(l), spreads[l]});
  r.identical_token_accuracy =
      pi ? static_cast<double>(correct) / static_cast<double>(r.tokens_probed * r.n) : std::nan("");
  return r;
}

bool theorem2_applies(const ProbeRun& r) {
  if (r.attention_norm != "softmax") return false;
  // Encodings that only change the logits before the softmax (alibi, rope), and URPE on
  // top of one of them while C is still all ones.
  auto logits_only = [](const std::string& pe) { return theorem2_binds_encoding(pe); };
  const size_t plus = r.pe.find("+urpe");
  if (plus != std::string::npos) return r.c_is_ones && logits_only(r.pe.substr(0, plus));
  return logits_only(r.pe) || (r.pe == "urpe" && r.c_is_ones);
}

json::Value probe_to_json(const std::vector<ProbeRun>& runs) {
  json::Value list = json::Value::array();
  for (const ProbeRun& r : runs) {
    json::Value layers = json::Value::array();
    for (const ProbeLayer& l : r.layers) {
      json::Value row = json::Value::object();
      row.set("layer", l.layer).set("spread", l.spread);
      layers.push(row);
    }
    json::Value row = json::Value::object();
    row.set("run", r.run).set("source", r.source).set("family", r.family).set("pe", r.pe)
        .set("attention_norm", r.attention_norm).set("step", r.step)
        .set("n", r.n).set("tokens_probed", r.tokens_probed).set("c_is_ones", r.c_is_ones)
        .set("theorem2_applies", theorem2_applies(r)).set("layers", layers)
        .set("identical_token_accuracy", std::isnan(r.identical_token_accuracy) ? json::Value()
                                                                                  : json::Value(r.identical_token_accuracy));
    list.push(row);
  }
  json::Value doc = json::Value::object();
  doc.set("runs", list);
  return doc;
}

std::string probe_report(const std::vector<ProbeRun>& runs) {
  size_t width = 3;
  for (const ProbeRun& r : runs) width = std::max(width, r.run.size());
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-*s  %-4s  %6s  %5s  %-10s  %s\n", static_cast<int>(width), "run", "pe", "step",
                "layer", "spread", "identical-token accuracy");
  out << line;
  for (const ProbeRun& r : runs) {
    for (const ProbeLayer& l : r.layers) {
      const bool last = &l == &r.layers.back();
      std::string accuracy;
      if (last) accuracy = std::isnan(r.identical_token_accuracy) ? "n/a (not a PI model)" : percent(r.identical_token_accuracy);
      std::snprintf(line, sizeof line, "%-*s  %-4s  %6lld  %5lld  %-10s  %s\n", static_cast<int>(width), r.run.c_str(),
                    r.pe.c_str(), static_cast<long long>(r.step), static_cast<long long>(l.layer),
                    spread_text(l.spread).c_str(), accuracy.c_str());
      out << line;
    }
  }
  out << "\nspread = max over the probed sequences of max_{i,j} ‖h_i − h_j‖ / mean_i ‖h_i‖; layer 0 is the input to\n"
         "block 1. Theorem 2: without position information, or with RPE, identical tokens give identical\n"
         "hidden states at every layer (spread 0 up to float rounding, ≤ 1e-5) and accuracy ≤ 1/n\n"
         "(a row whose best classes tie up to rounding takes its sequence's shared prediction).\n\n";
  for (const ProbeRun& r : runs) {
    double largest = 0;
    for (const ProbeLayer& l : r.layers) largest = std::max(largest, l.spread);
    const double chance = 1.0 / static_cast<double>(r.n);
    const bool has_accuracy = !std::isnan(r.identical_token_accuracy);
    if (theorem2_applies(r)) {
      const bool spread_ok = largest <= kSpreadBound;
      const bool accuracy_ok = !has_accuracy || r.identical_token_accuracy <= chance + 1e-12;
      out << r.run << ": Theorem 2 applies (" << reason(r) << "): largest spread " << spread_text(largest)
          << (spread_ok ? " ≤ 1e-5" : " > 1e-5");
      if (has_accuracy)
        out << ", accuracy " << percent(r.identical_token_accuracy) << (accuracy_ok ? " ≤ " : " > ") << "1/n = "
            << percent(chance);
      out << (spread_ok && accuracy_ok ? ": as the theorem says\n" : ": CONTRADICTS the theorem\n");
    } else {
      out << r.run << ": not bound by Theorem 2 (" << reason(r) << "): last-layer spread "
          << spread_text(r.layers.back().spread);
      if (has_accuracy) out << ", accuracy " << percent(r.identical_token_accuracy) << " (1/n = " << percent(chance) << ")";
      out << "\n";
    }
  }
  return out.str();
}

plot::LineChartSpec probe_chart(const std::vector<ProbeRun>& runs) {
  plot::LineChartSpec spec;
  std::string n_text;
  if (!runs.empty()) {
    bool same_n = true;
    for (const ProbeRun& r : runs) same_n = same_n && r.n == runs[0].n;
    if (same_n) n_text = " (n = " + std::to_string(runs[0].n) + ")";
  }
  bool untrained = !runs.empty();
  for (const ProbeRun& r : runs) untrained = untrained && r.step == 0;
  spec.title = "Theorem 2 probe: spread of identical tokens' hidden states" + n_text + (untrained ? ", untrained" : "");
  spec.x_label = "layer (0 = input to block 1)";
  spec.y_label = "max |h_i - h_j| / mean |h_i|";
  spec.log_y = true;
  spec.zero_band = "exactly 0";
  spec.markers = 1;
  spec.integer_x = true;
  spec.references = {{kSpreadBound, "1e-5: float rounding (theorem: 0)"}};
  // Legends name the encoding; the run's name only where two runs share one (seeds, presets).
  std::vector<std::string> names;
  for (const ProbeRun& r : runs) names.push_back(encoding_display_name(r.pe) + (r.step == 0 && !untrained ? " (untrained)" : ""));
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto shared = std::count(names.begin(), names.end(), names[i]);
    plot::Series s;
    s.name = shared > 1 ? names[i] + ", " + runs[i].run : names[i];
    for (const ProbeLayer& l : runs[i].layers) {
      s.x.push_back(static_cast<double>(l.layer));
      s.y.push_back(l.spread);
    }
    spec.series.push_back(s);
  }
  return spec;
}

void draw_probe_plot(const std::string& path, const std::vector<ProbeRun>& runs) {
  plot::line_chart(path, probe_chart(runs));
}

}  // namespace urpe
