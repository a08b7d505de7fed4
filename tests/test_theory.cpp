// The theory commands (app/analysis/, `urpe theory`): Theorem 2's probe on tiny models trained in
// the test (noPE and RPE keep identical tokens identical at every layer, URPE and APE do not),
// Proposition 4's construction against its closed form, the row sums of C, the denominator
// experiment's bookkeeping, the hidden-state collector the probe reads, the errors for run
// directories it cannot read, and the walkthrough's commands against the command table.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "autograd/node.h"
#include "ops/shape.h"
#include "cli_util.h"
#include "test_util.h"
#include "app/analysis/analysis_model.h"
#include "app/analysis/construction.h"
#include "app/analysis/denominator.h"
#include "app/analysis/probe.h"
#include "app/analysis/rowsums.h"
#include "train/loop/checkpoint.h"
#include "app/cli/command_line.h"
#include "train/families/encoder/encoder_trainer.h"
#include "base/io/run_dir.h"
#include "train/families/txl/txl_config.h"
#include "train/config/run_config.h"

using namespace urpe;
using urpe::test::run_urpe;

namespace {

std::string temp_dir(const std::string& name) {
  const std::string dir = std::string("/tmp/urpe_test_theory_") + std::to_string(::getpid()) + "_" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

// A tiny position-identification encoder, trained for a few dozen steps: enough for URPE's C and
// APE's embeddings to move, far too little to learn the task.
const std::vector<std::string> kTiny = {"task=pi", "seq_len=8", "vocab=6", "layers=2", "d_model=16", "heads=2",
                                        "d_ff=32", "batch=16", "steps=40", "warmup=5", "lr=0.01",
                                        "eval_every=40", "valid_size=16"};

// Trains the tiny model with `pe` once per test process and returns its run directory. Through the
// binary, which sets the OpenMP and OpenBLAS environment it wants before starting (on a busy
// machine an in-process run with spinning OpenMP threads is ten times slower).
std::string trained_run(const std::string& pe) {
  static std::map<std::string, std::string> dirs;
  auto it = dirs.find(pe);
  if (it != dirs.end()) return it->second;
  const std::string dir = temp_dir("run_" + pe);
  std::string sets;
  for (const std::string& s : kTiny) sets += " --set " + s;
  const urpe::test::CliResult r = run_urpe("train" + sets + " --set pe=" + pe + " --out " + dir + " --quiet");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  dirs[pe] = dir;
  return dir;
}

ProbeRun probe_run(const std::string& pe) {
  return probe_identical_tokens(load_run_model(trained_run(pe), "test", {"encoder", "txl"}), ProbeOptions{});
}

double largest_spread(const ProbeRun& r) {
  double s = 0;
  for (const ProbeLayer& l : r.layers) s = std::max(s, l.spread);
  return s;
}

}  // namespace

// ---- the collector the analyses read ----

TEST_CASE("HiddenStates: the encoder's own forward hands out every block, without changing its output") {
  autograd::NoGrad no_grad;
  EncoderConfig c;
  c.vocab = 7;
  c.seq_len = 6;
  c.layers = 3;
  c.d_model = 8;
  c.heads = 2;
  c.d_ff = 16;
  c.num_classes = 6;
  const TransformerEncoder model(c, 5);
  const Tensor tokens = test::random_ids({2, 5}, 7, 6);
  HiddenStates states;
  states.keep_after_attention = true;
  states.keep_attention = true;
  const Tensor with = model.forward(tokens, false, nullptr, &states);
  const Tensor without = model.forward(tokens, false, nullptr);
  CHECK(test::max_abs_diff(with, without) == 0.0);
  REQUIRE(states.blocks.size() == 4);
  for (const Tensor& h : states.blocks) CHECK(h.shape() == (Shape{2, 5, 8}));
  REQUIRE(states.after_attention.size() == 3);
  REQUIRE(states.attention.size() == 3);
  CHECK(states.attention[0].shape() == (Shape{2, 2, 5, 5}));
  // The blocks really are successive states: block 1 differs from the input, and a second call
  // replaces (not appends to) what the collector holds.
  CHECK(test::max_abs_diff(states.blocks[0], states.blocks[1]) > 1e-3);
  model.forward(tokens, false, nullptr, &states);
  CHECK(states.blocks.size() == 4);
  HiddenStates plain;
  model.forward(tokens, false, nullptr, &plain);
  CHECK(plain.after_attention.empty());
  CHECK(plain.attention.empty());
}

TEST_CASE("HiddenStates: Transformer-XL, batch-major, over a segment with memory") {
  autograd::NoGrad no_grad;
  TransformerXLConfig c;
  c.vocab = 20;
  c.layers = 2;
  c.d_model = 8;
  c.heads = 2;
  c.d_head = 4;
  c.d_inner = 16;
  c.dropout = 0;
  c.tgt_len = 4;
  c.mem_len = 3;
  const TransformerXL model(c, 3);
  const Tensor tokens = test::random_ids({4, 2}, 20, 8);  // (qlen, B)
  const TxlHidden first = model.forward_hidden(tokens, {}, false, nullptr);
  HiddenStates states;
  states.keep_attention = true;
  const TxlHidden second = model.forward_hidden(tokens, first.mems, false, nullptr, &states);
  REQUIRE(states.blocks.size() == 3);
  for (const Tensor& h : states.blocks) CHECK(h.shape() == (Shape{2, 4, 8}));
  REQUIRE(states.attention.size() == 2);
  CHECK(states.attention[1].shape() == (Shape{2, 2, 4, 7}));  // 3 memory + 4 segment keys
  // The last block, time-major, is what the model hands its output layer (no dropout here).
  CHECK(test::max_abs_diff(permute(states.blocks.back(), {1, 0, 2}), second.hidden) == 0.0);
}

// ---- Theorem 2's probe ----

TEST_CASE("hidden_spread: max_{i,j} |h_i − h_j| / mean_i |h_i|, worst over the batch") {
  // Item 0: rows (3, 4), (3, 4): spread 0. Item 1: rows (1, 0), (0, 1): √2 / 1.
  const Tensor h = Tensor::from_vector(std::vector<float>{3, 4, 3, 4, 1, 0, 0, 1}, {2, 2, 2});
  CHECK(hidden_spread(h) == doctest::Approx(std::sqrt(2.0)));
  CHECK(hidden_spread(Tensor::from_vector(std::vector<float>{3, 4, 3, 4}, {1, 2, 2})) == 0.0);
  CHECK(hidden_spread(Tensor::zeros({1, 3, 2})) == 0.0);
}

TEST_CASE("identified positions: rows equal up to rounding predict one class; rows that differ keep their own") {
  // One sequence, n = 3 rows, 3 classes. Rows 0 and 1 favour class 0 by 0.5; row 2 is the same
  // row with class 2 ahead by 1e-7 (float rounding): the plain argmax would score row 2 as well.
  const float eps = 1e-7f;
  std::vector<float> tied = {1.0f, 0.5f, 0.2f, 1.0f, 0.5f, 0.2f, 1.0f, 0.5f, 1.0f + eps};
  CHECK(identified_positions(Tensor::from_vector(tied, {1, 3, 3})) == 1);
  // The same flip by 1e-2 is a real difference (beyond kPredictionTieTolerance): row 2 keeps class 2.
  std::vector<float> apart = tied;
  apart[8] = 1.01f;
  CHECK(identified_positions(Tensor::from_vector(apart, {1, 3, 3})) == 2);
  // Rows that identify their positions outright (a trained URPE model): all counted.
  const std::vector<float> eye = {3, 0, 0, 0, 3, 0, 0, 0, 3, 3, 0, 0, 0, 3, 0, 0, 0, 3};
  CHECK(identified_positions(Tensor::from_vector(eye, {2, 3, 3})) == 6);
}

TEST_CASE("probe token values: all of a small vocabulary, a seeded sorted sample of a large one") {
  CHECK(probe_token_values(5, 64, 1) == std::vector<int32_t>{0, 1, 2, 3, 4});
  const std::vector<int32_t> sample = probe_token_values(1000, 64, 7);
  CHECK(sample.size() == 64);
  CHECK(std::is_sorted(sample.begin(), sample.end()));
  CHECK(std::adjacent_find(sample.begin(), sample.end()) == sample.end());
  CHECK(sample == probe_token_values(1000, 64, 7));
  CHECK(sample != probe_token_values(1000, 64, 8));
}

TEST_CASE("Theorem 2 on trained models: noPE and RPE keep identical tokens identical; URPE and APE do not") {
  const ProbeRun none = probe_run("none"), rpe = probe_run("rpe"), urpe = probe_run("urpe"), ape = probe_run("ape");
  const double chance = 1.0 / 8.0;
  for (const ProbeRun* r : {&none, &rpe}) {
    CAPTURE(r->pe);
    CHECK(r->step == 40);
    REQUIRE(r->layers.size() == 3);  // input to block 1, then two blocks
    for (const ProbeLayer& l : r->layers) CHECK(l.spread <= 1e-5);
    CHECK(r->identical_token_accuracy <= chance + 1e-12);
    CHECK(theorem2_applies(*r));
  }
  MESSAGE("last-layer spread: none " << none.layers.back().spread << ", rpe " << rpe.layers.back().spread
                                     << ", urpe " << urpe.layers.back().spread << ", ape " << ape.layers.back().spread);
  for (const ProbeRun* r : {&urpe, &ape}) {
    CAPTURE(r->pe);
    CHECK_FALSE(theorem2_applies(*r));
    CHECK(r->layers.back().spread > 1e-3);  // clearly larger: 100 times the rounding bound
  }
  CHECK_FALSE(urpe.c_is_ones);
  CHECK(urpe.layers.front().spread == 0.0);  // URPE's input carries no position; C does it inside
  CHECK(ape.layers.front().spread > 1e-2);   // APE's input already does

  const json::Value doc = probe_to_json({none, urpe});
  CHECK(doc.at("runs").size() == 2);
  CHECK(doc.at("runs")[0].at("pe").as_string() == "none");
  CHECK(doc.at("runs")[1].at("layers").size() == 3);
  CHECK(doc.at("runs")[1].at("layers")[2].at("spread").as_number() == urpe.layers.back().spread);
  CHECK(doc.at("runs")[0].at("identical_token_accuracy").as_number() == none.identical_token_accuracy);
  const std::string report = probe_report({none, urpe});
  CHECK(report.find("Theorem 2 applies (no positional encoding)") != std::string::npos);
  CHECK(report.find("as the theorem says") != std::string::npos);
  CHECK(report.find("not bound by Theorem 2 (URPE with a learned C)") != std::string::npos);
}

TEST_CASE("Theorem 2 on an untrained URPE model: C ≡ 1 makes it an RPE model") {
  const ProbeRun r = probe_identical_tokens(fresh_model("pi-tiny", {"pe=urpe", "layers=1"}, "test", {"encoder"}),
                                            ProbeOptions{});
  CHECK(r.c_is_ones);
  CHECK(theorem2_applies(r));
  CHECK(largest_spread(r) <= 1e-5);
  CHECK(r.tokens_probed == 64);  // vocab 100: a sample of 64 values
}

TEST_CASE("Theorem 2 does not bind attention without the denominator, even with C ≡ 1 or no position at all") {
  // An untrained noPE model with attention_norm = exp: identical tokens stay identical (nothing
  // distinguishes the positions), but the report must not credit the theorem for it.
  const ProbeRun r = probe_identical_tokens(
      fresh_model("pi-tiny", {"pe=rpe", "attention_norm=exp", "layers=1"}, "test", {"encoder"}), ProbeOptions{});
  CHECK(r.attention_norm == "exp");
  CHECK_FALSE(theorem2_applies(r));
  CHECK(probe_report({r}).find("without the softmax denominator") != std::string::npos);
  CHECK(probe_to_json({r}).at("runs")[0].at("attention_norm").as_string() == "exp");
}

TEST_CASE("Theorem 2 in Transformer-XL: the baseline keeps identical tokens identical, a moved C does not") {
  Config config = resolve_config("txl-tiny", "", {"tgt_len=6", "mem_len=0", "cutoffs="});
  TransformerXLConfig c = txl_config_from(config, 40);
  c.d_model = 16;
  c.d_head = 4;
  c.d_inner = 32;
  for (bool urpe : {false, true}) {
    CAPTURE(urpe);
    c.urpe = urpe;
    AnalysisModel m;
    m.name = urpe ? "txl-urpe" : "txl";
    m.family = "txl";
    m.pe = urpe ? "urpe" : "rpe";
    m.config = std::make_unique<Config>(config);
    m.model = std::make_unique<TransformerXL>(c, 2);
    m.positions = config.get_int("tgt_len");  // as the txl family's analysed_model sets it
    if (urpe) {  // a C that is no longer ones: a ramp over the distances
      float* table = m.model->c_table().f32();
      for (int64_t k = 0; k < m.model->c_table().numel(); ++k) table[k] = 0.2f + 0.3f * static_cast<float>(k % 6);
    }
    const ProbeRun r = probe_identical_tokens(m, ProbeOptions{});
    CHECK(r.n == 6);
    CHECK(std::isnan(r.identical_token_accuracy));  // a language model: no PI accuracy
    REQUIRE(r.layers.size() == 3);
    if (urpe) CHECK(r.layers.back().spread > 1e-3);
    else CHECK(largest_spread(r) <= 1e-5);
  }
}

// ---- Proposition 4 ----

TEST_CASE("Proposition 4: A·1 = (1, (n−1)/n, …, 1/n) to float precision, all ones with C ≡ 1") {
  for (int64_t n : {1, 2, 7, 32, 100}) {
    CAPTURE(n);
    const ConstructionResult r = proposition4_construction(n);
    REQUIRE(r.row_sums.size() == static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const double closed = static_cast<double>(n - i) / static_cast<double>(n);
      CHECK(r.closed_form[i] == closed);
      CHECK(std::fabs(r.row_sums[i] - closed) <= 4e-7 * std::max<double>(1.0, static_cast<double>(n) / 8));
      CHECK(std::fabs(r.output_scale[i] - closed) <= 1e-6);
      CHECK(std::fabs(r.rpe_row_sums[i] - 1.0) <= 1e-6);
    }
    CHECK(r.max_error <= 1e-5);
  }
  // Distinct for every position: what lets the next block read the position off.
  const ConstructionResult r = proposition4_construction(16);
  for (int64_t i = 1; i < 16; ++i) CHECK(r.row_sums[i] < r.row_sums[i - 1] - 0.05);
  CHECK_THROWS_WITH_AS(proposition4_construction(0), doctest::Contains("--n must be between 1 and 4096"), Error);
  const json::Value doc = construction_to_json(r);
  CHECK(doc.at("row_sums").size() == 16);
  CHECK(doc.at("closed_form")[15].as_number() == doctest::Approx(1.0 / 16));
}

// ---- row sums ----

TEST_CASE("your own C in the construction (--c): what it gives every position, and when it fails") {
  // A symmetric C (here all ones, or a linear tilt of 0) gives every position the same output.
  const ToeplitzC flat = parse_toeplitz_c("linear:0", 6, "test");
  const ConstructionResult same = proposition4_construction(6, &flat);
  CHECK(same.min_gap < 1e-6);
  CHECK(construction_report(same).find("get the same multiple of u") != std::string::npos);
  CHECK(construction_report(same).find("Changed from Proposition 4's C") != std::string::npos);
  // A tilt separates them: v_i = 1 + A·(n − 1 − 2i)/(2(n − 1)), steps of A/(n − 1).
  const ToeplitzC tilt = parse_toeplitz_c("linear:0.5", 6, "test");
  const ConstructionResult r = proposition4_construction(6, &tilt);
  for (int64_t i = 0; i < 6; ++i) {
    CHECK(r.closed_form[i] == doctest::Approx(1.0 + 0.5 * (5.0 - 2.0 * i) / 10.0));
    CHECK(r.row_sums[i] == doctest::Approx(r.closed_form[i]).epsilon(1e-6));
    CHECK(r.output_scale[i] == doctest::Approx(r.closed_form[i]).epsilon(1e-6));
  }
  CHECK(r.min_gap == doctest::Approx(0.1).epsilon(1e-5));
  CHECK(construction_report(r).find("URPE gives every position a different multiple of u") != std::string::npos);
  // The default is Proposition 4's C, and its report keeps the closed form (n − i)/n.
  const ConstructionResult p4 = proposition4_construction(4);
  CHECK(p4.c.spec == "upper");
  CHECK(construction_report(p4).find("(n − i)/n") != std::string::npos);
  CHECK(p4.min_gap == doctest::Approx(0.25));
  // random is seeded; a file holds 2n − 1 numbers, offsets −(n − 1) first.
  CHECK(parse_toeplitz_c("random:7", 5, "t").values == parse_toeplitz_c("random:7", 5, "t").values);
  CHECK(parse_toeplitz_c("random:7", 5, "t").values != parse_toeplitz_c("random:8", 5, "t").values);
  const std::string dir = temp_dir("c_file");
  make_directories(dir);
  write_text_atomic(join_path(dir, "c.txt"), "0, 0, 1\n2 3\n");
  CHECK(parse_toeplitz_c(join_path(dir, "c.txt"), 3, "t").values == std::vector<float>{0, 0, 1, 2, 3});
  CHECK_THROWS_WITH_AS(parse_toeplitz_c(join_path(dir, "c.txt"), 4, "urpe theory construction"),
                       doctest::Contains("holds 5 numbers; n = 4 needs 2n - 1 = 7"), Error);
  CHECK_THROWS_WITH_AS(parse_toeplitz_c("linear:x", 4, "urpe theory construction"),
                       doctest::Contains("the slope 'x' is not a finite number"), Error);
  CHECK_THROWS_WITH_AS(parse_toeplitz_c("lower", 4, "urpe theory construction"),
                       doctest::Contains("expected upper, ones, linear:A, random[:SEED] or a file"), Error);
}

TEST_CASE("theory rowsums --c: C's row sums without a run, in under a second, with its picture") {
  const std::string out = temp_dir("rowsums_c");
  const urpe::test::CliResult r = run_urpe("theory rowsums --c linear:0.5 --n 6 --out " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("Every v_i differs (closest: positions") != std::string::npos);
  CHECK(path_exists(join_path(out, "plots/c_window.png")));
  CHECK(path_exists(join_path(out, "rowsums.json")));
  const urpe::test::CliResult flat = run_urpe("theory rowsums --c ones --n 6 --out " + out);
  CHECK(flat.output.find("get the same row sum") != std::string::npos);
  const urpe::test::CliResult both = run_urpe("theory rowsums --c ones --run " + out + " --out " + out);
  CHECK(both.code != 0);
  CHECK(both.output.find("not both") != std::string::npos);
  const urpe::test::CliResult n_alone = run_urpe("theory rowsums --run " + out + " --n 4 --out " + out);
  CHECK(n_alone.output.find("--n goes with --c") != std::string::npos);
}

TEST_CASE("C's prediction v_i = (1/n) Σ_j C[i,j] through the bucket map") {
  // One head, n = 3, Toeplitz map (j − i) + 2, upper-triangular ones: v = (1, 2/3, 1/3).
  const std::vector<float> c = {0, 0, 1, 1, 1};
  const std::vector<std::vector<double>> v = c_row_means(c, 1, toeplitz_map(3, 3).to_vector_i32(), 3);
  REQUIRE(v.size() == 1);
  CHECK(v[0][0] == doctest::Approx(1.0));
  CHECK(v[0][1] == doctest::Approx(2.0 / 3));
  CHECK(v[0][2] == doctest::Approx(1.0 / 3));
}

TEST_CASE("rowsums: a trained URPE run's A·1 moves away from 1; an untrained one's is exactly 1") {
  const RowSumsResult trained = learned_row_sums(load_run_model(trained_run("urpe"), "test", {"encoder"}),
                                                 RowSumsOptions{64, 32, 1});
  REQUIRE(trained.heads.size() == 2);
  CHECK(trained.layers == 2);
  double furthest = 0;
  for (const RowSumsHead& h : trained.heads) {
    REQUIRE(h.identical.size() == 2);
    REQUIRE(h.real[1].size() == 8);
    for (const auto& layer : h.identical)
      for (double x : layer) furthest = std::max(furthest, std::fabs(x - 1.0));
    CHECK(h.min_gap >= 0);
  }
  CHECK(furthest > 1e-3);
  const RowSumsResult fresh = learned_row_sums(fresh_model("pi-tiny", {"seq_len=8", "layers=1"}, "test", {"encoder"}),
                                               RowSumsOptions{4, 8, 1});
  for (const RowSumsHead& h : fresh.heads) {
    CHECK(h.min_gap == 0.0);  // every v_i is 1
    for (double x : h.identical[0]) CHECK(x == doctest::Approx(1.0).epsilon(1e-6));
    for (double x : h.real[0]) CHECK(x == doctest::Approx(1.0).epsilon(1e-6));
  }
  CHECK_THROWS_WITH_AS(learned_row_sums(load_run_model(trained_run("rpe"), "urpe theory rowsums", {"encoder"}),
                                        RowSumsOptions{}),
                       doctest::Contains("rowsums reads encoder runs with pe = urpe"), Error);
}

// ---- the denominator experiment ----

TEST_CASE("largest loss spike: the biggest rise over the lowest of the previous window") {
  CHECK(largest_loss_spike({3.0, 2.0, 1.0, 1.5, 0.8}, 20) == std::make_pair(0.5, int64_t{4}));
  CHECK(largest_loss_spike({3.0, 2.0, 1.0}, 20) == std::make_pair(0.0, int64_t{0}));
  // The window forgets old lows: with window 1 the rise at step 4 is over step 3 only.
  CHECK(largest_loss_spike({0.1, 5.0, 4.0, 4.5}, 1).first == doctest::Approx(4.9));
  CHECK(largest_loss_spike({0.1, 5.0, 4.0, 4.5}, 1).second == 2);
  CHECK(largest_loss_spike({1.0, NAN, 2.0}, 20) == std::make_pair(1.0, int64_t{3}));  // non-finite skipped
}

TEST_CASE("denominator: every variant trains, and an exploding exp is caught at its first non-finite step") {
  const std::string out = temp_dir("denominator");
  DenominatorPlan plan;
  plan.seeds = 1;
  plan.quiet = true;
  plan.overrides = {"seq_len=8", "vocab=6", "layers=1", "d_model=16", "heads=2", "d_ff=32", "batch=8",
                    "steps=6", "warmup=2", "eval_every=3", "valid_size=16", "init_std=3"};
  const std::vector<DenominatorRun> runs = run_denominator(plan, out);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].variant == "urpe-softmax");
  CHECK(runs[0].first_nonfinite_step == 0);
  CHECK(runs[0].steps == 6);
  CHECK(runs[0].losses.size() == 6);
  // With weights of std 3 the logits reach hundreds: e^Z overflows at once without the max
  // subtraction, and the loss is not finite from the first step.
  for (size_t k = 1; k < 3; ++k) {
    CAPTURE(runs[k].variant);
    CHECK(runs[k].first_nonfinite_step == 1);
    CHECK(runs[k].steps == 1);
    CHECK(std::isnan(runs[k].accuracy));  // no evaluation before it
  }
  for (const char* file : {"denominator.json", "denominator.md", "plots/denominator_loss.png"}) {
    INFO(file);
    CHECK(path_exists(join_path(out, file)));
  }
  const json::Value doc = json::read_file(join_path(out, "denominator.json"));
  CHECK(doc.at("runs")[1].at("first_nonfinite_step").as_integer() == 1);
  CHECK(doc.at("runs")[0].at("first_nonfinite_step").is_null());
  CHECK_THROWS_WITH_AS(run_denominator(DenominatorPlan{"pi-tiny", 1, {"pe=rpe"}, true}, out),
                       doctest::Contains("the experiment sets pe itself"), Error);
  CHECK_THROWS_WITH_AS(run_denominator(DenominatorPlan{"txl-tiny", 1, {}, true}, out),
                       doctest::Contains("trains the encoder"), Error);
}

// ---- errors ----

TEST_CASE("a run directory the theory commands cannot read: one clear error") {
  CHECK_THROWS_WITH_AS(load_run_model("/nonexistent/run", "urpe theory probe", {"encoder"}),
                       doctest::Contains("run directory '/nonexistent/run' does not exist"), Error);
  const std::string empty = temp_dir("empty");
  make_directories(empty);
  CHECK_THROWS_WITH_AS(load_run_model(empty, "urpe theory probe", {"encoder"}),
                       doctest::Contains("has no model.safetensors"), Error);
  // A Graphormer checkpoint (only its config matters: the family is checked before the weights).
  const std::string graph = temp_dir("graphormer");
  make_directories(graph);
  save_checkpoint(join_path(graph, "model.safetensors"), ParameterSet(), nullptr, TrainingProgress(),
                  resolve_config("graphormer-tiny", "", {}).to_text());
  CHECK_THROWS_WITH_AS(load_run_model(graph, "urpe theory probe", {"encoder", "txl"}),
                       doctest::Contains("is a graphormer run (model = graphormer); urpe theory probe reads encoder or txl runs"),
                       Error);
  CHECK_THROWS_WITH_AS(repro_run_dirs(empty, "urpe theory probe"), doctest::Contains("has no runs/ folder"), Error);

  // From the command line: one line on stderr, a non-zero exit, no crash.
  const urpe::test::CliResult wrong = run_urpe("theory rowsums --run " + graph);
  CHECK(wrong.code == 1);
  CHECK(wrong.output == "urpe: error: urpe theory rowsums: '" + graph +
                            "' is a graphormer run (model = graphormer); urpe theory rowsums reads encoder runs\n");
  const urpe::test::CliResult missing = run_urpe("theory probe --run " + empty + " --out " + empty + "/out");
  CHECK(missing.code == 1);
  CHECK(missing.output.find("has no model.safetensors") != std::string::npos);
  CHECK(std::count(missing.output.begin(), missing.output.end(), '\n') == 1);
  CHECK(run_urpe("theory").code == 1);
  CHECK(run_urpe("theory frobnicate").output.find("unknown subcommand 'frobnicate'") != std::string::npos);
  CHECK(run_urpe("theory probe --n 3").output.find("unknown option --n for 'urpe theory probe'") != std::string::npos);
}

TEST_CASE("the commands write their files atomically into --out") {
  const std::string out = temp_dir("cli");
  const urpe::test::CliResult c = run_urpe("theory construction --n 5 --out " + out);
  REQUIRE(c.code == 0);
  CHECK(c.output.find("0.800000000") != std::string::npos);
  const urpe::test::CliResult p =
      run_urpe("theory probe --preset pi-tiny --pe none,urpe --set layers=1 --tokens 4 --out " + out);
  REQUIRE(p.code == 0);
  for (const char* file : {"construction.json", "plots/construction.png", "probe.json", "plots/probe_spread.png"}) {
    INFO(file);
    CHECK(path_exists(join_path(out, file)));
    CHECK_FALSE(path_exists(join_path(out, std::string(file) + ".tmp")));
  }
  const json::Value probe = json::read_file(join_path(out, "probe.json"));
  CHECK(probe.at("runs").size() == 2);
  CHECK(probe.at("runs")[1].at("pe").as_string() == "urpe");
  CHECK(probe.at("runs")[1].at("tokens_probed").as_integer() == 4);
}

// ---- the walkthrough ----

TEST_CASE("docs/walkthrough.md: every urpe command in it parses, and every link resolves") {
  const std::string root = URPE_SOURCE_DIR;
  const std::string text = read_text_file(root + "/docs/walkthrough.md");
  // Commands: lines in code blocks that start with "$ urpe" or "$ ./build/urpe" (output lines have no "$"), with
  // backslash continuations joined.
  std::vector<std::string> commands;
  std::istringstream lines(text);
  std::string line;
  bool in_code = false;
  std::string pending;
  const std::regex command_start(R"(^\s*\$\s*(\./build/)?urpe\s+(.*)$)");
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(' ') != std::string::npos && line.compare(line.find_first_not_of(' '), 3, "```") == 0) {
      in_code = !in_code;
      continue;
    }
    if (!in_code) continue;
    if (!pending.empty()) {
      pending += " " + line;
    } else {
      std::smatch m;
      if (std::regex_match(line, m, command_start)) pending = m[2].str();
    }
    if (!pending.empty() && pending.back() == '\\') {
      pending.pop_back();
      continue;
    }
    if (!pending.empty()) commands.push_back(pending);
    pending.clear();
  }
  CHECK(commands.size() >= 7);
  bool has_theory[4] = {false, false, false, false};
  for (const std::string& command : commands) {
    CAPTURE(command);
    std::istringstream words(command);
    std::vector<std::string> argv;
    for (std::string w; words >> w;) argv.push_back(w);
    REQUIRE(!argv.empty());
    // The command (and subcommand) exist, and --help on them exits 0.
    const cli::CommandSpec* spec = nullptr;
    for (const cli::CommandSpec& c : cli::commands())
      if (c.name == argv[0]) spec = &c;
    REQUIRE_MESSAGE(spec != nullptr, "unknown command " << argv[0]);
    size_t first = 1;
    if (!spec->subcommands.empty()) {
      REQUIRE(argv.size() >= 2);
      const cli::CommandSpec* sub = nullptr;
      for (const cli::CommandSpec& s : spec->subcommands)
        if (s.name == argv[0] + " " + argv[1]) sub = &s;
      REQUIRE_MESSAGE(sub != nullptr, "unknown subcommand " << argv[1]);
      const char* names[] = {"probe", "construction", "rowsums", "denominator"};
      for (int k = 0; k < 4; ++k) has_theory[k] |= argv[1] == names[k];
      spec = sub;
      first = 2;
    }
    const std::string prefix = spec->name;
    CHECK(run_urpe(prefix + " --help").code == 0);
    // Every option it uses is one the command declares (the way the parser would accept it).
    for (size_t k = first; k < argv.size(); ++k) {
      if (argv[k].rfind("--", 0) != 0 || argv[k] == "--help") continue;
      std::string name = argv[k].substr(2);
      name = name.substr(0, name.find('='));
      bool known = false;
      for (const cli::OptionSpec& o : spec->options) known |= o.name == name;
      CHECK_MESSAGE(known, "'urpe " << prefix << "' has no option --" << name);
    }
  }
  for (bool seen : has_theory) CHECK(seen);

  // Links to files of the repository ("](../ops/urpe_attention.h)", "](images/x.png)", with an
  // optional #anchor).
  const std::regex link(R"(\]\((\.\./[^)#\s]+|[a-z_]+\.md|images/[^)\s]+)(#[^)]*)?\))");
  int links = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
    ++links;
    const std::string target = root + "/docs/" + (*it)[1].str();
    CHECK_MESSAGE(path_exists(target), "walkthrough links to a missing file " << (*it)[1].str());
  }
  CHECK(links >= 10);
}
