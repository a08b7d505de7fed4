// CUDA relative shift of Transformer-XL (maths in relative_shift.h). Row i of every (Nq, Nk) slice
// moves by s = Nq − 1 − i columns, zeros where there is no source:
//   forward:  y[r, i, j]  = x[r, i, j + s]   for j < Nk − s, else 0
//   backward: ∂x[r, i, k] = g[r, i, k − s]   for k ≥ s,      else 0
// One thread per output element (grid-stride, int64): consecutive threads write consecutive
// columns and read consecutive (shifted) columns of the same row, so both sides are coalesced.
// A pure gather: bit-exact against the CPU. Bytes: 4 read + 4 written per element (2 + 2 for bf16:
// the same kernel on 16-bit words; a zero word is +0 in either dtype).
#include "ops/cuda_common.cuh"
#include "ops/relative_shift.h"

namespace urpe::kernels {

namespace {

// x, y: (rows, Nq, Nk) flat, total = rows·Nq·Nk. Word: uint32_t (f32) or uint16_t (bf16).
template <typename Word>
__global__ void relative_shift_forward_kernel(const Word* __restrict__ x, Word* __restrict__ y,
                                              int64_t nq, int64_t nk, int64_t total) {
  URPE_GRID_STRIDE(k, total) {
    const int64_t row = k / nk, j = k % nk;
    const int64_t s = nq - 1 - row % nq;
    y[k] = j < nk - s ? x[row * nk + j + s] : Word(0);
  }
}

// g, grad_x: (rows, Nq, Nk) flat
template <typename Word>
__global__ void relative_shift_backward_kernel(const Word* __restrict__ g,
                                               Word* __restrict__ grad_x, int64_t nq, int64_t nk,
                                               int64_t total) {
  URPE_GRID_STRIDE(k, total) {
    const int64_t row = k / nk, j = k % nk;
    const int64_t s = nq - 1 - row % nq;
    grad_x[k] = j >= s ? g[row * nk + j - s] : Word(0);
  }
}

template <typename Word>
void launch_shift(const Tensor& in, Tensor& out, bool forward) {
  cuda::Context& ctx = context_of(out);
  const int64_t nq = in.size(-2), nk = in.size(-1), total = in.numel();
  if (total == 0) return;
  const int threads = 256;
  const Word* src = static_cast<const Word*>(in.impl().storage->data);
  Word* dst = static_cast<Word*>(out.impl().storage->data);
  if (forward) {
    relative_shift_forward_kernel<Word><<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
        src, dst, nq, nk, total);
    CUDA_CHECK_LAUNCH("relative_shift_forward_kernel");
  } else {
    relative_shift_backward_kernel<Word><<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
        src, dst, nq, nk, total);
    CUDA_CHECK_LAUNCH("relative_shift_backward_kernel");
  }
}

}  // namespace

void relative_shift_forward_cuda(const Tensor& x, Tensor& y) {
  if (dtype_size(x.dtype()) == 2) launch_shift<uint16_t>(x, y, true);
  else launch_shift<uint32_t>(x, y, true);
}

void relative_shift_backward_cuda(const Tensor& g, Tensor& grad_x) {
  if (dtype_size(g.dtype()) == 2) launch_shift<uint16_t>(g, grad_x, false);
  else launch_shift<uint32_t>(g, grad_x, false);
}

}  // namespace urpe::kernels
