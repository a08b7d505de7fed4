// Public activations (relu, gelu): validation, dispatch, autograd. Kernels: activation_cpu.cpp /
// activation_cuda.cu. Both ops save their input x; backward recomputes the local slope from it.
#include "ops/activation.h"

#include "autograd/node.h"
#include "ops/bf16_values.h"
#include "ops/dispatch.h"

namespace urpe {

using kernels::Activation;

static Tensor activation(Activation kind, const char* name, const Tensor& x) {
  const profile::OpRange range(name, x);
  check_value_dtype(name, "x", x);
  // ---- forward: y = f(x), in x's dtype (bf16: computed in FP32, rounded on store) ----
  const DType dtype = x.dtype();
  const double bytes = double(dtype_size(dtype));
  Tensor y = Tensor::empty(x.shape(), dtype, x.device());
  URPE_PROFILE_COST(activation_forward_cost(kind, x.numel(), bytes));
  URPE_DISPATCH(name, x.device(), kernels::activation_forward_cpu(kind, x, y),
                kernels::activation_forward_cuda(kind, x, y));
  // ---- backward: ∂x = g·f'(x) ----
  return autograd::record(y, name, {x}, [kind, name, x, dtype, bytes](const Tensor& g) {
    Tensor gx = Tensor::empty(x.shape(), dtype, g.device());
    URPE_PROFILE_COST(activation_backward_cost(kind, x.numel(), bytes));
    URPE_DISPATCH(name, g.device(), kernels::activation_backward_cpu(kind, x, g, gx),
                  kernels::activation_backward_cuda(kind, x, g, gx));
    return std::vector<Tensor>{gx};
  });
}

Tensor relu(const Tensor& x) { return activation(Activation::relu, "relu", x); }
Tensor gelu(const Tensor& x) { return activation(Activation::gelu, "gelu", x); }

}  // namespace urpe
