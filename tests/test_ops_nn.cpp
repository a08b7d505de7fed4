// The neural-network ops (activations, dropout, layer norm, softmax, losses, embedding lookups):
// for each one a forward check against a double-precision or hand reference, the special values a
// table row cannot state (kinks, masked rows, ignored targets, padding rows, seeded masks), and
// the readable errors for bad arguments. Their gradient checks, CUDA parity, the same bits for any
// thread count and their costs are rows of the op table (tests/op_table.cpp).
#include <cmath>
#include <limits>
#include <vector>

#include "ops/activation.h"
#include "ops/dropout.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/linear_cross_entropy.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "test_util.h"

using namespace urpe;
using test::random_param;
using test::random_values;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Uniform magnitudes in [margin, 1) with random signs: keeps inputs off a kink at 0 by more
// than the finite-difference step.
Tensor away_from_zero(const Shape& shape, uint64_t seed, float margin = 0.1f) {
  std::vector<float> v = random_values(shape, seed).to_vector_f32();
  for (float& e : v) e = (e < 0 ? -1.0f : 1.0f) * (margin + (1.0f - margin) * std::fabs(e));
  Tensor t = Tensor::from_vector(v, shape);
  t.set_requires_grad(true);
  return t;
}

// ∂(Σ out ⊙ w)/∂x for a fixed weight w: runs backward from `out` with w as the output gradient.
std::vector<float> grad_of(const Tensor& x, const Tensor& out, const Tensor& w) {
  x.impl().grad.reset();
  out.backward(w);
  return x.grad().to_vector_f32();
}

}  // namespace

// ---- activations ----

TEST_CASE("relu and gelu: forward against the formulas, NaN passed through") {
  Tensor x = away_from_zero({3, 7}, 101);
  const std::vector<float> xv = x.to_vector_f32();
  const std::vector<float> r = relu(x).to_vector_f32(), g = gelu(x).to_vector_f32();
  for (size_t k = 0; k < xv.size(); ++k) {
    CAPTURE(xv[k]);
    CHECK(r[k] == (xv[k] > 0 ? xv[k] : 0.0f));
    const double ref = 0.5 * xv[k] * (1.0 + std::erf(xv[k] / std::sqrt(2.0)));
    CHECK(g[k] == doctest::Approx(ref).epsilon(1e-6));
  }
  // The exact-erf GELU, not the tanh approximation (which gives 0.841192 at 1).
  const std::vector<float> known = gelu(Tensor::from_vector(std::vector<float>{1.0f, -1.0f, 3.0f}, {3})).to_vector_f32();
  CHECK(known[0] == doctest::Approx(0.8413447460685429).epsilon(1e-6));
  CHECK(known[1] == doctest::Approx(-0.15865525393145707).epsilon(1e-6));
  CHECK(known[2] == doctest::Approx(2.9959502159112).epsilon(1e-6));

  // NaN goes through both (a diverging run must show, not turn into zeros).
  Tensor nan = Tensor::full({2}, std::nanf(""));
  CHECK(std::isnan(relu(nan).to_vector_f32()[0]));
  CHECK(std::isnan(gelu(nan).to_vector_f32()[1]));

  Tensor ids = Tensor::arange(5);
  CHECK_THROWS_WITH_AS(relu(ids), doctest::Contains("relu: argument 'x' must be f32"), Error);
  CHECK_THROWS_WITH_AS(gelu(ids), doctest::Contains("gelu: argument 'x' must be f32"), Error);
}

// ---- dropout ----

TEST_CASE("dropout: seeded mask, kept fraction, inverted scaling, replayed in backward") {
  const float p = 0.3f;
  Tensor big = Tensor::full({101, 997}, 2.0f);
  const std::vector<float> a = dropout(big, p, 42, true).to_vector_f32();
  const std::vector<float> b = dropout(big, p, 42, true).to_vector_f32();
  const std::vector<float> c = dropout(big, p, 43, true).to_vector_f32();
  CHECK(a == b);  // same seed, same mask
  CHECK(a != c);  // another seed, another mask
  int64_t kept = 0;
  bool scaled = true;
  for (float e : a) {
    if (e != 0.0f) ++kept;
    scaled = scaled && (e == 0.0f || e == doctest::Approx(2.0f / (1.0f - p)).epsilon(1e-6));
  }
  CHECK(scaled);
  const double kept_fraction = static_cast<double>(kept) / a.size();  // ~100k draws: σ ≈ 0.0015
  CHECK(kept_fraction == doctest::Approx(1.0 - p).epsilon(0.01));

  // The mask is philox_uniform(seed, 0, k) ≥ p, element by element.
  Tensor x = random_param({3, 5, 7}, 111);
  const std::vector<float> xv = x.to_vector_f32(), y = dropout(x, p, 7, true).to_vector_f32();
  for (size_t k = 0; k < xv.size(); ++k) {
    const bool keep = philox_uniform(7, 0, k) >= p;
    CHECK(y[k] == (keep ? xv[k] * (1.0f / (1.0f - p)) : 0.0f));
  }
  // Backward regenerates the same mask: ∂x = keep/(1 − p) for an all-ones output gradient.
  Tensor out = dropout(x, p, 7, true);
  const std::vector<float> gx = grad_of(x, out, Tensor::ones(out.shape()));
  for (size_t k = 0; k < xv.size(); ++k) CHECK(gx[k] == (y[k] != 0.0f ? 1.0f / (1.0f - p) : 0.0f));

  // Not training, or p = 0: the input itself, no copy and no node.
  CHECK(dropout(x, p, 7, false).same_as(x));
  CHECK(dropout(x, 0.0f, 7, true).same_as(x));

  CHECK_THROWS_WITH_AS(dropout(x, 1.0f, 7, true), doctest::Contains("dropout: the drop probability p must be in [0, 1), got 1"), Error);
  CHECK_THROWS_WITH_AS(dropout(x, -0.1f, 7, false), doctest::Contains("must be in [0, 1)"), Error);
  CHECK_THROWS_WITH_AS(dropout(x, std::nanf(""), 7, true), doctest::Contains("must be in [0, 1)"), Error);
  CHECK_THROWS_WITH_AS(dropout(Tensor::arange(4), 0.1f, 7, true), doctest::Contains("dropout: argument 'x' must be f32"), Error);
}

// ---- layer norm ----

TEST_CASE("layer_norm: forward against a double reference, unit rows, bad arguments") {
  const int64_t D = 7;
  Tensor x = random_param({2, 3, D}, 121, -2.0f, 2.0f);
  Tensor gamma = random_param({D}, 122, 0.5f, 1.5f), beta = random_param({D}, 123);
  const float eps = 1e-5f;
  const std::vector<float> xv = x.to_vector_f32(), gv = gamma.to_vector_f32(), bv = beta.to_vector_f32();
  const std::vector<float> y = layer_norm(x, gamma, beta, eps).to_vector_f32();
  for (int64_t r = 0; r < 6; ++r) {
    double mu = 0, var = 0;
    for (int64_t d = 0; d < D; ++d) mu += xv[r * D + d];
    mu /= D;
    for (int64_t d = 0; d < D; ++d) var += (xv[r * D + d] - mu) * (xv[r * D + d] - mu);
    var /= D;
    for (int64_t d = 0; d < D; ++d) {
      const double ref = gv[d] * (xv[r * D + d] - mu) / std::sqrt(var + eps) + bv[d];
      CHECK(y[r * D + d] == doctest::Approx(ref).epsilon(1e-5));
    }
  }
  // With γ = 1, β = 0 each row comes out with mean 0 and variance 1/(1 + ε/σ²) ≈ 1.
  const std::vector<float> unit = layer_norm(x, Tensor::ones({D}), Tensor::zeros({D}), eps).to_vector_f32();
  for (int64_t r = 0; r < 6; ++r) {
    double mu = 0, var = 0;
    for (int64_t d = 0; d < D; ++d) mu += unit[r * D + d];
    for (int64_t d = 0; d < D; ++d) var += unit[r * D + d] * unit[r * D + d];
    CHECK(mu / D == doctest::Approx(0.0).epsilon(1e-6));
    CHECK(var / D == doctest::Approx(1.0).epsilon(1e-3));
  }

  CHECK_THROWS_WITH_AS(layer_norm(x, Tensor::ones({5}), beta),
                       doctest::Contains("layer_norm: gamma and beta must have shape (7,)"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, gamma, Tensor::ones({1, D})),
                       doctest::Contains("layer_norm: argument 'beta' must have 1 dims"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(Tensor::arange(D), gamma, beta),
                       doctest::Contains("layer_norm: argument 'x' must be f32"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, gamma, beta, -1.0f), doctest::Contains("layer_norm: eps"), Error);
}

// ---- softmax ----

TEST_CASE("softmax and log_softmax: rows sum to 1, log matches, large inputs stay finite") {
  Tensor x = random_param({2, 3, 5}, 131, -4.0f, 4.0f);
  const std::vector<float> xv = x.to_vector_f32();
  const std::vector<float> y = softmax(x).to_vector_f32(), ly = log_softmax(x).to_vector_f32();
  for (int64_t r = 0; r < 6; ++r) {
    double total = 0, ref_total = 0;
    for (int64_t j = 0; j < 5; ++j) ref_total += std::exp(static_cast<double>(xv[r * 5 + j]));
    for (int64_t j = 0; j < 5; ++j) {
      const int64_t k = r * 5 + j;
      total += y[k];
      CHECK(y[k] == doctest::Approx(std::exp(xv[k]) / ref_total).epsilon(1e-6));
      CHECK(ly[k] == doctest::Approx(std::log(static_cast<double>(y[k]))).epsilon(1e-5));
    }
    CHECK(total == doctest::Approx(1.0).epsilon(1e-6));
  }
  // Max-subtracted: logits in the thousands neither overflow nor lose the differences.
  Tensor large = Tensor::from_vector(std::vector<float>{1000.0f, 1001.0f, 1002.0f}, {1, 3});
  const std::vector<float> s = softmax(large).to_vector_f32(), ls = log_softmax(large).to_vector_f32();
  CHECK(s[2] == doctest::Approx(1.0 / (1.0 + std::exp(-1.0) + std::exp(-2.0))).epsilon(1e-6));
  CHECK(ls[0] == doctest::Approx(-2.0 - std::log(1.0 + std::exp(-1.0) + std::exp(-2.0))).epsilon(1e-6));

  CHECK_THROWS_WITH_AS(softmax(Tensor::arange(3)), doctest::Contains("softmax: argument 'x' must be f32"), Error);
  CHECK_THROWS_WITH_AS(log_softmax(Tensor::full({}, 1.0f)),
                       doctest::Contains("log_softmax: argument 'x' must have 1 to 4 dims"), Error);
}

TEST_CASE("softmax and log_softmax: masked entries and fully masked rows give zeros, not NaN") {
  // Row 0: two masked keys; row 1: every key masked; row 2: ordinary.
  Tensor x = Tensor::from_vector(std::vector<float>{0.5f, kNegInf, -0.25f, kNegInf,
                                                    kNegInf, kNegInf, kNegInf, kNegInf,
                                                    0.1f, 0.2f, -0.3f, 0.4f}, {3, 4});
  x.set_requires_grad(true);
  Tensor w = random_values({3, 4}, 141);
  for (bool take_log : {false, true}) {
    CAPTURE(take_log);
    Tensor y = take_log ? log_softmax(x) : softmax(x);
    const std::vector<float> yv = y.to_vector_f32();
    for (float e : yv) CHECK_FALSE(std::isnan(e));
    for (int j = 4; j < 8; ++j) CHECK(yv[j] == 0.0f);  // fully masked row
    if (take_log) {
      CHECK(yv[1] == kNegInf);  // log 0 at a masked entry of a live row
    } else {
      CHECK(yv[1] == 0.0f);
      CHECK(yv[3] == 0.0f);
      CHECK(yv[0] + yv[2] == doctest::Approx(1.0f).epsilon(1e-6));
    }
    const std::vector<float> gx = grad_of(x, y, w);
    for (float e : gx) CHECK_FALSE(std::isnan(e));
    for (int j = 4; j < 8; ++j) CHECK(gx[j] == 0.0f);  // nothing flows into a fully masked row
    if (!take_log) CHECK(gx[1] == 0.0f);
  }
  // A row of NaNs is not a masked row: it comes out NaN.
  Tensor nan = Tensor::full({2, 3}, std::nanf(""));
  CHECK(std::isnan(softmax(nan).to_vector_f32()[4]));
  CHECK(std::isnan(log_softmax(nan).to_vector_f32()[0]));
}

// ---- losses ----

TEST_CASE("cross_entropy: matches −mean log_softmax[target] over counted rows") {
  const int64_t N = 5, C = 7;
  Tensor logits = random_param({N, C}, 151, -3.0f, 3.0f);
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{3, -100, 0, 6, 2}, {N});
  const std::vector<float> lv = logits.to_vector_f32();
  const std::vector<int32_t> tv = targets.to_vector_i32();
  double ref = 0;
  int counted = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (tv[i] == -100) continue;
    double total = 0;
    for (int64_t c = 0; c < C; ++c) total += std::exp(static_cast<double>(lv[i * C + c]));
    ref += std::log(total) - lv[i * C + tv[i]];
    ++counted;
  }
  Tensor loss = cross_entropy(logits, targets);
  CHECK(loss.shape() == Shape{});
  CHECK(loss.item() == doctest::Approx(ref / counted).epsilon(1e-6));

  // The ignored row gets no gradient; counted rows get (softmax − onehot)/M.
  loss.backward();
  const std::vector<float> g = logits.grad().to_vector_f32();
  const std::vector<float> p = softmax(logits.detach()).to_vector_f32();
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t k = i * C + c;
      if (tv[i] == -100) CHECK(g[k] == 0.0f);
      else CHECK(g[k] == doctest::Approx((p[k] - (c == tv[i] ? 1.0 : 0.0)) / counted).epsilon(1e-5));
    }

  // Another ignore_index (here 0, a padding class): rows with target 0 don't count.
  Tensor padded = Tensor::from_vector(std::vector<int32_t>{0, 4, 0, 1, 0}, {N});
  const std::vector<float> gp = grad_of(logits, cross_entropy(logits, padded, 0), Tensor::ones({}));
  for (int64_t c = 0; c < C; ++c) CHECK(gp[c] == 0.0f);  // row 0 is padding

  // Every row ignored: L = 0 and no gradient anywhere (not 0/0).
  Tensor all_ignored = Tensor::from_vector(std::vector<int32_t>(N, -100), {N});
  Tensor zero_loss = cross_entropy(logits, all_ignored);
  CHECK(zero_loss.item() == 0.0f);
  for (float e : grad_of(logits, zero_loss, Tensor::ones({}))) CHECK(e == 0.0f);
}

TEST_CASE("cross_entropy: readable errors for bad targets and shapes") {
  Tensor logits = random_values({4, 5}, 161);
  auto targets = [](std::vector<int32_t> v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); };
  CHECK_THROWS_WITH_AS(cross_entropy(logits, targets({0, 1, 5, 2})),
                       doctest::Contains("cross_entropy: target 5 at row 2 is out of range [0, 5)"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, targets({-1, 1, 2, 2})),
                       doctest::Contains("target -1 at row 0"), Error);
  // -100 is fine by default but not when another ignore_index is chosen.
  CHECK_NOTHROW(cross_entropy(logits, targets({-100, 1, 2, 3})));
  CHECK_THROWS_WITH_AS(cross_entropy(logits, targets({-100, 1, 2, 3}), 0),
                       doctest::Contains("not ignore_index (0)"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, targets({0, 1, 2})),
                       doctest::Contains("cross_entropy: targets must have shape (4,)"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(random_values({2, 2, 5}, 1), targets({0, 1})),
                       doctest::Contains("cross_entropy: argument 'logits' must have 2 dims"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, random_values({4}, 2)),
                       doctest::Contains("cross_entropy: argument 'targets' must be i32"), Error);
}

TEST_CASE("l1_loss: mean absolute error, no gradient at pred = target") {
  Tensor pred = random_param({3, 5}, 171);
  // target = pred ± [0.1, 1): the kink at pred = target stays out of the finite-difference step.
  std::vector<float> tv = pred.to_vector_f32();
  const std::vector<float> offsets = away_from_zero({3, 5}, 172).to_vector_f32();
  for (size_t k = 0; k < tv.size(); ++k) tv[k] += offsets[k];
  Tensor target = Tensor::from_vector(tv, {3, 5});
  target.set_requires_grad(true);
  double ref = 0;
  for (float o : offsets) ref += std::fabs(o);
  CHECK(l1_loss(pred, target).item() == doctest::Approx(ref / 15).epsilon(1e-6));
  // pred = target everywhere: L = 0 and sign(0) = 0 sends no gradient.
  CHECK(l1_loss(pred, pred).item() == 0.0f);
  for (float e : grad_of(pred, l1_loss(pred, pred.detach()), Tensor::ones({}))) CHECK(e == 0.0f);

  CHECK_THROWS_WITH_AS(l1_loss(pred, random_values({5, 3}, 1)), doctest::Contains("l1_loss: shapes differ"), Error);
  CHECK_THROWS_WITH_AS(l1_loss(Tensor::arange(3), Tensor::arange(3)),
                       doctest::Contains("l1_loss: argument 'pred' must be f32"), Error);
}

// ---- embedding lookups ----

TEST_CASE("embedding: rows copied, gradients of repeated ids summed, bad ids named") {
  const int64_t V = 7, D = 3;
  Tensor table = random_param({V, D}, 181);
  Tensor ids = Tensor::from_vector(std::vector<int32_t>{4, 0, 4, 6, 2, 4, 0, 1, 6, 5}, {2, 5});
  Tensor out = embedding(table, ids);
  CHECK(out.shape() == Shape{2, 5, D});
  const std::vector<float> tv = table.to_vector_f32(), ov = out.to_vector_f32();
  const std::vector<int32_t> iv = ids.to_vector_i32();
  for (size_t p = 0; p < iv.size(); ++p)
    for (int64_t d = 0; d < D; ++d) CHECK(ov[p * D + d] == tv[iv[p] * D + d]);

  // ∂table[v] = Σ of the output-gradient rows whose id is v (id 3 is never used: zero).
  Tensor w = random_values(out.shape(), 182);
  const std::vector<float> wv = w.to_vector_f32(), g = grad_of(table, out, w);
  std::vector<double> ref(V * D, 0.0);
  for (size_t p = 0; p < iv.size(); ++p)
    for (int64_t d = 0; d < D; ++d) ref[iv[p] * D + d] += wv[p * D + d];
  for (int64_t k = 0; k < V * D; ++k) CHECK(g[k] == doctest::Approx(ref[k]).epsilon(1e-6));
  for (int64_t d = 0; d < D; ++d) CHECK(g[3 * D + d] == 0.0f);

  // A 0-d id gives one row of shape (D,).
  Tensor one = embedding(table, Tensor::from_vector(std::vector<int32_t>{5}, Shape{}));
  CHECK(one.shape() == Shape{D});
  CHECK(one.to_vector_f32() == std::vector<float>(tv.begin() + 5 * D, tv.begin() + 6 * D));

  auto bad = [](std::vector<int32_t> v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); };
  CHECK_THROWS_WITH_AS(embedding(table, bad({1, 7, 2})),
                       doctest::Contains("embedding: id value 7 at flat position 1 is out of range [0, 7)"), Error);
  CHECK_THROWS_WITH_AS(embedding(table, bad({-1})), doctest::Contains("id value -1"), Error);
  CHECK_THROWS_WITH_AS(embedding(table, random_values({3}, 1)),
                       doctest::Contains("embedding: argument 'ids' must be i32"), Error);
  CHECK_THROWS_WITH_AS(embedding(random_values({7}, 1), bad({1})),
                       doctest::Contains("embedding: argument 'table' must have 2 dims"), Error);
  CHECK_THROWS_WITH_AS(embedding(table, Tensor::zeros({2, 2, 2, 2}, DType::i32)),
                       doctest::Contains("embedding: argument 'ids' must have 0 to 3 dims"), Error);
}

// nn.Embedding(padding_idx=p): the forward reads row p as it is, the backward gives it exactly zero
// and leaves every other row's gradient bit-identical to the unpadded op's.
TEST_CASE("embedding: padding_idx row read but never given a gradient") {
  const int64_t V = 6, D = 4;
  Tensor table = random_param({V, D}, 185);
  Tensor ids = Tensor::from_vector(std::vector<int32_t>{0, 3, 0, 5, 2, 0, 3, 1}, {2, 4});
  const std::vector<float> tv = table.to_vector_f32();
  Tensor w = random_values({2, 4, D}, 186);
  Tensor plain = embedding(table, ids), padded = embedding(table, ids, 0);
  CHECK(padded.to_vector_f32() == plain.to_vector_f32());  // the forward still reads row 0
  for (int64_t d = 0; d < D; ++d) CHECK(padded.to_vector_f32()[d] == tv[d]);
  const std::vector<float> g_plain = grad_of(table, plain, w), g_pad = grad_of(table, padded, w);
  for (int64_t d = 0; d < D; ++d) {
    CHECK(g_plain[d] != 0.0f);  // id 0 is used three times: the unpadded op trains it
    CHECK(g_pad[d] == 0.0f);
  }
  CHECK(std::vector<float>(g_pad.begin() + D, g_pad.end()) ==
        std::vector<float>(g_plain.begin() + D, g_plain.end()));
  // A padding row in the middle, and one that no id uses.
  const std::vector<float> g_mid = grad_of(table, embedding(table, ids, 3), w);
  for (int64_t k = 0; k < V * D; ++k) CHECK(g_mid[k] == (k / D == 3 ? 0.0f : g_plain[k]));
  CHECK(grad_of(table, embedding(table, ids, 4), w) == g_plain);

  CHECK_THROWS_WITH_AS(embedding(table, ids, V),
                       doctest::Contains("embedding: padding_idx 6 must be -1 (none) or a row in [0, 6)"), Error);
  CHECK_THROWS_WITH_AS(embedding(table, ids, -2), doctest::Contains("padding_idx -2"), Error);
}

TEST_CASE("gather_table: per-head lookups through a bucket map, gradients summed per bucket") {
  const int64_t H = 3, Nq = 4, Nk = 5, K = Nq + Nk - 1;
  // The Toeplitz relative-position map: map[i, j] = (j − i) + (Nq − 1).
  std::vector<int32_t> mv(Nq * Nk);
  for (int64_t i = 0; i < Nq; ++i)
    for (int64_t j = 0; j < Nk; ++j) mv[i * Nk + j] = static_cast<int32_t>(j - i + Nq - 1);
  Tensor map = Tensor::from_vector(mv, {Nq, Nk});
  Tensor table = random_param({H, K}, 191);
  Tensor out = gather_table(table, map);
  CHECK(out.shape() == Shape{H, Nq, Nk});
  const std::vector<float> tv = table.to_vector_f32(), ov = out.to_vector_f32();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t p = 0; p < Nq * Nk; ++p) CHECK(ov[h * Nq * Nk + p] == tv[h * K + mv[p]]);

  Tensor w = random_values(out.shape(), 192);
  const std::vector<float> wv = w.to_vector_f32(), g = grad_of(table, out, w);
  std::vector<double> ref(H * K, 0.0);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t p = 0; p < Nq * Nk; ++p) ref[h * K + mv[p]] += wv[h * Nq * Nk + p];
  for (int64_t k = 0; k < H * K; ++k) CHECK(g[k] == doctest::Approx(ref[k]).epsilon(1e-6));

  // A map that skips some buckets: those entries get exactly zero gradient.
  Tensor sparse = Tensor::from_vector(std::vector<int32_t>{0, 2, 2, 0, 5, 2}, {2, 3});
  Tensor wide = random_param({H, 7}, 193);
  const std::vector<float> gs = grad_of(wide, gather_table(wide, sparse), random_values({H, 2, 3}, 194));
  for (int64_t h = 0; h < H; ++h)
    for (int k : {1, 3, 4, 6}) CHECK(gs[h * 7 + k] == 0.0f);

  CHECK_THROWS_WITH_AS(gather_table(table, Tensor::full({2, 2}, 0.0f)),
                       doctest::Contains("gather_table: argument 'map' must be i32"), Error);
  Tensor out_of_range = Tensor::from_vector(std::vector<int32_t>{0, 1, 8, 2}, {2, 2});
  CHECK_THROWS_WITH_AS(gather_table(table, out_of_range),
                       doctest::Contains("gather_table: map value 8 at flat position 2 is out of range [0, 8)"), Error);
  CHECK_THROWS_WITH_AS(gather_table(table, Tensor::arange(4)),
                       doctest::Contains("gather_table: argument 'map' must have 2 dims"), Error);
}

// The fused, chunked head against what it replaces, linear then cross_entropy (and argmax_last of
// those logits): the loss, every gradient and the argmax, for chunks of 1 row, an uneven split,
// one chunk, with and without a bias, with ignored rows. Then the readable errors.
TEST_CASE("linear_cross_entropy: equals linear + cross_entropy for any chunk size; argmax; bad arguments") {
  const int64_t N = 23, d = 6, C = 17;
  std::vector<int32_t> t(N);
  for (int64_t i = 0; i < N; ++i) t[i] = i % 5 == 2 ? -100 : int32_t((i * 7 + 3) % C);
  const Tensor targets = Tensor::from_vector(t, {N});
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    const Tensor h = random_param({N, d}, 11, -2.0f, 2.0f), w = random_param({C, d}, 12);
    const Tensor b = with_bias ? random_param({C}, 13) : Tensor();
    const Tensor logits = with_bias ? linear(h, w, b) : matmul(h, w, false, true);
    const Tensor want = cross_entropy(logits, targets);
    want.backward();
    const std::vector<float> want_h = h.grad().to_vector_f32(), want_w = w.grad().to_vector_f32();
    const std::vector<float> want_b = with_bias ? b.grad().to_vector_f32() : std::vector<float>();
    const std::vector<int32_t> want_best = argmax_last(logits.detach()).to_vector_i32();
    for (const int64_t chunk : {1, 5, 23, 0}) {
      CAPTURE(with_bias);
      CAPTURE(chunk);
      h.zero_grad();
      w.zero_grad();
      if (with_bias) b.zero_grad();
      Tensor best;
      const Tensor got = linear_cross_entropy(h, w, b, targets, -100, &best, chunk);
      CHECK(std::fabs(got.item() - want.item()) <= 1e-6 + 1e-5 * std::fabs(want.item()));
      CHECK(best.to_vector_i32() == want_best);
      got.backward();
      const auto close = [](const std::vector<float>& a, const std::vector<float>& e) {
        REQUIRE(a.size() == e.size());
        for (size_t k = 0; k < a.size(); ++k)
          if (!(std::fabs(a[k] - e[k]) <= 1e-6 + 1e-4 * std::fabs(e[k]))) return false;
        return true;
      };
      CHECK(close(h.grad().to_vector_f32(), want_h));
      CHECK(close(w.grad().to_vector_f32(), want_w));
      if (with_bias) CHECK(close(b.grad().to_vector_f32(), want_b));
    }
  }
  // The automatic chunk keeps a chunk's logits within 16 MiB, at least one row.
  CHECK(linear_cross_entropy_chunk_rows(100000, 8192, 0) == kLinearCrossEntropyChunkFloats / 8192);
  CHECK(linear_cross_entropy_chunk_rows(10, 8192, 0) == 10);
  CHECK(linear_cross_entropy_chunk_rows(10, int64_t(1) << 30, 0) == 1);
  const Tensor h = random_values({4, 3}, 1), w = random_values({5, 3}, 2);
  CHECK_THROWS_WITH(linear_cross_entropy(h, random_values({5, 2}, 3), Tensor(), targets), doctest::Contains("does not match h"));
  CHECK_THROWS_WITH(linear_cross_entropy(h, w, Tensor(), Tensor::from_vector(std::vector<int32_t>{0, 1, 5, 2}, {4})),
                    doctest::Contains("target 5 at row 2 is out of range"));
  CHECK_THROWS_WITH(linear_cross_entropy(h, w, random_values({4}, 4), Tensor::from_vector(std::vector<int32_t>{0, 1, 2, 3}, {4})),
                    doctest::Contains("bias"));
  CHECK_THROWS_WITH(linear_cross_entropy(h, w, Tensor(), Tensor::from_vector(std::vector<int32_t>{0, 1}, {2})),
                    doctest::Contains("targets must have shape (4,)"));
}
