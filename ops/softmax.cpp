// Public softmax / log_softmax over the last axis: validation, dispatch, autograd. Kernels:
// softmax_cpu.cpp / softmax_cuda.cu. Both save their output y (backward needs only y and g).
#include "ops/softmax.h"

#include "autograd/node.h"
#include "ops/bf16_values.h"
#include "ops/dispatch.h"

namespace urpe {

// softmax:     y_j = e^{x_j − m} / Σ_k e^{x_k − m}      ∂x_j = y_j·(g_j − Σ_k g_k y_k)
// log_softmax: y_j = x_j − m − log Σ_k e^{x_k − m}      ∂x_j = g_j − e^{y_j}·Σ_k g_k
static Tensor softmax_family(const char* op, const Tensor& x, bool take_log) {
  const profile::OpRange range(op, x);
  check_value_dtype(op, "x", x);
  check_dim(op, "x", x, 1, kMaxDims);
  const int64_t n = x.size(-1), rows = n > 0 ? x.numel() / n : 0;
  // ---- forward ----
  const DType dtype = x.dtype();  // bf16: FP32 maths, the sums in double, y rounded once
  const double bytes = double(dtype_size(dtype));
  Tensor y = Tensor::empty(x.shape(), dtype, x.device());
  URPE_PROFILE_COST(softmax_forward_cost(rows, n, bytes));
  if (take_log) {
    URPE_DISPATCH(op, x.device(), kernels::log_softmax_forward_cpu(x, y),
                  kernels::log_softmax_forward_cuda(x, y));
  } else {
    URPE_DISPATCH(op, x.device(), kernels::softmax_forward_cpu(x, y),
                  kernels::softmax_forward_cuda(x, y));
  }
  // ---- backward ----
  // Save y without its history: the node lives inside y, so capturing y itself would be a cycle.
  const Tensor saved_y = y.detach();
  return autograd::record(y, op, {x}, [op, take_log, saved_y, rows, n, dtype, bytes](const Tensor& g) {
    Tensor gx = Tensor::empty(saved_y.shape(), dtype, g.device());
    URPE_PROFILE_COST(softmax_backward_cost(rows, n, bytes));
    if (take_log) {
      URPE_DISPATCH(op, g.device(), kernels::log_softmax_backward_cpu(saved_y, g, gx),
                    kernels::log_softmax_backward_cuda(saved_y, g, gx));
    } else {
      URPE_DISPATCH(op, g.device(), kernels::softmax_backward_cpu(saved_y, g, gx),
                    kernels::softmax_backward_cuda(saved_y, g, gx));
    }
    return std::vector<Tensor>{gx};
  });
}

Tensor softmax(const Tensor& x) { return softmax_family("softmax", x, false); }
Tensor log_softmax(const Tensor& x) { return softmax_family("log_softmax", x, true); }

}  // namespace urpe
