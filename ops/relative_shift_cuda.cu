// CUDA relative shift of Transformer-XL (maths in relative_shift.h). Row i of every (Nq, Nk) slice
// moves by s = Nq − 1 − i columns, zeros where there is no source:
//   forward:  y[r, i, j]  = x[r, i, j + s]   for j < Nk − s, else 0
//   backward: ∂x[r, i, k] = g[r, i, k − s]   for k ≥ s,      else 0
// One thread per output element (grid-stride, int64): consecutive threads write consecutive
// columns and read consecutive (shifted) columns of the same row, so both sides are coalesced.
// A pure gather: bit-exact against the CPU. Bytes: 4 read + 4 written per element.
#include "ops/cuda_common.cuh"
#include "ops/relative_shift.h"

namespace urpe::kernels {

namespace {

// x, y: (rows, Nq, Nk) flat, total = rows·Nq·Nk
__global__ void relative_shift_forward_kernel(const float* __restrict__ x, float* __restrict__ y,
                                              int64_t nq, int64_t nk, int64_t total) {
  URPE_GRID_STRIDE(k, total) {
    const int64_t row = k / nk, j = k % nk;
    const int64_t s = nq - 1 - row % nq;
    y[k] = j < nk - s ? x[row * nk + j + s] : 0.0f;
  }
}

// g, grad_x: (rows, Nq, Nk) flat
__global__ void relative_shift_backward_kernel(const float* __restrict__ g,
                                               float* __restrict__ grad_x, int64_t nq, int64_t nk,
                                               int64_t total) {
  URPE_GRID_STRIDE(k, total) {
    const int64_t row = k / nk, j = k % nk;
    const int64_t s = nq - 1 - row % nq;
    grad_x[k] = j >= s ? g[row * nk + j - s] : 0.0f;
  }
}

}  // namespace

void relative_shift_forward_cuda(const Tensor& x, Tensor& y) {
  cuda::Context& ctx = context_of(y);
  const int64_t nq = x.size(-2), nk = x.size(-1), total = x.numel();
  if (total == 0) return;
  const int threads = 256;
  relative_shift_forward_kernel<<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
      x.f32(), y.f32(), nq, nk, total);
  CUDA_CHECK_LAUNCH("relative_shift_forward_kernel");
}

void relative_shift_backward_cuda(const Tensor& g, Tensor& grad_x) {
  cuda::Context& ctx = context_of(grad_x);
  const int64_t nq = g.size(-2), nk = g.size(-1), total = g.numel();
  if (total == 0) return;
  const int threads = 256;
  relative_shift_backward_kernel<<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
      g.f32(), grad_x.f32(), nq, nk, total);
  CUDA_CHECK_LAUNCH("relative_shift_backward_kernel");
}

}  // namespace urpe::kernels
