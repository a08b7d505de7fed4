// `urpe analyze` (app/analysis/position_context.h, analyze_run.h, corpus_topics.h): the exact
// position/context split and its identities, statistics that recover what was planted in
// synthetic hidden states, the eigensolvers against each other and against known spectra, the
// corpus's topic boundary, and the command on tiny trained runs with its errors.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "cli_util.h"
#include "data/corpus.h"
#include "data/corpus_sources.h"
#include "data/text_file.h"
#include "golden_util.h"
#include "test_util.h"
#include "app/analysis/analyze_files.h"
#include "app/analysis/analyze_run.h"
#include "app/analysis/attention_split.h"
#include "app/analysis/corpus_topics.h"
#include "app/analysis/position_context.h"
#include "train/loop/checkpoint.h"
#include "base/io/json.h"
#include "base/io/run_dir.h"
#include "base/io/safetensors.h"
#include "train/config/run_config.h"

using namespace urpe;
using urpe::test::run_urpe;

namespace {

std::string temp_dir(const std::string& name) {
  const std::string dir = std::string("/tmp/urpe_test_analyze_") + std::to_string(::getpid()) + "_" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

std::vector<double> gaussian_values(size_t n, uint64_t seed, double scale = 1) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = normal(gen);
  return v;
}

// A C × T × d cube of N(0, scale²) hidden states.
HiddenCube gaussian_cube(int64_t C, int64_t T, int64_t d, uint64_t seed, double scale) {
  HiddenCube cube;
  cube.contexts = C;
  cube.positions = T;
  cube.dim = d;
  cube.h = gaussian_values(static_cast<size_t>(C * T * d), seed, scale);
  return cube;
}

// d orthonormal vectors in ℝ^d (Gram–Schmidt of Gaussian ones), row k = q_k.
std::vector<double> orthonormal_basis(int64_t d, uint64_t seed) {
  std::vector<double> q = gaussian_values(static_cast<size_t>(d * d), seed);
  for (int64_t k = 0; k < d; ++k) {
    for (int64_t j = 0; j < k; ++j) {
      double p = 0;
      for (int64_t i = 0; i < d; ++i) p += q[k * d + i] * q[j * d + i];
      for (int64_t i = 0; i < d; ++i) q[k * d + i] -= p * q[j * d + i];
    }
    double n = 0;
    for (int64_t i = 0; i < d; ++i) n += q[k * d + i] * q[k * d + i];
    for (int64_t i = 0; i < d; ++i) q[k * d + i] /= std::sqrt(n);
  }
  return q;
}

struct Planted {
  HiddenCube cube;
  std::vector<int> topics;
  double pos_energy = 0;  // C·Σ_t‖pos_t‖² as planted
};

// h_{c,t} = μ + pos_t + ctx_c + noise: pos_t = r·(cos θ_t q₀ + sin θ_t q₁) on a circle, θ_t = 2πt/T
// (smooth, rank 2, Σ_t pos_t = 0) or, with smooth = false, a Gaussian vector per t (rough, full
// rank); ctx_c = 2·q_{2+topic} + Gaussian spread in q₅ … q_{d−1} (orthogonal to the positional
// plane); noise N(0, 0.05²) in every direction.
Planted planted(int64_t C, int64_t T, int64_t d, bool smooth, uint64_t seed) {
  const std::vector<double> q = orthonormal_basis(d, seed);
  const std::vector<double> mu = gaussian_values(d, seed + 1);
  const std::vector<double> rough = gaussian_values(static_cast<size_t>(T * d), seed + 2);
  const std::vector<double> spread = gaussian_values(static_cast<size_t>(C * d), seed + 3, 0.3);
  const std::vector<double> noise = gaussian_values(static_cast<size_t>(C * T * d), seed + 4, 0.05);
  Planted p;
  p.cube.contexts = C;
  p.cube.positions = T;
  p.cube.dim = d;
  p.cube.h.assign(static_cast<size_t>(C * T * d), 0.0);
  std::vector<double> pos(static_cast<size_t>(T * d), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const double theta = 6.283185307179586 * static_cast<double>(t) / static_cast<double>(T);
    for (int64_t i = 0; i < d; ++i)
      pos[t * d + i] = smooth ? 3 * (std::cos(theta) * q[0 * d + i] + std::sin(theta) * q[1 * d + i]) : rough[t * d + i];
  }
  if (!smooth)  // centre, so the planted energy is what the decomposition can find
    for (int64_t i = 0; i < d; ++i) {
      double m = 0;
      for (int64_t t = 0; t < T; ++t) m += pos[t * d + i] / static_cast<double>(T);
      for (int64_t t = 0; t < T; ++t) pos[t * d + i] -= m;
    }
  for (double x : pos) p.pos_energy += static_cast<double>(C) * x * x;
  for (int64_t c = 0; c < C; ++c) {
    const int topic = static_cast<int>(c % 3);
    p.topics.push_back(topic);
    std::vector<double> ctx(static_cast<size_t>(d), 0.0);
    for (int64_t i = 0; i < d; ++i) {
      ctx[i] = 2 * q[(2 + topic) * d + i];
      for (int64_t k = 5; k < d; ++k) ctx[i] += spread[c * d + k] * q[k * d + i];
    }
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < d; ++i) {
        const int64_t k = (c * T + t) * d + i;
        p.cube.h[k] = mu[i] + pos[t * d + i] + ctx[i] + noise[k];
      }
  }
  return p;
}

double row_sum_norm(const std::vector<double>& rows, int64_t n, int64_t d) {
  double total = 0;
  for (int64_t i = 0; i < d; ++i) {
    double s = 0;
    for (int64_t r = 0; r < n; ++r) s += rows[r * d + i];
    total += s * s;
  }
  return std::sqrt(total);
}

std::vector<EigenSolver> solvers() {
  std::vector<EigenSolver> s = {EigenSolver::jacobi};
  if (have_lapack()) s.push_back(EigenSolver::lapack);
  return s;
}

}  // namespace

// ---- the decomposition ----

TEST_CASE("decomposition on random states: Σ_t pos = 0, Σ_c ctx = 0, the parts add up, ANOVA holds") {
  HiddenCube cube = gaussian_cube(7, 5, 4, 11, 2.0);
  for (double& x : cube.h) x += 3;  // a mean far from 0
  const Decomposition dec = decompose(cube);
  CHECK(row_sum_norm(dec.pos, 5, 4) < 1e-12);
  CHECK(row_sum_norm(dec.ctx, 7, 4) < 1e-12);
  for (int64_t c = 0; c < 7; ++c)
    for (int64_t t = 0; t < 5; ++t)
      for (int64_t i = 0; i < 4; ++i) {
        const int64_t k = (c * 5 + t) * 4 + i;
        CHECK(dec.mu[i] + dec.pos[t * 4 + i] + dec.ctx[c * 4 + i] + dec.resid[k] == doctest::Approx(cube.h[k]).epsilon(1e-12));
      }
  // The residual is orthogonal to both factors: its sums over c and over t vanish.
  for (int64_t i = 0; i < 4; ++i) {
    double over_c = 0;
    for (int64_t c = 0; c < 7; ++c) over_c += dec.resid[(c * 5 + 2) * 4 + i];
    CHECK(std::fabs(over_c) < 1e-12);
  }
  for (EigenSolver solver : solvers()) {
    const LayerAnalysis a = analyze_layer(cube, {}, 1, solver);
    CHECK(a.anova_error < 1e-12);
    CHECK(a.pos_sum_error < 1e-12);
    CHECK(a.ctx_sum_error < 1e-12);
    CHECK(a.pos_share + a.ctx_share + a.resid_share == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(a.pos_energy + a.ctx_energy + a.resid_energy == doctest::Approx(a.total).epsilon(1e-12));
    CHECK(std::isnan(a.topic_within));
    CHECK(a.singular.size() == 4);  // min(T, d)
  }
}

TEST_CASE("decomposition needs C ≥ 2 and T ≥ 2 and a cube of the stated size") {
  HiddenCube cube;
  cube.contexts = 1;
  cube.positions = 4;
  cube.dim = 2;
  cube.h.assign(8, 1.0);
  CHECK_THROWS_WITH_AS(decompose(cube), doctest::Contains("at least 2 contexts, got 1"), Error);
  cube.contexts = 4;
  cube.positions = 1;
  CHECK_THROWS_WITH_AS(decompose(cube), doctest::Contains("at least 2 positions, got 1"), Error);
  cube.positions = 4;
  CHECK_THROWS_WITH_AS(decompose(cube), doctest::Contains("expected 4 x 4 x 2 values, got 8"), Error);
  cube.h.assign(32, 1.0);
  CHECK_THROWS_WITH_AS(analyze_layer(cube, {0, 1, -1, 0}, 1, EigenSolver::jacobi),
                       doctest::Contains("topic labels must be 0 or more"), Error);
}

TEST_CASE("planted smooth circle + topic clusters: rank 2, E10 ≈ 1, incoherent, topics found") {
  const Planted p = planted(96, 32, 24, true, 5);
  for (EigenSolver solver : solvers()) {
    const LayerAnalysis a = analyze_layer(p.cube, p.topics, 3, solver);
    CHECK(a.anova_error < 1e-12);
    CHECK(a.pos_energy == doctest::Approx(p.pos_energy).epsilon(0.02));  // what was planted
    CHECK(a.stable_rank == doctest::Approx(2.0).epsilon(0.03));          // two equal singular values
    CHECK(a.rank90 == 2);
    CHECK(a.singular[0] == doctest::Approx(3 * std::sqrt(32.0 / 2)).epsilon(0.02));  // r·√(T/2)
    CHECK(a.singular[2] < 0.05 * a.singular[0]);
    CHECK(a.e10 > 0.95);
    CHECK(a.incoherence_max < 0.1);                 // planted orthogonal, up to noise
    CHECK(a.random_max > 3 * a.incoherence_max);    // Gaussian vectors in ℝ^24 are far less so
    CHECK(a.random_mean > 3 * a.incoherence_mean);
    CHECK(a.topics == 3);
    CHECK(a.topic_within > 0.5);
    CHECK(a.topic_between < 0);
    CHECK(a.relative_norm > 0.5);
    CHECK(a.relative_norm <= 1.0 + 1e-9);
    // The circle in the top two directions: with σ₁ = σ₂ and v_{1,2}[t] = √(2/T)·(cos, sin) up to a
    // rotation, every t lies at radius √(2/T); directions 3 and 4 hold only noise.
    REQUIRE(a.directions.size() == 4);
    for (int64_t t = 0; t < 32; ++t) {
      const double radius = std::hypot(a.directions[0][t], a.directions[1][t]);
      CHECK(radius == doctest::Approx(std::sqrt(2.0 / 32)).epsilon(0.03));
      CHECK(std::fabs(a.directions[2][t]) < 0.02);
    }
  }
}

TEST_CASE("planted rough positions: E10 and the ranks say so") {
  const Planted p = planted(64, 32, 24, false, 6);
  const LayerAnalysis a = analyze_layer(p.cube, {}, 3, default_eigen_solver());
  CHECK(a.pos_energy == doctest::Approx(p.pos_energy).epsilon(0.02));
  CHECK(a.e10 < 0.3);           // white noise spreads over all 32² frequencies: ≈ 10²/32² + diagonal
  CHECK(a.stable_rank > 5);
  CHECK(a.rank90 > 10);
}

// ---- the linear algebra ----

TEST_CASE("eigensolvers: LAPACK and Jacobi agree, and match a known spectrum") {
  const int64_t n = 30;
  std::vector<double> a = gaussian_values(n * n, 21);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) a[i * n + j] = a[j * n + i];
  const std::vector<double> jacobi = symmetric_eigenvalues(a, n, EigenSolver::jacobi);
  double trace = 0;
  for (int64_t i = 0; i < n; ++i) trace += a[i * n + i];
  double sum = 0;
  for (double w : jacobi) sum += w;
  CHECK(sum == doctest::Approx(trace).epsilon(1e-10));
  CHECK(std::is_sorted(jacobi.rbegin(), jacobi.rend()));
  if (have_lapack()) {
    const std::vector<double> lapack = symmetric_eigenvalues(a, n, EigenSolver::lapack);
    for (int64_t i = 0; i < n; ++i) CHECK(lapack[i] == doctest::Approx(jacobi[i]).epsilon(1e-10));
  } else {
    CHECK_THROWS_WITH_AS(symmetric_eigenvalues(a, n, EigenSolver::lapack), doctest::Contains("no LAPACK"), Error);
  }
}

TEST_CASE("eigenvectors: A v_k = λ_k v_k with unit v_k, for both solvers") {
  const int64_t n = 12;
  std::vector<double> a = gaussian_values(n * n, 23);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) a[i * n + j] = a[j * n + i];
  for (EigenSolver solver : solvers()) {
    std::vector<double> v;
    const std::vector<double> w = symmetric_eigen(a, n, solver, v);
    REQUIRE(v.size() == static_cast<size_t>(n * n));
    for (int64_t k = 0; k < n; ++k) {
      double norm2 = 0, residual = 0;
      for (int64_t i = 0; i < n; ++i) {
        double av = 0;
        for (int64_t j = 0; j < n; ++j) av += a[i * n + j] * v[j * n + k];
        residual = std::max(residual, std::fabs(av - w[k] * v[i * n + k]));
        norm2 += v[i * n + k] * v[i * n + k];
      }
      CHECK(norm2 == doctest::Approx(1.0).epsilon(1e-10));
      CHECK(residual < 1e-9);
    }
  }
}

TEST_CASE("singular values against A = U diag(s) Vᵀ built with known s, both orientations") {
  const int64_t rows = 12, cols = 7;
  const std::vector<double> s = {9.0, 4.0, 2.5, 1.0, 0.5, 0.1, 0.0};
  const std::vector<double> u = orthonormal_basis(rows, 31), v = orthonormal_basis(cols, 32);
  std::vector<double> a(rows * cols, 0.0), at(cols * rows, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t k = 0; k < cols; ++k) a[i * cols + j] += u[k * rows + i] * s[k] * v[k * cols + j];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) at[j * rows + i] = a[i * cols + j];
  for (EigenSolver solver : solvers()) {
    const std::vector<double> tall = singular_values(a, rows, cols, solver);
    const std::vector<double> wide = singular_values(at, cols, rows, solver);
    REQUIRE(tall.size() == 7);
    REQUIRE(wide.size() == 7);
    for (size_t k = 0; k < s.size(); ++k) {
      // Through the Gram matrix, σ below √ε·σ₁ is known only to about √ε·σ₁ (here ~1e-7).
      const double tolerance = s[k] > 0 ? 1e-9 * s[k] : 1e-6 * s[0];
      CHECK(std::fabs(tall[k] - s[k]) <= tolerance);
      CHECK(std::fabs(wide[k] - s[k]) <= tolerance);
    }
  }
}

TEST_CASE("DCT-II is orthonormal; E10 of a constant and of the identity") {
  const int64_t n = 16;
  const std::vector<double> f = dct2_matrix(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double p = 0;
      for (int64_t k = 0; k < n; ++k) p += f[i * n + k] * f[j * n + k];
      CHECK(p == doctest::Approx(i == j ? 1.0 : 0.0).scale(1.0).epsilon(1e-12));
    }
  CHECK(low_frequency_energy(std::vector<double>(n * n, 1.0), n, 10) == doctest::Approx(1.0));
  std::vector<double> eye(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) eye[i * n + i] = 1;
  CHECK(low_frequency_energy(eye, n, 10) == doctest::Approx(10.0 / 16.0));
  CHECK(low_frequency_energy(eye, n, 20) == doctest::Approx(1.0));  // k ≥ n keeps all
  CHECK(std::isnan(low_frequency_energy(std::vector<double>(n * n, 0.0), n, 10)));
}

// ---- the attention-logit split ----

namespace {

Affine random_affine(int64_t out, int64_t in, uint64_t seed) {
  Affine a;
  a.out = out;
  a.in = in;
  a.w = gaussian_values(static_cast<size_t>(out * in), seed, 0.5);
  a.b = gaussian_values(static_cast<size_t>(out), seed + 1);
  return a;
}

}  // namespace

TEST_CASE("attention split: the four terms add up to the logits; shares sum to 1; planted cases") {
  const HiddenCube cube = gaussian_cube(5, 6, 8, 41, 1.5);
  const Decomposition dec = decompose(cube);
  const Affine q = random_affine(8, 8, 42), k = random_affine(8, 8, 44);
  const AttentionSplit split = split_attention_logits(cube, dec, q, k, 2, 1);
  CHECK(split.identity_error < 1e-13);
  REQUIRE(split.shares.size() == 2);
  REQUIRE(split.example.size() == 2);
  for (int64_t h = 0; h < 2; ++h) {
    double total = 0, total_centred = 0;
    for (double x : split.shares[h]) total += x;
    for (double x : split.centred_shares[h]) total_centred += x;
    CHECK(total == doctest::Approx(1.0));
    CHECK(total_centred == doctest::Approx(1.0));
    // Context 0's logits from scratch: scale·(W_Q x_s + b_Q)·(W_K x_t + b_K) over the head's 4 dims.
    for (int64_t s = 0; s < 6; ++s)
      for (int64_t t = 0; t < 6; ++t) {
        double logit = 0;
        for (int64_t i = h * 4; i < h * 4 + 4; ++i) {
          double qs = q.b[i], kt = k.b[i];
          for (int64_t j = 0; j < 8; ++j) {
            qs += q.w[i * 8 + j] * cube.h[s * 8 + j];
            kt += k.w[i * 8 + j] * cube.h[t * 8 + j];
          }
          logit += qs * kt / 2.0;  // 1/√dh, dh = 4
        }
        double sum = 0;
        for (int term = 0; term < kLogitTerms; ++term) sum += split.example[h][term][s * 6 + t];
        CHECK(sum == doctest::Approx(logit).epsilon(1e-12));
      }
  }
  CHECK_THROWS_WITH_AS(split_attention_logits(cube, dec, q, k, 3, 1), doctest::Contains("do not fit"), Error);

  // Every context the same (h = pos_t): no context part, so pos·pos is all of it; pos_t = e_t − mean
  // (equal norms, each closest to itself) under identity projections puts every row maximum on
  // the diagonal.
  HiddenCube same;
  same.contexts = 3;
  same.positions = 4;
  same.dim = 8;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t t = 0; t < 4; ++t)
      for (int64_t i = 0; i < 8; ++i) same.h.push_back((i == t ? 1.0 : 0.0) - (i < 4 ? 0.25 : 0.0));
  Affine eye;
  eye.out = eye.in = 8;
  eye.w.assign(64, 0.0);
  eye.b.assign(8, 0.0);
  for (int64_t i = 0; i < 8; ++i) eye.w[i * 8 + i] = 1;
  const AttentionSplit planted = split_attention_logits(same, decompose(same), eye, eye, 1, 1);
  CHECK(planted.shares[0][0] == doctest::Approx(1.0));
  CHECK(planted.shares[0][3] < 1e-20);
  CHECK(planted.diagonal[0] == 1.0);
  CHECK(planted.centred_shares[0][0] == doctest::Approx(1.0));

  // Row constants do not count once centred: a query bias b_Q adds b_Q·k_t, which varies with t,
  // but a key bias b_K adds q_s·b_K, the same along a row. With x = pos only (identical contexts)
  // and W_Q = 0, q = b_Q, pos·pos = b_Q·(W_K pos_t + b_K): with W_K = 0 it is one constant.
  Affine constant_q = eye, constant_k = eye;
  constant_q.w.assign(64, 0.0);
  constant_q.b.assign(8, 1.0);
  constant_k.w.assign(64, 0.0);
  constant_k.b.assign(8, 0.5);
  const AttentionSplit flat = split_attention_logits(same, decompose(same), constant_q, constant_k, 1, 1);
  CHECK(flat.shares[0][0] == doctest::Approx(1.0));    // all of the (constant) logit is pos·pos
  CHECK(flat.centred_shares[0][0] == 0.0);             // and the softmax sees none of it
}

// ---- the golden comparison with tools/analyze_reference.py (numpy) ----

TEST_CASE("golden: every number of analyze_layer matches tools/analyze_reference.py on the committed fixture") {
  // tests/fixtures/analyze_hidden.safetensors (a planted layer and a Gaussian one, C = 9, T = 12,
  // d = 8, float32) and analyze_reference.json (numpy's numbers for it, from SVD rather than Gram
  // eigenvalues): `python3 tools/analyze_reference.py fixture` rewrites both. Tolerances: 1e-9
  // relative for the scalars, 1e-9·σ₁ for the singular values, 1e-12 for the Gram matrix; ranks
  // and topic counts exactly.
  const HiddenStateFile file = load_hidden_states(urpe::test::fixture_path("analyze_hidden.safetensors"));
  const json::Value reference = json::read_file(urpe::test::fixture_path("analyze_reference.json"));
  const std::vector<json::Value>& rows = reference.at("layers").items();
  REQUIRE(rows.size() == 2);
  REQUIRE(file.layers == std::vector<int64_t>{0, 1});
  REQUIRE(file.topics.size() == 9);
  const char* scalars[] = {"total", "pos_energy", "ctx_energy", "resid_energy", "pos_share", "ctx_share",
                           "resid_share", "sigma_m", "stable_rank", "relative_norm", "e10", "incoherence_max",
                           "incoherence_mean", "random_max", "random_mean", "topic_within", "topic_between"};
  for (EigenSolver solver : solvers())
    for (size_t k = 0; k < rows.size(); ++k) {
      const json::Value& ref = rows[k];
      REQUIRE(static_cast<uint64_t>(ref.at("baseline_seed").as_integer()) == file.baseline_seeds[k]);
      const LayerAnalysis a = analyze_layer(file.cubes[k], file.topics, file.baseline_seeds[k], solver);
      const double got[] = {a.total, a.pos_energy, a.ctx_energy, a.resid_energy, a.pos_share, a.ctx_share,
                            a.resid_share, a.sigma_m, a.stable_rank, a.relative_norm, a.e10, a.incoherence_max,
                            a.incoherence_mean, a.random_max, a.random_mean, a.topic_within, a.topic_between};
      for (size_t i = 0; i < std::size(scalars); ++i) {
        INFO("layer " << k << " " << scalars[i]);
        CHECK(got[i] == doctest::Approx(ref.at(scalars[i]).as_number()).epsilon(1e-9));
      }
      CHECK(a.rank90 == ref.at("rank90").as_integer());
      const std::vector<json::Value>& pairs = ref.at("topic_pairs").items();
      REQUIRE(pairs.size() == a.topic_pairs.size());  // 3 × 3
      for (size_t i = 0; i < pairs.size(); ++i) CHECK(a.topic_pairs[i] == doctest::Approx(pairs[i].as_number()).epsilon(1e-9));
      CHECK(a.topics == ref.at("topics").as_integer());
      CHECK(a.anova_error < 1e-12);
      const std::vector<json::Value>& sv = ref.at("singular_values").items();
      REQUIRE(sv.size() == a.singular.size());
      for (size_t i = 0; i < sv.size(); ++i) CHECK(std::fabs(a.singular[i] - sv[i].as_number()) <= 1e-9 * a.singular[0]);
      const std::vector<json::Value>& gram = ref.at("gram").items();
      REQUIRE(gram.size() == a.gram.size());
      double worst = 0;
      for (size_t i = 0; i < gram.size(); ++i) worst = std::max(worst, std::fabs(a.gram[i] - gram[i].as_number()));
      CHECK(worst < 1e-12);
    }
  // The planted layer is what it should be (so the fixture tests something): rank 2 + a weaker
  // harmonic, smooth, incoherent, topics apart.
  const LayerAnalysis planted = analyze_layer(file.cubes[0], file.topics, file.baseline_seeds[0], default_eigen_solver());
  CHECK(planted.rank90 == 2);
  CHECK(planted.e10 > 0.99);
  CHECK(planted.incoherence_max < 0.1);
  CHECK(planted.topic_within > 0.5);
  CHECK(planted.topic_between < 0);
  REQUIRE(planted.topic_pairs.size() == 9);
  CHECK(planted.topic_pairs[1] == planted.topic_pairs[3]);  // symmetric
  CHECK(planted.topic_pairs[4] > 0.5);                      // a topic with itself
  CHECK(planted.topic_pairs[5] < 0);                        // two different topics
}

// ---- the corpus's topics ----

TEST_CASE("the Bible's first line in each split of the embedded corpus") {
  const std::string dir = data::embedded_corpus_dir();
  // Checked by hand (data/assets/README: the six novels, then the Bible): train starts the Bible at
  // "Genesis 1"; valid and test in the middle of a chapter of Acts and of Philippians.
  CHECK(bible_start_line(data::read_lines(data::find_split_file(dir, "train"))) == 9362);
  const std::vector<std::string> valid = data::read_lines(data::find_split_file(dir, "valid"));
  CHECK(bible_start_line(valid) == 498);
  CHECK(valid[498].rfind("And when he would not be persuaded", 0) == 0);
  const std::vector<std::string> test = data::read_lines(data::find_split_file(dir, "test"));
  CHECK(bible_start_line(test) == 434);
  CHECK(test[434].rfind("Rejoice in the Lord alway", 0) == 0);
  CHECK(bible_start_line({"CHAPTER 1", "\" Hello , \" said Emma .", "She left ."}) == -1);
  CHECK(bible_start_line({"\" Yes . \"", "She left .", "And thou art come unto me .", "Acts 2"}) == 2);
}

TEST_CASE("sources.tsv: each novel and the Bible per split; a bad record is one clear error; no record falls back") {
  const std::string dir = data::embedded_corpus_dir();
  const std::string record = join_path(dir, "sources.tsv");
  const std::vector<std::string> valid = data::read_lines(data::find_split_file(dir, "valid"));
  const std::vector<data::SourceBlock> blocks = data::read_source_blocks(record, "valid", static_cast<int64_t>(valid.size()));
  REQUIRE(blocks.size() == 7);
  CHECK(blocks[0].source == "Sense and Sensibility (1811)");
  CHECK(blocks[0].first_line == 0);
  CHECK(blocks[5].source == "Persuasion (1817)");
  CHECK(blocks[6].source == "King James Bible");
  CHECK(blocks[6].first_line == bible_start_line(valid));  // the record and the text rule agree
  for (const char* split : {"train", "test"}) {
    const std::vector<std::string> lines = data::read_lines(data::find_split_file(dir, split));
    const std::vector<data::SourceBlock> b = data::read_source_blocks(record, split, static_cast<int64_t>(lines.size()));
    REQUIRE(b.size() == 7);
    CHECK(b[6].first_line == bible_start_line(lines));
  }
  CHECK_THROWS_WITH_AS(data::read_source_blocks(record, "valid", 100),
                       doctest::Contains("sources.tsv:16: the valid blocks cover 2334 lines, but the split has 100"), Error);

  // Topic of a token: the block holding it (tokens counted with an <eos> per line).
  data::CorpusSplit split;
  split.name = "valid";
  split.path = data::find_split_file(dir, "valid");
  const SplitTopics topics = split_topics(split, data::TokenMode::word);
  REQUIRE(topics.names.size() == 7);
  CHECK(topics.how.find("sources.tsv") != std::string::npos);
  CHECK(topics.starts[0] == 0);
  CHECK(topics.topic_of(0) == 0);
  CHECK(topics.topic_of(topics.starts[3]) == 3);
  CHECK(topics.topic_of(topics.starts[3] - 1) == 2);
  CHECK(topics.topic_of(topics.starts[6] + 1000) == 6);
  int64_t first_bible = 0;  // the Bible's first token, counted here from the text
  for (int64_t k = 0; k < blocks[6].first_line; ++k)
    first_bible += static_cast<int64_t>(data::tokenize_line(valid[k], data::TokenMode::word).size()) + 1;
  CHECK(topics.starts[6] == first_bible);

  // Bad records.
  const std::string bad = temp_dir("sources");
  make_directories(bad);
  auto write = [&](const std::string& text) {
    write_text_atomic(join_path(bad, "sources.tsv"), text);
    return join_path(bad, "sources.tsv");
  };
  const auto error_of = [&](const std::string& text, int64_t split_lines) {
    try {
      data::read_source_blocks(write(text), "valid", split_lines);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error_of("valid\t1\t3\tA\nvalid\t5\t2\tB\n", 6).find("sources.tsv:2: the valid block of 'B' should start at line 4") !=
        std::string::npos);
  CHECK(error_of("valid 1 3 A\n", 3).find("sources.tsv:1: expected 'split<TAB>first line<TAB>lines<TAB>source'") !=
        std::string::npos);
  CHECK(error_of("valid\tone\t3\tA\n", 3).find("sources.tsv:1: the first line must be a whole number of digits, got 'one'") !=
        std::string::npos);
  CHECK(error_of("valid\t1\t3\tA\n\nvalid\t4\t-2\tB\n", 3).find("sources.tsv:3: the line count must be a whole number") !=
        std::string::npos);
  CHECK(error_of("valid\t1\t3\tA\t\n", 3).find("sources.tsv:1: expected") != std::string::npos);  // a 5th field
  CHECK(error_of("vaild\t1\t3\tA\n", 3).find("sources.tsv:1: the split must be train, valid or test, got 'vaild'") !=
        std::string::npos);
  CHECK(error_of("valid\t1\t3\t\n", 3).find("sources.tsv:1: the source title is empty") != std::string::npos);
  CHECK(error_of("valid\t1\t1\tA\nvalid\t2\t1\tA\n", 2).find("sources.tsv:2: the valid split already has a block of 'A'") !=
        std::string::npos);
  CHECK(error_of("valid\t1\t99999999999999999999\tA\n", 3).find("sources.tsv:1: the line count '99999999999999999999' is too large") !=
        std::string::npos);
  CHECK(error_of("valid\t1\t1\tA\nvalid\t2\t9223372036854775807\tB\n", 3)
            .find("sources.tsv:2: the valid block of 'B' ends beyond any file") != std::string::npos);
  CHECK(error_of("# c\r\nvalid\t1\t2\tA\r\nvalid\t3\t2\tB\r\n", 5).find("sources.tsv:3: the valid blocks cover 4 lines, but the split has 5") !=
        std::string::npos);
  // Every malformed record gives one error line naming the file and line.
  for (const std::string text : {"valid\t0\t3\tA\n", "valid\t1\t0\tA\n", "train\t1\t3\n", "valid\t+1\t3\tA\n"}) {
    const std::string e = error_of(text, 3);
    INFO(e);
    CHECK(e.rfind(join_path(bad, "sources.tsv") + ":1: ", 0) == 0);
    CHECK(e.find('\n') == std::string::npos);
  }
  // A CRLF record reads as the LF one; its titles carry no '\r'.
  const std::vector<data::SourceBlock> crlf = data::read_source_blocks(write("valid\t1\t2\tA\r\nvalid\t3\t1\tB\r\n"), "valid", 3);
  REQUIRE(crlf.size() == 2);
  CHECK(crlf[1].source == "B");
  CHECK(crlf[1].first_line == 2);
  CHECK(crlf[1].record_line == 2);
  CHECK(data::read_source_blocks(write("# comment\ntrain\t1\t3\tA\n"), "valid", 3).empty());  // nothing for valid

  // A corpus without the record (built before it): the Austen/Bible text rule, as before.
  std::filesystem::copy_file(split.path, join_path(bad, "valid.txt.gz"));
  std::filesystem::remove(join_path(bad, "sources.tsv"));
  data::CorpusSplit old = split;
  old.path = join_path(bad, "valid.txt.gz");
  const SplitTopics fallback = split_topics(old, data::TokenMode::word);
  CHECK(fallback.names == std::vector<std::string>{"Austen", "Bible"});
  CHECK(fallback.starts == std::vector<int64_t>{0, first_bible});
  CHECK(fallback.how.find("found from the text") != std::string::npos);
}

// ---- the command ----

namespace {

const char* kTiny =
    " --set task=pi --set seq_len=8 --set vocab=6 --set layers=2 --set d_model=16 --set heads=2 --set d_ff=32"
    " --set batch=16 --set steps=40 --set warmup=5 --set lr=0.01 --set eval_every=40 --set valid_size=16";

std::string trained(const std::string& pe) {
  const std::string dir = temp_dir("run_" + pe);
  const urpe::test::CliResult r = run_urpe(std::string("train") + kTiny + " --set pe=" + pe + " --out " + dir + " --quiet");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  return dir;
}

}  // namespace

TEST_CASE("urpe analyze --run and --compare on tiny trained runs") {
  const std::string rpe = trained("rpe"), urpe_run = trained("urpe");
  const std::string out = temp_dir("out_rpe");
  const urpe::test::CliResult r = run_urpe("analyze --run " + rpe + " --contexts 40 --out " + out);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("| layer | pos % |") != std::string::npos);
  CHECK(r.output.find(have_lapack() ? "Eigensolver: LAPACK dsyev." : "Eigensolver: Jacobi (this build has no LAPACK).") !=
        std::string::npos);
  CHECK(path_exists(join_path(out, "analysis.json")));
  CHECK(path_exists(join_path(out, "analysis.md")));
  const std::string stem = std::filesystem::path(rpe).filename().string();
  for (const char* plot : {"singular_values_", "gram_", "shares_", "spiral12_", "spiral34_", "gram_pos_ctx_"}) {
    const std::string path = join_path(join_path(out, "plots"), plot + stem + ".png");
    INFO(path);
    CHECK(path_exists(path));
  }
  const std::vector<RunAnalysis> back = analysis_from_json(json::read_file(join_path(out, "analysis.json")), "x");
  REQUIRE(back.size() == 1);
  CHECK(back[0].pe == "rpe");
  REQUIRE(back[0].layers.size() == 3);  // the input and two blocks
  for (const LayerAnalysis& a : back[0].layers) {
    CHECK(a.contexts == 40);
    CHECK(a.positions == 8);
    CHECK(a.anova_error < 1e-9);
    CHECK(a.pos_sum_error < 1e-9);
    CHECK(std::isnan(a.e10));  // T = 8 ≤ 10: every frequency is low, so E₁₀ is not reported
  }
  // RPE has no absolute position: the input to block 1 is the token embedding alone, so pos_t is
  // only the sampling noise of the token draws; no topics for a synthetic task.
  CHECK(back[0].layers[0].pos_share < 0.5);
  CHECK(std::isnan(back[0].layers[0].topic_within));

  // decomposition.safetensors: μ, pos and ctx of every layer, pos summing to 0 over t.
  {
    const TensorFile dec = load_safetensors(join_path(out, "decomposition.safetensors"));
    CHECK(dec.meta("layers") == "0,1,2");
    for (int l = 0; l < 3; ++l) {
      const std::string name = "layer" + std::to_string(l);
      CHECK(dec.at(name + ".mu").shape() == Shape{16});
      CHECK(dec.at(name + ".pos").shape() == Shape{8, 16});
      CHECK(dec.at(name + ".ctx").shape() == Shape{40, 16});
      const std::vector<float> pos = dec.at(name + ".pos").to_vector_f32();
      double sum = 0, scale = 0;
      for (int64_t i = 0; i < 16; ++i) {
        double s = 0;
        for (int64_t t = 0; t < 8; ++t) s += pos[t * 16 + i];
        sum = std::max(sum, std::fabs(s));
        for (int64_t t = 0; t < 8; ++t) scale = std::max(scale, std::fabs(static_cast<double>(pos[t * 16 + i])));
      }
      CHECK(sum < 1e-5 * scale);
    }
  }
  // --layers and --save-hidden: the saved states are exactly what was analysed (the analysis of the
  // file gives analysis.json's numbers), and the decomposition's pos is the mean over contexts.
  {
    const std::string sub = temp_dir("layers");
    const urpe::test::CliResult s = run_urpe("analyze --run " + rpe + " --contexts 40 --layers 0,2 --save-hidden --out " + sub);
    REQUIRE_MESSAGE(s.code == 0, s.output);
    const std::vector<RunAnalysis> picked = analysis_from_json(json::read_file(join_path(sub, "analysis.json")), "x");
    REQUIRE(picked[0].layers.size() == 2);
    CHECK(picked[0].layers[0].layer == 0);
    CHECK(picked[0].layers[1].layer == 2);
    CHECK(picked[0].layers[1].stable_rank == doctest::Approx(back[0].layers[2].stable_rank).epsilon(1e-12));
    const HiddenStateFile hidden = load_hidden_states(join_path(sub, "hidden.safetensors"));
    REQUIRE(hidden.layers == std::vector<int64_t>{0, 2});
    CHECK(hidden.baseline_seeds == std::vector<uint64_t>{1, 2001});
    CHECK(hidden.topics.empty());
    for (size_t k = 0; k < 2; ++k) {
      const LayerAnalysis again = analyze_layer(hidden.cubes[k], {}, hidden.baseline_seeds[k], default_eigen_solver());
      CHECK(again.relative_norm == doctest::Approx(picked[0].layers[k].relative_norm).epsilon(1e-12));
      CHECK(again.random_max == doctest::Approx(picked[0].layers[k].random_max).epsilon(1e-12));
      CHECK(again.pos_share == doctest::Approx(picked[0].layers[k].pos_share).epsilon(1e-12));
    }
    const TensorFile dec = load_safetensors(join_path(sub, "decomposition.safetensors"));
    CHECK(!dec.contains("layer1.pos"));
    const std::vector<float> pos = dec.at("layer2.pos").to_vector_f32(), mu = dec.at("layer2.mu").to_vector_f32();
    const HiddenCube& h = hidden.cubes[1];
    for (int64_t t = 0; t < 8; t += 3)
      for (int64_t i = 0; i < 16; i += 5) {
        double mean = 0;
        for (int64_t c = 0; c < 40; ++c) mean += h.h[(c * 8 + t) * 16 + i] / 40.0;
        CHECK(pos[t * 16 + i] == doctest::Approx(mean - mu[i]).epsilon(1e-5).scale(1.0));
      }
  }

  // Not over an existing analysis without --overwrite.
  const urpe::test::CliResult again = run_urpe("analyze --run " + rpe + " --contexts 40 --out " + out);
  CHECK(again.code == 1);
  CHECK(again.output.find("already holds an analysis") != std::string::npos);
  CHECK(run_urpe("analyze --run " + rpe + " --contexts 40 --out " + out + " --overwrite").code == 0);

  // --compare: a saved analysis next to a run analysed on the fly.
  const std::string cmp = temp_dir("compare");
  const urpe::test::CliResult c = run_urpe("analyze --compare " + out + " " + urpe_run + " --contexts 40 --out " + cmp);
  REQUIRE_MESSAGE(c.code == 0, c.output);
  const json::Value doc = json::read_file(join_path(cmp, "analysis.json"));
  REQUIRE(doc.at("runs").size() == 2);
  CHECK(doc.at("runs")[0].at("pe").as_string() == "rpe");
  CHECK(doc.at("runs")[1].at("pe").as_string() == "urpe");
  for (const char* plot : {"compare_relative_norm.png", "compare_pos_share.png", "compare_stable_rank.png"})
    CHECK(path_exists(join_path(join_path(cmp, "plots"), plot)));
  CHECK(!path_exists(join_path(join_path(cmp, "plots"), "compare_e10.png")));  // T = 8: no E₁₀ to draw
  // The attention split of the URPE run (analysed now): exact, and P ⊙ C with P = softmax(S + B)
  // is the model's own A; its pictures. The saved RPE analysis keeps its shares, not its pictures.
  {
    const std::vector<RunAnalysis> runs = analysis_from_json(doc, "x");
    REQUIRE(runs[1].attention.size() == 2);  // blocks 1 and 2 read layers 0 and 1
    for (const AttentionSplit& b : runs[1].attention) {
      CHECK(b.identity_error < 1e-9);
      REQUIRE(b.heads == 2);
      for (const auto& shares : b.shares) CHECK(shares[0] + shares[1] + shares[2] + shares[3] == doctest::Approx(1.0));
    }
    CHECK(doc.at("runs")[1].at("attention")[0].at("attention_error").as_number() < 1e-5);
    CHECK(!doc.at("runs")[0].at("attention")[0].contains("attention_error"));  // RPE: no C
    CHECK(c.output.find("| block | head | pos·pos |") != std::string::npos);
    const std::string ustem = std::filesystem::path(urpe_run).filename().string();
    for (const std::string& plot : {"attention_terms_" + ustem + "_block1.png", "attention_terms_" + ustem + "_block2.png",
                                   "urpe_heads_" + ustem + "_block2.png", "urpe_rowsums_" + ustem + ".png"}) {
      INFO(plot);
      CHECK(path_exists(join_path(join_path(cmp, "plots"), plot)));
    }
    CHECK(!path_exists(join_path(join_path(cmp, "plots"), "attention_terms_" + stem + "_block1.png")));
  }
  // Tensors only for the run analysed now (the saved analysis has none), named after the run.
  CHECK(path_exists(join_path(cmp, "decomposition_" + std::filesystem::path(urpe_run).filename().string() + ".safetensors")));
  CHECK(!path_exists(join_path(cmp, "decomposition_" + stem + ".safetensors")));
  CHECK(!path_exists(join_path(cmp, "decomposition.safetensors")));
  // The same run twice: the repeat is numbered, so plots and legends stay apart.
  const std::string twice = temp_dir("twice");
  REQUIRE(run_urpe("analyze --compare " + out + " " + out + " --out " + twice).code == 0);
  const json::Value both = json::read_file(join_path(twice, "analysis.json"));
  REQUIRE(both.at("runs").size() == 2);
  CHECK(both.at("runs")[1].at("run").as_string() == both.at("runs")[0].at("run").as_string() + " (2)");
  // Jacobi gives the same numbers as LAPACK.
  const std::string jac = temp_dir("jacobi");
  REQUIRE(run_urpe("analyze --run " + rpe + " --contexts 40 --solver jacobi --out " + jac).code == 0);
  const std::vector<RunAnalysis> j = analysis_from_json(json::read_file(join_path(jac, "analysis.json")), "x");
  for (size_t l = 0; l < 3; ++l) {
    CHECK(j[0].layers[l].stable_rank == doctest::Approx(back[0].layers[l].stable_rank).epsilon(1e-6));
    CHECK(j[0].layers[l].relative_norm == doctest::Approx(back[0].layers[l].relative_norm).epsilon(1e-6));
  }
}

TEST_CASE("urpe analyze on a Transformer-XL run: corpus windows labelled Austen or Bible") {
  const std::string run = temp_dir("txl");
  const urpe::test::CliResult t = run_urpe(
      "train --preset txl-tiny --set steps=2 --set warmup=0 --set layers=1 --set d_model=16 --set heads=2"
      " --set d_head=8 --set d_inner=32 --set tgt_len=12 --set mem_len=8 --set batch=4 --set eval_every=2"
      " --set max_eval_tokens=64 --out " + run + " --quiet");
  REQUIRE_MESSAGE(t.code == 0, t.output);
  const std::string out = temp_dir("txl_out");
  const urpe::test::CliResult r = run_urpe("analyze --run " + run + " --contexts 64 --split test --save-hidden --out " + out);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const std::vector<RunAnalysis> back = analysis_from_json(json::read_file(join_path(out, "analysis.json")), "x");
  REQUIRE(back.size() == 1);
  CHECK(back[0].family == "txl");
  CHECK(back[0].data.find("test.txt.gz") != std::string::npos);
  // The corpus's sources.tsv: six novels and the Bible, a topic each.
  REQUIRE(back[0].topic_names.size() == 7);
  CHECK(back[0].topic_names[3] == "Emma (1815)");
  CHECK(back[0].topic_names[6] == "King James Bible");
  int64_t counted = 0, austen = 0;
  for (size_t k = 0; k < 7; ++k) counted += back[0].topic_counts[k];
  for (size_t k = 0; k < 6; ++k) austen += back[0].topic_counts[k];
  CHECK(counted == 64);
  CHECK(austen > 0);
  CHECK(back[0].topic_counts[6] > 0);
  CHECK(back[0].data.find("sources.tsv") != std::string::npos);
  // The saved states carry each context's topic, as analysis.json counts them.
  const HiddenStateFile hidden = load_hidden_states(join_path(out, "hidden.safetensors"));
  REQUIRE(hidden.topics.size() == 64);
  for (size_t k = 0; k < 7; ++k)
    CHECK(std::count(hidden.topics.begin(), hidden.topics.end(), static_cast<int>(k)) == back[0].topic_counts[k]);
  CHECK(load_safetensors(join_path(out, "hidden.safetensors")).meta("topic_names").find("|Emma (1815)|") != std::string::npos);
  CHECK(back[0].attention.empty());  // Transformer-XL: no attention split, and the report says why
  CHECK(r.output.find("Attention split: not for this run: Transformer-XL") != std::string::npos);
  REQUIRE(back[0].layers.size() == 2);
  for (const LayerAnalysis& a : back[0].layers) {
    CHECK(a.positions == 12);
    CHECK(a.anova_error < 1e-9);
    CHECK(std::isfinite(a.topic_within));
    CHECK(std::isfinite(a.topic_between));
    CHECK(std::isfinite(a.e10));  // T = 12 > 10
  }
  // --data random: uniform tokens, no topics; --layers picks layer 1 only.
  const std::string rnd = temp_dir("txl_random");
  const urpe::test::CliResult rr = run_urpe("analyze --run " + run + " --contexts 16 --data random --layers 1 --out " + rnd);
  REQUIRE_MESSAGE(rr.code == 0, rr.output);
  const std::vector<RunAnalysis> random = analysis_from_json(json::read_file(join_path(rnd, "analysis.json")), "x");
  REQUIRE(random[0].layers.size() == 1);
  CHECK(random[0].layers[0].layer == 1);
  CHECK(random[0].topic_names.empty());
  CHECK(random[0].data.find("i.i.d. uniformly") != std::string::npos);
  CHECK(std::isnan(random[0].layers[0].topic_within));
}

TEST_CASE("urpe analyze: one clear error for each bad input") {
  const std::string empty = temp_dir("empty");
  make_directories(empty);
  auto one_error = [](const urpe::test::CliResult& r, const std::string& expected) {
    INFO(r.output);
    CHECK(r.code == 1);
    CHECK(r.output.rfind("urpe: error: ", 0) == 0);
    CHECK(r.output.find(expected) != std::string::npos);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  };
  one_error(run_urpe("analyze --run " + empty + " --out " + empty + "/o"), "has no model.safetensors");
  one_error(run_urpe("analyze --run /nonexistent/run --out " + empty + "/o"), "'/nonexistent/run' does not exist");
  one_error(run_urpe("analyze --compare " + empty + " --out " + empty + "/o"),
            "holds no analysis.json, model.safetensors or runs/ folder");
  const std::string graph = temp_dir("graphormer");
  make_directories(graph);
  save_checkpoint(join_path(graph, "model.safetensors"), ParameterSet(), nullptr, TrainingProgress(),
                  resolve_config("graphormer-tiny", "", {}).to_text());
  one_error(run_urpe("analyze --run " + graph + " --out " + empty + "/o"),
            "is a Graphormer run, which is not supported: a molecule's atoms have no sequence positions");
  one_error(run_urpe("analyze --run " + graph + " --contexts 1 --out " + empty + "/o"),
            "option --contexts: expected an integer from 2 to 65536, got '1'");
  one_error(run_urpe("analyze --run " + graph), "--out DIR is required");
  one_error(run_urpe("analyze --run " + graph + " --compare " + graph + " --out x"), "either --run DIR or --compare");
  one_error(run_urpe("analyze --run " + graph + " extra --out x"), "unexpected argument 'extra'");
  one_error(run_urpe("analyze --run " + graph + " --solver svd --out x"), "--solver must be lapack or jacobi");
  one_error(run_urpe("analyze --run " + graph + " --data text --out x"), "--data must be split or random, got 'text'");
  one_error(run_urpe("analyze --run " + graph + " --layers 1,x --out x"), "--layers: expected layers like 0,2,4-6 (numbers from 0), got 'x'");
  one_error(run_urpe("analyze --run " + graph + " --layers 3-1 --out x"), "--layers: the range '3-1' runs backwards");
  one_error(run_urpe("analyze --run " + graph + " --layers 1,1 --out x"), "--layers: layer 1 is listed twice");
  one_error(run_urpe("analyze --run " + graph + " --layers 0, --out x"), "--layers: expected layers like 0,2,4-6, got '0,'");
  // A layer the model does not have.
  AnalyzeOptions deep;
  deep.layers = {0, 3};
  const AnalysisModel two = fresh_model("txl-tiny", {"layers=2"}, "urpe analyze", analyze_families());
  CHECK_THROWS_WITH_AS(analyze_run(two, deep), doctest::Contains("has 2 blocks, so its layers are 0..2 (0 = the input to block 1), not 3"), Error);
  // A sequence of one position has nothing to decompose.
  const AnalysisModel one = fresh_model("txl-tiny", {"tgt_len=1"}, "urpe analyze", analyze_families());
  CHECK_THROWS_WITH_AS(analyze_run(one, AnalyzeOptions{}), doctest::Contains("sequences of 1 position(s); the decomposition needs at least 2"), Error);
  CHECK(!path_exists(join_path(empty, "o")));
}
