// Pointwise nonlinearities.
//   relu: y = max(x, 0)                          ∂x = g·[x > 0]
//   gelu: y = x·Φ(x) = x/2·(1 + erf(x/√2))      ∂x = g·(Φ(x) + x·φ(x)),  φ(x) = e^{−x²/2}/√(2π)
// (the exact erf GELU of fairseq and Graphormer, not the tanh approximation)
#pragma once
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

}  // namespace urpe
