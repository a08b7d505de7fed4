// Top-1 accuracy counts of a batch of logits, shared by the synthetic tasks' and the masked LM's
// training metric: one definition, so the two report "accuracy" the same way.
#pragma once
#include <cstdint>
#include <vector>

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

inline Hits hits_of(const Tensor& logits, const Tensor& targets, int32_t ignore) {
  const std::vector<float> l = logits.to_vector_f32();
  const std::vector<int32_t> t = targets.to_vector_i32();
  const int64_t classes = logits.size(-1);
  Hits hits;
  for (size_t row = 0; row < t.size(); ++row) {
    if (t[row] == ignore) continue;
    const float* p = l.data() + row * classes;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (p[c] > p[best]) best = c;
    hits.correct += best == t[row];
    ++hits.scored;
  }
  return hits;
}

}  // namespace urpe
