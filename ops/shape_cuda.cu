// CUDA copies for permute / concat / slice (maths in shape.h). They move raw words, 32-bit (f32,
// i32) or 16-bit (bf16), so every dtype shares them.
//
// permute: one thread per output word; the output index is decomposed into coordinates and
//   mapped to the input offset through the permuted strides. Writes are coalesced, reads are
//   strided (a tiled transpose is the later fast path). Bytes: 4 read + 4 written per element
//   (2 + 2 for bf16). A word is one element, or, when the innermost axis stays innermost (the
//   attention's (B, n, H, dh) ↔ (B, H, n, dh)), the widest of 16, 8 or 4 bytes dividing that
//   axis's row: a thread's index arithmetic then moves up to 8 bf16 values instead of one. (One
//   2-byte word a thread, bf16 permutes ran at half f32's bytes per second, as long as f32's:
//   3.9 ms of Table 5's bf16 step on an H100, bench/results/gpu_h100_2026-11-27.md.)
// copy_window: dst[o, dst_start + r, i] (+)= src[o, src_start + r, i], one thread per copied
//   element; both sides contiguous along (r, i). Bytes: 4 read + 4 written (+4 read when
//   accumulating) per element, half of each for bf16 (accumulated in FP32, rounded once).
#include "ops/bf16_values.cuh"
#include "ops/cuda_common.cuh"
#include "ops/shape.h"

namespace urpe::kernels {

namespace {

// Words of 16 and 8 bytes copied whole (aligned, so one vector load and store each).
struct alignas(16) Words16 {
  uint32_t w[4];
};
struct alignas(8) Words8 {
  uint32_t w[2];
};

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
  const int dims = x.dim();
  const void* src = x.impl().storage->data;
  void* dst = out.impl().storage->data;
  // The word: an element, or a piece of the innermost row when that axis stays innermost.
  const int64_t element = dtype_size(x.dtype()), row_bytes = x.shape()[dims - 1] * element;
  int64_t word = element;
  if (order[dims - 1] == dims - 1)
    for (const int64_t w : {16, 8, 4})
      if (w > element && row_bytes % w == 0 && reinterpret_cast<uintptr_t>(src) % w == 0 &&
          reinterpret_cast<uintptr_t>(dst) % w == 0) {
        word = w;
        break;
      }
  const int64_t per_element = word / element;  // elements a word holds (1 without widening)
  PermuteGeometry geo{};
  geo.dims = dims;
  int64_t in_stride[kMaxDims] = {0};
  int64_t s = 1;
  for (int d = dims - 1; d >= 0; --d) {
    in_stride[d] = s;
    s *= x.shape()[d] / (d == dims - 1 ? per_element : 1);  // strides in words
  }
  for (int d = 0; d < dims; ++d) {
    geo.out_dims[d] = out.shape()[d] / (d == dims - 1 ? per_element : 1);
    geo.step[d] = in_stride[order[d]];
  }
  const int64_t words = n / per_element;
  const int threads = 256;
  const auto launch = [&](auto tag) {
    using Word = decltype(tag);
    permute_kernel<Word><<<grid_for(ctx, words, threads), threads, 0, ctx.stream()>>>(
        static_cast<const Word*>(src), static_cast<Word*>(dst), geo, words);
  };
  switch (word) {
    case 16: launch(Words16{}); break;
    case 8: launch(Words8{}); break;
    case 4: launch(uint32_t{}); break;
    default: launch(uint16_t{}); break;
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
