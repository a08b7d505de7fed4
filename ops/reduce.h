// Sums and means over one axis, or over everything.
//
// View x as (outer, n, inner) around the reduced axis:
//   sum:  out[o, i] = Σ_j x[o, j, i]           ∂x[o, j, i] = g[o, i]
//   mean: out[o, i] = (1/n) Σ_j x[o, j, i]     ∂x[o, j, i] = g[o, i] / n
// Reductions accumulate in double on the CPU and use fixed-order block partials on CUDA, so the
// result does not depend on thread count or scheduling.
#pragma once
#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

Tensor sum(const Tensor& x, int axis, bool keepdim = false);
Tensor mean(const Tensor& x, int axis, bool keepdim = false);
Tensor sum_all(const Tensor& x);   // shape ()
Tensor mean_all(const Tensor& x);  // shape ()

// The index of the largest entry along the last axis, for the accuracy metrics (no gradient):
//   out[r] = min { c : x[r, c] = max_c' x[r, c'] }      x (..., V) f32 -> out (...) i32
// NaN counts as below every number (a row of NaNs gives 0). On a GPU it keeps the logits there:
// only the indices reach the host (the masked LM's logits are 2458 × 30522 floats a micro-batch).
Tensor argmax_last(const Tensor& x);

namespace kernels {
// out[o, i] = alpha · Σ_j x[o, j, i]
void sum_axis_cpu(const Tensor& x, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out);
void sum_axis_cuda(const Tensor& x, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out);
// The same passes over a bf16 x read as it is (each value widened exactly), into an f32 out.
void sum_axis_cuda(const Device& device, const bf16* x, int64_t outer, int64_t n, int64_t inner, float alpha,
                   float* out);
// out[o, j, i] = alpha · g[o, i]
void broadcast_axis_cpu(const Tensor& g, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out);
void broadcast_axis_cuda(const Tensor& g, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out);
// out[r] = argmax_c x[r, c] over (rows, cols), ties to the smaller c
void argmax_rows_cpu(const Tensor& x, int64_t rows, int64_t cols, Tensor& out);
void argmax_rows_cuda(const Tensor& x, int64_t rows, int64_t cols, Tensor& out);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// Around the axis, (outer, n, inner): sum_axis reads x and writes (outer, inner), one add per
// element of x; broadcast_axis reads (outer, inner) and writes (outer, n, inner), one multiply by
// alpha per element written (none for alpha = 1: a copy, as linear's bias).
inline profile::Cost sum_axis_cost(int64_t outer, int64_t n, int64_t inner) {
  const double all = double(outer) * n * inner, out = double(outer) * inner;
  return {all, profile::kElementBytes * (all + out)};
}
inline profile::Cost broadcast_axis_cost(int64_t outer, int64_t n, int64_t inner, float alpha) {
  const double all = double(outer) * n * inner, in = double(outer) * inner;
  return {alpha == 1.0f ? 0.0 : all, profile::kElementBytes * (all + in)};
}

// argmax_rows reads the rows once and writes one int32 per row; one comparison per element.
inline profile::Cost argmax_rows_cost(int64_t rows, int64_t cols) {
  return {double(rows) * cols, profile::kElementBytes * (double(rows) * cols + rows)};
}

}  // namespace urpe
