// cast: the one op that changes a tensor's dtype between f32 and bf16 (mixed precision,
// docs/cuda.md#mixed-precision).
//   forward  y = bf16(x): each value rounded to nearest, ties to even (tensor/bf16.h: NaN stays
//            NaN, ±inf stays ±inf, a finite value past the largest bf16 becomes ±inf, subnormals
//            are rounded, not flushed); y = f32(x) from bf16: exact (the 16 bits shifted up).
//   backward ∂x = the gradient cast back to x's dtype: y = x up to rounding, so ∂y/∂x = 1
//            (the straight-through derivative of rounding, as in every mixed-precision trainer).
// A cast to the dtype x already has returns x (no op, no node, no copy), as PyTorch's .to().
#pragma once
#include <cstdint>

#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

Tensor cast(const Tensor& x, DType dtype);

namespace kernels {
// out = x converted to out's dtype (one of f32 → bf16, bf16 → f32); same numel.
void cast_cpu(const Tensor& x, Tensor& out);
void cast_cuda(const Tensor& x, Tensor& out);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// n elements: reads n of the source dtype, writes n of the target (4 + 2 bytes each way); a
// conversion is not a floating-point operation.
inline profile::Cost cast_cost(int64_t n) { return {0.0, 6.0 * double(n)}; }

}  // namespace urpe
