// The relative shift of Transformer-XL (Dai et al. 2019, `_rel_shift` in the official
// mem_transformer.py): turns scores against positional rows ordered by *key index* into scores
// against the relative distance of each (query, key) pair, without building a (Nq, Nk, d) tensor.
//
// Transformer-XL computes BDraw[i, k] = (q_i + v)·r_k for every query i and every row k of the
// sinusoid table R, whose row k encodes the distance klen − 1 − k. Query i sits at key position
// M + i (M = Nk − Nq, the memory length), so the pair (i, j) has distance δ = M + i − j and needs
// row k = j + Nq − 1 − i. The shift gathers that row for every pair:
//
//   forward:   y[..., i, j] = x[..., i, j + Nq − 1 − i]   for j ≤ M + i      (δ ≥ 0)
//              y[..., i, j] = 0                           for j > M + i      (future keys)
//   backward:  ∂x[..., i, k] = g[..., i, k − (Nq − 1 − i)]   for k ≥ Nq − 1 − i,   0 otherwise
//
// x, y: (..., Nq, Nk) with Nk ≥ Nq; leading axes are independent (batch, heads). The official
// code pads a zero column and reinterprets the buffer, which leaves values of the next row in the
// future-key entries; here they are 0. Both versions are masked by causal attention, so the
// attention output is the same. Each direction is a pure gather: no reduction, bit-exact, and the
// memory traffic is one read and one write of the (…, Nq, Nk) tensor.
//
// Dtypes: f32 or bf16 (precision=bf16's Transformer-XL scores, docs/cuda.md#mixed-precision); y
// and ∂x have x's dtype. A gather of 2-byte words moves no value through arithmetic, so bf16 is
// as exact as f32 (its zeros are bf16 zeros).
#pragma once
#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

Tensor relative_shift(const Tensor& x);

namespace kernels {
// x, y: (rows, Nq, Nk) flat, rows = product of the leading axes. y is overwritten.
void relative_shift_forward_cpu(const Tensor& x, Tensor& y);
void relative_shift_forward_cuda(const Tensor& x, Tensor& y);
// g, grad_x: (rows, Nq, Nk). grad_x is overwritten.
void relative_shift_backward_cpu(const Tensor& g, Tensor& grad_x);
void relative_shift_backward_cuda(const Tensor& g, Tensor& grad_x);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// n elements of (..., Nq, Nk), either direction: one read and one write each, no arithmetic.
// `bytes`: an element's size (2 for bf16).
inline profile::Cost relative_shift_cost(int64_t n, double bytes = profile::kElementBytes) {
  return {0.0, 2 * bytes * double(n)};
}

}  // namespace urpe
