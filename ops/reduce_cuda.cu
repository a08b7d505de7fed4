// CUDA reductions over one axis (maths in reduce.h), x viewed as (outer, n, inner).
//
// sum_axis, out[o, i] = alpha · Σ_j x[o, j, i], deterministic in two passes:
//   inner = 1 (rows are contiguous): the row is cut into fixed chunks of 8192 values; one block
//     per (row, chunk) adds its values with a strided loop and a fixed shuffle tree (double).
//   inner > 1: one thread per (chunk, o, i) adds its chunk of j in order (consecutive i:
//     coalesced), chunks chosen from the shapes so about 64K threads work.
//   Pass 2: one thread per (o, i) adds its chunk partials in chunk order and scales by alpha.
//   The chunking depends only on the shapes, never on the device, so results are reproducible.
//   x f32 or bf16 (the raw overload: linear's ∂b from a bf16 g, read as it is).
//   Bytes: 4·outer·n·inner read (2· for bf16), 8·chunks·outer·inner partials, 4·outer·inner written.
// broadcast_axis, out[o, j, i] = alpha · g[o, i]: one thread per output element;
//   4·outer·inner read (cached), 4·outer·n·inner written.
// argmax_rows, out[r] = the first index of row r's maximum: one block per row, each thread keeps
//   its strided best (value, index), then a shuffle tree and one pass over the warps' bests;
//   4·rows·cols read, 4·rows written.
#include "ops/bf16_values.cuh"
#include "ops/cuda_common.cuh"
#include "ops/reduce.h"

namespace urpe::kernels {

namespace {

constexpr int64_t kRowChunk = 8192;

// partial[o·chunks + c] = Σ_{j in chunk c} x[o, j]; one block per (o, c), blocks grid-strided.
// x is f32 or bf16 (each value widened as it is read).
template <typename T>
__global__ void sum_rows_partial_kernel(const T* __restrict__ x, int64_t outer, int64_t n,
                                        int64_t chunks, double* __restrict__ partial) {
  URPE_SHARED(double, shared, [32]);
  for (int64_t block = blockIdx.x; block < outer * chunks; block += gridDim.x) {
    const int64_t o = block / chunks, c = block % chunks;
    const int64_t begin = c * kRowChunk, end = min(n, begin + kRowChunk);
    const T* row = x + o * n;
    double total = 0;
    for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) total += load(row, j);
    total = block_sum(total, shared);
    if (threadIdx.x == 0) partial[block] = total;
  }
}

// partial[(c·outer + o)·inner + i] = Σ_{j in chunk c} x[o, j, i]
template <typename T>
__global__ void sum_strided_partial_kernel(const T* __restrict__ x, int64_t outer, int64_t n,
                                           int64_t inner, int64_t chunk, int64_t chunks,
                                           double* __restrict__ partial) {
  const int64_t per_chunk = outer * inner;
  URPE_GRID_STRIDE(idx, chunks * per_chunk) {
    const int64_t c = idx / per_chunk, oi = idx % per_chunk;
    const int64_t o = oi / inner, i = oi % inner;
    const int64_t j_end = min(n, (c + 1) * chunk);
    double total = 0;
    for (int64_t j = c * chunk; j < j_end; ++j) total += load(x, (o * n + j) * inner + i);
    partial[idx] = total;
  }
}

// out[m] = alpha · Σ_c partial[c·stride_c + m·stride_m], c ascending.
__global__ void sum_partials_kernel(const double* __restrict__ partial, int64_t outputs,
                                    int64_t chunks, int64_t stride_c, int64_t stride_m,
                                    float alpha, float* __restrict__ out) {
  URPE_GRID_STRIDE(m, outputs) {
    double total = 0;
    for (int64_t c = 0; c < chunks; ++c) total += partial[c * stride_c + m * stride_m];
    out[m] = static_cast<float>(alpha * total);
  }
}

__global__ void broadcast_axis_kernel(const float* __restrict__ g, int64_t n, int64_t inner,
                                      float alpha, float* __restrict__ out, int64_t total) {
  URPE_GRID_STRIDE(k, total) {
    const int64_t o = k / (n * inner), i = k % inner;
    out[k] = alpha * g[o * inner + i];
  }
}

// (value, index) a beats (value, index) b: larger value, or the same value at a smaller index.
__device__ __forceinline__ bool beats(float va, int64_t ia, float vb, int64_t ib) {
  return va > vb || (va == vb && ia < ib);
}

// out[r] = min { c : x[r, c] = max x[r, ·] }, NaN read as -inf; one block per row, grid-strided.
__global__ void argmax_rows_kernel(const float* __restrict__ x, int64_t rows, int64_t cols,
                                   int32_t* __restrict__ out) {
  URPE_SHARED(float, best_values, [32]);
  URPE_SHARED(int64_t, best_indices, [32]);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = x + r * cols;
    float value = -INFINITY;
    int64_t index = INT64_MAX;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float v = isnan(row[c]) ? -INFINITY : row[c];
      if (beats(v, c, value, index)) {
        value = v;
        index = c;
      }
    }
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      const float v = __shfl_xor_sync(0xffffffffu, value, offset);
      const int64_t i = __shfl_xor_sync(0xffffffffu, index, offset);
      if (beats(v, i, value, index)) {
        value = v;
        index = i;
      }
    }
    __syncthreads();  // the previous row's bests may still be read
    if (lane == 0) {
      best_values[warp] = value;
      best_indices[warp] = index;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < warps; ++w)
        if (beats(best_values[w], best_indices[w], value, index)) {
          value = best_values[w];
          index = best_indices[w];
        }
      out[r] = static_cast<int32_t>(index);
    }
  }
}

}  // namespace

void argmax_rows_cuda(const Tensor& x, int64_t rows, int64_t cols, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  if (rows == 0) return;
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>(rows, 65535);
  argmax_rows_kernel<<<static_cast<unsigned>(blocks), threads, 0, ctx.stream()>>>(x.f32(), rows, cols,
                                                                                  out.i32());
  CUDA_CHECK_LAUNCH("argmax_rows_kernel");
}

namespace {

// The two passes above over an f32 or bf16 x; out (outer·inner) f32.
template <typename T>
void sum_axis_passes(cuda::Context& ctx, const T* x, int64_t outer, int64_t n, int64_t inner, float alpha,
                     float* out) {
  const int64_t outputs = outer * inner;
  if (outputs == 0) return;
  if (n == 0) {
    CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float) * outputs, ctx.stream()));  // 0.0f is all zero bits
    return;
  }
  const int threads = 256;
  if (inner == 1) {
    const int64_t chunks = (n + kRowChunk - 1) / kRowChunk;
    cuda::DeviceBuffer partial(ctx, sizeof(double) * outer * chunks);
    sum_rows_partial_kernel<T><<<grid_for(ctx, outer * chunks * threads, threads), threads, 0,
                              ctx.stream()>>>(x, outer, n, chunks, partial.as<double>());
    CUDA_CHECK_LAUNCH("sum_rows_partial_kernel");
    // partial is (outer, chunks): chunk stride 1, output stride `chunks`.
    sum_partials_kernel<<<grid_for(ctx, outer, threads), threads, 0, ctx.stream()>>>(
        partial.as<double>(), outer, chunks, 1, chunks, alpha, out);
    CUDA_CHECK_LAUNCH("sum_partials_kernel");
    return;
  }
  const int64_t wanted = std::max<int64_t>(1, (int64_t(1) << 16) / outputs);
  const int64_t chunks_guess = std::min<int64_t>(n, wanted);
  const int64_t chunk = (n + chunks_guess - 1) / chunks_guess;
  const int64_t chunks = (n + chunk - 1) / chunk;
  cuda::DeviceBuffer partial(ctx, sizeof(double) * chunks * outputs);
  sum_strided_partial_kernel<T><<<grid_for(ctx, chunks * outputs, threads), threads, 0,
                               ctx.stream()>>>(x, outer, n, inner, chunk, chunks, partial.as<double>());
  CUDA_CHECK_LAUNCH("sum_strided_partial_kernel");
  // partial is (chunks, outputs): chunk stride `outputs`, output stride 1.
  sum_partials_kernel<<<grid_for(ctx, outputs, threads), threads, 0, ctx.stream()>>>(
      partial.as<double>(), outputs, chunks, outputs, 1, alpha, out);
  CUDA_CHECK_LAUNCH("sum_partials_kernel");
}

}  // namespace

void sum_axis_cuda(const Tensor& x, int64_t outer, int64_t n, int64_t inner, float alpha,
                   Tensor& out) {
  sum_axis_passes(context_of(out), x.f32(), outer, n, inner, alpha, out.f32());
}

void sum_axis_cuda(const Device& device, const bf16* x, int64_t outer, int64_t n, int64_t inner, float alpha,
                   float* out) {
  URPE_CHECK(device.is_cuda() && device.context() != nullptr, "sum_axis_cuda: not a CUDA device");
  cuda::Context& ctx = *device.context();
  ctx.activate();
  sum_axis_passes(ctx, reinterpret_cast<const __nv_bfloat16*>(x), outer, n, inner, alpha, out);
}

void broadcast_axis_cuda(const Tensor& g, int64_t outer, int64_t n, int64_t inner, float alpha,
                         Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const int64_t total = outer * n * inner;
  if (total == 0) return;
  const int threads = 256;
  broadcast_axis_kernel<<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
      g.f32(), n, inner, alpha, out.f32(), total);
  CUDA_CHECK_LAUNCH("broadcast_axis_kernel");
}

}  // namespace urpe::kernels
