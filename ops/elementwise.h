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
#pragma once
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

}  // namespace urpe
