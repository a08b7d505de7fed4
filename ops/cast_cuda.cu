// CUDA cast between f32 and bf16 (maths in cast.h), with CUDA's own conversions: on the GPU
// __float2bfloat16_rn is one cvt.rn.bf16.f32 (sm_80+), __bfloat162float a 16-bit shift; the CUDA
// simulator's <cuda_bf16.h> implements them on the host apart from tensor/bf16.h, so the parity
// row compares two implementations of the rounding. Must equal the CPU's bits.
// Bytes: 4 read + 2 written (or 2 + 4) per element; bandwidth-bound.
#include <cuda_bf16.h>

#include "ops/cast.h"
#include "ops/cuda_common.cuh"

namespace urpe::kernels {

namespace {

static_assert(sizeof(__nv_bfloat16) == sizeof(bf16), "__nv_bfloat16 and urpe::bf16 share a layout");

// out_k = bf16(x_k), round to nearest even.
__global__ void cast_f32_to_bf16_kernel(const float* __restrict__ x, __nv_bfloat16* __restrict__ out,
                                        int64_t n) {
  URPE_GRID_STRIDE(k, n) { out[k] = __float2bfloat16_rn(x[k]); }
}

// out_k = f32(x_k), exact.
__global__ void cast_bf16_to_f32_kernel(const __nv_bfloat16* __restrict__ x, float* __restrict__ out,
                                        int64_t n) {
  URPE_GRID_STRIDE(k, n) { out[k] = __bfloat162float(x[k]); }
}

}  // namespace

void cast_cuda(const Tensor& x, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const int64_t n = x.numel();
  if (n == 0) return;
  const int threads = 256;
  if (x.dtype() == DType::f32) {
    cast_f32_to_bf16_kernel<<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(
        x.f32(), reinterpret_cast<__nv_bfloat16*>(out.data<bf16>()), n);
    CUDA_CHECK_LAUNCH("cast_f32_to_bf16_kernel");
  } else {
    cast_bf16_to_f32_kernel<<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(
        reinterpret_cast<const __nv_bfloat16*>(x.data<bf16>()), out.f32(), n);
    CUDA_CHECK_LAUNCH("cast_bf16_to_f32_kernel");
  }
}

}  // namespace urpe::kernels
