// Layer normalisation over the last axis (size D), with a learned gain γ and bias β.
//   μ = (1/D) Σ x,   σ² = (1/D) Σ (x − μ)²,   r = 1/√(σ² + ε),   x̂ = (x − μ)·r,   y = γ·x̂ + β
// Backward, per row, with ĝ = g·γ:
//   ∂x = r·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)),   ∂γ = Σ_rows g·x̂,   ∂β = Σ_rows g
// Forward saves μ and r per row (2 floats) so backward reads x once more instead of recomputing.
// x f32 or bf16 (precision=bf16: autocast runs layer norm in FP32 on bf16 input); y and ∂x have
// x's dtype, the statistics are summed in double and μ, r, γ, β, ∂γ, ∂β are f32.
#pragma once
#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps = 1e-5f);

namespace kernels {
// x, y: (rows, D); gamma, beta: (D,); mean, rstd: (rows,)
void layer_norm_forward_cpu(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                            Tensor& y, Tensor& mean, Tensor& rstd);
void layer_norm_forward_cuda(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                             Tensor& y, Tensor& mean, Tensor& rstd);
// grad_gamma / grad_beta are overwritten; rows are reduced deterministically.
void layer_norm_backward_cpu(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                             const Tensor& rstd, const Tensor& grad_y, Tensor& grad_x,
                             Tensor& grad_gamma, Tensor& grad_beta);
void layer_norm_backward_cuda(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                              const Tensor& rstd, const Tensor& grad_y, Tensor& grad_x,
                              Tensor& grad_gamma, Tensor& grad_beta);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// (rows, D). Forward reads x, γ, β and writes y, μ, r; backward reads x, ∂y, γ, μ, r and writes
// ∂x, ∂γ, ∂β. FLOPs per element: forward 8 (mean 1, variance 2, (x − μ)·r 2, γ·x̂ + β 2, and the
// row's r amortised as 1); backward 13 (x̂ 2, ĝ 1, the two row means 3, ∂x 4, ∂γ 2, ∂β 1).
// `bytes`: the size of an x, y, ∂y, ∂x element (4 for f32, 2 for bf16); the rest is f32.
inline profile::Cost layer_norm_forward_cost(int64_t rows, int64_t d, double bytes = profile::kElementBytes) {
  return {8.0 * double(rows) * d, bytes * 2 * double(rows) * d + profile::kElementBytes * (2.0 * d + 2.0 * rows)};
}
inline profile::Cost layer_norm_backward_cost(int64_t rows, int64_t d, double bytes = profile::kElementBytes) {
  return {13.0 * double(rows) * d, bytes * 3 * double(rows) * d + profile::kElementBytes * (3.0 * d + 2.0 * rows)};
}

}  // namespace urpe
