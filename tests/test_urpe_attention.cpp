// The URPE attention core: finite-difference gradients for scores, bias_table and c_table under
// every map and mask variant, properties against an independent double-precision softmax,
// determinism, and readable errors for bad arguments.
#include <cmath>
#include <cstring>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "ops/urpe_attention.h"
#include "ops/urpe_attention_checks.h"
#include "tensor/host_allocator.h"
#include "test_util.h"

using namespace urpe;
using urpe::test::check_gradients;
using urpe::test::random_ids;
using urpe::test::random_param;
using urpe::test::random_values;

namespace {

// scores (Bsz, H, Nq, Nk), tables (H, Kb) / (H, Kc) all requiring grad; C random around 1 and
// away from 0, so a gradient that forgot C would show.
struct Case {
  int64_t bsz, heads, nq, nk;
  Tensor scores, bias_table, c_table;
  UrpeAttentionParams params;
};

Case make_case(int64_t bsz, int64_t heads, int64_t nq, int64_t nk, uint64_t seed) {
  Case c{bsz, heads, nq, nk, {}, {}, {}, {}};
  c.scores = random_param({bsz, heads, nq, nk}, seed, -2.0f, 2.0f);
  c.params.scale = 0.7f;
  c.params.bias_map = toeplitz_map(nq, nk);
  c.params.c_map = toeplitz_map(nq, nk);
  c.bias_table = random_param({heads, nq + nk - 1}, seed + 1);
  c.c_table = random_param({heads, nq + nk - 1}, seed + 2, 0.3f, 1.7f);
  c.params.bias_table = c.bias_table;
  c.params.c_table = c.c_table;
  return c;
}

// The function gradcheck differentiates: inputs are (scores, bias_table, c_table).
autograd::TensorFn attention_fn(const UrpeAttentionParams& base) {
  return [base](const std::vector<Tensor>& v) {
    UrpeAttentionParams p = base;
    p.bias_table = v[1];
    p.c_table = v[2];
    return urpe_attention(v[0], p);
  };
}

void gradcheck_case(const Case& c) {
  autograd::GradcheckOptions options;
  options.eps = 1e-3f;
  options.atol = 2e-3f;
  options.rtol = 1e-2f;
  check_gradients(attention_fn(c.params), {c.scores, c.bias_table, c.c_table}, options);
}

// Independent reference, in double: P = softmax over unmasked keys of s·scale + B, A = P·C.
struct Reference {
  std::vector<double> p, a;
};

Reference reference(const Tensor& scores, const UrpeAttentionParams& prm) {
  const int64_t bsz = scores.size(0), heads = scores.size(1), nq = scores.size(2), nk = scores.size(3);
  const std::vector<float> s = scores.to_vector_f32();
  const std::vector<float> bt = prm.bias_table.defined() ? prm.bias_table.to_vector_f32() : std::vector<float>{};
  const std::vector<float> ct = prm.c_table.defined() ? prm.c_table.to_vector_f32() : std::vector<float>{};
  const std::vector<int32_t> bm = prm.bias_map.defined() ? prm.bias_map.to_vector_i32() : std::vector<int32_t>{};
  const std::vector<int32_t> cm = prm.c_map.defined() ? prm.c_map.to_vector_i32() : std::vector<int32_t>{};
  const std::vector<int32_t> kp = prm.key_padding.defined() ? prm.key_padding.to_vector_i32() : std::vector<int32_t>{};
  Reference r{std::vector<double>(s.size(), 0.0), std::vector<double>(s.size(), 0.0)};
  for (int64_t b = 0; b < bsz; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t row = ((b * heads + h) * nq + i) * nk;
        std::vector<double> z(nk);
        std::vector<bool> live(nk);
        double m = -INFINITY;
        for (int64_t j = 0; j < nk; ++j) {
          live[j] = !(prm.causal && j > i + prm.causal_offset) && !(!kp.empty() && kp[b * nk + j] != 0);
          if (!live[j]) continue;
          const int64_t mi = (!bm.empty() && prm.bias_map.dim() == 3 ? b * nq * nk : 0) + i * nk + j;
          z[j] = static_cast<double>(s[row + j]) * prm.scale +
                 (bt.empty() ? 0.0 : bt[h * prm.bias_table.size(1) + bm[mi]]);
          m = std::max(m, z[j]);
        }
        double total = 0;
        for (int64_t j = 0; j < nk; ++j)
          if (live[j]) total += std::exp(z[j] - m);
        for (int64_t j = 0; j < nk; ++j) {
          if (!live[j]) continue;
          const int64_t mi = (!cm.empty() && prm.c_map.dim() == 3 ? b * nq * nk : 0) + i * nk + j;
          r.p[row + j] = std::exp(z[j] - m) / total;
          r.a[row + j] = r.p[row + j] * (ct.empty() ? 1.0 : ct[h * prm.c_table.size(1) + cm[mi]]);
        }
      }
  return r;
}

double max_diff(const std::vector<float>& x, const std::vector<double>& y) {
  REQUIRE(x.size() == y.size());
  double m = 0;
  for (size_t k = 0; k < x.size(); ++k) m = std::max(m, std::fabs(x[k] - y[k]));
  return m;
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(a.f32(), b.f32(), a.numel() * sizeof(float)) == 0;
}

}  // namespace

// ---- gradients ----

TEST_CASE("gradcheck: unique Toeplitz maps, odd sizes") {
  gradcheck_case(make_case(2, 3, 5, 7, 100));
  gradcheck_case(make_case(1, 1, 1, 1, 110));  // a single key: P = 1, ∂S = 0, only C learns
}

TEST_CASE("gradcheck: a bucketed map with fewer buckets than relative distances") {
  Case c = make_case(2, 2, 6, 6, 200);
  // T5-like sharing: 4 buckets for 11 distances, so each bucket gathers many (i, j).
  c.params.bias_map = random_ids({6, 6}, 4, 201);
  c.params.c_map = random_ids({6, 6}, 3, 202);
  c.bias_table = random_param({2, 4}, 203);
  c.c_table = random_param({2, 3}, 204, 0.3f, 1.7f);
  c.params.bias_table = c.bias_table;
  c.params.c_table = c.c_table;
  gradcheck_case(c);
}

TEST_CASE("gradcheck: per-batch maps (Bsz, Nq, Nk), as Graphormer's SPD buckets") {
  Case c = make_case(3, 2, 4, 4, 300);
  c.params.bias_map = random_ids({3, 4, 4}, 5, 301);
  c.params.c_map = random_ids({3, 4, 4}, 5, 302);
  c.bias_table = random_param({2, 5}, 303);
  c.c_table = random_param({2, 5}, 304, 0.3f, 1.7f);
  c.params.bias_table = c.bias_table;
  c.params.c_table = c.c_table;
  gradcheck_case(c);
}

TEST_CASE("gradcheck: causal with a memory offset, and key padding") {
  SUBCASE("causal, offset 3 (Transformer-XL memory: Nk = Nq + 3)") {
    Case c = make_case(2, 2, 4, 7, 400);
    c.params.causal = true;
    c.params.causal_offset = 3;
    gradcheck_case(c);
  }
  SUBCASE("causal, offset −1: the first query row is fully masked") {
    Case c = make_case(1, 2, 5, 5, 410);
    c.params.causal = true;
    c.params.causal_offset = -1;
    gradcheck_case(c);
  }
  SUBCASE("key padding, one batch item fully padded") {
    Case c = make_case(3, 2, 5, 5, 420);
    c.params.key_padding = Tensor::from_vector(std::vector<int32_t>{0, 0, 0, 1, 1,   //
                                                                    0, 0, 0, 0, 0,   //
                                                                    1, 1, 1, 1, 1},  //
                                               {3, 5});
    gradcheck_case(c);
  }
}

TEST_CASE("gradcheck: without tables (plain softmax) and with only one of them") {
  Case c = make_case(2, 2, 3, 5, 500);
  UrpeAttentionParams none;
  none.scale = 1.3f;
  check_gradients([none](const std::vector<Tensor>& v) { return urpe_attention(v[0], none); },
                  {c.scores}, {1e-3f, 2e-3f, 1e-2f, 1});
  UrpeAttentionParams only_c = c.params;
  only_c.bias_table = Tensor();
  only_c.bias_map = Tensor();
  check_gradients(
      [only_c](const std::vector<Tensor>& v) {
        UrpeAttentionParams p = only_c;
        p.c_table = v[1];
        return urpe_attention(v[0], p);
      },
      {c.scores, c.c_table}, {1e-3f, 2e-3f, 1e-2f, 2});
}

TEST_CASE("table gradients reduce over every (b, i, j) of a bucket: ∂C_h[k] = Σ G·P") {
  // With G = 1 everywhere, ∂C_h[k] = Σ_{b,i,j: map=k} P, checked against the double reference.
  Case c = make_case(2, 3, 4, 6, 600);
  Tensor a = urpe_attention(c.scores, c.params);
  a.backward(Tensor::ones(a.shape()));
  const Reference r = reference(c.scores, c.params);
  const std::vector<int32_t> map = c.params.c_map.to_vector_i32();
  const int64_t kc = c.c_table.size(1);
  std::vector<double> expected(3 * kc, 0.0);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t ij = 0; ij < 4 * 6; ++ij) expected[h * kc + map[ij]] += r.p[(b * 3 + h) * 24 + ij];
  CHECK(max_diff(c.c_table.grad().to_vector_f32(), expected) < 1e-5);
}

// ---- properties ----

TEST_CASE("C = ones, or no C, gives softmax(S·scale + B) computed independently") {
  Case c = make_case(2, 3, 5, 6, 700);
  UrpeAttentionParams ones = c.params;
  ones.c_table = Tensor::ones({3, 10});
  UrpeAttentionParams no_c = c.params;
  no_c.c_table = Tensor();
  no_c.c_map = Tensor();
  const Reference r = reference(c.scores, no_c);
  const Tensor a_ones = urpe_attention(c.scores, ones), a_none = urpe_attention(c.scores, no_c);
  CHECK(max_diff(a_ones.to_vector_f32(), r.p) < 1e-6);
  CHECK(max_diff(a_none.to_vector_f32(), r.p) < 1e-6);
  // Rows sum to 1 in this case (and only in this case).
  const std::vector<float> v = a_none.to_vector_f32();
  for (int64_t row = 0; row < 2 * 3 * 5; ++row) {
    double s = 0;
    for (int64_t j = 0; j < 6; ++j) s += v[row * 6 + j];
    CHECK(s == doctest::Approx(1.0).epsilon(1e-5));
  }
}

TEST_CASE("with C ≠ 1 rows do not sum to 1 but to Σ_j P·C") {
  Case c = make_case(2, 2, 5, 5, 800);
  const Reference r = reference(c.scores, c.params);
  const std::vector<float> a = urpe_attention(c.scores, c.params).to_vector_f32();
  CHECK(max_diff(a, r.a) < 1e-6);
  int far_from_one = 0;
  for (int64_t row = 0; row < 2 * 2 * 5; ++row) {
    double s = 0, expected = 0;
    for (int64_t j = 0; j < 5; ++j) {
      s += a[row * 5 + j];
      expected += r.a[row * 5 + j];
    }
    CHECK(s == doctest::Approx(expected).epsilon(1e-5));
    if (std::fabs(s - 1.0) > 1e-3) ++far_from_one;
  }
  CHECK(far_from_one == 20);
}

TEST_CASE("per-batch maps and key padding match the reference item by item") {
  Case c = make_case(3, 2, 4, 5, 850);
  c.params.bias_map = random_ids({3, 4, 5}, 6, 851);
  c.params.c_map = random_ids({3, 4, 5}, 6, 852);
  c.params.bias_table = random_values({2, 6}, 853);
  c.params.c_table = random_values({2, 6}, 854, 0.3f, 1.7f);
  c.params.key_padding = Tensor::from_vector(std::vector<int32_t>{0, 0, 0, 0, 1,  //
                                                                  0, 1, 0, 0, 0,  //
                                                                  0, 0, 0, 0, 0},
                                             {3, 5});
  const std::vector<float> a = urpe_attention(c.scores, c.params).to_vector_f32();
  CHECK(max_diff(a, reference(c.scores, c.params).a) < 1e-6);
  // The same map for every item differs: the batch index is really used.
  UrpeAttentionParams shared = c.params;
  const std::vector<int32_t> m = c.params.bias_map.to_vector_i32();
  shared.bias_map = Tensor::from_vector(std::vector<int32_t>(m.begin(), m.begin() + 20), {4, 5});
  CHECK(max_diff(urpe_attention(c.scores, shared).to_vector_f32(), reference(c.scores, c.params).a) > 1e-3);
}

TEST_CASE("causal mask: A is zero for j > i + offset and matches the reference elsewhere") {
  for (int64_t offset : {0, 2}) {
    Case c = make_case(2, 2, 5, 7, 900 + offset);
    c.params.causal = true;
    c.params.causal_offset = offset;
    const std::vector<float> a = urpe_attention(c.scores, c.params).to_vector_f32();
    CHECK(max_diff(a, reference(c.scores, c.params).a) < 1e-6);
    int zeros = 0, nonzeros = 0;
    for (int64_t row = 0; row < 2 * 2 * 5; ++row) {
      const int64_t i = row % 5;
      for (int64_t j = 0; j < 7; ++j) {
        if (j > i + offset) zeros += a[row * 7 + j] == 0.0f;
        else nonzeros += a[row * 7 + j] != 0.0f;
      }
    }
    // Counted per (i, j) pattern over the 4 (b, h) slices.
    int expected_zeros = 0;
    for (int64_t i = 0; i < 5; ++i) expected_zeros += static_cast<int>(std::max<int64_t>(0, 7 - (i + offset + 1)));
    CHECK(zeros == 4 * expected_zeros);
    CHECK(nonzeros == 4 * (35 - expected_zeros));
  }
}

TEST_CASE("fully masked rows give zeros and zero gradients, never NaN") {
  Case c = make_case(2, 2, 4, 4, 1000);
  c.params.key_padding = Tensor::from_vector(std::vector<int32_t>{1, 1, 1, 1, 0, 1, 0, 1}, {2, 4});
  c.params.causal = true;  // with the padding: batch 1, query 0 sees key 0 only
  Tensor a = urpe_attention(c.scores, c.params);
  a.backward(random_values(a.shape(), 1001));
  const std::vector<float> av = a.to_vector_f32(), gs = c.scores.grad().to_vector_f32();
  for (float x : av) CHECK(std::isfinite(x));
  for (float x : gs) CHECK(std::isfinite(x));
  for (float x : c.bias_table.grad().to_vector_f32()) CHECK(std::isfinite(x));
  for (float x : c.c_table.grad().to_vector_f32()) CHECK(std::isfinite(x));
  for (int64_t k = 0; k < 2 * 16; ++k) {  // batch 0: every key padded
    CHECK(av[k] == 0.0f);
    CHECK(gs[k] == 0.0f);
  }
  // Batch 1, head 0, query 0: only key 0 is live, so P = 1 there and A = C_0[bucket(0, 0)].
  const float c00 = c.c_table.to_vector_f32()[3];  // toeplitz bucket (0 − 0) + 3
  CHECK(av[32] == doctest::Approx(c00));
  CHECK(av[33] == 0.0f);
  // Scores of −∞ on every live key are a fully masked row too.
  UrpeAttentionParams plain;
  Tensor s = Tensor::full({1, 1, 2, 3}, -INFINITY);
  s.f32()[3] = 0.5f;  // the second row has one finite logit
  const std::vector<float> ps = urpe_attention(s, plain).to_vector_f32();
  CHECK(ps == std::vector<float>{0, 0, 0, 1, 0, 0});
}

TEST_CASE("the same inputs give bit-identical outputs and gradients, whatever the threads") {
  auto run = [](Tensor& a, Tensor& gs, Tensor& gb, Tensor& gc) {
    Case c = make_case(4, 3, 16, 16, 1100);
    c.params.bias_map = random_ids({4, 16, 16}, 7, 1101);  // many (b, i, j) per bucket
    c.bias_table = random_param({3, 7}, 1102);
    c.params.bias_table = c.bias_table;
    a = urpe_attention(c.scores, c.params);
    a.backward(random_values(a.shape(), 1103));
    gs = c.scores.grad();
    gb = c.bias_table.grad();
    gc = c.c_table.grad();
  };
  Tensor a1, s1, b1, c1, a2, s2, b2, c2;
#if defined(_OPENMP)
  // 3 threads against 1, whatever the machine has (with its own count the check would compare
  // 1 with 1 on a one-core machine or under OMP_NUM_THREADS=1).
  const int threads = omp_get_max_threads();
  omp_set_num_threads(3);
  run(a1, s1, b1, c1);
  omp_set_num_threads(1);
  run(a2, s2, b2, c2);
  omp_set_num_threads(threads);
#else
  run(a1, s1, b1, c1);
  run(a2, s2, b2, c2);
#endif
  CHECK(bit_identical(a1, a2));
  CHECK(bit_identical(s1, s2));
  CHECK(bit_identical(b1, b2));
  CHECK(bit_identical(c1, c2));
}

TEST_CASE("toeplitz_map: map[i, j] = (j − i) + (nq − 1)") {
  CHECK(toeplitz_map(2, 3).to_vector_i32() == std::vector<int32_t>{1, 2, 3, 0, 1, 2});
  CHECK(toeplitz_map(3, 3).to_vector_i32() == std::vector<int32_t>{2, 3, 4, 1, 2, 3, 0, 1, 2});
  CHECK_THROWS_WITH_AS(toeplitz_map(0, 3), doctest::Contains("at least 1"), Error);
}

// ---- errors ----

TEST_CASE("bad arguments give one readable error naming the tensor") {
  Case c = make_case(2, 3, 4, 4, 1200);
  // One line that starts with the op's name (the table, map and padding checks are shared with
  // the fused op: ops/urpe_attention_checks.h) and holds `text`.
  auto fails_with = [&](const UrpeAttentionParams& p, const char* text, const Tensor& scores) {
    const std::string expected = text;
    CAPTURE(expected);
    std::string message = "(no error)";
    try {
      urpe_attention(scores, p);
    } catch (const Error& e) {
      message = e.what();
    }
    CAPTURE(message);
    CHECK(message.rfind("urpe_attention: ", 0) == 0);
    CHECK(message.find(text) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  };
  UrpeAttentionParams p = c.params;
  p.c_map = random_values({4, 4}, 1);  // f32, not i32
  fails_with(p, "argument 'c_map' must be i32", c.scores);

  p = c.params;
  std::vector<int32_t> map = toeplitz_map(4, 4).to_vector_i32();
  map[5] = 7;  // Kc = 7 buckets: valid values are 0..6
  p.c_map = Tensor::from_vector(map, {4, 4});
  fails_with(p, "has value 7 at flat index 5, outside [0, 7)", c.scores);
  map[5] = -1;
  p.c_map = Tensor::from_vector(map, {4, 4});
  fails_with(p, "has value -1", c.scores);

  p = c.params;
  p.bias_table = random_values({2, 7}, 2);  // 2 heads, the scores have 3
  fails_with(p, "bias_table f32 (2, 7) on cpu must have shape (H, K) with H = 3 heads, like the scores f32 (2, 3, 4, 4)", c.scores);

  p = c.params;
  p.bias_map = toeplitz_map(4, 5);
  fails_with(p, "bias_map i32 (4, 5) on cpu must have shape (Nq, Nk) = (4, 4) or (Bsz, Nq, Nk) = (2, 4, 4) to match the scores",
             c.scores);

  p = c.params;
  p.key_padding = Tensor::zeros({2, 5}, DType::i32);
  fails_with(p, "key_padding i32 (2, 5) on cpu must have shape (Bsz, Nk) = (2, 4) to match the scores f32 (2, 3, 4, 4) on cpu",
             c.scores);

  p = c.params;
  p.c_map = Tensor();
  fails_with(p, "c_table f32 (3, 7) on cpu is given but c_map is missing (an i32 map of shape (Nq, Nk) = (4, 4) or "
                "(Bsz, Nq, Nk) = (2, 4, 4))", c.scores);

  p = UrpeAttentionParams();
  p.bias_map = toeplitz_map(4, 4);
  fails_with(p, "bias_map i32 (4, 4) on cpu is given without a bias_table", c.scores);

  fails_with(c.params, "must be 4-D (Bsz, H, Nq, Nk)", random_values({3, 4, 4}, 3));

  p = c.params;
  p.scale = NAN;
  fails_with(p, "scale must be finite", c.scores);

  p = c.params;
  p.key_padding = random_values({2, 4}, 4);
  fails_with(p, "argument 'key_padding' must be i32", c.scores);
}

// ---- AttentionNorm::exp: the softmax without its denominator ----

// Double reference of the unnormalised variant: E = e^Z over unmasked keys (0 elsewhere), A = E·C.
Reference exp_reference(const Tensor& scores, const UrpeAttentionParams& prm) {
  const int64_t bsz = scores.size(0), heads = scores.size(1), nq = scores.size(2), nk = scores.size(3);
  const std::vector<float> s = scores.to_vector_f32();
  const std::vector<float> bt = prm.bias_table.to_vector_f32(), ct = prm.c_table.to_vector_f32();
  const std::vector<int32_t> bm = prm.bias_map.to_vector_i32(), cm = prm.c_map.to_vector_i32();
  Reference r{std::vector<double>(s.size(), 0.0), std::vector<double>(s.size(), 0.0)};
  for (int64_t b = 0; b < bsz; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < nq; ++i)
        for (int64_t j = 0; j < nk; ++j) {
          if (prm.causal && j > i + prm.causal_offset) continue;
          const int64_t e = ((b * heads + h) * nq + i) * nk + j;
          const double z = static_cast<double>(s[e]) * prm.scale + bt[h * prm.bias_table.size(1) + bm[i * nk + j]];
          r.p[e] = std::exp(z);
          r.a[e] = r.p[e] * ct[h * prm.c_table.size(1) + cm[i * nk + j]];
        }
  return r;
}

TEST_CASE("a map read once is remembered by its range: a table it does not fit is still an error") {
  // The map's values are 0..6 (Toeplitz, 4 × 4). The first call reads them; later calls with the
  // same map tensor use the remembered range, which must still reject a table of 6 buckets with
  // the same message as a first read, and a fresh bad map is read and rejected.
  Case c = make_case(2, 3, 4, 4, 1300);
  UrpeAttentionParams p = c.params;
  const Tensor first = urpe_attention(c.scores, p);
  CHECK(urpe_attention(c.scores, p).to_vector_f32() == first.to_vector_f32());
  UrpeAttentionParams small = p;
  small.c_table = random_values({3, 6}, 3);
  CHECK_THROWS_WITH_AS(urpe_attention(c.scores, small),
                       doctest::Contains("has value 6 at flat index 3, outside [0, 6)"), Error);
  std::vector<int32_t> bad = toeplitz_map(4, 4).to_vector_i32();
  bad[2] = 9;
  UrpeAttentionParams fresh = p;
  fresh.bias_map = Tensor::from_vector(bad, {4, 4});
  CHECK_THROWS_WITH_AS(urpe_attention(c.scores, fresh), doctest::Contains("has value 9 at flat index 2"), Error);
}

TEST_CASE("a map range noted by its maker is used, and still rejects a table it does not fit") {
  // note_bucket_map_range: the maker of a map (Graphormer's per-batch buckets) hands its measured
  // range over, so the check need not read the map. The range must still fit the table, and a
  // misfit is read and named as on a first read.
  Case c = make_case(2, 3, 4, 4, 1310);
  UrpeAttentionParams p = c.params;
  p.c_map = Tensor::from_vector(toeplitz_map(4, 4).to_vector_i32(), {4, 4});  // values 0..6, a fresh storage
  note_bucket_map_range(p.c_map, 0, 6);
  CHECK_NOTHROW(urpe_attention(c.scores, p));
  UrpeAttentionParams small = p;
  small.c_map = Tensor::from_vector(toeplitz_map(4, 4).to_vector_i32(), {4, 4});
  note_bucket_map_range(small.c_map, 0, 6);
  small.c_table = random_values({3, 6}, 4);
  CHECK_THROWS_WITH_AS(urpe_attention(c.scores, small),
                       doctest::Contains("has value 6 at flat index 3, outside [0, 6)"), Error);
  CHECK_THROWS_WITH_AS(note_bucket_map_range(p.c_map, 3, 2), doctest::Contains("is empty"), Error);
  CHECK_THROWS_WITH_AS(note_bucket_map_range(Tensor::full({2}, 1.0f), 0, 1), doctest::Contains("i32"), Error);
}

TEST_CASE("attention_norm exp: A = e^Z ⊙ C against a double reference, with its gradients") {
  Case c = make_case(2, 3, 5, 7, 1500);
  c.params.norm = AttentionNorm::exp;
  const Tensor a = urpe_attention(c.scores, c.params);
  const Reference r = exp_reference(c.scores, c.params);
  double worst = 0;
  const std::vector<float> got = a.to_vector_f32();
  for (size_t k = 0; k < got.size(); ++k) worst = std::max(worst, std::fabs(got[k] - r.a[k]) / (1.0 + r.a[k]));
  CHECK(worst < 1e-6);
  gradcheck_case(c);
  SUBCASE("causal with a memory offset: masked keys are exactly 0, their gradient too") {
    Case m = make_case(1, 2, 4, 6, 1510);
    m.params.norm = AttentionNorm::exp;
    m.params.causal = true;
    m.params.causal_offset = 2;
    const std::vector<float> am = urpe_attention(m.scores, m.params).to_vector_f32();
    const Reference rm = exp_reference(m.scores, m.params);
    for (size_t k = 0; k < am.size(); ++k) CHECK(am[k] == doctest::Approx(rm.a[k]).epsilon(1e-6));
    gradcheck_case(m);
  }
}

TEST_CASE("attention_norm exp: with C ≡ 1 rows no longer sum to 1, and large logits overflow to inf") {
  Case c = make_case(1, 2, 4, 4, 1600);
  c.params.norm = AttentionNorm::exp;
  c.params.c_table = Tensor::ones({2, 7});
  const std::vector<float> a = urpe_attention(c.scores, c.params).to_vector_f32();
  int far_from_one = 0;
  for (int64_t row = 0; row < 8; ++row) {
    double s = 0;
    for (int64_t j = 0; j < 4; ++j) s += a[row * 4 + j];
    far_from_one += std::fabs(s - 1.0) > 1e-2;
  }
  CHECK(far_from_one == 8);
  // Without the max subtraction nothing bounds e^Z: a logit of 100 is +inf (the softmax is fine).
  UrpeAttentionParams p;
  p.norm = AttentionNorm::exp;
  const Tensor big = Tensor::full({1, 1, 1, 2}, 100.0f);
  const std::vector<float> e = urpe_attention(big, p).to_vector_f32();
  CHECK(std::isinf(e[0]));
  p.norm = AttentionNorm::softmax;
  CHECK(urpe_attention(big, p).to_vector_f32()[0] == doctest::Approx(0.5));
  CHECK(parse_attention_norm("exp") == AttentionNorm::exp);
  CHECK_THROWS_WITH_AS(parse_attention_norm("sparsemax"), doctest::Contains("expected softmax or exp"), Error);
}

// ---- inference memory ----

TEST_CASE("with gradients off the core writes A alone: no P is kept for a backward") {
  Case c = make_case(4, 8, 64, 64, 1400);  // one (4, 8, 64, 64) f32 tensor is exactly 512 KiB
  const size_t one = static_cast<size_t>(c.scores.numel()) * sizeof(float);
  auto peak_of_call = [&] {
    host::reset_peak();
    const size_t before = host::in_use_bytes();
    const Tensor a = urpe_attention(c.scores, c.params);
    return host::peak_bytes() - before;
  };
  {
    autograd::NoGrad no_grad;
    CHECK(peak_of_call() == one);  // A only
  }
  CHECK(peak_of_call() >= 2 * one);  // A and the saved P
  // The values are those of a recorded call.
  Tensor with_grad = urpe_attention(c.scores, c.params);
  Tensor without;
  {
    autograd::NoGrad no_grad;
    without = urpe_attention(c.scores, c.params);
  }
  CHECK(bit_identical(with_grad, without));
}
