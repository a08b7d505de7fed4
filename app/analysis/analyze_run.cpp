// `urpe analyze` on one model: hidden states from the model's own forward pass on its own data,
// the per-layer decomposition, and the report, JSON and plots.
#include "app/analysis/analyze_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <sstream>

#include "autograd/node.h"
#include "data/synthetic.h"
#include "tensor/error.h"
#include "tensor/rng.h"
#include "app/analysis/corpus_topics.h"
#include "train/families/encoder/encoder_config.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/families/model_family.h"
#include "base/io/run_dir.h"
#include "train/families/txl/txl_trainer.h"
#include "train/encoding_names.h"
#include "base/plot/charts.h"

namespace urpe {

namespace {

constexpr int64_t kBatch = 64;
// Hidden states are held in double, one (C, T, d) cube per layer, plus the analysis's two copies.
constexpr int64_t kMostValuesPerLayer = int64_t(1) << 24;  // 128 MiB of doubles

// Appends the batch's states (B, T, d) of the chosen layers to the cubes (one per chosen layer).
void append(const HiddenStates& states, const std::vector<int64_t>& layers, std::vector<HiddenCube>& cubes) {
  if (cubes.empty()) cubes.resize(layers.size());
  for (size_t k = 0; k < layers.size(); ++k) {
    const Tensor& s = states.blocks[static_cast<size_t>(layers[k])];
    const std::vector<float> v = s.to_vector_f32();
    HiddenCube& cube = cubes[k];
    cube.positions = s.size(1);
    cube.dim = s.size(2);
    cube.contexts += s.size(0);
    cube.h.insert(cube.h.end(), v.begin(), v.end());
  }
}

std::string fixed(double x, int digits) {
  if (std::isnan(x)) return "–";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, x);
  return text;
}

json::Value number_or_null(double x) { return std::isfinite(x) ? json::Value(x) : json::Value(); }
double number_of(const json::Value& v) { return v.is_null() ? NAN : v.as_number(); }

}  // namespace

std::string analysis_file_stem(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return s.empty() ? "run" : s;
}

const std::vector<std::string>& analyze_families() {
  static const std::vector<std::string> families = [] {  // those with a token model to look inside
    std::vector<std::string> names;
    for (const ModelFamily& family : model_family_table())
      if (family.analysed_model) names.push_back(family.name);
    return names;
  }();
  return families;
}

std::vector<int64_t> parse_layer_list(const std::string& text, const std::string& option) {
  std::vector<int64_t> layers;
  auto number = [&](const std::string& part, const std::string& item) {
    URPE_CHECK(!part.empty() && part.size() <= 6 && part.find_first_not_of("0123456789") == std::string::npos,
               option << ": expected layers like 0,2,4-6 (numbers from 0), got '" << item << "' in '" << text << "'");
    return std::stoll(part);
  };
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    const size_t dash = item.find('-');
    const int64_t first = number(item.substr(0, dash), item);
    const int64_t last = dash == std::string::npos ? first : number(item.substr(dash + 1), item);
    URPE_CHECK(first <= last, option << ": the range '" << item << "' runs backwards");
    for (int64_t l = first; l <= last; ++l) {
      URPE_CHECK(std::find(layers.begin(), layers.end(), l) == layers.end(),
                 option << ": layer " << l << " is listed twice in '" << text << "'");
      layers.push_back(l);
    }
  }
  URPE_CHECK(!layers.empty() && text.back() != ',', option << ": expected layers like 0,2,4-6, got '" << text << "'");
  std::sort(layers.begin(), layers.end());
  return layers;
}

RunAnalysis analyze_run(const AnalysisModel& model, const AnalyzeOptions& options) {
  URPE_CHECK(options.contexts >= 2, "urpe analyze: --contexts must be at least 2 (contexts are averaged over), got "
                                        << options.contexts);
  URPE_CHECK(options.data == "split" || options.data == "random",
             "urpe analyze: --data must be split or random, got '" << options.data << "'");
  const int64_t T = model.seq_len();
  URPE_CHECK(T >= 2, "urpe analyze: '" << model.source << "' has sequences of " << T
                                       << " position(s); the decomposition needs at least 2");
  // Where --data split draws its contexts: the run's synthetic task (encoder) or its corpus
  // (Transformer-XL). The model itself is read through its TokenModel interface.
  const bool encoder = model.encoder() != nullptr;
  const int64_t d = model.model->width();
  const int64_t depth = model.model->blocks();
  std::vector<int64_t> layers = options.layers;
  if (layers.empty())
    for (int64_t l = 0; l <= depth; ++l) layers.push_back(l);
  for (int64_t l : layers)
    URPE_CHECK(l >= 0 && l <= depth, "urpe analyze: --layers: '" << model.source << "' has " << depth
                                         << " blocks, so its layers are 0.." << depth
                                         << " (0 = the input to block 1), not " << l);
  URPE_CHECK(options.contexts * T * d <= kMostValuesPerLayer,
             "urpe analyze: --contexts " << options.contexts << " × " << T << " positions × d = " << d
                                         << " is too many hidden values per layer (at most " << kMostValuesPerLayer
                                         << "); use fewer contexts");
  autograd::NoGrad no_grad;
  RunAnalysis r;
  r.run = model.name;
  r.source = model.source;
  r.family = model.family;
  r.pe = model.pe;
  r.step = model.step;
  r.solver = options.solver == EigenSolver::lapack ? "LAPACK dsyev"
             : have_lapack()                         ? "Jacobi"
                                                     : "Jacobi (this build has no LAPACK)";
  std::vector<HiddenCube> cubes;
  std::vector<int>& topics = r.context_topics;
  // The attention split needs the model's own A of context 0 (a check of B, P, C and A).
  const bool split_logits = attention_split_applies(model, r.attention_note);
  std::vector<std::vector<float>> first_attention;  // per block: H × T × T of context 0
  auto keep_first_attention = [&](HiddenStates& states) {
    if (!split_logits || !first_attention.empty()) return;
    for (const Tensor& a : states.attention) {
      const std::vector<float> v = a.to_vector_f32();  // (B, H, T, T): context 0 first
      first_attention.emplace_back(v.begin(), v.begin() + a.size(1) * T * T);
    }
  };
  // A batch of contexts (B, T) → the chosen layers' states appended to the cubes.
  auto run_batch = [&](const std::vector<int32_t>& batch_major_ids, int64_t batch) {
    HiddenStates states;
    states.keep_attention = split_logits && first_attention.empty();
    model.model->forward_tokens(Tensor::from_vector(batch_major_ids, {batch, T}), &states);
    keep_first_attention(states);
    append(states, layers, cubes);
  };

  if (options.data == "random") {
    std::mt19937_64 gen(options.seed);
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(model.vocab() - 1));
    for (int64_t seen = 0; seen < options.contexts; seen += kBatch) {
      const int64_t batch = std::min(kBatch, options.contexts - seen);
      std::vector<int32_t> ids(static_cast<size_t>(batch * T));
      for (int32_t& id : ids) id = token(gen);
      run_batch(ids, batch);
    }
    r.data = std::to_string(options.contexts) + " sequences of " + std::to_string(T) +
             " tokens drawn i.i.d. uniformly from the model's vocabulary [0, " + std::to_string(model.vocab()) +
             ") (--data random, seed " + std::to_string(options.seed) + (encoder ? ")" : ", no memory)");
  } else if (encoder) {
    const SyntheticTask task = task_from_config(*model.config);
    Rng rng(options.seed);
    for (int64_t seen = 0; seen < options.contexts; seen += kBatch) {
      const int64_t batch = std::min(kBatch, options.contexts - seen);
      run_batch(task.sample(batch, rng).tokens.to_vector_i32(), batch);
    }
    r.data = std::to_string(options.contexts) + " fresh sequences of the run's task (" +
             encoder_settings_from(*model.config).task + ", n = " + std::to_string(T) + ", seed " +
             std::to_string(options.seed) + ")";
  } else {
    const data::Corpus corpus = corpus_from_config(*model.config);
    URPE_CHECK(options.split == "train" || options.split == "valid" || options.split == "test",
               "urpe analyze: --split must be train, valid or test, got '" << options.split << "'");
    const data::CorpusSplit& split = corpus.split(options.split);
    const int64_t n = static_cast<int64_t>(split.ids.size());
    URPE_CHECK(n >= T, "urpe analyze: the " << options.split << " split of '" << corpus.directory << "' has " << n
                                            << " tokens, fewer than one window of tgt_len = " << T);
    const SplitTopics sources = split_topics(split, corpus.mode);
    r.topic_names = sources.names;
    std::mt19937_64 gen(options.seed);
    std::uniform_int_distribution<int64_t> offset(0, n - T);
    std::vector<int64_t> starts(static_cast<size_t>(options.contexts));
    for (int64_t& s : starts) s = offset(gen);
    for (int64_t seen = 0; seen < options.contexts; seen += kBatch) {
      const int64_t batch = std::min(kBatch, options.contexts - seen);
      std::vector<int32_t> ids(static_cast<size_t>(batch * T));
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t start = starts[seen + b];
        for (int64_t t = 0; t < T; ++t) ids[b * T + t] = split.ids[start + t];
        if (!r.topic_names.empty()) topics.push_back(sources.topic_of(start + T / 2));  // the window's middle
      }
      run_batch(ids, batch);
    }
    r.data = std::to_string(options.contexts) + " windows of " + std::to_string(T) + " tokens at random offsets of " +
             split.path + " (seed " + std::to_string(options.seed) + ", no memory)";
    if (!r.topic_names.empty()) {
      for (size_t k = 0; k < r.topic_names.size(); ++k)
        r.topic_counts.push_back(static_cast<int64_t>(std::count(topics.begin(), topics.end(), static_cast<int>(k))));
      r.data += "; topic = the source of the window's middle token (" + sources.how + ")";
    }
  }
  for (size_t k = 0; k < cubes.size(); ++k) {
    const uint64_t seed = options.seed + 1000 * static_cast<uint64_t>(layers[k]);
    Decomposition parts;
    LayerAnalysis a = analyze_layer(cubes[k], topics, seed, options.solver, &parts);
    a.layer = layers[k];
    if (split_logits && layers[k] < depth) {  // block layers[k] + 1 reads this layer
      const int64_t block = layers[k] + 1;
      AttentionSplit split = split_attention_logits(cubes[k], parts, attention_projection(model, block, true),
                                                    attention_projection(model, block, false),
                                                    model.encoder()->config().heads, block);
      add_urpe_pictures(model, first_attention[static_cast<size_t>(block - 1)], split);
      r.attention.push_back(std::move(split));
    }
    r.layers.push_back(std::move(a));
    r.parts.push_back(std::move(parts));
    r.baseline_seeds.push_back(seed);
    if (options.keep_hidden) r.hidden.push_back(std::move(cubes[k]));
    cubes[k].h = {};  // done with it
  }
  return r;
}

json::Value analysis_to_json(const std::vector<RunAnalysis>& runs) {
  json::Value list = json::Value::array();
  for (const RunAnalysis& r : runs) {
    json::Value layers = json::Value::array();
    for (const LayerAnalysis& a : r.layers) {
      json::Value sv = json::Value::array();
      for (double s : a.singular) sv.push(s);
      json::Value row = json::Value::object();
      row.set("layer", a.layer).set("contexts", a.contexts).set("positions", a.positions).set("dim", a.dim)
          .set("total", a.total).set("pos_energy", a.pos_energy).set("ctx_energy", a.ctx_energy)
          .set("resid_energy", a.resid_energy).set("pos_share", a.pos_share).set("ctx_share", a.ctx_share)
          .set("resid_share", a.resid_share).set("anova_error", a.anova_error)
          .set("pos_sum_error", a.pos_sum_error).set("ctx_sum_error", a.ctx_sum_error)
          .set("sigma_m", a.sigma_m).set("stable_rank", a.stable_rank).set("rank90", a.rank90)
          .set("relative_norm", a.relative_norm).set("e10", number_or_null(a.e10))
          .set("incoherence_max", a.incoherence_max).set("incoherence_mean", a.incoherence_mean)
          .set("random_max", a.random_max).set("random_mean", a.random_mean)
          .set("topic_within", number_or_null(a.topic_within)).set("topic_between", number_or_null(a.topic_between))
          .set("singular_values", sv);
      if (!a.topic_pairs.empty()) {
        json::Value pairs = json::Value::array();
        for (double x : a.topic_pairs) pairs.push(number_or_null(x));
        row.set("topic_pairs", pairs);
      }
      layers.push(row);
    }
    json::Value topics = json::Value::array();
    for (size_t k = 0; k < r.topic_names.size(); ++k) {
      json::Value t = json::Value::object();
      t.set("name", r.topic_names[k]).set("contexts", k < r.topic_counts.size() ? r.topic_counts[k] : int64_t(0));
      topics.push(t);
    }
    json::Value row = json::Value::object();
    json::Value attention = json::Value::array();
    for (const AttentionSplit& b : r.attention) {
      json::Value heads = json::Value::array();
      for (int64_t h = 0; h < b.heads; ++h) {
        json::Value head = json::Value::object();
        head.set("head", h).set("pos_pos", b.shares[h][0]).set("pos_ctx", b.shares[h][1])
            .set("ctx_pos", b.shares[h][2]).set("ctx_ctx", b.shares[h][3]).set("diagonal", b.diagonal[h]);
        json::Value centred = json::Value::array();
        for (double x : b.centred_shares[h]) centred.push(x);
        head.set("centred", centred);
        heads.push(head);
      }
      json::Value block = json::Value::object();
      block.set("block", b.block).set("identity_error", b.identity_error).set("heads", heads);
      if (!b.attention.empty()) block.set("attention_error", b.attention_error);
      attention.push(block);
    }
    row.set("run", r.run).set("source", r.source).set("family", r.family).set("pe", r.pe).set("step", r.step)
        .set("data", r.data).set("topics", topics).set("solver", r.solver).set("layers", layers)
        .set("attention", attention).set("attention_note", r.attention_note);
    list.push(row);
  }
  json::Value doc = json::Value::object();
  doc.set("runs", list);
  return doc;
}

std::vector<RunAnalysis> analysis_from_json(const json::Value& doc, const std::string& path) {
  std::vector<RunAnalysis> runs;
  try {
    for (const json::Value& row : doc.at("runs").items()) {
      RunAnalysis r;
      r.run = row.at("run").as_string();
      r.source = row.at("source").as_string();
      r.family = row.at("family").as_string();
      r.pe = row.at("pe").as_string();
      r.step = row.at("step").as_integer();
      r.data = row.at("data").as_string();
      r.solver = row.at("solver").as_string();
      for (const json::Value& t : row.at("topics").items()) {
        r.topic_names.push_back(t.at("name").as_string());
        r.topic_counts.push_back(t.at("contexts").as_integer());
      }
      for (const json::Value& l : row.at("layers").items()) {
        LayerAnalysis a;
        a.layer = l.at("layer").as_integer();
        a.contexts = l.at("contexts").as_integer();
        a.positions = l.at("positions").as_integer();
        a.dim = l.at("dim").as_integer();
        a.total = l.at("total").as_number();
        a.pos_energy = l.at("pos_energy").as_number();
        a.ctx_energy = l.at("ctx_energy").as_number();
        a.resid_energy = l.at("resid_energy").as_number();
        a.pos_share = l.at("pos_share").as_number();
        a.ctx_share = l.at("ctx_share").as_number();
        a.resid_share = l.at("resid_share").as_number();
        a.anova_error = l.at("anova_error").as_number();
        a.pos_sum_error = l.at("pos_sum_error").as_number();
        a.ctx_sum_error = l.at("ctx_sum_error").as_number();
        a.sigma_m = l.at("sigma_m").as_number();
        a.stable_rank = l.at("stable_rank").as_number();
        a.rank90 = l.at("rank90").as_integer();
        a.relative_norm = l.at("relative_norm").as_number();
        a.e10 = number_of(l.at("e10"));
        a.incoherence_max = l.at("incoherence_max").as_number();
        a.incoherence_mean = l.at("incoherence_mean").as_number();
        a.random_max = l.at("random_max").as_number();
        a.random_mean = l.at("random_mean").as_number();
        a.topic_within = number_of(l.at("topic_within"));
        a.topic_between = number_of(l.at("topic_between"));
        for (const json::Value& s : l.at("singular_values").items()) a.singular.push_back(s.as_number());
        if (l.contains("topic_pairs"))
          for (const json::Value& x : l.at("topic_pairs").items()) a.topic_pairs.push_back(number_of(x));
        r.layers.push_back(a);
      }
      if (row.contains("attention")) {  // analyses written before the attention split have none
        for (const json::Value& b : row.at("attention").items()) {
          AttentionSplit split;
          split.block = b.at("block").as_integer();
          split.identity_error = b.at("identity_error").as_number();
          for (const json::Value& h : b.at("heads").items()) {
            split.shares.push_back({h.at("pos_pos").as_number(), h.at("pos_ctx").as_number(),
                                    h.at("ctx_pos").as_number(), h.at("ctx_ctx").as_number()});
            split.diagonal.push_back(h.at("diagonal").as_number());
            const std::vector<json::Value>& c = h.at("centred").items();
            URPE_CHECK(c.size() == kLogitTerms, "centred: expected " << kLogitTerms << " shares");
            split.centred_shares.push_back({c[0].as_number(), c[1].as_number(), c[2].as_number(), c[3].as_number()});
          }
          split.heads = static_cast<int64_t>(split.shares.size());
          r.attention.push_back(std::move(split));
        }
        r.attention_note = row.at("attention_note").as_string();
      }
      URPE_CHECK(!r.layers.empty(), "run '" << r.run << "' has no layers");
      runs.push_back(r);
    }
  } catch (const Error& e) {
    URPE_CHECK(false, "urpe analyze: '" << path << "' is not an analysis.json written by 'urpe analyze': " << e.what());
  }
  URPE_CHECK(!runs.empty(), "urpe analyze: '" << path << "' holds no runs");
  return runs;
}

std::string analysis_markdown(const std::vector<RunAnalysis>& runs) {
  std::ostringstream out;
  for (const RunAnalysis& r : runs) {
    out << "### " << r.run << " (" << r.family << ", pe = " << r.pe << ", step " << r.step << ")\n\n"
        << "Contexts: " << r.data << ".";
    for (size_t k = 0; k < r.topic_names.size(); ++k)
      out << (k ? ", " : " Topics: ") << r.topic_names[k] << " " << r.topic_counts[k]
          << (k + 1 == r.topic_names.size() ? "." : "");
    // What the shares would be for states with no structure at all (i.i.d. over c and t): the
    // means over C (or T) draws still carry (T − 1)/(CT − 1) (or (C − 1)/(CT − 1)) of the energy.
    const double C = static_cast<double>(r.layers.front().contexts), T = static_cast<double>(r.layers.front().positions);
    out << " Shares for i.i.d. states (no structure): pos " << fixed(100 * (T - 1) / (C * T - 1), 2) << " %, ctx "
        << fixed(100 * (C - 1) / (C * T - 1), 2) << " %. Eigensolver: " << r.solver << ".";
    out << "\n\n| layer | pos % | ctx % | resid % | ANOVA err | rel. norm | σ₁(P) | stable rank | rank 90% | E₁₀ | "
           "incoh. max / mean | random max / mean | topic within / between |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const LayerAnalysis& a : r.layers) {
      char err[32];
      std::snprintf(err, sizeof err, "%.1e", a.anova_error);
      out << "| " << a.layer << " | " << fixed(100 * a.pos_share, 2) << " | " << fixed(100 * a.ctx_share, 2) << " | "
          << fixed(100 * a.resid_share, 2) << " | " << err << " | " << fixed(a.relative_norm, 3) << " | "
          << fixed(a.singular.front(), 3) << " | " << fixed(a.stable_rank, 2) << " | " << a.rank90 << " | "
          << fixed(a.e10, 3) << " | " << fixed(a.incoherence_max, 3) << " / " << fixed(a.incoherence_mean, 3) << " | "
          << fixed(a.random_max, 3) << " / " << fixed(a.random_mean, 3) << " | " << fixed(a.topic_within, 3) << " / "
          << fixed(a.topic_between, 3) << " |\n";
    }
    out << "\n";
    const LayerAnalysis& last = r.layers.back();
    const size_t K = r.topic_names.size();
    if (K > 2 && last.topic_pairs.size() == K * K) {  // which sources are alike, at the last analysed layer
      out << "Mean cos(ctx_c, ctx_c') by the two contexts' topics, layer " << last.layer << ":\n\n|";
      for (size_t b = 0; b < K; ++b) out << " | " << r.topic_names[b];
      out << " |\n|---";
      for (size_t b = 0; b < K; ++b) out << "|---";
      out << "|\n";
      for (size_t a = 0; a < K; ++a) {
        out << "| " << r.topic_names[a];
        for (size_t b = 0; b < K; ++b) out << " | " << fixed(last.topic_pairs[a * K + b], 3);
        out << " |\n";
      }
      out << "\n";
    }
    if (!r.attention.empty()) {
      double worst = 0;
      for (const AttentionSplit& b : r.attention) worst = std::max(worst, b.identity_error);
      char err[32];
      std::snprintf(err, sizeof err, "%.1e", worst);
      out << "Attention logits of block l (reading layer l − 1) split into position and context terms: shares of "
             "Σ term² (%), then the same with each row centred over the keys (what the softmax sees: it ignores "
             "a constant per row, such as the mean's and biases' part of pos·pos); diag % = rows whose pos·pos "
             "maximum is on the diagonal; the four terms add up to the logits to "
          << err << " (relative).\n\n| block | head | pos·pos | pos·ctx | ctx·pos | ctx·ctx | centred: pos·pos | "
                    "pos·ctx | ctx·pos | ctx·ctx | diag % |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
      for (const AttentionSplit& b : r.attention)
        for (int64_t h = 0; h < b.heads; ++h) {
          out << "| " << b.block << " | " << h;
          for (double x : b.shares[h]) out << " | " << fixed(100 * x, 1);
          for (double x : b.centred_shares[h]) out << " | " << fixed(100 * x, 1);
          out << " | " << fixed(100 * b.diagonal[h], 0) << " |\n";
        }
      out << "\n";
    } else if (!r.attention_note.empty()) {
      out << "Attention split: not for this run: " << r.attention_note << ".\n\n";
    }
  }
  out << "Layer 0 is the input to block 1, layer l the output of block l. pos/ctx/resid % are the shares of\n"
         "‖h − μ‖² (C·Σ‖pos_t‖², T·Σ‖ctx_c‖², Σ‖resid‖²); ANOVA err = |total − their sum| / total. rel. norm =\n"
         "√C·σ₁(P)/σ₁(h − μ); stable rank = Σσ²/σ₁² of P; rank 90% = singular values holding 90% of its energy;\n"
         "E₁₀ = energy of the normalised Gram matrix of pos in its 10 lowest DCT frequencies (1 = smooth);\n"
         "incoh. = |cos(pos_t, ctx_c)| over all (t, c), random = the same for Gaussian vectors; topic = mean\n"
         "cos(ctx_c, ctx_c') (signed) within / between topics.\n";
  return out.str();
}

std::vector<std::string> draw_analysis_plots(const std::string& plot_dir, const RunAnalysis& r) {
  const std::string stem = analysis_file_stem(r.run);
  std::vector<std::string> paths;
  if (!r.attention.empty() && !r.attention.front().example.empty())  // not for a run read back from JSON
    paths = draw_attention_plots(plot_dir, stem, r.attention);
  if (r.parts.size() == r.layers.size()) {  // cos of [pos_1..pos_T; ctx grouped by topic] per layer
    // At most 40 contexts of each topic (the first ones drawn), 64 without topics, so cells stay visible.
    std::vector<int64_t> shown;
    const int64_t C = r.layers.front().contexts;
    if (r.context_topics.empty()) {
      for (int64_t c = 0; c < std::min<int64_t>(C, 64); ++c) shown.push_back(c);
    } else {
      for (size_t topic = 0; topic < r.topic_names.size(); ++topic) {
        int64_t taken = 0;
        for (int64_t c = 0; c < C && taken < 40; ++c)
          if (r.context_topics[c] == static_cast<int>(topic)) {
            shown.push_back(c);
            ++taken;
          }
      }
    }
    std::vector<plot::HeatmapSpec> panels;
    for (size_t k = 0; k < r.layers.size(); ++k) {
      const LayerAnalysis& a = r.layers[k];
      const int64_t T = a.positions, d = a.dim, n = T + static_cast<int64_t>(shown.size());
      std::vector<const double*> rows;
      for (int64_t t = 0; t < T; ++t) rows.push_back(&r.parts[k].pos[t * d]);
      for (int64_t c : shown) rows.push_back(&r.parts[k].ctx[c * d]);
      std::vector<double> norms;
      for (const double* v : rows) {
        double s2 = 0;
        for (int64_t i = 0; i < d; ++i) s2 += v[i] * v[i];
        norms.push_back(std::sqrt(s2));
      }
      plot::HeatmapSpec p;
      p.title = "layer " + std::to_string(a.layer);
      p.x_label = p.y_label = "pos 1..T, then ctx by topic";
      p.rows = p.cols = static_cast<int>(n);
      p.vmin = -1;
      p.vmax = 1;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += rows[i][e] * rows[j][e];
          p.values.push_back(norms[i] > 0 && norms[j] > 0 ? static_cast<float>(dot / (norms[i] * norms[j])) : NAN);
        }
      panels.push_back(p);
    }
    paths.push_back(join_path(plot_dir, "gram_pos_ctx_" + stem + ".png"));
    plot::heatmap_grid(paths.back(), panels, std::min<int>(3, static_cast<int>(panels.size())),
                       r.run + ": cos of [pos; ctx" +
                           (r.topic_names.empty() ? std::string("]") : " by topic, in the report's order]"));
  }
  {
    plot::LineChartSpec spec;
    spec.title = r.run + ": singular values of P = [pos_1 … pos_T] per layer";
    spec.x_label = "index";
    spec.y_label = "singular value";
    spec.log_y = true;
    spec.integer_x = true;
    for (const LayerAnalysis& a : r.layers) {
      plot::Series s;
      s.name = "layer " + std::to_string(a.layer);
      // Σ_t pos_t = 0 makes P's rank at most T − 1: its last singular value is rounding noise.
      const size_t shown = std::min<size_t>({a.singular.size(), static_cast<size_t>(a.positions - 1), 60});
      for (size_t k = 0; k < shown; ++k) {
        s.x.push_back(static_cast<double>(k + 1));
        s.y.push_back(a.singular[k]);
      }
      spec.series.push_back(s);
    }
    paths.push_back(join_path(plot_dir, "singular_values_" + stem + ".png"));
    plot::line_chart(paths.back(), spec);
  }
  if (!r.layers.front().gram.empty()) {
    std::vector<plot::HeatmapSpec> panels;
    for (const LayerAnalysis& a : r.layers) {
      plot::HeatmapSpec p;
      p.title = "layer " + std::to_string(a.layer);
      p.x_label = "t";
      p.y_label = "s";
      p.rows = p.cols = static_cast<int>(a.positions);
      p.values.assign(a.gram.begin(), a.gram.end());
      p.vmin = -1;
      p.vmax = 1;
      panels.push_back(p);
    }
    paths.push_back(join_path(plot_dir, "gram_" + stem + ".png"));
    plot::heatmap_grid(paths.back(), panels, std::min<int>(4, static_cast<int>(panels.size())),
                       r.run + ": G = cos(pos_s, pos_t) per layer");
  }
  for (int first : {0, 2}) {  // the spiral: pos_t in singular directions (1, 2), then (3, 4)
    plot::LineChartSpec spec;
    spec.title = r.run + ": pos_t, t = 1..T, in directions " + std::to_string(first + 1) + ", " +
                 std::to_string(first + 2);
    spec.x_label = "singular direction " + std::to_string(first + 1) + " (units of s1)";
    spec.y_label = "singular direction " + std::to_string(first + 2);
    spec.markers = 1;
    spec.path_marks = true;
    for (const LayerAnalysis& a : r.layers) {
      if (static_cast<int>(a.directions.size()) < first + 2) continue;
      plot::Series s;
      s.name = "layer " + std::to_string(a.layer);
      s.x = a.directions[first];
      s.y = a.directions[first + 1];
      spec.series.push_back(s);
    }
    if (spec.series.empty()) continue;  // read back from analysis.json, or T too small
    const std::string T = std::to_string(r.layers.front().positions);
    spec.notes.push_back("each layer's path: big ring at t = 1, big square at t = " + T +
                         ", arrowheads point to increasing t");
    paths.push_back(join_path(plot_dir, (first == 0 ? "spiral12_" : "spiral34_") + stem + ".png"));
    plot::line_chart(paths.back(), spec);
  }
  {
    plot::BarChartSpec spec;
    spec.title = r.run + ": variance shares per layer";
    spec.x_label = "layer";
    spec.y_label = "share of the variance about the mean";
    spec.series = {{"position", {}}, {"context", {}}, {"residual", {}}};
    for (const LayerAnalysis& a : r.layers) {
      spec.groups.push_back(std::to_string(a.layer));
      spec.series[0].values.push_back(a.pos_share);
      spec.series[1].values.push_back(a.ctx_share);
      spec.series[2].values.push_back(a.resid_share);
    }
    spec.decimals = 2;
    spec.y_min = 0;
    spec.y_max = 1;
    paths.push_back(join_path(plot_dir, "shares_" + stem + ".png"));
    plot::bar_chart(paths.back(), spec);
  }
  return paths;
}

std::vector<std::string> draw_compare_plots(const std::string& plot_dir, const std::vector<RunAnalysis>& runs) {
  struct Metric {
    const char* file;
    const char* title;  // after "per layer: "
    const char* label;  // the y axis
    double (*get)(const LayerAnalysis&);
    double scale;  // 100: a share drawn in %
  };
  // The share of the hidden states' variance that position carries (the report's "pos %"), with
  // the floor that states without any structure would reach: (T − 1)/(CT − 1).
  const Metric metrics[] = {
      {"relative_norm", "relative norm of P", "relative norm sqrt(C) s1(P) / s1(M)",
       [](const LayerAnalysis& a) { return a.relative_norm; }, 1},
      {"pos_share", "positional share of the variance", "positional share of the variance (%)",
       [](const LayerAnalysis& a) { return a.pos_share; }, 100},
      {"e10", "E10 (low-frequency energy of G)", "E10 (low-frequency energy of G)", [](const LayerAnalysis& a) { return a.e10; }, 1},
      {"stable_rank", "stable rank of P", "stable rank of P", [](const LayerAnalysis& a) { return a.stable_rank; }, 1}};
  std::vector<std::string> paths;
  for (const Metric& m : metrics) {
    plot::LineChartSpec spec;
    spec.title = std::string("per layer: ") + m.title;
    spec.x_label = "layer (0 = input to block 1)";
    spec.y_label = m.label;
    spec.integer_x = true;
    spec.markers = 1;
    bool any = false;
    // Legends name the encoding (noPE, RPE, URPE); the run only where two runs share one.
    std::vector<std::string> names;
    for (const RunAnalysis& r : runs) names.push_back(encoding_display_name(r.pe));
    std::set<std::pair<int64_t, int64_t>> sizes;  // (T, C) of every analysed layer
    for (const RunAnalysis& r : runs) {
      const std::string name = encoding_display_name(r.pe);
      plot::Series s;
      s.name = std::count(names.begin(), names.end(), name) > 1 ? name + ", " + r.run : name;
      for (const LayerAnalysis& a : r.layers) {
        s.x.push_back(static_cast<double>(a.layer));
        s.y.push_back(m.scale * m.get(a));
        any = any || std::isfinite(s.y.back());
        sizes.insert({a.positions, a.contexts});
      }
      spec.series.push_back(s);
    }
    if (!any) continue;  // E₁₀ of runs with T ≤ 10: nothing to draw
    if (std::string(m.file) == "pos_share" && sizes.size() == 1) {
      const auto [T, C] = *sizes.begin();
      const double floor = 100.0 * static_cast<double>(T - 1) / static_cast<double>(C * T - 1);
      char label[96];
      std::snprintf(label, sizeof label, "no structure: (T-1)/(CT-1) = %.2f%%", floor);
      spec.references = {{floor, label}};
      spec.notes.push_back("dashed: the share states with no structure at all would give (C = " + std::to_string(C) +
                           " contexts, T = " + std::to_string(T) + " positions)");
    }
    paths.push_back(join_path(plot_dir, std::string("compare_") + m.file + ".png"));
    plot::line_chart(paths.back(), spec);
  }
  return paths;
}

}  // namespace urpe
