// Elementwise arithmetic with broadcasting over leading dims.
//
// Broadcast rule: the two shapes are equal, or one is a suffix of the other (e.g. (B, N, D) and
// (D,), or (B, N, D) and (N, D)); the smaller operand repeats over the larger one's leading dims.
// Flattened, element k of the output reads a[k mod |a|] and b[k mod |b|].
//
// Forward: out = a ∘ b for ∘ ∈ {+, −, ×, ÷}.
// Backward (g = ∂L/∂out, then summed over the repeats of a broadcast operand):
//   add: ∂a = g,   ∂b = g          sub: ∂a = g,   ∂b = −g
//   mul: ∂a = g·b, ∂b = g·a        div: ∂a = g/b, ∂b = −g·a/b²
// Dtypes (docs/cuda.md#mixed-precision): f32 or bf16 operands; bf16 with bf16 gives bf16, a mixed
// pair f32 (PyTorch's promotion); the arithmetic is FP32 (a broadcast operand's gradient summed in
// double), each result rounded once when stored in bf16; ∂a, ∂b have their operand's dtype.
#pragma once
#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
// out = alpha·x + beta; ∂x = alpha·g.
Tensor affine(const Tensor& x, float alpha, float beta = 0.0f);
inline Tensor scale(const Tensor& x, float alpha) { return affine(x, alpha, 0.0f); }

namespace kernels {
enum class BinaryOp { add, sub, mul, div };
// out: the larger operand's shape.
void binary_forward_cpu(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
void binary_forward_cuda(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
// grad_a / grad_b: shaped like a / b (nullptr: not wanted); repeats are summed deterministically.
void binary_backward_cpu(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& grad_out,
                         Tensor* grad_a, Tensor* grad_b);
void binary_backward_cuda(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& grad_out,
                          Tensor* grad_a, Tensor* grad_b);
void affine_cpu(const Tensor& x, float alpha, float beta, Tensor& out);
void affine_cuda(const Tensor& x, float alpha, float beta, Tensor& out);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// a: na elements, b: nb, the output n = max(na, nb). Forward reads a and b, writes out: one
// operation per output element. Backward reads g (and a, b where the gradient needs their values:
// mul, div) and writes each gradient asked for. Its operations: for add and sub, an operand of the
// output's shape gets a copy of g (sub's ∂b negated: n operations), no arithmetic, and a smaller
// one the sum of g over its repeats (n additions); mul's ∂a and ∂b two per element of g (product,
// sum), div's ∂a two, ∂b four (−g·a/b²). A same-shape add's gradient is a copy (0 FLOPs: the
// roofline leaves it out, like a permute, and its row has the GB/s).
inline profile::Cost binary_forward_cost(int64_t na, int64_t nb) {
  const double n = double(na > nb ? na : nb);
  return {n, profile::kElementBytes * (double(na) + double(nb) + n)};
}
inline profile::Cost binary_backward_cost(kernels::BinaryOp op, int64_t na, int64_t nb, bool grad_a, bool grad_b) {
  using kernels::BinaryOp;
  const double n = double(na > nb ? na : nb);
  const bool reads_values = op == BinaryOp::mul || op == BinaryOp::div;
  auto summed = [&](int64_t size) { return double(size) < n ? n : 0.0; };  // additions over repeats
  const double ops_a = reads_values ? 2 * n : summed(na);
  const double ops_b = op == BinaryOp::div ? 4 * n : op == BinaryOp::mul ? 2 * n
                       : op == BinaryOp::sub ? n + summed(nb) : summed(nb);
  double bytes = n + (reads_values ? double(na) + double(nb) : 0.0);
  if (grad_a) bytes += double(na);
  if (grad_b) bytes += double(nb);
  return {(grad_a ? ops_a : 0.0) + (grad_b ? ops_b : 0.0), profile::kElementBytes * bytes};
}
// affine: forward 2 operations (·α, +β), backward 1 (·α), per element; reads one tensor, writes one.
inline profile::Cost affine_cost(int64_t n, bool backward) {
  return {(backward ? 1.0 : 2.0) * double(n), 2 * profile::kElementBytes * double(n)};
}

}  // namespace urpe
