// The positional encodings beyond the paper's four (models/encoder.h, ops/rotary.h): the rotary op's maths and
// gradient, ALiBi's slopes, the `pe` spellings, Theorem 2's prediction on each encoding (with
// identical tokens, encodings that only change the logits give every position the same output),
// and `urpe repro synthetic --pes --lengths --tasks` with its probe line.
#include <unistd.h>

#include <cmath>
#include <string>
#include <vector>
#include <algorithm>

#include "cli_util.h"
#include "models/encoder.h"
#include "ops/matmul.h"
#include "ops/rotary.h"
#include "ops/shape.h"
#include "test_util.h"
#include "app/analysis/analysis_model.h"
#include "app/analysis/probe.h"
#include "base/io/run_dir.h"
#include "app/repro/synthetic.h"

using namespace urpe;

TEST_CASE("rotary rotates feature i with feature i + D/2 by n·base^(-2i/D)") {
  const int64_t n = 5, d = 6, half = 3;
  const Tensor x = test::random_values({2, n, d}, 3);
  const auto [cos_t, sin_t] = rotary_tables(n, d, 100.0);
  const std::vector<float> in = x.to_vector_f32(), out = rotary(x, cos_t, sin_t).to_vector_f32();
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t p = 0; p < n; ++p)
      for (int64_t i = 0; i < half; ++i) {
        const double angle = p * std::pow(100.0, -2.0 * i / d);
        const double a = in[(r * n + p) * d + i], b = in[(r * n + p) * d + i + half];
        CHECK(out[(r * n + p) * d + i] == doctest::Approx(a * std::cos(angle) - b * std::sin(angle)).epsilon(1e-6));
        CHECK(out[(r * n + p) * d + i + half] == doctest::Approx(b * std::cos(angle) + a * std::sin(angle)).epsilon(1e-6));
      }
}

TEST_CASE("rotary makes q·k depend on the offset only") {
  // The same q and k vector at every position: (R_m q)·(R_n k) = q·R_{n−m} k.
  const int64_t n = 7, d = 8;
  const Tensor q = reshape(concat(std::vector<Tensor>(n, test::random_values({1, d}, 5)), 0), {1, n, d});
  const Tensor k = reshape(concat(std::vector<Tensor>(n, test::random_values({1, d}, 6)), 0), {1, n, d});
  const auto [c, s] = rotary_tables(n, d);
  const std::vector<float> scores = matmul(rotary(q, c, s), rotary(k, c, s), false, true).to_vector_f32();
  for (int64_t i = 1; i < n; ++i)
    for (int64_t j = 1; j < n; ++j) CHECK(scores[i * n + j] == doctest::Approx(scores[(i - 1) * n + j - 1]).epsilon(1e-5));
  CHECK(std::fabs(scores[0 * n + 1] - scores[1 * n + 0]) > 1e-4);  // but not symmetric in the offset
}

// The gradient check, CUDA parity, determinism and cost: the rotary rows of the op table.
TEST_CASE("rotary: bad shapes") {
  const auto [c, s] = rotary_tables(9, 4);
  CHECK_THROWS_WITH_AS(rotary(Tensor::zeros({2, 5}), c, s), doctest::Contains("even last axis"), Error);
  CHECK_THROWS_WITH_AS(rotary(Tensor::zeros({10, 4}), c, s), doctest::Contains("tables"), Error);
  CHECK_THROWS_WITH_AS(rotary_tables(4, 3), doctest::Contains("even"), Error);
}

TEST_CASE("ALiBi slopes are Press et al.'s geometric sequences") {
  const std::vector<double> eight = alibi_slopes(8);
  for (int h = 0; h < 8; ++h) CHECK(eight[h] == doctest::Approx(std::pow(0.5, h + 1)));
  // 6 heads: the 4-head slopes, then slopes 1 and 3 (0-based 0, 2) of the 8-head sequence.
  const std::vector<double> six = alibi_slopes(6), want = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  REQUIRE(six.size() == 6);
  for (int h = 0; h < 6; ++h) CHECK(six[h] == doctest::Approx(want[h]));
}

TEST_CASE("pe spellings: BASE+urpe, and the rejected combinations name every accepted value") {
  CHECK(parse_positional_spec("rope+urpe").base == PositionalKind::rope);
  CHECK(parse_positional_spec("rope+urpe").urpe_on_top);
  CHECK(parse_positional_spec("urpe").base == PositionalKind::urpe);
  CHECK(!parse_positional_spec("urpe").urpe_on_top);
  // ape+rpe (Appendix C.4's baseline, as UniLMv2): the relative bias with learned absolute positions too.
  CHECK(parse_positional_spec("ape+rpe").base == PositionalKind::rpe);
  CHECK(parse_positional_spec("ape+rpe").with_ape);
  CHECK(!parse_positional_spec("ape+rpe").urpe_on_top);
  CHECK(!parse_positional_spec("ape+urpe").with_ape);  // C on top of APE, no relative bias
  {
    EncoderConfig both;
    both.pe = PositionalKind::rpe;
    both.with_ape = true;
    EncoderConfig rpe_only = both;
    rpe_only.with_ape = false;
    const TransformerEncoder with(both, 1), without(rpe_only, 1);
    bool positions = false, bias = false;
    for (const auto& [name, tensor] : with.parameters().items()) {
      positions |= name == "embed_positions.weight";
      bias |= name == "rel_pos_bias";
    }
    CHECK(positions);
    CHECK(bias);
    CHECK(with.parameters().count() - without.parameters().count() == both.seq_len * both.d_model);
    both.pe = PositionalKind::ape;
    CHECK_THROWS_WITH_AS(TransformerEncoder(both, 1), doctest::Contains("pe = ape+rpe"), Error);
  }
  for (const std::string& name : positional_spec_names()) CHECK(positional_spec_name(parse_positional_spec(name)) == name);
  for (const char* bad : {"rope+rope", "rpe+urpe", "urpe+urpe", "rope+", "+urpe", "RoPE"})
    CHECK_THROWS_WITH_AS(parse_positional_spec(bad), doctest::Contains("expected one of none, ape, sinusoidal"), Error);
  EncoderConfig c;
  c.pe = PositionalKind::rpe;
  c.urpe_on_top = true;
  CHECK_THROWS_WITH_AS(TransformerEncoder(c, 1), doctest::Contains("use pe = urpe"), Error);
  c.pe = PositionalKind::rope;
  c.urpe_on_top = false;
  c.d_model = 12;
  c.heads = 4;  // head dimension 3
  CHECK_THROWS_WITH_AS(TransformerEncoder(c, 1), doctest::Contains("even head dimension"), Error);
}

namespace {

// Largest difference between the logits of two positions when every token is the same.
double identical_token_spread(const std::string& pe) {
  EncoderConfig c;
  c.vocab = 7; c.seq_len = 9; c.layers = 2; c.d_model = 16; c.heads = 4; c.d_ff = 24; c.num_classes = 5;
  c.shaw_clip = 2;
  c.init_std = 0.3f;  // large weights: a position signal is not lost in rounding
  const PositionalSpec spec = parse_positional_spec(pe);
  c.pe = spec.base;
  c.urpe_on_top = spec.urpe_on_top;
  c.with_ape = spec.with_ape;
  TransformerEncoder model(c, 11);
  if (model.c_table().defined()) {  // a trained C: not all ones
    Rng rng(4);
    model.c_table().copy_from(Tensor::uniform(model.c_table().shape(), 0.5f, 1.5f, rng));
  }
  const std::vector<float> logits =
      model.forward(Tensor::from_vector(std::vector<int32_t>(c.seq_len, 3), {1, c.seq_len}), false, nullptr).to_vector_f32();
  double spread = 0.0;
  for (int64_t i = 1; i < c.seq_len; ++i)
    for (int64_t k = 0; k < c.num_classes; ++k)
      spread = std::max(spread, static_cast<double>(std::fabs(logits[i * c.num_classes + k] - logits[k])));
  return spread;
}

}  // namespace

TEST_CASE("Theorem 2: logit-only encodings cannot tell identical tokens apart; the others can") {
  for (const std::string pe : {"none", "rpe", "alibi", "rope"}) {
    CAPTURE(pe);
    CHECK(identical_token_spread(pe) < 1e-6);
  }
  for (const std::string pe : {"ape", "sinusoidal", "shaw", "urpe", "alibi+urpe", "rope+urpe", "none+urpe", "ape+rpe"}) {
    CAPTURE(pe);
    CHECK(identical_token_spread(pe) > 1e-3);
  }
}

TEST_CASE("theorem2_line sorts by spread and splits at the float-rounding threshold") {
  const std::string line = theorem2_line({{"urpe", 0.4}, {"none", 0.0}, {"ape", 0.9}, {"rope", 3e-7}});
  CHECK(line.find("bound by the theorem: none 0, rope 3e-07;") != std::string::npos);
  CHECK(line.find("can tell positions apart: urpe 0.4, ape 0.9.") != std::string::npos);
  CHECK(theorem2_line({{"ape", 0.5}}).find("bound by the theorem: (none);") != std::string::npos);
}

TEST_CASE("repro synthetic: a column per encoding, a row per length, the probe line, the run names") {
  const std::string out = "/tmp/urpe_test_encodings_" + std::to_string(::getpid()) + "_repro";
  std::system(("rm -rf '" + out + "'").c_str());
  SyntheticGrid grid = synthetic_grid_for_scale("tiny");
  grid.tasks = {"pi"};
  grid.pes = {"none", "sinusoidal", "alibi+urpe", "rope"};
  grid.lengths = {6, 9};
  grid.overrides = {"steps=2", "warmup=1", "eval_every=2", "valid_size=8", "batch=4"};
  grid.probe = [](const std::string& dir) {
    const ProbeRun run = probe_identical_tokens(load_run_model(dir, "test", {"encoder"}), ProbeOptions{});
    GridProbe probe;
    for (const ProbeLayer& layer : run.layers) probe.spread = std::max(probe.spread, layer.spread);
    probe.identical_accuracy = run.identical_token_accuracy;
    return probe;
  };
  const std::vector<ResultRow> rows = run_synthetic_grid(grid, out, "synthetic");
  REQUIRE(rows.size() == 8);
  CHECK(rows[0].pe == "none");
  CHECK(rows[6].pe == "alibi+urpe");
  CHECK(path_exists(join_path(out, "runs/pi-V100-n9-alibi+urpe-s1/model.safetensors")));
  const AnalysisModel rope = load_run_model(join_path(out, "runs/pi-V100-n6-rope-s1"), "test", {"encoder"});
  CHECK(rope.seq_len() == 6);
  CHECK(rope.pe == "rope");
  const std::string md = read_text_file(join_path(out, "results.md"));
  CAPTURE(md);
  CHECK(md.find("| task | V | n | none | sinusoidal | alibi+urpe | rope |") != std::string::npos);
  CHECK(md.find("| pi | 100 | 6 |") != std::string::npos);
  CHECK(md.find("| pi | 100 | 9 |") != std::string::npos);
  // Under each PI row, the same models on identical tokens; Theorem 2 bounds noPE and RoPE by 1/n.
  CHECK(md.find("| pi (identical tokens) | 100 | 6 | 16.67 |") != std::string::npos);
  CHECK(md.find("| pi (identical tokens) | 100 | 9 | 11.11 |") != std::string::npos);
  // Self-explanatory: the command, the setting of each row, where and when it ran.
  CHECK(md.find("`urpe repro synthetic --scale tiny --seeds 1 --tasks pi --pes none,sinusoidal,alibi+urpe,rope "
                "--lengths 6,9`: scale `tiny`") != std::string::npos);
  CHECK(md.find("- pi, n = 9: preset `pi-tiny`, 2 layers, d_model 64, 4 heads, d_ff 256; 2 steps of batch 4") !=
        std::string::npos);
  CHECK(md.find("(overrides: steps=2 warmup=1 eval_every=2 valid_size=8 batch=4)") != std::string::npos);
  CHECK(md.find(" s wall for 8 runs; load average ") != std::string::npos);
  CHECK(md.find("Ran on ") != std::string::npos);
  CHECK(md.find("n = 9 (paper Figures 1 and 3) | not printed: Figures 1 and 3 are bar charts") != std::string::npos);
  // One accuracy chart with a group per (task, n), learning curves per length.
  for (const char* plot : {"plots/accuracy.png", "plots/curves_pi-n6.png", "plots/curves_pi-n9.png"}) {
    INFO(plot);
    CHECK(path_exists(join_path(out, plot)));
  }
  // After two steps C has moved off ones; none and rope only change the logits (their spread is
  // float rounding, ~1e-7).
  const size_t bound = md.find("bound by the theorem: "), apart = md.find("can tell positions apart: ");
  REQUIRE(bound != std::string::npos);
  REQUIRE(apart != std::string::npos);
  const std::string bound_list = md.substr(bound, apart - bound), apart_list = md.substr(apart);
  CHECK(bound_list.find("none") != std::string::npos);
  CHECK(bound_list.find("rope") != std::string::npos);
  CHECK(apart_list.find("sinusoidal") != std::string::npos);
  CHECK(apart_list.find("alibi+urpe") != std::string::npos);
  std::system(("rm -rf '" + out + "'").c_str());
}

TEST_CASE("cli: bad --pes/--lengths/--tasks and pe values get one line naming the option and the accepted values") {
  const std::string out = "/tmp/urpe_test_encodings_" + std::to_string(::getpid()) + "_bad";
  struct Case {
    std::string arguments, expected;
  };
  const std::vector<Case> cases = {
      {"repro synthetic --pes rope+rope --out " + out, "--pes 'rope+rope': expected some of none, ape, sinusoidal"},
      {"repro synthetic --pes rope,rope --out " + out, "--pes names 'rope' twice"},
      {"repro synthetic --lengths 256,x --out " + out, "--lengths 'x': expected whole numbers"},
      {"repro synthetic --lengths 1 --out " + out, "--lengths '1'"},
      {"repro synthetic --tasks pi,lm --out " + out, "--tasks 'lm'"},
      {"repro lm --pes rope --out " + out, "apply to 'urpe repro synthetic' only"},
      {"train --preset pi-tiny --set pe=rope+rope --out " + out, "key 'pe' expects one of none, ape, sinusoidal"},
      {"train --preset pi-tiny --set pe=rpe+urpe --out " + out, "rope+urpe"},
      {"train --preset pi-tiny --set pe=rope --set d_model=12 --set heads=4 --out " + out, "even head dimension"},
      {"train --preset txl-tiny --set pe=rope --out " + out, "key 'pe' expects one of rpe, urpe, alibi, alibi+urpe;"},
      {"train --preset txl-tiny --set pe=sinusoidal+urpe --out " + out, "key 'pe' expects one of rpe, urpe, alibi, alibi+urpe;"},
      {"train --preset txl-tiny --set pe=alibi+alibi --out " + out, "key 'pe' expects one of rpe, urpe, alibi, alibi+urpe;"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.arguments);
    const test::CliResult r = test::run_urpe(c.arguments);
    CHECK(r.code != 0);
    CHECK(r.output.find("urpe: error: ") == 0);
    CHECK(r.output.find(c.expected) != std::string::npos);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(!path_exists(out));
  }
}

TEST_CASE("theory probe: which of the new encodings Theorem 2 binds") {
  auto applies = [](const std::string& pe, bool c_is_ones) {
    ProbeRun r;
    r.pe = pe;
    r.c_is_ones = c_is_ones;
    return theorem2_applies(r);
  };
  CHECK(applies("alibi", false));
  CHECK(applies("rope", false));
  CHECK(!applies("shaw", false));
  CHECK(!applies("sinusoidal", false));
  CHECK(applies("rope+urpe", true));
  CHECK(!applies("rope+urpe", false));
  CHECK(!applies("sinusoidal+urpe", true));
  CHECK(!applies("shaw+urpe", true));
}
