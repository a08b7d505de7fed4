// The positional encodings of issue 13 (models/encoder.h, ops/rotary.h): the rotary op's maths and
// gradient, ALiBi's slopes, the `pe` spellings, and Theorem 2's prediction on each encoding: with
// identical tokens, encodings that only change the logits give every position the same output.
#include <cmath>
#include <string>
#include <vector>
#include <algorithm>

#include "models/encoder.h"
#include "ops/matmul.h"
#include "ops/rotary.h"
#include "ops/shape.h"
#include "test_util.h"

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

TEST_CASE("rotary gradient (finite differences) and bad shapes") {
  const auto [c, s] = rotary_tables(9, 4);
  test::check_gradients([c = c, s = s](const std::vector<Tensor>& in) { return rotary(in[0], c, s); },
                        {test::random_param({2, 3, 6, 4}, 7)});
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
  for (const std::string pe : {"ape", "sinusoidal", "shaw", "urpe", "alibi+urpe", "rope+urpe", "none+urpe"}) {
    CAPTURE(pe);
    CHECK(identical_token_spread(pe) > 1e-3);
  }
}
