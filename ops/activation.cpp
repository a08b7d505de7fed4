// Public activations (relu, gelu): validation, dispatch, autograd. Kernels: activation_cpu.cpp /
// activation_cuda.cu. Both ops save their input x; backward recomputes the local slope from it.
#include "ops/activation.h"

#include "autograd/node.h"
#include "ops/dispatch.h"

namespace urpe {

using kernels::Activation;

static Tensor activation(Activation kind, const char* name, const Tensor& x) {
  const profile::OpRange range(name, x);
  check_dtype(name, "x", x, DType::f32);
  // ---- forward: y = f(x) ----
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  URPE_PROFILE_COST(activation_forward_cost(kind, x.numel()));
  URPE_DISPATCH(name, x.device(), kernels::activation_forward_cpu(kind, x, y),
                kernels::activation_forward_cuda(kind, x, y));
  // ---- backward: ∂x = g·f'(x) ----
  return autograd::record(y, name, {x}, [kind, name, x](const Tensor& g) {
    Tensor gx = Tensor::empty(x.shape(), DType::f32, g.device());
    URPE_PROFILE_COST(activation_backward_cost(kind, x.numel()));
    URPE_DISPATCH(name, g.device(), kernels::activation_backward_cpu(kind, x, g, gx),
                  kernels::activation_backward_cuda(kind, x, g, gx));
    return std::vector<Tensor>{gx};
  });
}

Tensor relu(const Tensor& x) { return activation(Activation::relu, "relu", x); }
Tensor gelu(const Tensor& x) { return activation(Activation::gelu, "gelu", x); }

}  // namespace urpe
