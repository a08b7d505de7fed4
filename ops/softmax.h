// Softmax and log-softmax over the last axis (max-subtracted for stability).
//   softmax:     y_j = e^{x_j − m} / Σ_k e^{x_k − m}      ∂x_j = y_j·(g_j − Σ_k g_k y_k)
//   log_softmax: y_j = x_j − m − log Σ_k e^{x_k − m}      ∂x_j = g_j − e^{y_j}·Σ_k g_k
// A row of all −inf gives zeros (not NaN): a fully masked row attends to nothing.
// Its gradient is zero too: for log_softmax, backward writes ∂x = 0 on any row whose outputs are
// all exactly 0 (only a fully masked row, or n = 1, where g − e^0·g = 0 anyway).
// x f32 or bf16; y and ∂x have x's dtype (bf16: FP32 maths, the sums in double, each result
// rounded once on store; docs/cuda.md#mixed-precision).
#pragma once
#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);

namespace kernels {
// x, y: (rows, n) viewed flat over leading dims.
void softmax_forward_cpu(const Tensor& x, Tensor& y);
void softmax_forward_cuda(const Tensor& x, Tensor& y);
void softmax_backward_cpu(const Tensor& y, const Tensor& grad_y, Tensor& grad_x);
void softmax_backward_cuda(const Tensor& y, const Tensor& grad_y, Tensor& grad_x);
void log_softmax_forward_cpu(const Tensor& x, Tensor& y);
void log_softmax_forward_cuda(const Tensor& x, Tensor& y);
void log_softmax_backward_cpu(const Tensor& y, const Tensor& grad_y, Tensor& grad_x);
void log_softmax_backward_cuda(const Tensor& y, const Tensor& grad_y, Tensor& grad_x);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// Over (rows, n): forward reads x, writes y, 5 operations per element (max, −, exp, Σ, ·1/Σ; for
// log_softmax: max, −, exp, Σ, − log Σ); backward reads y and ∂y, writes ∂x, 4 per element
// (softmax: Σ g·y 2, (g − Σ)·y 2; log_softmax: Σ g, e^y, ·Σ, g −).
// `bytes`: an element's size (2 for bf16).
inline profile::Cost softmax_forward_cost(int64_t rows, int64_t n, double bytes = profile::kElementBytes) {
  return {5.0 * double(rows) * n, 2 * bytes * double(rows) * n};
}
inline profile::Cost softmax_backward_cost(int64_t rows, int64_t n, double bytes = profile::kElementBytes) {
  return {4.0 * double(rows) * n, 3 * bytes * double(rows) * n};
}

}  // namespace urpe
