// URPE in one screen (train/loop/urpe_one_screen.cpp, docs/one_screen.md): its op is the engine's
// op (forward and every gradient against ops/urpe_attention), its backward is the derivative of its
// forward (central differences), C ≡ 1 keeps every row sum at 1, and its model learns position
// identification at n = 32 to 100% on fresh sequences while the same model with C frozen (RPE)
// stays at chance, and at exactly 1/n on identical tokens.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <cmath>
#include <random>

#include "doctest/doctest.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/urpe_attention.h"
#include "train/loop/urpe_one_screen.h"

using namespace urpe;
namespace one = urpe::one_screen;

namespace {

struct OpCase {
  int n;
  std::vector<float> S, b, c, G;
};

OpCase random_case(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  OpCase k{n, std::vector<float>(n * n), std::vector<float>(2 * n - 1), std::vector<float>(2 * n - 1),
           std::vector<float>(n * n)};
  for (float& x : k.S) x = normal(rng);
  for (float& x : k.b) x = normal(rng);
  for (float& x : k.c) x = 1.0f + 0.5f * normal(rng);
  for (float& x : k.G) x = normal(rng);
  return k;
}

// L = Σ G ⊙ A, in double.
double weighted_sum(const OpCase& k, const std::vector<float>& S, const std::vector<float>& b,
                    const std::vector<float>& c) {
  std::vector<float> P(k.n * k.n), A(k.n * k.n);
  one::urpe_attention_forward(k.n, S.data(), b.data(), c.data(), P.data(), A.data());
  double sum = 0;
  for (int e = 0; e < k.n * k.n; ++e) sum += static_cast<double>(k.G[e]) * A[e];
  return sum;
}

}  // namespace

TEST_CASE("the one-screen op computes what the engine's urpe_attention computes, forward and backward") {
  const OpCase k = random_case(7, 11);
  const int n = k.n, T = 2 * n - 1;
  std::vector<float> P(n * n), A(n * n), dS(n * n), db(T, 0.0f), dc(T, 0.0f);
  one::urpe_attention_forward(n, k.S.data(), k.b.data(), k.c.data(), P.data(), A.data());
  one::urpe_attention_backward(n, k.G.data(), P.data(), k.c.data(), dS.data(), db.data(), dc.data());

  Tensor scores = Tensor::from_vector(k.S, {1, 1, n, n});
  scores.set_requires_grad(true);
  UrpeAttentionParams params;
  params.bias_table = Tensor::from_vector(k.b, {1, T});
  params.c_table = Tensor::from_vector(k.c, {1, T});
  params.bias_table.set_requires_grad(true);
  params.c_table.set_requires_grad(true);
  params.bias_map = toeplitz_map(n, n);
  params.c_map = toeplitz_map(n, n);
  const Tensor engine = urpe_attention(scores, params);
  sum_all(mul(engine, Tensor::from_vector(k.G, {1, 1, n, n}))).backward();

  auto close = [](const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0;
    for (size_t e = 0; e < a.size(); ++e) worst = std::max(worst, std::fabs(static_cast<double>(a[e]) - b[e]));
    return worst;
  };
  CHECK(close(A, engine.to_vector_f32()) < 1e-6);
  CHECK(close(dS, scores.grad().to_vector_f32()) < 1e-5);
  CHECK(close(db, params.bias_table.grad().to_vector_f32()) < 1e-5);
  CHECK(close(dc, params.c_table.grad().to_vector_f32()) < 1e-5);
}

TEST_CASE("the one-screen backward is the derivative of its forward (central differences)") {
  const OpCase k = random_case(6, 12);
  const int n = k.n, T = 2 * n - 1;
  std::vector<float> P(n * n), A(n * n), dS(n * n), db(T, 0.0f), dc(T, 0.0f);
  one::urpe_attention_forward(n, k.S.data(), k.b.data(), k.c.data(), P.data(), A.data());
  one::urpe_attention_backward(n, k.G.data(), P.data(), k.c.data(), dS.data(), db.data(), dc.data());
  const float h = 1e-2f;
  auto numeric = [&](int which, int e) {  // ∂L/∂(S, b or c)[e]
    std::vector<float> S = k.S, b = k.b, c = k.c;
    std::vector<float>& x = which == 0 ? S : which == 1 ? b : c;
    x[e] += h;
    const double up = weighted_sum(k, S, b, c);
    x[e] -= 2 * h;
    return (up - weighted_sum(k, S, b, c)) / (2 * h);
  };
  for (int e = 0; e < n * n; ++e) CHECK(dS[e] == doctest::Approx(numeric(0, e)).epsilon(2e-3).scale(1.0));
  for (int e = 0; e < T; ++e) {
    CHECK(db[e] == doctest::Approx(numeric(1, e)).epsilon(2e-3).scale(1.0));
    CHECK(dc[e] == doctest::Approx(numeric(2, e)).epsilon(2e-3).scale(1.0));
  }
}

TEST_CASE("with C ≡ 1 every row of A sums to 1; with C ≠ 1 a row sums to Σ_j P·c") {
  OpCase k = random_case(9, 13);
  const int n = k.n;
  std::vector<float> P(n * n), A(n * n), ones(2 * n - 1, 1.0f);
  one::urpe_attention_forward(n, k.S.data(), k.b.data(), ones.data(), P.data(), A.data());
  for (int i = 0; i < n; ++i) {
    double sum = 0;
    for (int j = 0; j < n; ++j) sum += A[i * n + j];
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  }
  one::urpe_attention_forward(n, k.S.data(), k.b.data(), k.c.data(), P.data(), A.data());
  double farthest = 0;
  for (int i = 0; i < n; ++i) {
    double sum = 0, expected = 0;
    for (int j = 0; j < n; ++j) sum += A[i * n + j], expected += static_cast<double>(P[i * n + j]) * k.c[j - i + n - 1];
    CHECK(sum == doctest::Approx(expected).epsilon(1e-6));
    farthest = std::max(farthest, std::fabs(sum - 1.0));
  }
  CHECK(farthest > 0.1);
}

TEST_CASE("the one-screen model learns position identification with URPE, and stays at chance as RPE") {
  const auto start = std::chrono::steady_clock::now();
  const one::Result urpe = one::train_position_identification(32, 100, true, 400, 1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const one::Result rpe = one::train_position_identification(32, 100, false, 400, 1);
  MESSAGE("URPE: loss " << urpe.losses.front() << " -> " << urpe.losses.back() << ", accuracy " << urpe.accuracy
                        << ", identical tokens " << urpe.identical_accuracy << " (" << seconds << " s); RPE: loss "
                        << rpe.losses.back() << ", accuracy " << rpe.accuracy << ", identical tokens "
                        << rpe.identical_accuracy);
  REQUIRE(urpe.losses.size() == 400);
  CHECK(urpe.accuracy == 1.0);             // every position of 256 fresh sequences
  CHECK(urpe.identical_accuracy > 0.99);   // position survives identical tokens
  CHECK(urpe.losses.back() < 0.05);
  CHECK(rpe.accuracy < 2.0 / 32);          // chance is 1/32
  CHECK(rpe.identical_accuracy == doctest::Approx(1.0 / 32));  // Theorem 2: one output for all 32
  CHECK(std::fabs(rpe.losses.back() - std::log(32.0)) < 0.01);  // pinned at ln 32
  double rpe_off = 0, urpe_spread = 0;
  for (const auto& head : rpe.row_sums)
    for (double s : head) rpe_off = std::max(rpe_off, std::fabs(s - 1.0));
  for (const auto& head : urpe.row_sums)
    urpe_spread = std::max(urpe_spread, *std::max_element(head.begin(), head.end()) -
                                            *std::min_element(head.begin(), head.end()));
  CHECK(rpe_off < 1e-5);
  CHECK(urpe_spread > 0.5);
}

TEST_CASE("docs/one_screen.md shows the whole file, in order, between its prose") {
  // The page's ```cpp blocks, joined, must be train/loop/urpe_one_screen.cpp line for line (blank
  // lines between two blocks are the file's, left out of the page).
  auto read = [](const std::string& path) {
    std::ifstream in(std::string(URPE_SOURCE_DIR) + "/" + path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  const std::vector<std::string> page = read("docs/one_screen.md"), file = read("train/loop/urpe_one_screen.cpp");
  REQUIRE(!page.empty());
  REQUIRE(!file.empty());
  std::vector<std::string> shown;
  bool in_block = false;
  for (const std::string& line : page) {
    if (line == "```cpp") in_block = true;
    else if (in_block && line == "```") in_block = false;
    else if (in_block) shown.push_back(line);
  }
  std::vector<std::string> code;
  for (const std::string& line : file)
    if (!line.empty()) code.push_back(line);
  std::vector<std::string> shown_code;
  for (const std::string& line : shown)
    if (!line.empty()) shown_code.push_back(line);
  for (size_t k = 0; k < std::max(code.size(), shown_code.size()); ++k) {
    const std::string a = k < code.size() ? code[k] : "(end of the file)";
    const std::string b = k < shown_code.size() ? shown_code[k] : "(end of the page's code)";
    INFO("non-blank line " << k + 1 << " of the file against the page's");
    REQUIRE(a == b);
  }
}
