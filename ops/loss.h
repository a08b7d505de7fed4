// Losses, each reduced to a scalar mean.
//
// cross_entropy(logits (N, C), targets i32 (N,)): rows with target == ignore_index don't count.
//   L = (1/M) Σ_{i counted} (lse_i − logits[i, t_i]),  lse_i = log Σ_c e^{logits[i,c]},  M = #counted
//   ∂logits[i, c] = (softmax(logits_i)_c − [c = t_i])·g/M for counted rows, 0 otherwise.
//   (M = 0 gives L = 0.) Fused: forward saves lse per row; backward recomputes the softmax.
//   Logits f32 or bf16 (precision=bf16's heads, docs/cuda.md#mixed-precision): a bf16 logit widens
//   exactly, lse is FP32 (its sum in double, as for f32) and stays f32, the loss f32; ∂logits has
//   the logits' dtype, each value rounded once.
// l1_loss(pred, target) same shape: L = (1/n) Σ |pred − target|,  ∂pred = sign(pred − target)·g/n,
//   ∂target = −∂pred.
#pragma once
#include <cstdint>

#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int32_t ignore_index = -100);  // logits f32 or bf16
Tensor l1_loss(const Tensor& pred, const Tensor& target);

namespace kernels {
// loss: shape () = mean over counted rows; lse: (N,); count: i32 shape (), the number of counted
// rows M, on the logits' device (CUDA: it stays there, the backward reads it there: no host wait).
void cross_entropy_forward_cpu(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                               Tensor& loss, Tensor& lse, Tensor& count);
void cross_entropy_forward_cuda(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                                Tensor& loss, Tensor& lse, Tensor& count);
// grad_loss: shape () (the upstream scalar gradient, read on the device); count: the forward's.
void cross_entropy_backward_cpu(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                                const Tensor& lse, const Tensor& count, const Tensor& grad_loss,
                                Tensor& grad_logits);
void cross_entropy_backward_cuda(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                                 const Tensor& lse, const Tensor& count, const Tensor& grad_loss,
                                 Tensor& grad_logits);
void l1_loss_forward_cpu(const Tensor& pred, const Tensor& target, Tensor& loss);
void l1_loss_forward_cuda(const Tensor& pred, const Tensor& target, Tensor& loss);
void l1_loss_backward_cpu(const Tensor& pred, const Tensor& target, const Tensor& grad_loss,
                          Tensor& grad_pred);
void l1_loss_backward_cuda(const Tensor& pred, const Tensor& target, const Tensor& grad_loss,
                           Tensor& grad_pred);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// cross_entropy over (N, C) logits: forward reads logits and targets, writes lse and the loss,
// 4 operations per logit (max, −, exp, Σ); backward reads logits, targets, lse and the upstream
// scalar, writes ∂logits, 4 per logit (−, exp, ·g/M, − [c = t]).
// `bytes`: the size of a logit and of its gradient (2 for bf16); targets, lse and the loss are 4.
inline profile::Cost cross_entropy_forward_cost(int64_t rows, int64_t classes, double bytes = profile::kElementBytes) {
  return {4.0 * double(rows) * classes, bytes * double(rows) * classes + profile::kElementBytes * (2.0 * rows + 1)};
}
inline profile::Cost cross_entropy_backward_cost(int64_t rows, int64_t classes, double bytes = profile::kElementBytes) {
  return {4.0 * double(rows) * classes, bytes * 2 * double(rows) * classes + profile::kElementBytes * (2.0 * rows + 1)};
}
// l1_loss over n elements: forward reads pred and target, writes the scalar, 3 per element
// (−, |·|, Σ); backward reads pred, target and the scalar, writes ∂pred, 2 per element (sign, ·g/n).
inline profile::Cost l1_loss_forward_cost(int64_t n) {
  return {3.0 * double(n), profile::kElementBytes * (2.0 * double(n) + 1)};
}
inline profile::Cost l1_loss_backward_cost(int64_t n) {
  return {2.0 * double(n), profile::kElementBytes * (3.0 * double(n) + 1)};
}

}  // namespace urpe
