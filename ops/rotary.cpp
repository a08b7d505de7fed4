// Public rotary op: validation, the host-built tables, dispatch to rotary_cpu.cpp /
// rotary_cuda.cu, and autograd. The maths is in rotary.h.
#include "ops/rotary.h"

#include <cmath>
#include <vector>

#include "autograd/node.h"
#include "ops/bf16_values.h"
#include "ops/dispatch.h"

namespace urpe {

std::pair<Tensor, Tensor> rotary_tables(int64_t positions, int64_t dim, double base, const Device& device) {
  URPE_CHECK(positions > 0, "rotary_tables: positions must be positive, got " << positions);
  URPE_CHECK(dim > 0 && dim % 2 == 0, "rotary_tables: dim must be positive and even, got " << dim);
  URPE_CHECK(base > 1.0, "rotary_tables: base must be > 1, got " << base);
  const int64_t half = dim / 2;
  std::vector<float> c(positions * half), s(positions * half);
  for (int64_t n = 0; n < positions; ++n)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(n) * std::pow(base, -2.0 * static_cast<double>(i) / dim);
      c[n * half + i] = static_cast<float>(std::cos(angle));
      s[n * half + i] = static_cast<float>(std::sin(angle));
    }
  return {Tensor::from_vector(c, {positions, half}, device), Tensor::from_vector(s, {positions, half}, device)};
}

Tensor rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const char* op = "rotary";
  const profile::OpRange range(op, x);
  check_value_dtype(op, "x", x);  // f32 or bf16
  check_dtype(op, "cos", cos, DType::f32);
  check_dtype(op, "sin", sin, DType::f32);
  check_dim(op, "x", x, 2, kMaxDims);
  check_dim(op, "cos", cos, 2, 2);
  check_dim(op, "sin", sin, 2, 2);
  check_same_device(op, x, cos);
  check_same_device(op, x, sin);
  const int64_t n = x.size(-2), d = x.size(-1);
  URPE_CHECK(d % 2 == 0, op << ": x " << x.describe() << " needs an even last axis (pairs of features)");
  URPE_CHECK(cos.shape() == sin.shape(), op << ": cos " << cos.describe() << " and sin " << sin.describe()
                                            << " must have the same shape");
  URPE_CHECK(cos.size(0) >= n && cos.size(1) == d / 2,
             op << ": tables " << cos.describe() << " must be (≥ " << n << ", " << d / 2 << ") for x "
                << x.describe());

  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  const double bytes = double(dtype_size(x.dtype()));
  URPE_PROFILE_COST(rotary_cost(x.numel(), n, d, bytes));
  URPE_DISPATCH(op, x.device(), kernels::rotary_cpu(x, cos, sin, false, y),
                kernels::rotary_cuda(x, cos, sin, false, y));

  return autograd::record(y, op, {x}, [op, cos, sin, n, d, bytes](const Tensor& g) {
    Tensor grad_x = Tensor::empty(g.shape(), g.dtype(), g.device());  // x's dtype, as g's
    URPE_PROFILE_COST(rotary_cost(g.numel(), n, d, bytes));
    URPE_DISPATCH(op, g.device(), kernels::rotary_cpu(g, cos, sin, true, grad_x),
                  kernels::rotary_cuda(g, cos, sin, true, grad_x));
    return std::vector<Tensor>{grad_x};
  });
}

}  // namespace urpe
