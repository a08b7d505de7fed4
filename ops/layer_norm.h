// Layer normalisation over the last axis (size D), with a learned gain γ and bias β.
//   μ = (1/D) Σ x,   σ² = (1/D) Σ (x − μ)²,   r = 1/√(σ² + ε),   x̂ = (x − μ)·r,   y = γ·x̂ + β
// Backward, per row, with ĝ = g·γ:
//   ∂x = r·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)),   ∂γ = Σ_rows g·x̂,   ∂β = Σ_rows g
// Forward saves μ and r per row (2 floats) so backward reads x once more instead of recomputing.
#pragma once
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

}  // namespace urpe
