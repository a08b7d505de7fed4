// Inverted dropout with a counter-based mask.
//   keep_k = [philox_uniform(seed, 0, k) ≥ p],   y_k = x_k·keep_k/(1 − p),   ∂x_k = g_k·keep_k/(1 − p)
// The mask is a pure function of (seed, k): backward regenerates it instead of storing it, and the
// CPU and CUDA kernels draw identical masks. Not training, or p = 0: y = x (no copy, no node).
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace urpe {

Tensor dropout(const Tensor& x, float p, uint64_t seed, bool training);

namespace kernels {
// out = x·keep/(1 − p); used for both directions (backward passes the gradient as x).
void dropout_apply_cpu(const Tensor& x, float p, uint64_t seed, Tensor& out);
void dropout_apply_cuda(const Tensor& x, float p, uint64_t seed, Tensor& out);
}  // namespace kernels

}  // namespace urpe
