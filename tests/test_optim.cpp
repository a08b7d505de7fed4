// Optimizer kernels, the Adam/AdamW class and the learning-rate schedules, checked against numbers
// worked out by hand from the formulas in ops/optimizer_kernels.h and train/loop/schedule.h.
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/elementwise.h"
#include "ops/optimizer_kernels.h"
#include "ops/reduce.h"
#include "test_util.h"
#include "train/optim/optimizer.h"
#include "train/loop/schedule.h"

using namespace urpe;
using urpe::test::random_param;
using urpe::test::random_values;

namespace {

const double kPi = std::acos(-1.0);

// A scalar parameter θ (shape (1,)) that requires grad.
Tensor scalar_param(float value) {
  Tensor t = Tensor::full({1}, value);
  t.set_requires_grad(true);
  return t;
}

// Gives θ the gradient g through the graph: L = g·θ.
void set_gradient(const Tensor& theta, float g) { sum_all(affine(theta, g)).backward(); }

}  // namespace

// ---- Adam ----

TEST_CASE("Adam matches a two-step example worked out by hand") {
  // θ = 1, lr = 0.1, β1 = 0.9, β2 = 0.999, ε = 1e-8; g1 = 0.5, then g2 = −0.25.
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  // Step 1: m1 = 0.1·0.5 = 0.05, v1 = 0.001·0.25 = 0.00025; corrections 1 − β1 = 0.1, 1 − β2 = 0.001;
  //         m̂ = 0.5, v̂ = 0.25, θ1 = 1 − 0.1·0.5/(0.5 + ε) ≈ 0.9.
  const double m1 = 0.05, v1 = 0.00025;
  const double theta1 = 1.0 - lr * (m1 / 0.1) / (std::sqrt(v1 / 0.001) + eps);
  // Step 2: m2 = 0.9·0.05 + 0.1·(−0.25) = 0.02; v2 = 0.999·0.00025 + 0.001·0.0625 = 0.00031225;
  //         corrections 1 − 0.9² = 0.19, 1 − 0.999² = 0.001999.
  const double m2 = 0.02, v2 = 0.00031225;
  const double theta2 = theta1 - lr * (m2 / 0.19) / (std::sqrt(v2 / 0.001999) + eps);
  CHECK(theta1 == doctest::Approx(0.9).epsilon(1e-7));
  CHECK(theta2 == doctest::Approx(0.8733662).epsilon(1e-6));  // 0.9 − 0.1·0.1052632/0.3952254
  // The same numbers from the formula with β, as a check on the hand arithmetic above.
  CHECK(m2 == doctest::Approx(b1 * (1 - b1) * 0.5 + (1 - b1) * -0.25));
  CHECK(v2 == doctest::Approx(b2 * (1 - b2) * 0.25 + (1 - b2) * 0.0625));

  Tensor theta = scalar_param(1.0f);
  AdamConfig config;
  config.beta1 = static_cast<float>(b1);
  config.beta2 = static_cast<float>(b2);
  config.eps = static_cast<float>(eps);
  Adam adam({theta}, config);
  set_gradient(theta, 0.5f);
  CHECK_FALSE(adam.step(static_cast<float>(lr)).has_value());  // no clipping: no norm
  CHECK(adam.steps() == 1);
  CHECK(theta.item() == doctest::Approx(theta1).epsilon(1e-6));
  adam.zero_grad();
  CHECK_FALSE(theta.grad().defined());
  set_gradient(theta, -0.25f);
  adam.step(static_cast<float>(lr));
  CHECK(theta.item() == doctest::Approx(theta2).epsilon(1e-6));
  const auto state = adam.state();
  CHECK(state[1].first == "adam.m.param0");
  CHECK(state[1].second.item() == doctest::Approx(m2).epsilon(1e-6));
  CHECK(state[2].second.item() == doctest::Approx(v2).epsilon(1e-6));
}

TEST_CASE("AdamW decays θ outside the moments; Adam + L2 has its decay normalised away") {
  // θ = 2, lr = 0.1, wd = 0.1, one step. Parameter a has g = 0.5, parameter z has g = 0.
  //   AdamW, a: θ ← 2 − 0.1·0.1·2 = 1.98, then m̂ = 0.5, √v̂ = 0.5: θ ← 1.98 − 0.1 = 1.88
  //   AdamW, z: θ ← 1.98, m = v = 0: no further change
  //   L2,    a: g ← 0.5 + 0.1·2 = 0.7, m̂ = √v̂ = 0.7: θ ← 2 − 0.1 = 1.9
  //   L2,    z: g ← 0.2: θ ← 2 − 0.1 = 1.9 (the decay alone moves θ by a full lr)
  for (bool decoupled : {true, false}) {
    Tensor a = scalar_param(2.0f), z = scalar_param(2.0f);
    AdamConfig config;
    config.weight_decay = 0.1f;
    config.decoupled_weight_decay = decoupled;
    Adam adam({a, z}, config);
    set_gradient(a, 0.5f);
    set_gradient(z, 0.0f);
    adam.step(0.1f);
    CHECK(a.item() == doctest::Approx(decoupled ? 1.88 : 1.9).epsilon(1e-6));
    CHECK(z.item() == doctest::Approx(decoupled ? 1.98 : 1.9).epsilon(1e-6));
  }
}

TEST_CASE("decay_biases_and_norms = false: no weight decay on 1-D parameters (biases, LayerNorms), as BERT") {
  // θ = 2, g = 0, lr = 0.1, wd = 0.1, AdamW: a decayed parameter becomes 1.98, a kept one stays 2
  // (m = v = 0, so Adam's own update is 0).
  for (bool decay_all : {true, false}) {
    Tensor matrix = Tensor::full({2, 2}, 2.0f), vector = Tensor::full({3}, 2.0f);
    matrix.set_requires_grad(true);
    vector.set_requires_grad(true);
    AdamConfig config;
    config.weight_decay = 0.1f;
    config.decay_biases_and_norms = decay_all;
    Adam adam({matrix, vector}, config);
    sum_all(affine(matrix, 0.0f)).backward();
    sum_all(affine(vector, 0.0f)).backward();
    adam.step(0.1f);
    for (float v : matrix.to_vector_f32()) CHECK(v == doctest::Approx(1.98).epsilon(1e-6));
    for (float v : vector.to_vector_f32()) CHECK(v == doctest::Approx(decay_all ? 1.98 : 2.0).epsilon(1e-6));
  }
}

TEST_CASE("Adam leaves parameters without a gradient alone and checks its arguments") {
  Tensor a = scalar_param(1.0f), b = scalar_param(1.0f);
  AdamConfig config;
  config.weight_decay = 0.5f;
  Adam adam({a, b}, config);
  set_gradient(a, 1.0f);
  adam.step(0.1f);
  CHECK(a.item() != 1.0f);
  CHECK(b.item() == 1.0f);  // no gradient: no decay, no moment update
  CHECK(adam.state()[4].second.item() == 0.0f);  // v of b
  Tensor not_leaf = affine(a, 2.0f);
  CHECK_THROWS_WITH_AS(adam.step(NAN), doctest::Contains("lr must be finite"), Error);
  CHECK(adam.steps() == 1);  // a refused step is not counted
  CHECK_THROWS_WITH_AS(Adam({not_leaf}), doctest::Contains("is not a leaf"), Error);
  CHECK_THROWS_WITH_AS(Adam({Tensor::ones({2})}), doctest::Contains("does not require a gradient"), Error);
  CHECK_THROWS_WITH_AS(Adam({a, a}), doctest::Contains("listed twice"), Error);
  AdamConfig bad;
  bad.beta2 = 1.0f;
  CHECK_THROWS_WITH_AS(Adam({a}, bad), doctest::Contains("betas must lie in [0, 1)"), Error);
  AdamSlot slot{a.detach(), Tensor::ones({2}), Tensor::zeros({1}), Tensor::zeros({1})};
  CHECK_THROWS_WITH_AS(adam_update({slot}, AdamHyper{}), doctest::Contains("does not match its parameter"), Error);
  AdamHyper step0;
  step0.step = 0;
  CHECK_THROWS_WITH_AS(adam_update({}, step0), doctest::Contains("counted from 1"), Error);
}

TEST_CASE("Adam state round-trips: a restored optimizer continues bit-identically") {
  Tensor w1 = random_param({3, 4}, 1), b1 = random_param({4}, 2);
  w1.set_name("layer.weight");
  b1.set_name("layer.bias");
  Tensor w2 = w1.detach().clone(), b2 = b1.detach().clone();
  w2.set_requires_grad(true).set_name("layer.weight");
  b2.set_requires_grad(true).set_name("layer.bias");
  AdamConfig config;
  config.clip_norm = 0.5f;
  Adam first({w1, b1}, config), second({w2, b2}, config);
  const Tensor gw = random_values({3, 4}, 3), gb = random_values({4}, 4);
  auto give = [&](const Tensor& w, const Tensor& b) {
    w.backward(gw);
    b.backward(gb);
  };
  give(w1, b1);
  const std::optional<Tensor> norm = first.step(0.01f);
  REQUIRE(norm.has_value());
  CHECK(norm->item() == doctest::Approx(global_grad_norm({gw, gb})));
  first.zero_grad();

  const auto saved = first.state();
  CHECK(saved.size() == 5);
  CHECK(saved[0].first == "adam.step");
  CHECK(saved[1].first == "adam.m.layer.weight");
  CHECK(saved[4].first == "adam.v.layer.bias");
  second.load_state(saved);
  CHECK(second.steps() == 1);
  w2.detach().copy_from(w1);
  b2.detach().copy_from(b1);
  give(w1, b1);
  give(w2, b2);
  first.step(0.01f);
  second.step(0.01f);
  CHECK(std::memcmp(w1.f32(), w2.f32(), 12 * sizeof(float)) == 0);
  CHECK(std::memcmp(b1.f32(), b2.f32(), 4 * sizeof(float)) == 0);

  auto missing = saved;
  missing.pop_back();
  CHECK_THROWS_WITH_AS(second.load_state(missing), doctest::Contains("no entry 'adam.v.layer.bias'"), Error);
  auto wrong = saved;
  wrong[1].second = Tensor::zeros({4, 3});
  CHECK_THROWS_WITH_AS(second.load_state(wrong), doctest::Contains("'adam.m.layer.weight' is f32 (4, 3)"), Error);
  CHECK(second.steps() == 2);  // a rejected state changes nothing (it would set step 1)
}

// ---- gradient norm and clipping ----

TEST_CASE("clip_grad_norm scales to max_norm and returns the norm before clipping") {
  // ‖(3, 4, 12)‖ = 13 over two tensors; an undefined gradient is skipped.
  Tensor g1 = Tensor::from_vector(std::vector<float>{3, 4}, {2});
  Tensor g2 = Tensor::from_vector(std::vector<float>{12}, {1});
  CHECK(global_grad_norm({g1, Tensor(), g2}) == doctest::Approx(13.0f));
  CHECK(clip_grad_norm({g1, Tensor(), g2}, 20.0f) == doctest::Approx(13.0f));
  CHECK(g1.to_vector_f32() == std::vector<float>{3, 4});  // below the limit: unchanged
  CHECK(clip_grad_norm({g1, Tensor(), g2}, 6.5f) == doctest::Approx(13.0f));
  CHECK(g1.to_vector_f32()[0] == doctest::Approx(1.5f).epsilon(1e-6));
  CHECK(g1.to_vector_f32()[1] == doctest::Approx(2.0f).epsilon(1e-6));
  CHECK(g2.to_vector_f32()[0] == doctest::Approx(6.0f).epsilon(1e-6));
  CHECK(global_grad_norm({g1, g2}) == doctest::Approx(6.5f).epsilon(1e-6));
  // A large tensor (several summation chunks) against a double sum.
  Tensor big = random_values({300000}, 5);
  double s = 0;
  for (float x : big.to_vector_f32()) s += static_cast<double>(x) * x;
  CHECK(global_grad_norm({big}) == doctest::Approx(std::sqrt(s)).epsilon(1e-6));
  // Non-finite: reported, not hidden by scaling everything to 0.
  Tensor bad = Tensor::from_vector(std::vector<float>{1, INFINITY}, {2});
  CHECK(std::isinf(clip_grad_norm({bad}, 1.0f)));
  CHECK(bad.to_vector_f32()[0] == 1.0f);
  CHECK_THROWS_WITH_AS(clip_grad_norm({g1}, 0.0f), doctest::Contains("max_norm must be finite and > 0"), Error);
}

TEST_CASE("clip_grad_norm_on_device: the same norm and the same scaled gradients as clip_grad_norm, the norm as a tensor") {
  for (const float max_norm : {0.3f, 50.0f}) {  // clipped, and left alone
    INFO("max_norm " << max_norm);
    const Tensor a1 = random_values({5, 7}, 11), a2 = random_values({300}, 12);
    const Tensor b1 = a1.clone(), b2 = a2.clone();
    const float want = clip_grad_norm({a1, Tensor(), a2}, max_norm);
    const Tensor got = clip_grad_norm_on_device({b1, Tensor(), b2}, max_norm);
    CHECK(got.shape() == Shape{});
    CHECK(got.item() == want);
    CHECK(a1.to_vector_f32() == b1.to_vector_f32());
    CHECK(a2.to_vector_f32() == b2.to_vector_f32());
  }
  Tensor bad = Tensor::from_vector(std::vector<float>{1, INFINITY}, {2});
  CHECK(std::isinf(clip_grad_norm_on_device({bad}, 1.0f).item()));
  CHECK(bad.to_vector_f32()[0] == 1.0f);
  CHECK(clip_grad_norm_on_device({}, 1.0f).item() == 0.0f);
  CHECK_THROWS_WITH_AS(clip_grad_norm_on_device({bad}, -1.0f), doctest::Contains("max_norm must be finite and > 0"), Error);
}

// ---- schedules ----

TEST_CASE("learning-rate schedule: warm-up, linear decay, cosine decay, constant") {
  LrSchedule s;
  s.peak_lr = 1e-3f;
  s.warmup = 100;
  s.total = 1100;
  CHECK(s.at(0) == 0.0f);                                       // warm-up start
  CHECK(s.at(1) == doctest::Approx(1e-5));                       // first update: peak/W
  CHECK(s.at(50) == doctest::Approx(5e-4));
  CHECK(s.at(100) == doctest::Approx(1e-3));                     // warm-up end = peak
  CHECK(s.at(600) == doctest::Approx(5e-4));                     // half-way through the decay
  CHECK(s.at(1100) == 0.0f);                                     // end
  CHECK(s.at(5000) == 0.0f);                                     // after the end
  s.end_lr = 1e-4f;
  CHECK(s.at(600) == doctest::Approx(1e-4 + 0.5 * 9e-4));
  CHECK(s.at(1100) == doctest::Approx(1e-4));

  s.end_lr = 0.0f;
  s.decay = DecayKind::cosine;                                   // ½·peak·(1 + cos(π·τ/T'))
  CHECK(s.at(100) == doctest::Approx(1e-3));
  CHECK(s.at(350) == doctest::Approx(0.5e-3 * (1 + std::cos(kPi / 4))));
  CHECK(s.at(600) == doctest::Approx(5e-4));
  CHECK(s.at(850) == doctest::Approx(0.5e-3 * (1 + std::cos(3 * kPi / 4))));
  CHECK(s.at(1100) == doctest::Approx(0.0).epsilon(1e-12));

  s.decay = DecayKind::constant;
  CHECK(s.at(50) == doctest::Approx(5e-4));
  CHECK(s.at(100000) == 1e-3f);

  LrSchedule no_warmup;
  no_warmup.peak_lr = 2.0f;
  no_warmup.total = 4;
  CHECK(no_warmup.at(0) == 2.0f);
  CHECK(no_warmup.at(1) == doctest::Approx(1.5));

  CHECK(parse_decay_kind("cosine") == DecayKind::cosine);
  CHECK_THROWS_WITH_AS(parse_decay_kind("cos"), doctest::Contains("expected linear, cosine or constant"), Error);
  LrSchedule bad;
  bad.warmup = 10;
  bad.total = 5;
  CHECK_THROWS_WITH_AS(bad.at(1), doctest::Contains("total (5) must be ≥ warmup (10)"), Error);
}
