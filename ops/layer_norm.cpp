// Public layer_norm: validation, dispatch, autograd. Kernels: layer_norm_cpu.cpp / _cuda.cu.
// x may have any leading dims; the kernels get it viewed as (rows, D), D = x.size(-1).
#include "ops/layer_norm.h"

#include <cmath>

#include "autograd/node.h"
#include "ops/bf16_values.h"
#include "ops/dispatch.h"

namespace urpe {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  const char* op = "layer_norm";
  const profile::OpRange range(op, x);
  check_value_dtype(op, "x", x);
  check_dtype(op, "gamma", gamma, DType::f32);
  check_dtype(op, "beta", beta, DType::f32);
  check_dim(op, "x", x, 1, kMaxDims);
  check_dim(op, "gamma", gamma, 1, 1);
  check_dim(op, "beta", beta, 1, 1);
  check_same_device(op, x, gamma);
  check_same_device(op, x, beta);
  const int64_t D = x.size(-1);
  URPE_CHECK(D > 0, op << ": the normalised (last) axis of x is empty: " << x.describe());
  URPE_CHECK(gamma.numel() == D && beta.numel() == D,
             op << ": gamma and beta must have shape (" << D << ",) to match the last axis of x "
                << x.describe() << ", got gamma " << gamma.describe() << " and beta " << beta.describe());
  URPE_CHECK(eps >= 0.0f && std::isfinite(eps), op << ": eps must be finite and ≥ 0, got " << eps);
  const int64_t rows = x.numel() / D;
  const Shape x_shape = x.shape();
  const Tensor x2 = x.view({rows, D});  // the kernels' (rows, D) view; same storage

  // ---- forward: y = γ·(x − μ)·r + β, saving μ and r per row ----
  const DType dtype = x.dtype();
  const double bytes = double(dtype_size(dtype));
  Tensor y = Tensor::empty({rows, D}, dtype, x.device());
  Tensor mean = Tensor::empty({rows}, DType::f32, x.device());
  Tensor rstd = Tensor::empty({rows}, DType::f32, x.device());
  URPE_PROFILE_COST(layer_norm_forward_cost(rows, D, bytes));
  URPE_DISPATCH(op, x.device(), kernels::layer_norm_forward_cpu(x2, gamma, beta, eps, y, mean, rstd),
                kernels::layer_norm_forward_cuda(x2, gamma, beta, eps, y, mean, rstd));

  // ---- backward: ∂x = r·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)), ∂γ = Σ g·x̂, ∂β = Σ g ----
  return autograd::record(y.view(x_shape), op, {x, gamma, beta},
                          [op, x2, x_shape, gamma, mean, rstd, dtype, bytes](const Tensor& g) {
    const Tensor g2 = g.view(x2.shape());
    Tensor gx = Tensor::empty(x2.shape(), dtype, g.device());
    Tensor ggamma = Tensor::empty(gamma.shape(), DType::f32, g.device());
    Tensor gbeta = Tensor::empty(gamma.shape(), DType::f32, g.device());
    URPE_PROFILE_COST(layer_norm_backward_cost(x2.size(0), x2.size(1), bytes));
    URPE_DISPATCH(op, g.device(),
                  kernels::layer_norm_backward_cpu(x2, gamma, mean, rstd, g2, gx, ggamma, gbeta),
                  kernels::layer_norm_backward_cuda(x2, gamma, mean, rstd, g2, gx, ggamma, gbeta));
    return std::vector<Tensor>{gx.view(x_shape), ggamma, gbeta};
  });
}

}  // namespace urpe
