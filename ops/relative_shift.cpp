// Public relative_shift: validation, dispatch to relative_shift_cpu.cpp / relative_shift_cuda.cu,
// and autograd. The maths is in relative_shift.h.
#include "ops/relative_shift.h"

#include <vector>

#include "autograd/node.h"
#include "ops/bf16_values.h"
#include "ops/dispatch.h"

namespace urpe {

Tensor relative_shift(const Tensor& x) {
  const char* op = "relative_shift";
  const profile::OpRange range(op, x);
  check_value_dtype(op, "x", x);  // f32 or bf16
  check_dim(op, "x", x, 2, kMaxDims);
  URPE_CHECK(x.size(-2) > 0, op << ": x " << x.describe() << " has no queries");
  URPE_CHECK(x.size(-1) >= x.size(-2),
             op << ": x " << x.describe() << " must have at least as many keys (last axis) as "
                << "queries (second to last axis): keys = memory + queries");

  // ---- forward: y[..., i, j] = x[..., i, j + Nq − 1 − i] for j ≤ Nk − Nq + i, else 0 ----
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  const double bytes = double(dtype_size(x.dtype()));
  URPE_PROFILE_COST(relative_shift_cost(x.numel(), bytes));
  URPE_DISPATCH(op, x.device(), kernels::relative_shift_forward_cpu(x, y),
                kernels::relative_shift_forward_cuda(x, y));

  // ---- backward: ∂x[..., i, k] = g[..., i, k − (Nq − 1 − i)] for k ≥ Nq − 1 − i, else 0 ----
  return autograd::record(y, op, {x}, [op, bytes](const Tensor& g) {
    Tensor grad_x = Tensor::empty(g.shape(), g.dtype(), g.device());  // x's dtype, as g's
    URPE_PROFILE_COST(relative_shift_cost(g.numel(), bytes));
    URPE_DISPATCH(op, g.device(), kernels::relative_shift_backward_cpu(g, grad_x),
                  kernels::relative_shift_backward_cuda(g, grad_x));
    return std::vector<Tensor>{grad_x};
  });
}

}  // namespace urpe
