// CUDA rotary embedding (maths in rotary.h). One thread per feature pair (grid-stride, int64):
// it reads x[i] and x[i + D/2] and the position's cos/sin, and writes both outputs. Consecutive
// threads take consecutive pairs of one vector, so reads and writes of each half are coalesced.
// The same float operations as the CPU; nvcc may contract a·c − b·s into an FMA, so parity is
// within a rounding (the simulator, compiled by the host compiler, is bit-exact). x and y are f32
// or bf16 (T, ops/bf16_values.cuh: FP32 arithmetic, a bf16 result rounded once; a contracted FMA
// may move it across a bf16 rounding boundary, one bf16 step). Bytes: 4 + 4 per element (2 + 2 for
// bf16) plus the tables' rows.
#include "ops/bf16_values.cuh"
#include "ops/cuda_common.cuh"
#include "ops/rotary.h"

namespace urpe::kernels {

namespace {

// x, y: (vectors, D) flat with vectors = rows·N; pairs = vectors·D/2. T: float or __nv_bfloat16.
template <typename T>
__global__ void rotary_kernel(const T* __restrict__ x, const float* __restrict__ cos_table,
                              const float* __restrict__ sin_table, T* __restrict__ y, int64_t n,
                              int64_t half, float sign, int64_t pairs) {
  URPE_GRID_STRIDE(k, pairs) {
    const int64_t v = k / half, i = k % half, pos = v % n;
    const float c = cos_table[pos * half + i], s = sign * sin_table[pos * half + i];
    const float a = load(x, v * 2 * half + i), b = load(x, v * 2 * half + i + half);
    store(y, v * 2 * half + i, a * c - b * s);
    store(y, v * 2 * half + i + half, b * c + a * s);
  }
}

}  // namespace

void rotary_cuda(const Tensor& x, const Tensor& cos, const Tensor& sin, bool inverse, Tensor& y) {
  cuda::Context& ctx = context_of(y);
  const int64_t n = x.size(-2), half = x.size(-1) / 2, pairs = x.numel() / 2;
  if (pairs == 0) return;
  const int threads = 256;
  with_device_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    rotary_kernel<T><<<grid_for(ctx, pairs, threads), threads, 0, ctx.stream()>>>(
        values<T>(x), cos.f32(), sin.f32(), values<T>(y), n, half, inverse ? -1.0f : 1.0f, pairs);
  });
  CUDA_CHECK_LAUNCH("rotary_kernel");
}

}  // namespace urpe::kernels
