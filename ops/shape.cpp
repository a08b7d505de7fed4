// Public shape ops with autograd: reshape (a view), permute/transpose, concat and slice (copies).
#include "ops/shape.h"

#include "autograd/node.h"
#include "ops/dispatch.h"

namespace urpe {

static int normalise_axis(const char* op, const Tensor& x, int axis) {
  const int a = axis < 0 ? axis + x.dim() : axis;
  URPE_CHECK(a >= 0 && a < x.dim(), op << ": axis " << axis << " out of range for " << x.describe());
  return a;
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  const profile::OpRange range("reshape", x);  // a view: no kernel, no cost, only bookkeeping
  check_defined("reshape", "x", x);
  Shape target = shape;
  int64_t known = 1;
  int inferred = -1;
  for (size_t d = 0; d < target.size(); ++d) {
    if (target[d] == -1) {
      URPE_CHECK(inferred < 0, "reshape: more than one -1 in " << shape_str(shape));
      inferred = static_cast<int>(d);
    } else {
      known *= target[d];
    }
  }
  if (inferred >= 0) {
    URPE_CHECK(known > 0 && x.numel() % known == 0,
               "reshape: cannot reshape " << x.describe() << " to " << shape_str(shape));
    target[inferred] = x.numel() / known;
  }
  URPE_CHECK(shape_numel(target) == x.numel(),
             "reshape: cannot reshape " << x.describe() << " to " << shape_str(shape));
  Tensor out = x.view(target);
  const Shape in_shape = x.shape();
  return autograd::record(out, "reshape", {x}, [in_shape](const Tensor& g) {
    return std::vector<Tensor>{g.view(in_shape)};
  });
}

Tensor permute(const Tensor& x, const std::vector<int>& order) {
  const profile::OpRange range("permute", x);
  check_defined("permute", "x", x);
  URPE_CHECK(static_cast<int>(order.size()) == x.dim(),
             "permute: order has " << order.size() << " axes for " << x.describe());
  std::vector<int> inverse(order.size(), -1);
  Shape out_shape(order.size());
  for (size_t d = 0; d < order.size(); ++d) {
    const int src = order[d];
    URPE_CHECK(src >= 0 && src < x.dim() && inverse[src] < 0,
               "permute: order is not a permutation of the axes of " << x.describe());
    inverse[src] = static_cast<int>(d);
    out_shape[d] = x.shape()[src];
  }
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  const double bytes = double(dtype_size(x.dtype()));
  URPE_PROFILE_COST(permute_cost(x.numel(), bytes));
  URPE_DISPATCH("permute", x.device(), kernels::permute_cpu(x, order, out),
                kernels::permute_cuda(x, order, out));
  // A gradient has its tensor's dtype (bf16 for a bf16 activation): the same copy, inverted.
  return autograd::record(out, "permute", {x}, [inverse, shape = x.shape(), bytes](const Tensor& g) {
    Tensor gx = Tensor::empty(shape, g.dtype(), g.device());
    URPE_PROFILE_COST(permute_cost(g.numel(), bytes));
    URPE_DISPATCH("permute", g.device(), kernels::permute_cpu(g, inverse, gx),
                  kernels::permute_cuda(g, inverse, gx));
    return std::vector<Tensor>{gx};
  });
}

Tensor transpose(const Tensor& x, int axis0, int axis1) {
  check_defined("transpose", "x", x);
  std::vector<int> order(x.dim());
  for (int d = 0; d < x.dim(); ++d) order[d] = d;
  std::swap(order[normalise_axis("transpose", x, axis0)], order[normalise_axis("transpose", x, axis1)]);
  return permute(x, order);
}

namespace {
// outer × (axis size) × inner around `axis`.
void split_around(const Shape& shape, int axis, int64_t& outer, int64_t& inner) {
  outer = inner = 1;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < axis) outer *= shape[d];
    if (d > axis) inner *= shape[d];
  }
}

void copy_window(const Tensor& src, int64_t src_n, int64_t src_start, Tensor& dst, int64_t dst_n,
                 int64_t dst_start, int64_t outer, int64_t count, int64_t inner, bool accumulate) {
  URPE_PROFILE_COST(copy_window_cost(outer * count * inner, accumulate, double(dtype_size(src.dtype()))));
  URPE_DISPATCH("copy_window", src.device(),
                kernels::copy_window_cpu(src, src_n, src_start, dst, dst_n, dst_start, outer, count, inner, accumulate),
                kernels::copy_window_cuda(src, src_n, src_start, dst, dst_n, dst_start, outer, count, inner, accumulate));
}
}  // namespace

Tensor concat(const std::vector<Tensor>& pieces, int axis) {
  URPE_CHECK(!pieces.empty(), "concat: no tensors given");
  const profile::OpRange range("concat", pieces[0]);
  const Tensor& first = pieces[0];
  check_defined("concat", "pieces[0]", first);
  const int a = normalise_axis("concat", first, axis);
  Shape out_shape = first.shape();
  out_shape[a] = 0;
  for (const Tensor& p : pieces) {
    check_defined("concat", "piece", p);
    check_same_device("concat", first, p);
    URPE_CHECK(p.dtype() == first.dtype(), "concat: " << p.describe() << " and " << first.describe()
                                                      << " have different dtypes (cast one first)");
    bool same = p.dim() == first.dim();
    for (int d = 0; same && d < p.dim(); ++d) same = d == a || p.shape()[d] == first.shape()[d];
    URPE_CHECK(same, "concat: " << p.describe() << " does not match " << first.describe()
                                << " outside axis " << a);
    out_shape[a] += p.shape()[a];
  }
  int64_t outer, inner;
  split_around(out_shape, a, outer, inner);
  Tensor out = Tensor::empty(out_shape, first.dtype(), first.device());
  int64_t offset = 0;
  std::vector<int64_t> starts;
  for (const Tensor& p : pieces) {
    starts.push_back(offset);
    copy_window(p, p.shape()[a], 0, out, out_shape[a], offset, outer, p.shape()[a], inner, false);
    offset += p.shape()[a];
  }
  return autograd::record(out, "concat", pieces, [=](const Tensor& g) {
    std::vector<Tensor> grads(pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (!pieces[i].requires_grad()) continue;
      const int64_t n = pieces[i].shape()[a];
      grads[i] = Tensor::empty(pieces[i].shape(), g.dtype(), g.device());  // the gradient's dtype
      copy_window(g, out_shape[a], starts[i], grads[i], n, 0, outer, n, inner, false);
    }
    return grads;
  });
}

Tensor slice(const Tensor& x, int axis, int64_t start, int64_t end) {
  const profile::OpRange range("slice", x);
  check_defined("slice", "x", x);
  const int a = normalise_axis("slice", x, axis);
  const int64_t n = x.shape()[a];
  URPE_CHECK(0 <= start && start <= end && end <= n,
             "slice: window [" << start << ", " << end << ") is outside axis " << a << " of "
                               << x.describe());
  Shape out_shape = x.shape();
  out_shape[a] = end - start;
  int64_t outer, inner;
  split_around(x.shape(), a, outer, inner);
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  copy_window(x, n, start, out, end - start, 0, outer, end - start, inner, false);
  return autograd::record(out, "slice", {x}, [=, shape = x.shape()](const Tensor& g) {
    Tensor gx = Tensor::zeros(shape, g.dtype(), g.device());  // bf16 for a bf16 x: zeros are exact
    URPE_PROFILE_COST(fill_cost(gx.numel(), double(dtype_size(g.dtype()))));
    copy_window(g, end - start, 0, gx, n, start, outer, end - start, inner, false);
    return std::vector<Tensor>{gx};
  });
}

}  // namespace urpe
