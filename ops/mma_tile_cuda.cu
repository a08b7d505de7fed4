// The probe of ops/mma_tile.h: one warp, one m16n8k8 TF32 product through ops/mma_tf32.cuh (or one
// m16n8k16 BF16 product through ops/mma_bf16.cuh), with the fragment layout chosen by the caller
// (the PTX ISA's, or a deliberately wrong one); and the TF32 and BF16 roundings alone. Bytes: a few hundred; it exists for its answer, not its speed.
#include "ops/cuda_common.cuh"
#include "ops/mma_bf16.cuh"
#include "ops/mma_tf32.cuh"
#include "ops/mma_tile.h"

namespace urpe::kernels {

namespace {

// Register r of a fragment read from / written to the position the layout gives it.
__device__ __forceinline__ int a_reg(MmaFragmentLayout layout, int r) {
  return layout == MmaFragmentLayout::a_rows_swapped ? (r ^ 1) : r;
}
__device__ __forceinline__ int b_reg(MmaFragmentLayout layout, int r) {
  return layout == MmaFragmentLayout::b_rows_swapped ? (r ^ 1) : r;
}
__device__ __forceinline__ int c_reg(MmaFragmentLayout layout, int r) {
  return layout == MmaFragmentLayout::c_columns_swapped ? (r ^ 1) : r;
}

// One warp: a (16, 8), b (8, 8), c and d (16, 8), row-major.
__global__ void mma_tf32_tile_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                     const float* __restrict__ c, float* __restrict__ d,
                                     MmaFragmentLayout layout) {
  const int lane = threadIdx.x;
  uint32_t fa[4], fb[2];
  float acc[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int s = a_reg(layout, r);
    fa[r] = tc::to_tf32(a[tc::a_row(lane, s) * tc::kK + tc::a_col(lane, s)]);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int s = b_reg(layout, r);
    fb[r] = tc::to_tf32(b[tc::b_row(lane, s) * tc::kN + tc::b_col(lane, s)]);
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int s = c_reg(layout, r);
    acc[r] = c[tc::c_row(lane, s) * tc::kN + tc::c_col(lane, s)];
  }
  tc::mma_m16n8k8(acc, fa, fb);
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int s = c_reg(layout, r);
    d[tc::c_row(lane, s) * tc::kN + tc::c_col(lane, s)] = acc[r];
  }
}

// One warp: a (16, 16), b (16, 8), c and d (16, 8), row-major; register r of A holds the pair
// (half 0, half 1) at a16_row/a16_col, swapped under a_halves_swapped.
__global__ void mma_bf16_tile_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                     const float* __restrict__ c, float* __restrict__ d,
                                     MmaFragmentLayout layout) {
  const int lane = threadIdx.x;
  const bool swap_halves = layout == MmaFragmentLayout::a_halves_swapped;
  uint32_t fa[4], fb[2];
  float acc[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int s = a_reg(layout, r);
    const float lo = a[tc::a16_row(lane, s, 0) * tc::kK16 + tc::a16_col(lane, s, 0)];
    const float hi = a[tc::a16_row(lane, s, 1) * tc::kK16 + tc::a16_col(lane, s, 1)];
    fa[r] = swap_halves ? tc::pack_bf16(hi, lo) : tc::pack_bf16(lo, hi);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int s = b_reg(layout, r);
    fb[r] = tc::pack_bf16(b[tc::b16_row(lane, s, 0) * tc::kN + tc::b16_col(lane, s, 0)],
                          b[tc::b16_row(lane, s, 1) * tc::kN + tc::b16_col(lane, s, 1)]);
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int s = c_reg(layout, r);
    acc[r] = c[tc::c_row(lane, s) * tc::kN + tc::c_col(lane, s)];
  }
  tc::mma_m16n8k16_bf16(acc, fa, fb);
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int s = c_reg(layout, r);
    d[tc::c_row(lane, s) * tc::kN + tc::c_col(lane, s)] = acc[r];
  }
}

__global__ void round_bf16_kernel(int64_t n, const float* __restrict__ x, float* __restrict__ out) {
  URPE_GRID_STRIDE(k, n) {
    out[k] = __uint_as_float(tc::pack_bf16(x[k], 0.0f) << 16);
  }
}

__global__ void round_tf32_kernel(int64_t n, const float* __restrict__ x, float* __restrict__ out) {
  URPE_GRID_STRIDE(k, n) {
    out[k] = __uint_as_float(tc::to_tf32(x[k]));
  }
}

}  // namespace

void mma_tf32_tile_cuda(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& d,
                        MmaFragmentLayout layout) {
  URPE_CHECK(a.shape() == Shape({16, 8}) && b.shape() == Shape({8, 8}) && c.shape() == Shape({16, 8}) &&
                 d.shape() == Shape({16, 8}),
             "mma_tf32_tile_cuda: a (16, 8), b (8, 8), c and d (16, 8), got " << a.describe() << ", "
                 << b.describe() << ", " << c.describe() << ", " << d.describe());
  URPE_CHECK(layout != MmaFragmentLayout::a_halves_swapped,
             "mma_tf32_tile_cuda: a TF32 register holds one value (a_halves_swapped is a BF16 layout)");
  cuda::Context& ctx = context_of(d);
  mma_tf32_tile_kernel<<<1, kWarp, 0, ctx.stream()>>>(a.f32(), b.f32(), c.f32(), d.f32(), layout);
  CUDA_CHECK_LAUNCH("mma_tf32_tile_kernel");
}

void mma_bf16_tile_cuda(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& d,
                        MmaFragmentLayout layout) {
  URPE_CHECK(a.shape() == Shape({16, 16}) && b.shape() == Shape({16, 8}) && c.shape() == Shape({16, 8}) &&
                 d.shape() == Shape({16, 8}),
             "mma_bf16_tile_cuda: a (16, 16), b (16, 8), c and d (16, 8), got " << a.describe() << ", "
                 << b.describe() << ", " << c.describe() << ", " << d.describe());
  cuda::Context& ctx = context_of(d);
  mma_bf16_tile_kernel<<<1, kWarp, 0, ctx.stream()>>>(a.f32(), b.f32(), c.f32(), d.f32(), layout);
  CUDA_CHECK_LAUNCH("mma_bf16_tile_kernel");
}

void round_bf16_cuda(const Tensor& x, Tensor& out) {
  URPE_CHECK(x.shape() == out.shape(), "round_bf16_cuda: x " << x.describe() << ", out " << out.describe());
  cuda::Context& ctx = context_of(out);
  if (x.numel() == 0) return;
  round_bf16_kernel<<<grid_for(ctx, x.numel(), 256), 256, 0, ctx.stream()>>>(x.numel(), x.f32(), out.f32());
  CUDA_CHECK_LAUNCH("round_bf16_kernel");
}

void round_tf32_cuda(const Tensor& x, Tensor& out) {
  URPE_CHECK(x.shape() == out.shape(), "round_tf32_cuda: x " << x.describe() << ", out " << out.describe());
  cuda::Context& ctx = context_of(out);
  if (x.numel() == 0) return;
  round_tf32_kernel<<<grid_for(ctx, x.numel(), 256), 256, 0, ctx.stream()>>>(x.numel(), x.f32(), out.f32());
  CUDA_CHECK_LAUNCH("round_tf32_kernel");
}

}  // namespace urpe::kernels
