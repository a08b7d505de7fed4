// Public elementwise ops: validation, dispatch, autograd. Kernels: elementwise_cpu.cpp / _cuda.cu.
#include "ops/elementwise.h"

#include "autograd/node.h"
#include "ops/bf16_values.h"
#include "ops/dispatch.h"

namespace urpe {

using kernels::BinaryOp;

static const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "add";
    case BinaryOp::sub: return "sub";
    case BinaryOp::mul: return "mul";
    default: return "div";
  }
}

static bool is_suffix(const Shape& small, const Shape& large) {
  if (small.size() > large.size()) return false;
  return std::equal(small.begin(), small.end(), large.end() - small.size());
}

static Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  const profile::OpRange range(name, a);
  check_value_dtype(name, "a", a);
  check_value_dtype(name, "b", b);
  check_same_device(name, a, b);
  URPE_CHECK(is_suffix(a.shape(), b.shape()) || is_suffix(b.shape(), a.shape()),
             name << ": shapes " << shape_str(a.shape()) << " and " << shape_str(b.shape())
                  << " do not broadcast (one must equal the trailing dims of the other)");
  const Tensor& larger = a.numel() >= b.numel() ? a : b;
  // bf16 with bf16 gives bf16; a mixed pair promotes to f32 (as PyTorch does). FP32 arithmetic.
  const DType out_dtype = a.dtype() == DType::bf16 && b.dtype() == DType::bf16 ? DType::bf16 : DType::f32;
  Tensor out = Tensor::empty(larger.shape(), out_dtype, a.device());
  URPE_PROFILE_COST(binary_forward_cost(a.numel(), b.numel()));
  URPE_DISPATCH(name, a.device(), kernels::binary_forward_cpu(op, a, b, out),
                kernels::binary_forward_cuda(op, a, b, out));
  // add and sub need only the operands' shapes in backward: capturing data-less stand-ins lets
  // a residual sum's operands (and any add of two activations) be freed after the forward.
  const bool reads_values = op == BinaryOp::mul || op == BinaryOp::div;
  const Tensor saved_a = reads_values ? a : autograd::without_data(a);
  const Tensor saved_b = reads_values ? b : autograd::without_data(b);
  return autograd::record(out, name, {a, b},
                          [op, a = saved_a, b = saved_b, name, reads_values](const Tensor& g) {
    // ∂a of add/sub and ∂b of add are g itself where that operand has the output's shape: hand
    // g over instead of copying it (autograd adopts or copies it as its sharing requires). One
    // operand at most, so a residual sum's two gradients never alias.
    Tensor ga, gb;
    // (only where the operand has g's dtype too: a gradient has its tensor's dtype)
    const bool pass_a = !reads_values && a.requires_grad() && a.shape() == g.shape() && a.dtype() == g.dtype();
    const bool pass_b = !pass_a && op == BinaryOp::add && b.requires_grad() && b.shape() == g.shape() &&
                        b.dtype() == g.dtype();
    if (pass_a) ga = g;
    if (pass_b) gb = g;
    const bool compute_a = a.requires_grad() && !pass_a, compute_b = b.requires_grad() && !pass_b;
    if (compute_a) ga = Tensor::empty(a.shape(), a.dtype(), a.device());
    if (compute_b) gb = Tensor::empty(b.shape(), b.dtype(), b.device());
    if (compute_a || compute_b) {
      URPE_PROFILE_COST(binary_backward_cost(op, a.numel(), b.numel(), compute_a, compute_b));
      URPE_DISPATCH(name, g.device(),
                    kernels::binary_backward_cpu(op, a, b, g, compute_a ? &ga : nullptr,
                                                 compute_b ? &gb : nullptr),
                    kernels::binary_backward_cuda(op, a, b, g, compute_a ? &ga : nullptr,
                                                  compute_b ? &gb : nullptr));
    }
    return std::vector<Tensor>{ga, gb};
  });
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::div, a, b); }

Tensor affine(const Tensor& x, float alpha, float beta) {
  const profile::OpRange range("affine", x);
  check_value_dtype("affine", "x", x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  URPE_PROFILE_COST(affine_cost(x.numel(), false));
  URPE_DISPATCH("affine", x.device(), kernels::affine_cpu(x, alpha, beta, out),
                kernels::affine_cuda(x, alpha, beta, out));
  return autograd::record(out, "affine", {x}, [alpha](const Tensor& g) {
    Tensor gx = Tensor::empty(g.shape(), g.dtype(), g.device());
    URPE_PROFILE_COST(affine_cost(g.numel(), true));
    URPE_DISPATCH("affine", g.device(), kernels::affine_cpu(g, alpha, 0.0f, gx),
                  kernels::affine_cuda(g, alpha, 0.0f, gx));
    return std::vector<Tensor>{gx};
  });
}

}  // namespace urpe
