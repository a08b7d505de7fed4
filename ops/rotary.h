// Rotary position embedding (RoPE; Su et al. 2021, "RoFormer"), in the half-split layout of
// GPT-NeoX / Llama (`rotate_half`): feature i of the first half is paired with feature i + D/2.
// Applied to queries and keys before q·kᵀ, it makes the score of (i, j) depend on i − j only
// through the rotation, so RoPE changes nothing but the attention logits (docs/theory.md#which-encodings-can-tell-positions-apart).
//
// Tables (built once on the host, not learned): for position n < N and pair i < D/2,
//   θ_i = base^(−2i/D),   cos[n, i] = cos(n·θ_i),   sin[n, i] = sin(n·θ_i)
// Forward, x and y: (..., N, D), D even, h = D/2:
//   y[..., n, i]     = x[..., n, i]·cos[n, i] − x[..., n, i + h]·sin[n, i]
//   y[..., n, i + h] = x[..., n, i + h]·cos[n, i] + x[..., n, i]·sin[n, i]
// Backward (g = ∂L/∂y; the rotation by −n·θ_i, the transpose of the forward rotation):
//   ∂x[..., n, i]     = g[..., n, i]·cos[n, i] + g[..., n, i + h]·sin[n, i]
//   ∂x[..., n, i + h] = g[..., n, i + h]·cos[n, i] − g[..., n, i]·sin[n, i]
// The tables get no gradient. Each output element reads two inputs and one cos/sin pair; CPU and
// CUDA agree to a rounding (nvcc may fuse a multiply-add).
// Dtypes: x f32 or bf16 (precision=bf16's q and k, docs/cuda.md#mixed-precision); y and ∂x have
// x's dtype, the tables stay f32. A bf16 x widens exactly, the rotation is FP32 and each result is
// rounded once on store (ops/bf16_values.h).
#pragma once
#include <cstdint>
#include <utility>

#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

// (cos, sin), each f32 (positions, dim/2); dim must be even. Angles are computed in double.
std::pair<Tensor, Tensor> rotary_tables(int64_t positions, int64_t dim, double base = 10000.0,
                                        const Device& device = {});

// x: f32 or bf16 (..., N, D); cos, sin: f32 (N', D/2) with N' ≥ N (rows [0, N) are used).
Tensor rotary(const Tensor& x, const Tensor& cos, const Tensor& sin);

namespace kernels {
// x, y: (rows, N, D) flat; y is overwritten. `inverse` applies the backward rotation (g → ∂x).
void rotary_cpu(const Tensor& x, const Tensor& cos, const Tensor& sin, bool inverse, Tensor& y);
void rotary_cuda(const Tensor& x, const Tensor& cos, const Tensor& sin, bool inverse, Tensor& y);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// x (..., N, D), either direction: reads x and the N rows of cos and sin, writes y; 3 operations
// per element (two products and a sum). `bytes`: the size of an x, y element (2 for bf16); the
// tables are f32.
inline profile::Cost rotary_cost(int64_t n_elements, int64_t positions, int64_t d, double bytes = profile::kElementBytes) {
  return {3.0 * double(n_elements),
          bytes * 2.0 * double(n_elements) + profile::kElementBytes * double(positions) * d};
}

}  // namespace urpe
