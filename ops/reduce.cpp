// Public reductions: sum/mean over an axis or everything, with autograd.
#include "ops/reduce.h"

#include "autograd/node.h"
#include "ops/dispatch.h"

namespace urpe {

namespace {

struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView view_around(const Shape& shape, int axis) {
  AxisView v;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < axis) v.outer *= shape[d];
    else if (d == axis) v.n = shape[d];
    else v.inner *= shape[d];
  }
  return v;
}

Tensor reduce_axis(const char* op, const Tensor& x, int axis, bool keepdim, bool average) {
  const profile::OpRange range(op, x);
  check_dtype(op, "x", x, DType::f32);
  const int d = x.dim();
  const int a = axis < 0 ? axis + d : axis;
  URPE_CHECK(a >= 0 && a < d, op << ": axis " << axis << " out of range for " << x.describe());
  const AxisView v = view_around(x.shape(), a);
  Shape out_shape = x.shape();
  if (keepdim) out_shape[a] = 1;
  else out_shape.erase(out_shape.begin() + a);
  const float alpha = average ? (v.n > 0 ? 1.0f / static_cast<float>(v.n) : 0.0f) : 1.0f;
  Tensor out = Tensor::empty(out_shape, DType::f32, x.device());
  URPE_PROFILE_COST(sum_axis_cost(v.outer, v.n, v.inner));
  URPE_DISPATCH(op, x.device(), kernels::sum_axis_cpu(x, v.outer, v.n, v.inner, alpha, out),
                kernels::sum_axis_cuda(x, v.outer, v.n, v.inner, alpha, out));
  const Shape in_shape = x.shape();
  return autograd::record(out, op, {x}, [=](const Tensor& g) {
    Tensor gx = Tensor::empty(in_shape, DType::f32, g.device());
    URPE_PROFILE_COST(broadcast_axis_cost(v.outer, v.n, v.inner, alpha));
    URPE_DISPATCH(op, g.device(), kernels::broadcast_axis_cpu(g, v.outer, v.n, v.inner, alpha, gx),
                  kernels::broadcast_axis_cuda(g, v.outer, v.n, v.inner, alpha, gx));
    return std::vector<Tensor>{gx};
  });
}

Tensor reduce_all(const char* op, const Tensor& x, bool average) {
  const profile::OpRange range(op, x);
  check_dtype(op, "x", x, DType::f32);
  // Reduce the flattened tensor as one axis of a 1-D view.
  Tensor flat = x.view({x.numel()});
  const int64_t n = x.numel();
  const float alpha = average ? (n > 0 ? 1.0f / static_cast<float>(n) : 0.0f) : 1.0f;
  Tensor out = Tensor::empty({}, DType::f32, x.device());
  URPE_PROFILE_COST(sum_axis_cost(1, n, 1));
  URPE_DISPATCH(op, x.device(), kernels::sum_axis_cpu(flat, 1, n, 1, alpha, out),
                kernels::sum_axis_cuda(flat, 1, n, 1, alpha, out));
  const Shape in_shape = x.shape();
  return autograd::record(out, op, {x}, [=](const Tensor& g) {
    Tensor gx = Tensor::empty(in_shape, DType::f32, g.device());
    URPE_PROFILE_COST(broadcast_axis_cost(1, n, 1, alpha));
    URPE_DISPATCH(op, g.device(), kernels::broadcast_axis_cpu(g, 1, n, 1, alpha, gx),
                  kernels::broadcast_axis_cuda(g, 1, n, 1, alpha, gx));
    return std::vector<Tensor>{gx};
  });
}

}  // namespace

Tensor sum(const Tensor& x, int axis, bool keepdim) { return reduce_axis("sum", x, axis, keepdim, false); }
Tensor mean(const Tensor& x, int axis, bool keepdim) { return reduce_axis("mean", x, axis, keepdim, true); }
Tensor sum_all(const Tensor& x) { return reduce_all("sum_all", x, false); }
Tensor mean_all(const Tensor& x) { return reduce_all("mean_all", x, true); }

Tensor argmax_last(const Tensor& x) {
  const char* op = "argmax";
  const profile::OpRange range(op, x);
  check_dtype(op, "x", x, DType::f32);
  URPE_CHECK(x.dim() >= 1 && x.size(-1) >= 1, op << ": expected a tensor whose last axis has at least one entry, got "
                                               << x.describe());
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  Shape out_shape = x.shape();
  out_shape.pop_back();
  Tensor out = Tensor::empty(out_shape, DType::i32, x.device());
  URPE_PROFILE_COST(argmax_rows_cost(rows, cols));
  URPE_DISPATCH(op, x.device(), kernels::argmax_rows_cpu(x, rows, cols, out),
                kernels::argmax_rows_cuda(x, rows, cols, out));
  return out;  // indices: nothing to differentiate
}

}  // namespace urpe
