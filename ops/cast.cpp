// Public cast: validation, dispatch, autograd (maths in cast.h). Kernels: cast_cpu.cpp /
// cast_cuda.cu. Nothing is saved for backward but the input's dtype.
#include "ops/cast.h"

#include "autograd/node.h"
#include "ops/dispatch.h"

namespace urpe {

namespace {

Tensor convert(const Tensor& x, DType dtype) {
  Tensor y = Tensor::empty(x.shape(), dtype, x.device());
  URPE_PROFILE_COST(cast_cost(x.numel()));
  URPE_DISPATCH("cast", x.device(), kernels::cast_cpu(x, y), kernels::cast_cuda(x, y));
  return y;
}

}  // namespace

Tensor cast(const Tensor& x, DType dtype) {
  check_defined("cast", "x", x);
  if (x.dtype() == dtype) return x;
  URPE_CHECK((x.dtype() == DType::f32 && dtype == DType::bf16) || (x.dtype() == DType::bf16 && dtype == DType::f32),
             "cast: " << x.describe() << " to " << dtype_name(dtype) << ": only f32 ↔ bf16 casts are defined");
  const profile::OpRange range("cast", x);
  // ---- forward: y = bf16(x) (round to nearest even) or f32(x) (exact) ----
  Tensor y = convert(x, dtype);
  // ---- backward: ∂x = the gradient in x's dtype ----
  const DType from = x.dtype();
  return autograd::record(y, "cast", {x}, [from](const Tensor& g) {
    return std::vector<Tensor>{convert(g, from)};
  });
}

}  // namespace urpe
