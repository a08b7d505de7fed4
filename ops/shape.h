// Shape ops. reshape shares storage; everything else copies (tensors are always contiguous).
//
// permute: out[idx permuted] = x[idx];      backward: permute g by the inverse permutation.
//   Any dtype (f32, i32, bf16: a copy of 4- or 2-byte words); ∂x has the gradient's dtype.
// concat:  pieces laid side by side along an axis; backward: slice g back into pieces.
// slice:   x[..., start:end, ...] along an axis; backward: zeros with g copied into the window.
// concat and slice take any dtype too (the pieces of one concat share it): bf16 activations under
// precision=bf16 (Transformer-XL's q, k, v slices of one projection) are copies of 2-byte words,
// and a gradient has its tensor's dtype, so ∂x of a bf16 slice is bf16 (zeros outside the window,
// exact) and the windows of one tensor's slices never overlap, so autograd's FP32 sum of their
// bf16 gradients adds only zeros: no rounding anywhere.
#pragma once
#include <vector>

#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

Tensor reshape(const Tensor& x, const Shape& shape);  // one dim may be -1
Tensor permute(const Tensor& x, const std::vector<int>& order);
Tensor transpose(const Tensor& x, int axis0, int axis1);
Tensor concat(const std::vector<Tensor>& pieces, int axis);
Tensor slice(const Tensor& x, int axis, int64_t start, int64_t end);

namespace kernels {
// out = x with axes reordered: out.shape[d] = x.shape[order[d]].
void permute_cpu(const Tensor& x, const std::vector<int>& order, Tensor& out);
void permute_cuda(const Tensor& x, const std::vector<int>& order, Tensor& out);
// Views src as (outer, src_n, inner) and dst as (outer, dst_n, inner) and copies `count` rows of
// the middle axis: dst[o, dst_start + r, i] (+)= src[o, src_start + r, i] for r < count.
// src and dst share a dtype: any (4- or 2-byte words) for a copy; f32 or bf16 to accumulate (the
// sum in FP32, rounded once when bf16).
void copy_window_cpu(const Tensor& src, int64_t src_n, int64_t src_start, Tensor& dst,
                     int64_t dst_n, int64_t dst_start, int64_t outer, int64_t count,
                     int64_t inner, bool accumulate);
void copy_window_cuda(const Tensor& src, int64_t src_n, int64_t src_start, Tensor& dst,
                      int64_t dst_n, int64_t dst_start, int64_t outer, int64_t count,
                      int64_t inner, bool accumulate);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// Copies, no arithmetic: permute reads and writes n elements; copy_window reads `elements` and
// writes them (reading the destination too when it accumulates, one add each); filling n
// elements (slice's backward zeroes ∂x before the window) writes them.
// `bytes`: an element's size (2 for bf16).
inline profile::Cost permute_cost(int64_t n, double bytes = profile::kElementBytes) { return {0.0, 2 * bytes * double(n)}; }
inline profile::Cost copy_window_cost(int64_t elements, bool accumulate, double bytes = profile::kElementBytes) {
  return {accumulate ? double(elements) : 0.0, (accumulate ? 3 : 2) * bytes * double(elements)};
}
inline profile::Cost fill_cost(int64_t n, double bytes = profile::kElementBytes) { return {0.0, bytes * double(n)}; }

}  // namespace urpe
