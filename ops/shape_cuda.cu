// CUDA copies for permute / concat / slice (maths in shape.h). They move raw words, 32-bit (f32,
// i32) or 16-bit (bf16), so every dtype shares them.
//
// permute: one thread per output element; the output index is decomposed into coordinates and
//   mapped to the input offset through the permuted strides. Writes are coalesced, reads are
//   strided (a tiled transpose is the later fast path). Bytes: 4 read + 4 written per element
//   (2 + 2 for bf16: the same kernel on 16-bit words).
// copy_window: dst[o, dst_start + r, i] (+)= src[o, src_start + r, i], one thread per copied
//   element; both sides contiguous along (r, i). Bytes: 4 read + 4 written (+4 read when
//   accumulating) per element, half of each for bf16 (accumulated in FP32, rounded once).
#include "ops/bf16_values.cuh"
#include "ops/cuda_common.cuh"
#include "ops/shape.h"

namespace urpe::kernels {

namespace {

struct PermuteGeometry {
  int dims;
  int64_t out_dims[kMaxDims];
  int64_t step[kMaxDims];  // input stride of output axis d
};

template <typename Word>
__global__ void permute_kernel(const Word* __restrict__ src, Word* __restrict__ dst,
                               PermuteGeometry geo, int64_t n) {
  URPE_GRID_STRIDE(flat, n) {
    int64_t rest = flat, offset = 0;
    // Fully unrolled so the geometry is indexed by constants and stays in registers.
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d < geo.dims) {
        offset += (rest % geo.out_dims[d]) * geo.step[d];
        rest /= geo.out_dims[d];
      }
    }
    dst[flat] = src[offset];
  }
}

// Word: uint32_t (f32, i32) or uint16_t (bf16), copied as bits.
template <typename Word>
__global__ void copy_window_kernel(const Word* __restrict__ src, int64_t src_n, int64_t src_start,
                                   Word* __restrict__ dst, int64_t dst_n, int64_t dst_start,
                                   int64_t count, int64_t inner, int64_t total) {
  const int64_t per_outer = count * inner;
  URPE_GRID_STRIDE(k, total) {
    const int64_t o = k / per_outer, ri = k % per_outer;
    dst[(o * dst_n + dst_start) * inner + ri] = src[(o * src_n + src_start) * inner + ri];
  }
}

// T: float or __nv_bfloat16; the sum in FP32, stored once.
template <typename T>
__global__ void accumulate_window_kernel(const T* __restrict__ src, int64_t src_n,
                                         int64_t src_start, T* __restrict__ dst,
                                         int64_t dst_n, int64_t dst_start, int64_t count,
                                         int64_t inner, int64_t total) {
  const int64_t per_outer = count * inner;
  URPE_GRID_STRIDE(k, total) {
    const int64_t o = k / per_outer, ri = k % per_outer;
    const int64_t at = (o * dst_n + dst_start) * inner + ri;
    store(dst, at, load(dst, at) + load(src, (o * src_n + src_start) * inner + ri));
  }
}

}  // namespace

void permute_cuda(const Tensor& x, const std::vector<int>& order, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const int64_t n = out.numel();
  if (n == 0) return;
  PermuteGeometry geo{};
  geo.dims = x.dim();
  int64_t in_stride[kMaxDims] = {0};
  int64_t s = 1;
  for (int d = geo.dims - 1; d >= 0; --d) {
    in_stride[d] = s;
    s *= x.shape()[d];
  }
  for (int d = 0; d < geo.dims; ++d) {
    geo.out_dims[d] = out.shape()[d];
    geo.step[d] = in_stride[order[d]];
  }
  const int threads = 256;
  if (dtype_size(x.dtype()) == 2) {
    permute_kernel<uint16_t><<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(
        static_cast<const uint16_t*>(x.impl().storage->data),
        static_cast<uint16_t*>(out.impl().storage->data), geo, n);
  } else {
    permute_kernel<uint32_t><<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(
        static_cast<const uint32_t*>(x.impl().storage->data),
        static_cast<uint32_t*>(out.impl().storage->data), geo, n);
  }
  CUDA_CHECK_LAUNCH("permute_kernel");
}

void copy_window_cuda(const Tensor& src, int64_t src_n, int64_t src_start, Tensor& dst,
                      int64_t dst_n, int64_t dst_start, int64_t outer, int64_t count,
                      int64_t inner, bool accumulate) {
  cuda::Context& ctx = context_of(dst);
  const int64_t total = outer * count * inner;
  if (total == 0) return;
  const int threads = 256;
  const int blocks = grid_for(ctx, total, threads);
  if (accumulate) {
    with_device_value_type(src.dtype(), [&](auto tag) {
      using T = decltype(tag);
      accumulate_window_kernel<T><<<blocks, threads, 0, ctx.stream()>>>(
          values<T>(src), src_n, src_start, values<T>(dst), dst_n, dst_start, count, inner, total);
    });
    CUDA_CHECK_LAUNCH("accumulate_window_kernel");
  } else if (dtype_size(src.dtype()) == 2) {
    copy_window_kernel<uint16_t><<<blocks, threads, 0, ctx.stream()>>>(
        static_cast<const uint16_t*>(src.impl().storage->data), src_n, src_start,
        static_cast<uint16_t*>(dst.impl().storage->data), dst_n, dst_start, count, inner, total);
    CUDA_CHECK_LAUNCH("copy_window_kernel");
  } else {
    copy_window_kernel<uint32_t><<<blocks, threads, 0, ctx.stream()>>>(
        static_cast<const uint32_t*>(src.impl().storage->data), src_n, src_start,
        static_cast<uint32_t*>(dst.impl().storage->data), dst_n, dst_start, count, inner, total);
    CUDA_CHECK_LAUNCH("copy_window_kernel");
  }
}

}  // namespace urpe::kernels
