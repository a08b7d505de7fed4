// URPE in one screen (docs/one_screen.md): the op, its gradient, the row-sum probe and a model that
// learns position identification, on plain arrays with the standard library alone. The engine
// (ops/urpe_attention*, models/, train/) does the same at scale; this is the version to read.
#pragma once
#include <cstdint>
#include <vector>

namespace urpe::one_screen {

// A = softmax(S + B) ⊙ C for one head: S, P, A (n, n) row-major; b, c the Toeplitz tables (2n − 1),
// entry j − i + n − 1 for the pair (i, j).
void urpe_attention_forward(int n, const float* S, const float* b, const float* c, float* P, float* A);
// G = ∂L/∂A → dS (n, n); ∂b and ∂c are added into db and dc (2n − 1).
void urpe_attention_backward(int n, const float* G, const float* P, const float* c, float* dS, float* db, float* dc);

struct Result {
  std::vector<float> losses;                  // training loss per step
  double accuracy = 0;                        // on fresh random sequences
  double identical_accuracy = 0;              // on sequences of one repeated token
  std::vector<std::vector<double>> row_sums;  // A·1 per head: [h][i]
};

// Position identification (target at position i is i, tokens uniform over `vocab`) at length n,
// with one URPE attention layer and a ReLU readout. learn_c = false freezes C at ones: RPE.
Result train_position_identification(int n, int vocab, bool learn_c, int steps, uint32_t seed);

}  // namespace urpe::one_screen
