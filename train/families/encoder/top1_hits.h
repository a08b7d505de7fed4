// Top-1 accuracy counts of a batch of logits, shared by the synthetic tasks' and the masked LM's
// training metric: one definition, so the two report "accuracy" the same way.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/reduce.h"
#include "tensor/tensor.h"

namespace urpe {

// Scored rows whose argmax equals the target, and scored rows (logits (M, V), targets (M,); a
// target equal to `ignore` is not scored: official PI's position 0, the masked LM's unmasked tokens).
struct Hits {
  int64_t correct = 0, scored = 0;
  Hits& operator+=(const Hits& other) {
    correct += other.correct;
    scored += other.scored;
    return *this;
  }
  double fraction() const { return scored == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(scored); }
};

// The argmax runs where the logits are (ops/reduce.h argmax_last): only one index per row reaches
// the host, not the rows themselves (on a GPU, copying the masked LM's logits to the host took
// about 370 ms a micro-batch, more than half of the paper preset's step; bench/results/gpu_h200_2026-11-26.md).
// `best`: each row's top class, i32 (M,), as argmax_last gives it or linear_cross_entropy's argmax
// (position identification, whose logits are never whole: ops/linear_cross_entropy.h).
inline Hits hits_of_best(const Tensor& best_rows, const Tensor& targets, int32_t ignore) {
  const std::vector<int32_t> best = best_rows.to_vector_i32();
  const std::vector<int32_t> t = targets.to_vector_i32();
  Hits hits;
  for (size_t row = 0; row < t.size(); ++row) {
    if (t[row] == ignore) continue;
    hits.correct += best[row] == t[row];
    ++hits.scored;
  }
  return hits;
}

inline Hits hits_of(const Tensor& logits, const Tensor& targets, int32_t ignore) {
  return hits_of_best(argmax_last(logits), targets, ignore);
}

}  // namespace urpe
