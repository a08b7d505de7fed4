// Ordered language-model batching, Transformer-XL's LMOrderedIterator
// (docs/transformer_xl.md#data-and-batching).
//
// A stream of N token ids is cut into B contiguous columns of n_step = N / B tokens (the N mod B
// trailing tokens are dropped) and laid out time-major, rows[t][b] = stream[b·n_step + t]. Segment
// k starts at row i = k·tgt_len and has L = min(tgt_len, n_step − 1 − i) rows:
//   data   = rows[i     : i + L]      i32 [L, B]
//   target = rows[i + 1 : i + 1 + L]  i32 [L, B]   (the next token of the same column)
// so there are ceil((n_step − 1) / tgt_len) segments, the last one possibly shorter. Over one pass
// every token of every column is predicted exactly once except each column's first token (and the
// dropped tail): (n_step − 1)·B predictions. Consecutive segments continue each column where the
// previous one stopped, which is what lets Transformer-XL carry its memory across segments.
// Deterministic: no shuffling, the same segments every epoch.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace urpe::data {

struct LMSegment {
  Tensor data;         // i32 [L, B]
  Tensor target;       // i32 [L, B]
  int64_t index = 0;   // k
  int64_t start = 0;   // i = k·tgt_len: the row of data's first token
  int64_t length = 0;  // L
};

class LMOrderedBatches {
 public:
  // Throws urpe::Error for batch_size < 1, tgt_len < 1, or a stream too short to give each
  // column two tokens (N < 2·B).
  LMOrderedBatches(const std::vector<int32_t>& stream, int64_t batch_size, int64_t tgt_len);

  int64_t batch_size() const { return batch_size_; }
  int64_t tgt_len() const { return tgt_len_; }
  int64_t n_step() const { return n_step_; }                     // rows: N / B
  int64_t num_segments() const { return (n_step_ - 2) / tgt_len_ + 1; }
  int64_t num_predicted() const { return (n_step_ - 1) * batch_size_; }
  int64_t num_dropped() const { return num_dropped_; }           // N mod B
  int32_t at(int64_t row, int64_t column) const;                 // rows[row][column]

  // Segment k ∈ [0, num_segments()), its tensors on `device`.
  LMSegment segment(int64_t k, const Device& device = {}) const;

 private:
  int64_t batch_size_, tgt_len_, n_step_, num_dropped_;
  std::vector<int32_t> rows_;  // [n_step, B], time-major
};

}  // namespace urpe::data
