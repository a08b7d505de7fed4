// The stream is transposed once into time-major rows; each segment is then two contiguous row
// ranges copied into fresh [L, B] tensors (and moved to the device when one is asked for).
#include "data/lm_batches.h"

#include <algorithm>

#include "tensor/error.h"

namespace urpe::data {

LMOrderedBatches::LMOrderedBatches(const std::vector<int32_t>& stream, int64_t batch_size,
                                   int64_t tgt_len)
    : batch_size_(batch_size), tgt_len_(tgt_len) {
  URPE_CHECK(batch_size >= 1, "LM batches: batch size must be at least 1, got " << batch_size);
  URPE_CHECK(tgt_len >= 1, "LM batches: tgt_len must be at least 1, got " << tgt_len);
  const int64_t n = static_cast<int64_t>(stream.size());
  n_step_ = n / batch_size;
  num_dropped_ = n - n_step_ * batch_size;
  URPE_CHECK(n_step_ >= 2, "LM batches: a stream of " << n << " tokens is too short for batch size "
                                                      << batch_size << " (each of the "
                                                      << batch_size << " columns needs at least "
                                                      << "2 tokens, so at least " << 2 * batch_size
                                                      << " tokens)");
  rows_.resize(static_cast<size_t>(n_step_ * batch_size));
  for (int64_t b = 0; b < batch_size; ++b) {
    const int32_t* column = stream.data() + b * n_step_;
    for (int64_t t = 0; t < n_step_; ++t) rows_[t * batch_size + b] = column[t];
  }
}

int32_t LMOrderedBatches::at(int64_t row, int64_t column) const {
  URPE_CHECK(row >= 0 && row < n_step_ && column >= 0 && column < batch_size_,
             "LM batches: position (" << row << ", " << column << ") outside (" << n_step_
                                      << ", " << batch_size_ << ")");
  return rows_[row * batch_size_ + column];
}

LMSegment LMOrderedBatches::segment(int64_t k, const Device& device) const {
  URPE_CHECK(k >= 0 && k < num_segments(), "LM batches: segment " << k << " out of range [0, "
                                                                   << num_segments() << ")");
  LMSegment s;
  s.index = k;
  s.start = k * tgt_len_;
  s.length = std::min(tgt_len_, n_step_ - 1 - s.start);
  const auto first = rows_.begin() + s.start * batch_size_;
  const auto count = s.length * batch_size_;
  const Shape shape = {s.length, batch_size_};
  s.data = Tensor::from_vector(std::vector<int32_t>(first, first + count), shape).to(device);
  s.target = Tensor::from_vector(
      std::vector<int32_t>(first + batch_size_, first + batch_size_ + count), shape).to(device);
  return s;
}

}  // namespace urpe::data
