// The attention-logit split into pos·pos, pos·ctx, ctx·pos and ctx·ctx (see the header for the
// maths), in double on the CPU, and its pictures.
#include "app/analysis/attention_split.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "models/positional.h"
#include "tensor/error.h"
#include "base/io/run_dir.h"
#include "base/plot/charts.h"

namespace urpe {

const char* const kLogitTermNames[kLogitTerms] = {"pos.pos", "pos.ctx", "ctx.pos", "ctx.ctx"};

namespace {

// y (rows × out) = W x (+ b) for the rows of x (rows × in).
std::vector<double> apply(const Affine& a, const double* x, int64_t rows, bool with_bias) {
  std::vector<double> y(static_cast<size_t>(rows * a.out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < a.out; ++o) {
      double s = with_bias ? a.b[o] : 0.0;
      const double* w = &a.w[o * a.in];
      for (int64_t i = 0; i < a.in; ++i) s += w[i] * x[r * a.in + i];
      y[r * a.out + o] = s;
    }
  return y;
}

// scale · Σ_{i in head h} a[s, i]·b[t, i] for every (s, t): (T × T).
void head_logits(const std::vector<double>& a, const std::vector<double>& b, int64_t T, int64_t d, int64_t h,
                 int64_t dh, double scale, double* out) {
  for (int64_t s = 0; s < T; ++s)
    for (int64_t t = 0; t < T; ++t) {
      double v = 0;
      for (int64_t i = h * dh; i < (h + 1) * dh; ++i) v += a[s * d + i] * b[t * d + i];
      out[s * T + t] = scale * v;
    }
}

}  // namespace

AttentionSplit split_attention_logits(const HiddenCube& x, const Decomposition& dec, const Affine& q, const Affine& k,
                                      int64_t heads, int64_t block) {
  const int64_t C = x.contexts, T = x.positions, d = x.dim;
  URPE_CHECK(q.in == d && k.in == d && q.out == k.out && heads > 0 && q.out % heads == 0,
             "attention split: projections " << q.out << " x " << q.in << " and " << k.out << " x " << k.in
                                              << " do not fit states of width " << d << " and " << heads << " heads");
  URPE_CHECK(static_cast<int64_t>(dec.pos.size()) == T * d && static_cast<int64_t>(dec.mu.size()) == d,
             "attention split: the decomposition does not match the states");
  const int64_t p = q.out, dh = p / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  AttentionSplit r;
  r.block = block;
  r.heads = heads;
  r.positions = T;
  r.contexts = C;
  r.shares.assign(static_cast<size_t>(heads), {});
  r.diagonal.assign(static_cast<size_t>(heads), 0.0);

  // The positional parts (context-free): qp_s = W_Q(μ + pos_s) + b_Q, kp_t likewise.
  std::vector<double> mu_pos(static_cast<size_t>(T * d));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < d; ++i) mu_pos[t * d + i] = dec.mu[i] + dec.pos[t * d + i];
  const std::vector<double> qp = apply(q, mu_pos.data(), T, true), kp = apply(k, mu_pos.data(), T, true);
  std::vector<std::vector<double>> pp(static_cast<size_t>(heads), std::vector<double>(static_cast<size_t>(T * T)));
  for (int64_t h = 0; h < heads; ++h) {
    head_logits(qp, kp, T, p, h, dh, scale, pp[h].data());
    int64_t on_diagonal = 0;
    for (int64_t s = 0; s < T; ++s) {
      const double* row = &pp[h][s * T];
      on_diagonal += std::max_element(row, row + T) - row == s;
    }
    r.diagonal[h] = static_cast<double>(on_diagonal) / static_cast<double>(T);
  }

  std::vector<std::array<double, kLogitTerms>> energy(static_cast<size_t>(heads), std::array<double, kLogitTerms>{});
  std::vector<std::array<double, kLogitTerms>> centred(static_cast<size_t>(heads), std::array<double, kLogitTerms>{});
  std::vector<double> cvec(static_cast<size_t>(T * d)), term(static_cast<size_t>(T * T) * 3), direct(static_cast<size_t>(T * T));
  double most_error = 0, most_logit = 0;
  for (int64_t c = 0; c < C; ++c) {
    const double* h_c = &x.h[c * T * d];
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < d; ++i) cvec[t * d + i] = h_c[t * d + i] - mu_pos[t * d + i];
    const std::vector<double> qc = apply(q, cvec.data(), T, false), kc = apply(k, cvec.data(), T, false);
    const std::vector<double> qx = apply(q, h_c, T, true), kx = apply(k, h_c, T, true);  // S directly from x
    for (int64_t h = 0; h < heads; ++h) {
      double* pc = &term[0];
      double* cp = &term[T * T];
      double* cc = &term[2 * T * T];
      head_logits(qp, kc, T, p, h, dh, scale, pc);
      head_logits(qc, kp, T, p, h, dh, scale, cp);
      head_logits(qc, kc, T, p, h, dh, scale, cc);
      head_logits(qx, kx, T, p, h, dh, scale, direct.data());
      const double* parts[kLogitTerms] = {pp[h].data(), pc, cp, cc};
      for (int k_term = 0; k_term < kLogitTerms; ++k_term)
        for (int64_t row = 0; row < T; ++row) {  // Σ_t (term − mean_t term)²
          const double* v = &parts[k_term][row * T];
          double mean = 0;
          for (int64_t t = 0; t < T; ++t) mean += v[t] / static_cast<double>(T);
          for (int64_t t = 0; t < T; ++t) centred[h][k_term] += (v[t] - mean) * (v[t] - mean);
        }
      for (int64_t e = 0; e < T * T; ++e) {
        double sum = 0;
        for (int k_term = 0; k_term < kLogitTerms; ++k_term) {
          energy[h][k_term] += parts[k_term][e] * parts[k_term][e];
          sum += parts[k_term][e];
        }
        most_error = std::max(most_error, std::fabs(sum - direct[e]));
        most_logit = std::max(most_logit, std::fabs(direct[e]));
      }
      if (c == 0) {
        std::array<std::vector<double>, kLogitTerms> example;
        for (int k_term = 0; k_term < kLogitTerms; ++k_term) example[k_term].assign(parts[k_term], parts[k_term] + T * T);
        r.example.push_back(std::move(example));
        r.example_logits.push_back(direct);
      }
    }
  }
  r.centred_shares.assign(static_cast<size_t>(heads), {});
  for (int64_t h = 0; h < heads; ++h) {
    double all = 0, all_centred = 0;
    for (int k_term = 0; k_term < kLogitTerms; ++k_term) {
      all += energy[h][k_term];
      all_centred += centred[h][k_term];
    }
    for (int k_term = 0; k_term < kLogitTerms; ++k_term) {
      r.shares[h][k_term] = all > 0 ? energy[h][k_term] / all : 0.0;
      r.centred_shares[h][k_term] = all_centred > 0 ? centred[h][k_term] / all_centred : 0.0;
    }
  }
  r.identity_error = most_logit > 0 ? most_error / most_logit : most_error;
  return r;
}

bool attention_split_applies(const AnalysisModel& model, std::string& why) {
  if (!model.encoder()) {
    why = "Transformer-XL's relative attention has its own position terms (not split here)";
    return false;
  }
  const EncoderConfig& c = model.encoder()->config();
  if (c.pe == PositionalKind::rope || c.pe == PositionalKind::shaw) {
    why = std::string("pe = ") + positional_kind_name(c.pe) + " changes the logits beyond q.k (not split here)";
    return false;
  }
  return true;
}

Affine attention_projection(const AnalysisModel& model, int64_t block, bool query) {
  const std::string name = "layers." + std::to_string(block - 1) + ".self_attn." + (query ? "q_proj" : "k_proj");
  const Tensor w = model.encoder()->parameters().find(name + ".weight"), b = model.encoder()->parameters().find(name + ".bias");
  URPE_CHECK(w.defined() && b.defined(), "attention split: the model has no parameter " << name << ".weight/.bias");
  Affine a;
  a.out = w.size(0);
  a.in = w.size(1);
  const std::vector<float> wv = w.to_vector_f32(), bv = b.to_vector_f32();
  a.w.assign(wv.begin(), wv.end());
  a.b.assign(bv.begin(), bv.end());
  return a;
}

void add_urpe_pictures(const AnalysisModel& model, const std::vector<float>& model_attention, AttentionSplit& split) {
  const EncoderConfig& cfg = model.encoder()->config();
  const Tensor c_table = model.encoder()->c_table();
  if (!c_table.defined()) return;
  const int64_t H = split.heads, T = split.positions;
  URPE_CHECK(static_cast<int64_t>(model_attention.size()) == H * T * T, "attention split: the model's A has "
                                                                            << model_attention.size() << " values");
  const std::vector<float> ct = c_table.to_vector_f32();
  const std::vector<int32_t> c_map = relative_bucket_map(T, cfg.urpe_kind, true).to_vector_i32();
  const int64_t c_buckets = c_table.size(1);
  std::vector<float> bt;
  std::vector<int32_t> b_map;
  int64_t b_buckets = 0;
  if (model.encoder()->bias_table().defined()) {
    bt = model.encoder()->bias_table().to_vector_f32();
    b_buckets = model.encoder()->bias_table().size(1);
    b_map = relative_bucket_map(T, cfg.pe == PositionalKind::alibi ? RelativeKind::unique : cfg.rpe_kind, true)
                .to_vector_i32();
  }
  split.attention_error = 0;
  for (int64_t h = 0; h < H; ++h) {
    std::vector<double> b(T * T, 0.0), p(T * T), c(T * T), a(T * T);
    for (int64_t e = 0; e < T * T; ++e) {
      if (!bt.empty()) b[e] = bt[h * b_buckets + b_map[e]];
      c[e] = ct[h * c_buckets + c_map[e]];
    }
    for (int64_t s = 0; s < T; ++s) {
      const double* logits = &split.example_logits[h][s * T];
      double most = -INFINITY, total = 0;
      for (int64_t t = 0; t < T; ++t) most = std::max(most, logits[t] + b[s * T + t]);
      for (int64_t t = 0; t < T; ++t) {
        // softmax, or exp without the denominator for the exp variant (ops/urpe_attention.h)
        p[s * T + t] = cfg.attention_norm == AttentionNorm::softmax ? std::exp(logits[t] + b[s * T + t] - most)
                                                                     : std::exp(logits[t] + b[s * T + t]);
        total += p[s * T + t];
      }
      if (cfg.attention_norm == AttentionNorm::softmax)
        for (int64_t t = 0; t < T; ++t) p[s * T + t] /= total;
    }
    for (int64_t e = 0; e < T * T; ++e) {
      a[e] = p[e] * c[e];
      split.attention_error = std::max(split.attention_error, std::fabs(a[e] - model_attention[h * T * T + e]));
    }
    split.bias.push_back(b);
    split.softmax.push_back(p);
    split.c.push_back(c);
    split.attention.push_back(a);
  }
}

namespace {

plot::HeatmapSpec term_panel(const std::string& title, const std::vector<double>& v, int64_t T) {
  plot::HeatmapSpec p;
  p.title = title;
  p.x_label = "key t";
  p.y_label = "query s";
  p.rows = p.cols = static_cast<int>(T);
  p.values.assign(v.begin(), v.end());
  return p;
}

std::string percent_text(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * share);
  return text;
}

const char* const kTermsCaption =
    "Each panel: one logit term of context 0 for query s (row) and key t (column), each row's mean removed (the "
    "softmax ignores it); the percentage is the term's share of the sum of squared terms over all contexts, rows "
    "centred (the report's table). A panel that looks blank holds a term near 0 on this scale, not a missing one. "
    "One colour scale for all panels; it stops at the 99th percentile of |value|, and the cells beyond it (counted "
    "under the colour bar) are drawn in the end colours.";

}  // namespace

std::vector<plot::HeatmapSpec> attention_term_panels(const AttentionSplit& b) {
  // Each row centred over the keys: the softmax ignores a row's constant, which would otherwise
  // swamp the colour scale (the mean's and biases' part of pos·pos).
  auto centred = [&](std::vector<double> v) {
    for (int64_t s = 0; s < b.positions; ++s) {
      double mean = 0;
      for (int64_t t = 0; t < b.positions; ++t) mean += v[s * b.positions + t] / static_cast<double>(b.positions);
      for (int64_t t = 0; t < b.positions; ++t) v[s * b.positions + t] -= mean;
    }
    return v;
  };
  std::vector<plot::HeatmapSpec> panels;
  for (int64_t h = 0; h < b.heads; ++h) {
    for (int k = 0; k < kLogitTerms; ++k) {
      // The term's centred share (the report's number), so that a blank-looking panel says how small it is.
      const std::string share = h < static_cast<int64_t>(b.centred_shares.size()) ? " " + percent_text(b.centred_shares[h][k]) : "";
      panels.push_back(term_panel("head " + std::to_string(h) + ": " + kLogitTermNames[k] + share, centred(b.example[h][k]), b.positions));
    }
    panels.push_back(term_panel("head " + std::to_string(h) + ": S (sum)", centred(b.example_logits[h]), b.positions));
  }
  // The colours stop at the 99th percentile of |value|: a few extreme keys would otherwise set the
  // scale and wash out the rest; the colour bar counts the cells beyond it.
  for (plot::HeatmapSpec& p : panels) p.clip_quantile = 0.99;
  panels.front().value_label = "centred logit term";
  return panels;
}

plot::Canvas render_attention_terms(const std::string& run, const AttentionSplit& b) {
  const plot::Canvas grid = plot::render_heatmap_grid(attention_term_panels(b), kLogitTerms + 1, "", true);
  return plot::render_page(run + ", block " + std::to_string(b.block) + ": logit terms of context 0, rows centred",
                           {{grid}, {plot::render_caption(kTermsCaption, grid.width() - 32)}});
}

std::vector<plot::LineChartSpec> rowsum_charts(const std::vector<AttentionSplit>& blocks) {
  // A·1 per head, one chart per block on one y scale (block 1's rough rows beside block 2's
  // smooth ones); four heads a chart, so each has its own marker shape.
  std::vector<plot::LineChartSpec> sums;
  double lo = 1, hi = 1;
  for (const AttentionSplit& b : blocks) {
    if (b.attention.empty()) continue;
    plot::LineChartSpec chart;
    chart.title = "block " + std::to_string(b.block);
    chart.x_label = "query position s";
    chart.y_label = "(A\xC2\xB7" "1)_s";
    chart.integer_x = true;
    chart.references = {{1.0, "RPE (C = 1): A\xC2\xB7" "1 = 1"}};
    chart.width = 760;
    for (int64_t h = 0; h < b.heads; ++h) {
      plot::Series s;
      s.name = "head " + std::to_string(h);
      for (int64_t i = 0; i < b.positions; ++i) {
        double total = 0;
        for (int64_t t = 0; t < b.positions; ++t) total += b.attention[h][i * b.positions + t];
        s.x.push_back(static_cast<double>(i));
        s.y.push_back(total);
        lo = std::min(lo, total);
        hi = std::max(hi, total);
      }
      chart.series.push_back(s);
    }
    sums.push_back(chart);
  }
  for (plot::LineChartSpec& chart : sums) chart.y_min = lo, chart.y_max = hi;
  return sums;
}

std::vector<std::string> draw_attention_plots(const std::string& plot_dir, const std::string& run,
                                              const std::vector<AttentionSplit>& blocks) {
  std::vector<std::string> paths;
  for (const AttentionSplit& b : blocks) {
    const std::string suffix = "_" + run + "_block" + std::to_string(b.block) + ".png";
    paths.push_back(join_path(plot_dir, "attention_terms" + suffix));
    render_attention_terms(run, b).save_png(paths.back());
    if (b.attention.empty()) continue;
    std::vector<plot::HeatmapSpec> urpe_panels;
    for (int64_t h = 0; h < b.heads; ++h) {
      const std::string head = "head " + std::to_string(h) + ": ";
      urpe_panels.push_back(term_panel(head + "B", b.bias[h], b.positions));
      urpe_panels.push_back(term_panel(head + "P = softmax(S + B)", b.softmax[h], b.positions));
      urpe_panels.back().map = plot::ColorMap::sequential;
      urpe_panels.push_back(term_panel(head + "C", b.c[h], b.positions));
      urpe_panels.back().center = 1;  // C starts at ones
      urpe_panels.push_back(term_panel(head + "A = P * C", b.attention[h], b.positions));
      urpe_panels.back().map = plot::ColorMap::sequential;
    }
    paths.push_back(join_path(plot_dir, "urpe_heads" + suffix));
    plot::heatmap_grid(paths.back(), urpe_panels, 4,
                       run + ", block " + std::to_string(b.block) + ": B, P, C and A = P * C of context 0", false);
  }
  const std::vector<plot::LineChartSpec> sums = rowsum_charts(blocks);
  if (!sums.empty()) {
    std::vector<plot::Canvas> charts;
    for (const plot::LineChartSpec& chart : sums) charts.push_back(plot::render_line_chart(chart));
    paths.push_back(join_path(plot_dir, "urpe_rowsums_" + run + ".png"));
    plot::render_page(run + ": row sums A\xC2\xB7" "1 of the URPE heads, context 0, per block", {charts}).save_png(paths.back());
  }
  return paths;
}

}  // namespace urpe
