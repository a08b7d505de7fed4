// URPE in one screen: the op and its gradient on plain arrays, a model that learns position
// identification with it, and the row-sum probe. docs/one_screen.md reads it with you; by itself:
//   g++ -O2 -std=c++17 -I. -DURPE_ONE_SCREEN_MAIN train/loop/urpe_one_screen.cpp && ./a.out
#include "train/loop/urpe_one_screen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

namespace urpe::one_screen {

// ---- 1. forward: Z = S + B, P = softmax over j, A = P ⊙ C; B and C read entry j − i + n − 1 ----
void urpe_attention_forward(int n, const float* S, const float* b, const float* c, float* P, float* A) {
  for (int i = 0; i < n; ++i) {
    float top = -INFINITY;
    for (int j = 0; j < n; ++j) top = std::max(top, S[i * n + j] + b[j - i + n - 1]);
    double sum = 0;
    for (int j = 0; j < n; ++j) sum += P[i * n + j] = std::exp(S[i * n + j] + b[j - i + n - 1] - top);
    for (int j = 0; j < n; ++j) {
      P[i * n + j] = static_cast<float>(P[i * n + j] / sum);  // row i of P sums to 1 ...
      A[i * n + j] = P[i * n + j] * c[j - i + n - 1];        // ... row i of A to Σ_j P[i,j]·c[j − i]
    }
  }
}

// ---- 2. backward: dP = G ⊙ C; dZ = P ⊙ (dP − Σ_j P·dP), the softmax's Jacobian; dS = dZ;
//         ∂b[k] and ∂c[k] add up dZ and G ⊙ P over the diagonal k = j − i + n − 1 ----
void urpe_attention_backward(int n, const float* G, const float* P, const float* c, float* dS, float* db, float* dc) {
  for (int i = 0; i < n; ++i) {
    double r = 0;
    for (int j = 0; j < n; ++j) r += P[i * n + j] * G[i * n + j] * c[j - i + n - 1];
    for (int j = 0; j < n; ++j) {
      const int k = j - i + n - 1;
      dS[i * n + j] = static_cast<float>(P[i * n + j] * (G[i * n + j] * c[k] - r));
      db[k] += dS[i * n + j];
      dc[k] += G[i * n + j] * P[i * n + j];
    }
  }
}

// ---- 3. a model: embeddings E, one URPE layer of 4 heads with S = 0, logits = W·(A·V)_i + w0 ----
namespace {
constexpr int kHeads = 4, kHead = 8, kWidth = kHeads * kHead, kBatch = 32, kMaxN = 64;
using Vec = std::vector<float>;
struct Param { Vec w, g, m, v; };  // value, gradient, Adam's two moments
struct Model {
  int n;
  Param E, b, c, W, w0;  // E (vocab, kWidth); b, c (kHeads, 2n − 1); W (n, kWidth); w0 (n)
  Vec P, A;              // (kHeads, n, n): S = 0 (no queries, no keys), so one A serves every sequence
};

// Mean cross-entropy over `batch` sequences (the target at position i is i); counts the positions
// predicted right; with `learn`, adds every gradient, from the loss back to W, E, B and C.
double pass(Model& m, const std::vector<int>& tokens, int batch, bool learn, int& right) {
  const int n = m.n, T = 2 * n - 1;
  Vec S(n * n, 0.0f), dS(n * n), dA(m.A.size(), 0.0f);  // dS goes nowhere: nothing computes S here
  for (int h = 0; h < kHeads; ++h)
    urpe_attention_forward(n, S.data(), &m.b.w[h * T], &m.c.w[h * T], &m.P[h * n * n], &m.A[h * n * n]);
  double loss = 0;
  for (int s = 0; s < batch; ++s)
    for (int i = 0; i < n; ++i) {
      const int* x = &tokens[s * n];
      float f[kWidth] = {}, df[kWidth] = {}, z[kMaxN];  // f = row i of A·V per head: V = E[x]
      for (int k = 0; k < kWidth; ++k)
        for (int j = 0; j < n; ++j) f[k] += m.A[(k / kHead * n + i) * n + j] * m.E.w[x[j] * kWidth + k];
      for (int y = 0; y < n; ++y) {
        z[y] = m.w0.w[y];
        for (int k = 0; k < kWidth; ++k) z[y] += m.W.w[y * kWidth + k] * f[k];
      }
      const float top = *std::max_element(z, z + n);
      double total = 0;
      for (int y = 0; y < n; ++y) total += std::exp(z[y] - top);
      loss += std::log(total) + top - z[i];
      right += std::max_element(z, z + n) - z == i;
      if (!learn) continue;
      for (int y = 0; y < n; ++y) {  // ∂loss/∂z = softmax(z) − onehot(i)
        const float g = static_cast<float>((std::exp(z[y] - top) / total - (y == i)) / (batch * n));
        m.w0.g[y] += g;
        for (int k = 0; k < kWidth; ++k) m.W.g[y * kWidth + k] += g * f[k], df[k] += g * m.W.w[y * kWidth + k];
      }
      for (int k = 0; k < kWidth; ++k)
        for (int j = 0; j < n; ++j) {
          dA[(k / kHead * n + i) * n + j] += df[k] * m.E.w[x[j] * kWidth + k];
          m.E.g[x[j] * kWidth + k] += m.A[(k / kHead * n + i) * n + j] * df[k];
        }
    }
  if (learn)
    for (int h = 0; h < kHeads; ++h)
      urpe_attention_backward(n, &dA[h * n * n], &m.P[h * n * n], &m.c.w[h * T], dS.data(), &m.b.g[h * T], &m.c.g[h * T]);
  return loss / (batch * n);
}

void adam(Param& p, int t, float lr = 1e-2f) {
  for (size_t k = 0; k < p.w.size(); ++k) {
    p.m[k] = 0.9f * p.m[k] + 0.1f * p.g[k];
    p.v[k] = 0.999f * p.v[k] + 0.001f * p.g[k] * p.g[k];
    p.w[k] -= lr * p.m[k] / (1 - std::pow(0.9f, t)) / (std::sqrt(p.v[k] / (1 - std::pow(0.999f, t))) + 1e-8f);
    p.g[k] = 0.0f;
  }
}
}  // namespace

// ---- 4. train, then probe: fresh random sequences, identical tokens, and A·1 per head ----
Result train_position_identification(int n, int vocab, bool learn_c, int steps, uint32_t seed) {
  if (n < 2 || n > kMaxN || vocab < 1) throw std::invalid_argument("one screen: 2 <= n <= 64 and vocab >= 1");
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto param = [&](int size, float fill, float scale) {
    Param p{Vec(size, fill), Vec(size, 0.0f), Vec(size, 0.0f), Vec(size, 0.0f)};
    for (float& x : p.w) x += scale * normal(rng);
    return p;
  };
  const int T = 2 * n - 1;  // C starts as all ones: the model starts as its RPE twin
  Model m{n, param(vocab * kWidth, 0, 1), param(kHeads * T, 0, 0), param(kHeads * T, 1, 0),
          param(n * kWidth, 0, 0.2f), param(n, 0, 0), Vec(kHeads * n * n), Vec(kHeads * n * n)};
  std::uniform_int_distribution<int> token(0, vocab - 1);
  std::vector<int> tokens(kBatch * n), fresh(256 * n), same(vocab * n);
  Result r;
  int right = 0;
  for (int t = 1; t <= steps; ++t) {
    for (int& x : tokens) x = token(rng);
    r.losses.push_back(static_cast<float>(pass(m, tokens, kBatch, true, right)));
    for (Param* p : {&m.E, &m.b, &m.W, &m.w0}) adam(*p, t);
    if (learn_c) adam(m.c, t);  // RPE: C stays all ones
  }
  auto accuracy = [&](const std::vector<int>& sequences) {
    right = 0;
    pass(m, sequences, static_cast<int>(sequences.size()) / n, false, right);
    return right / static_cast<double>(sequences.size());
  };
  for (int& x : fresh) x = token(rng);
  for (int k = 0; k < vocab * n; ++k) same[k] = k / n;  // sequence v is the token v, n times
  r.accuracy = accuracy(fresh);
  r.identical_accuracy = accuracy(same);
  r.row_sums.assign(kHeads, std::vector<double>(n, 0.0));
  for (int h = 0; h < kHeads; ++h)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) r.row_sums[h][i] += m.A[(h * n + i) * n + j];
  return r;
}

}  // namespace urpe::one_screen

#ifdef URPE_ONE_SCREEN_MAIN
#include <chrono>
int main() {  // position identification at n = 32, tokens drawn from 100 values, 400 steps of 32 sequences
  for (bool learn_c : {false, true}) {
    const auto start = std::chrono::steady_clock::now();
    const urpe::one_screen::Result r = urpe::one_screen::train_position_identification(32, 100, learn_c, 400, 1);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s loss %.3f -> %.3f  accuracy %6.2f%%  on identical tokens %6.2f%%  A·1 of head 0: %.3f to %.3f  (%.1f s)\n",
                learn_c ? "URPE:" : "RPE: ", r.losses.front(), r.losses.back(), 100 * r.accuracy,
                100 * r.identical_accuracy, r.row_sums[0].front(), r.row_sums[0].back(), seconds);
  }
}
#endif
