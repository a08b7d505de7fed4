// CUDA kernels for embedding lookup and gather_table (maths in embedding.h).
//
// embedding forward: out[p, d] = table[ids[p], d], one thread per output element (consecutive d:
//   coalesced). Bytes: 4·N·D read from the table rows used, 4·N·D written, 4·N ids.
// embedding backward: ∂table[v, :] = Σ_{p: ids[p]=v} g[p, :]. No float atomics: the positions are
//   grouped by id with a stable sort (BucketIndex), then one block owns each vocabulary row and
//   its threads (one per d) add the rows g[p, :] of that id in ascending p. Rows nobody used get
//   zeros, and so does the padding row (padding_idx, −1 for none). Bytes: 4·N·D of g read once,
//   4·V·D written, plus the sort of N ids. Narrow tables (D < 32: Graphormer's per-head bias
//   tables, D = H = 8, read by millions of ids) would leave most of a block idle and one thread
//   adding a whole row's positions in sequence (43 ms of a 149 ms Graphormer step on an H200), so
//   there one block owns each (v, d) and its threads split the row's positions in a fixed stride,
//   added by a fixed shuffle tree: still no atomics, still the same bits every run.
// gather_table forward: out[h, i, j] = table[h, map[i, j]], one thread per output element.
//   Bytes: 4·H·Nq·Nk written, the map read H times (cached), the table (small, cached).
// gather_table backward: ∂table[h, k] = Σ_{(i,j): map=k} g[h, i, j]: positions grouped by bucket
//   (BucketIndex), one block per (h, k) adds its bucket's values with a strided loop and a fixed
//   shuffle tree in double. Bytes: 4·H·Nq·Nk of g read (gathered), 4·H·K written.
// Ids and map values are range-checked by the public ops (embedding.cpp) before any kernel runs,
// from their bounds (index_bounds: per-block min/max, then one block over the blocks' bounds; 4·N
// read, 8 bytes back to the host); the kernels still never read outside a table (an out-of-range
// id gives zeros).
#include "ops/bucket_index_cuda.cuh"
#include "tensor/cuda_backend.h"
#include "ops/cuda_common.cuh"
#include "ops/embedding.h"

namespace urpe::kernels {

namespace {

// out: (N, D); ids: (N,); table: (V, D)
__global__ void embedding_forward_kernel(const float* __restrict__ table, int64_t vocab,
                                         int64_t dim, const int32_t* __restrict__ ids,
                                         float* __restrict__ out, int64_t total) {
  URPE_GRID_STRIDE(k, total) {
    const int64_t p = k / dim, d = k % dim;
    const int32_t id = ids[p];
    out[k] = id >= 0 && id < vocab ? table[static_cast<int64_t>(id) * dim + d] : 0.0f;
  }
}

// One block per vocabulary row v (blocks grid-strided); threads over d.
__global__ void embedding_backward_rows_kernel(const float* __restrict__ grad_out, int64_t dim,
                                               const int32_t* __restrict__ positions,
                                               const int32_t* __restrict__ offsets, int64_t vocab,
                                               int64_t padding_idx, float* __restrict__ grad_table) {
  for (int64_t v = blockIdx.x; v < vocab; v += gridDim.x) {
    const int32_t end = offsets[v + 1], begin = v == padding_idx ? end : offsets[v];
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
      double total = 0;
      for (int32_t t = begin; t < end; ++t)
        total += grad_out[static_cast<int64_t>(positions[t]) * dim + d];
      grad_table[v * dim + d] = static_cast<float>(total);
    }
  }
}

// One block per (v, d) (blocks grid-strided): threads stride over the positions of id v.
__global__ void embedding_backward_narrow_kernel(const float* __restrict__ grad_out, int64_t dim,
                                                 const int32_t* __restrict__ positions,
                                                 const int32_t* __restrict__ offsets, int64_t vocab,
                                                 int64_t padding_idx, float* __restrict__ grad_table) {
  URPE_SHARED(double, shared, [32]);
  for (int64_t vd = blockIdx.x; vd < vocab * dim; vd += gridDim.x) {
    const int64_t v = vd / dim, d = vd % dim;
    const int32_t end = offsets[v + 1], begin = v == padding_idx ? end : offsets[v];
    double total = 0;
    for (int64_t t = begin + threadIdx.x; t < end; t += blockDim.x)
      total += grad_out[static_cast<int64_t>(positions[t]) * dim + d];
    total = block_sum(total, shared);
    if (threadIdx.x == 0) grad_table[vd] = static_cast<float>(total);
  }
}

// out: (H, Nq·Nk); map: (Nq·Nk,); table: (H, K)
__global__ void gather_table_forward_kernel(const float* __restrict__ table, int64_t buckets,
                                            const int32_t* __restrict__ map, int64_t cells,
                                            float* __restrict__ out, int64_t total) {
  URPE_GRID_STRIDE(k, total) {
    const int64_t h = k / cells, ij = k % cells;
    const int32_t key = map[ij];
    out[k] = key >= 0 && key < buckets ? table[h * buckets + key] : 0.0f;
  }
}

// One block per (h, k) (blocks grid-strided): grad_table[h, k] = Σ over bucket k of g[h, p].
__global__ void gather_table_backward_kernel(const float* __restrict__ grad_out, int64_t cells,
                                             const int32_t* __restrict__ positions,
                                             const int32_t* __restrict__ offsets, int64_t heads,
                                             int64_t buckets, float* __restrict__ grad_table) {
  URPE_SHARED(double, shared, [32]);
  for (int64_t hk = blockIdx.x; hk < heads * buckets; hk += gridDim.x) {
    const int64_t h = hk / buckets, key = hk % buckets;
    const int32_t begin = offsets[key], end = offsets[key + 1];
    const float* g = grad_out + h * cells;
    double total = 0;
    for (int64_t t = begin + threadIdx.x; t < end; t += blockDim.x) total += g[positions[t]];
    total = block_sum(total, shared);
    if (threadIdx.x == 0) grad_table[hk] = static_cast<float>(total);
  }
}

// bounds[2·b], bounds[2·b + 1] = min, max of block b's grid-strided share of x (n > 0).
__global__ void index_bounds_partial_kernel(const int32_t* __restrict__ x, int64_t n,
                                            int32_t* __restrict__ bounds) {
  URPE_SHARED(int32_t, lows, [32]);
  URPE_SHARED(int32_t, highs, [32]);
  int32_t low = INT32_MAX, high = INT32_MIN;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    low = min(low, x[k]);
    high = max(high, x[k]);
  }
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    low = min(low, __shfl_xor_sync(0xffffffffu, low, offset));
    high = max(high, __shfl_xor_sync(0xffffffffu, high, offset));
  }
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) {
    lows[warp] = low;
    highs[warp] = high;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < int(blockDim.x / kWarp); ++w) {
      low = min(low, lows[w]);
      high = max(high, highs[w]);
    }
    bounds[2 * blockIdx.x] = low;
    bounds[2 * blockIdx.x + 1] = high;
  }
}

// out[0], out[1] = min, max over `blocks` partial pairs; one thread (blocks ≤ a few hundred).
__global__ void index_bounds_total_kernel(const int32_t* __restrict__ bounds, int64_t blocks,
                                          int32_t* __restrict__ out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int32_t low = bounds[0], high = bounds[1];
  for (int64_t b = 1; b < blocks; ++b) {
    low = min(low, bounds[2 * b]);
    high = max(high, bounds[2 * b + 1]);
  }
  out[0] = low;
  out[1] = high;
}

}  // namespace

IndexBounds index_bounds_cuda(const Tensor& indices) {
  cuda::Context& ctx = context_of(indices);
  const int64_t n = indices.numel();
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 264);
  cuda::DeviceBuffer partial(ctx, sizeof(int32_t) * 2 * blocks), total(ctx, sizeof(int32_t) * 2);
  index_bounds_partial_kernel<<<static_cast<unsigned>(blocks), threads, 0, ctx.stream()>>>(
      indices.i32(), n, partial.as<int32_t>());
  CUDA_CHECK_LAUNCH("index_bounds_partial_kernel");
  index_bounds_total_kernel<<<1, kWarp, 0, ctx.stream()>>>(partial.as<int32_t>(), blocks, total.as<int32_t>());
  CUDA_CHECK_LAUNCH("index_bounds_total_kernel");
  int32_t host[2];
  cuda::copy_device_to_host(&ctx, host, total.as<int32_t>(), sizeof host);
  return {host[0], host[1]};
}

void embedding_forward_cuda(const Tensor& table, const Tensor& ids, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const int64_t vocab = table.size(0), dim = table.size(1), total = ids.numel() * dim;
  if (total == 0) return;
  const int threads = 256;
  embedding_forward_kernel<<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
      table.f32(), vocab, dim, ids.i32(), out.f32(), total);
  CUDA_CHECK_LAUNCH("embedding_forward_kernel");
}

void embedding_backward_cuda(const Tensor& ids, const Tensor& grad_out, Tensor& grad_table,
                             int64_t padding_idx) {
  cuda::Context& ctx = context_of(grad_table);
  const int64_t vocab = grad_table.size(0), dim = grad_table.size(1);
  if (vocab * dim == 0) return;
  const BucketIndex index(ctx, ids.i32(), ids.numel(), vocab, "embedding backward");
  if (dim < kWarp) {
    const int threads = 256;
    embedding_backward_narrow_kernel<<<grid_for(ctx, vocab * dim * threads, threads), threads, 0,
                                       ctx.stream()>>>(grad_out.f32(), dim, index.positions(),
                                                       index.offsets(), vocab, padding_idx,
                                                       grad_table.f32());
    CUDA_CHECK_LAUNCH("embedding_backward_narrow_kernel");
    return;
  }
  const int threads = 128;
  embedding_backward_rows_kernel<<<grid_for(ctx, vocab * threads, threads), threads, 0,
                                   ctx.stream()>>>(grad_out.f32(), dim, index.positions(),
                                                   index.offsets(), vocab, padding_idx,
                                                   grad_table.f32());
  CUDA_CHECK_LAUNCH("embedding_backward_rows_kernel");
}

void gather_table_forward_cuda(const Tensor& table, const Tensor& map, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const int64_t heads = table.size(0), buckets = table.size(1), cells = map.numel();
  const int64_t total = heads * cells;
  if (total == 0) return;
  const int threads = 256;
  gather_table_forward_kernel<<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
      table.f32(), buckets, map.i32(), cells, out.f32(), total);
  CUDA_CHECK_LAUNCH("gather_table_forward_kernel");
}

void gather_table_backward_cuda(const Tensor& map, const Tensor& grad_out, Tensor& grad_table) {
  cuda::Context& ctx = context_of(grad_table);
  const int64_t heads = grad_table.size(0), buckets = grad_table.size(1), cells = map.numel();
  if (heads * buckets == 0) return;
  const BucketIndex index(ctx, map.i32(), cells, buckets, "gather_table backward");
  const int threads = 256;
  gather_table_backward_kernel<<<grid_for(ctx, heads * buckets * threads, threads), threads, 0,
                                 ctx.stream()>>>(grad_out.f32(), cells, index.positions(),
                                                 index.offsets(), heads, buckets,
                                                 grad_table.f32());
  CUDA_CHECK_LAUNCH("gather_table_backward_kernel");
}

}  // namespace urpe::kernels
