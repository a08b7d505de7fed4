// Pointwise nonlinearities.
//   relu: y = max(x, 0)                          ∂x = g·[x > 0]
//   gelu: y = x·Φ(x) = x/2·(1 + erf(x/√2))      ∂x = g·(Φ(x) + x·φ(x)),  φ(x) = e^{−x²/2}/√(2π)
// (the exact erf GELU of fairseq and Graphormer, not the tanh approximation)
// x f32 or bf16; y and ∂x have x's dtype; bf16 values are computed in FP32 and rounded once on
// store (docs/cuda.md#mixed-precision).
#pragma once
#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);

namespace kernels {
enum class Activation { relu, gelu };
void activation_forward_cpu(Activation kind, const Tensor& x, Tensor& y);
void activation_forward_cuda(Activation kind, const Tensor& x, Tensor& y);
void activation_backward_cpu(Activation kind, const Tensor& x, const Tensor& grad_y, Tensor& grad_x);
void activation_backward_cuda(Activation kind, const Tensor& x, const Tensor& grad_y, Tensor& grad_x);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// n elements. Forward reads x and writes y; backward reads x and ∂y and writes ∂x. FLOPs count
// the formula's operations, an erf or exp as one: relu 1 per element each way; gelu 5 forward
// (x/√2, erf, 1 +, ·x, /2) and 8 backward (Φ: 3, φ: x², exp, ·1/√(2π), x·φ, Φ +, ·g).
// `bytes`: an element's size (4 for f32, 2 for bf16).
inline profile::Cost activation_forward_cost(kernels::Activation kind, int64_t n,
                                             double bytes = profile::kElementBytes) {
  const double per = kind == kernels::Activation::gelu ? 5 : 1;
  return {per * double(n), 2 * bytes * double(n)};
}
inline profile::Cost activation_backward_cost(kernels::Activation kind, int64_t n,
                                              double bytes = profile::kElementBytes) {
  const double per = kind == kernels::Activation::gelu ? 8 : 1;
  return {per * double(n), 3 * bytes * double(n)};
}

}  // namespace urpe
