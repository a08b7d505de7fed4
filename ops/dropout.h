// Inverted dropout with a counter-based mask.
//   keep_k = [philox_uniform(seed, 0, k) ≥ p],   y_k = x_k·keep_k/(1 − p),   ∂x_k = g_k·keep_k/(1 − p)
// The mask is a pure function of (seed, k): backward regenerates it instead of storing it, and the
// CPU and CUDA kernels draw identical masks. Not training, or p = 0: y = x (no copy, no node).
// x f32 or bf16; y and ∂x have x's dtype (bf16: x_k·scale in FP32, rounded once on store).
#pragma once
#include <cstdint>

#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

Tensor dropout(const Tensor& x, float p, uint64_t seed, bool training);

namespace kernels {
// out = x·keep/(1 − p); used for both directions (backward passes the gradient as x).
void dropout_apply_cpu(const Tensor& x, float p, uint64_t seed, Tensor& out);
void dropout_apply_cuda(const Tensor& x, float p, uint64_t seed, Tensor& out);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// n elements, either direction: reads x (or ∂y), writes y (or ∂x); one multiply per element
// (drawing the mask is integer work, not counted). `bytes`: an element's size (2 for bf16).
inline profile::Cost dropout_cost(int64_t n, double bytes = profile::kElementBytes) {
  return {double(n), 2 * bytes * double(n)};
}

}  // namespace urpe
