// Gradient accumulation (`accum_steps` = A): one optimizer step over a batch too large for memory,
// computed as A micro-batches whose gradients add up to the gradient of the whole batch.
//
// Each micro-batch m's loss L_m is a mean over w_m targets (tokens, scored positions, molecules).
// The batch's loss is the target-weighted mean L = Σ_m w_m·L_m / W, W = Σ_m w_m, so
//   ∇L = (1/W)·Σ_m w_m·∇L_m:
// backward of micro-batch m is seeded with w_m (its gradients add onto the previous ones), and the
// sum is divided by W once at the end. This is the weighting base/dist/data_parallel.h applies
// across ranks; the two compose: a rank's accumulated gradient is the mean over its W targets, and
// dist::average_gradients then weighs the ranks by their W. With equal w_m (every family today)
// the result is the large batch's gradient up to float rounding (tests/test_grad_accumulation.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"
#include "base/dist/data_parallel.h"

namespace urpe {

// Which part of a step's batch one call of TrainingTask::step computes: micro-batch `index` of
// `count` equal parts of this rank's rows (index 0, count 1 without accumulation).
struct MicroBatch {
  int64_t index = 0, count = 1;
  bool first() const { return index == 0; }
  bool last() const { return index + 1 == count; }
};

// The rows of micro-batch `micro` within `rows` (a rank's shard of the global batch): equal
// consecutive parts. The count must divide evenly (one error naming accum_steps).
dist::Shard micro_rows(const dist::Shard& rows, const MicroBatch& micro);

// Backward of micro-batch loss `loss` (a mean over `weight` targets) seeded with `weight`, so its
// gradients add w·∇L onto what the parameters hold.
void backward_weighted(const Tensor& loss, double weight);
// Divides every parameter gradient by `total_weight` (W above): the sum becomes the mean.
void divide_gradients(const std::vector<Tensor>& parameters, double total_weight);

}  // namespace urpe
