// Sums and means over one axis, or over everything.
//
// View x as (outer, n, inner) around the reduced axis:
//   sum:  out[o, i] = Σ_j x[o, j, i]           ∂x[o, j, i] = g[o, i]
//   mean: out[o, i] = (1/n) Σ_j x[o, j, i]     ∂x[o, j, i] = g[o, i] / n
// Reductions accumulate in double on the CPU and use fixed-order block partials on CUDA, so the
// result does not depend on thread count or scheduling.
#pragma once
#include "tensor/tensor.h"

namespace urpe {

Tensor sum(const Tensor& x, int axis, bool keepdim = false);
Tensor mean(const Tensor& x, int axis, bool keepdim = false);
Tensor sum_all(const Tensor& x);   // shape ()
Tensor mean_all(const Tensor& x);  // shape ()

namespace kernels {
// out[o, i] = alpha · Σ_j x[o, j, i]
void sum_axis_cpu(const Tensor& x, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out);
void sum_axis_cuda(const Tensor& x, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out);
// out[o, j, i] = alpha · g[o, i]
void broadcast_axis_cpu(const Tensor& g, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out);
void broadcast_axis_cuda(const Tensor& g, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out);
}  // namespace kernels

}  // namespace urpe
