// CUDA kernels for embedding lookup and gather_table (maths in embedding.h).
//
// embedding forward: out[p, d] = table[ids[p], d], one thread per output element (consecutive d:
//   coalesced). Bytes: 4·N·D read from the table rows used, 4·N·D written, 4·N ids.
// embedding backward: ∂table[v, :] = Σ_{p: ids[p]=v} g[p, :]. A table that fits one block's
//   shared tile (V·D ≤ 12,288 floats: Graphormer's atom, degree and bias tables) takes
//   embedding_sum's chunked partials below (S = 1), with no sort. Larger ones: no float atomics, the positions are
//   grouped by id with a stable sort (BucketIndex), then one block owns each vocabulary row; its
//   threads split the columns and, in a fixed stride, the row's positions, and the partials are
//   added in a fixed order (one thread per column walking every position of a frequent id took
//   ~0.2 ms per call at ZINC's atom table on the H200). Rows nobody used get
//   zeros, and so does the padding row (padding_idx, −1 for none). Bytes: 4·N·D of g read once,
//   4·V·D written, plus the sort of N ids. Narrow tables (D < 32: Graphormer's per-head bias
//   tables, D = H = 8, read by millions of ids) would leave most of a block idle and one thread
//   adding a whole row's positions in sequence (43 ms of a 149 ms Graphormer step on an H200), so
//   there one block owns each (v, d) and its threads split the row's positions in a fixed stride,
//   added by a fixed shuffle tree: still no atomics, still the same bits every run.
// embedding_sum forward: out[p, d] = Σ_{k < S·G} tables[k / G, ids[p, k], d], one thread per
//   (p, d), k in order (the CPU's order: the same float sum). Bytes: 4·P·K ids (each read by the D
//   threads of its row, cached), the K table rows (small, cached), 4·P·D written.
// embedding_sum backward: ∂tables[s, v, :] = Σ_{(p, k): k/G = s, ids[p,k] = v} g[p, :]. No sort and
//   no float atomics: the rows p are cut into chunks (a power of two from 32 to 512 rows, from the
//   row count alone; more when the partials would not fit kSumPartialFloats), and the table rows (s, v) into tiles that fit 48 KiB of
//   shared memory; block (chunk, tile) owns a shared copy of its tile, each of its threads owns
//   the columns (s, d) of that tile, so it alone adds into them, p then k in order; the tile goes
//   to the chunk's partials, and a second kernel adds the chunks per table element in chunk order
//   (in double). Same bits every run, for any GPU (the chunking depends on the shapes only).
//   Bytes: 4·P·K ids and 4·P·D of g read once per tile (one tile for Graphormer's tables), the
//   partials (chunks · S·V·D) written and read once, 4·S·V·D written.
//   Why not the sort path of embedding backward: Graphormer's multi-hop ids (20 hops × 175k pairs
//   on ZINC) are almost all the few bond types and the padding id, so a per-id owner walks ~10^5
//   positions in sequence; the chunked partials spread them over every SM.
// unpack_ids: one thread per id, reading its word (shared by `per` neighbours: cached). Bytes:
//   4·R·W read, 4·R·C written.
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

// One block per vocabulary row v (blocks grid-strided). Thread (slice, column): columns d ≡ column
// (mod cols), positions t ≡ slice (mod slices) of id v; then slice 0 adds the slices' partials in
// slice order. cols = min(dim, blockDim), slices = blockDim / cols: a frequent id (ZINC's carbon,
// ~2,000 positions a batch) is walked by `slices` threads at once instead of one.
constexpr int kRowsThreads = 512;
__global__ void embedding_backward_rows_kernel(const float* __restrict__ grad_out, int64_t dim,
                                               const int32_t* __restrict__ positions,
                                               const int32_t* __restrict__ offsets, int64_t vocab,
                                               int64_t padding_idx, float* __restrict__ grad_table) {
  URPE_SHARED(double, partial, [kRowsThreads]);
  const int64_t cols = min(dim, int64_t(blockDim.x)), slices = blockDim.x / cols;
  const int64_t column = threadIdx.x % cols, slice = threadIdx.x / cols;
  const bool active = slice < slices;  // blockDim.x − slices·cols threads have no slice
  for (int64_t v = blockIdx.x; v < vocab; v += gridDim.x) {
    const int32_t end = offsets[v + 1], begin = v == padding_idx ? end : offsets[v];
    for (int64_t d0 = 0; d0 < dim; d0 += cols) {
      const int64_t d = d0 + column;
      double total = 0;
      if (active && d < dim) {
#pragma unroll 4
        for (int64_t t = begin + slice; t < end; t += slices)
          total += grad_out[static_cast<int64_t>(positions[t]) * dim + d];
      }
      partial[threadIdx.x] = total;
      __syncthreads();
      if (slice == 0 && d < dim) {
        double sum = 0;
        for (int64_t k = 0; k < slices; ++k) sum += partial[k * cols + column];
        grad_table[v * dim + d] = static_cast<float>(sum);
      }
      __syncthreads();
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

constexpr int64_t kSumTileFloats = 12288;           // 48 KiB: one block's shared tile of ∂tables
constexpr int64_t kSumChunkRows = 512;              // rows p per chunk of the partials, at most
constexpr int64_t kSumPartialFloats = int64_t(1) << 25;  // 128 MiB of partials at most

// out: (P, D); ids: (P, L), columns k < K read; tables: (S, V, D), slot k reads table k / group
__global__ void embedding_sum_forward_kernel(const float* __restrict__ tables, int64_t vocab, int64_t dim,
                                             const int32_t* __restrict__ ids, int64_t stride, int64_t slots,
                                             int64_t group, float* __restrict__ out, int64_t total) {
  URPE_GRID_STRIDE(e, total) {
    const int64_t p = e / dim, d = e % dim;
    const int32_t* row = ids + p * stride;
    float acc = 0.0f;
    for (int64_t k = 0; k < slots; ++k) {
      const int32_t id = row[k];
      if (id >= 0 && id < vocab) acc += tables[((k / group) * vocab + id) * dim + d];
    }
    out[e] = acc;
  }
}

// grid (chunks, tiles). partials: (chunks, S·V·D); block (c, t) writes rows [r0, r1) of chunk c,
// r = s·V + v, tile t = rows [t·rows_per_tile, …).
__global__ void embedding_sum_backward_partial_kernel(const float* __restrict__ grad_out, int64_t dim,
                                                      const int32_t* __restrict__ ids, int64_t stride,
                                                      int64_t rows, int64_t tables, int64_t vocab,
                                                      int64_t group, int64_t chunk_rows, int64_t rows_per_tile,
                                                      float* __restrict__ partials) {
  URPE_SHARED(float, tile, [kSumTileFloats]);
  const int64_t table_rows = tables * vocab;
  const int64_t r0 = blockIdx.y * rows_per_tile, r1 = min(r0 + rows_per_tile, table_rows);
  const int64_t p0 = blockIdx.x * chunk_rows, p1 = min(p0 + chunk_rows, rows);
  const int64_t tile_floats = (r1 - r0) * dim;
  for (int64_t i = threadIdx.x; i < tile_floats; i += blockDim.x) tile[i] = 0.0f;
  __syncthreads();
  // The tables with a row in this tile; thread `column` owns (s, d) of them.
  const int64_t s0 = r0 / vocab, s1 = (r1 - 1) / vocab + 1;
  for (int64_t column = threadIdx.x; column < (s1 - s0) * dim; column += blockDim.x) {
    const int64_t s = s0 + column / dim, d = column % dim;
#pragma unroll 4
    for (int64_t p = p0; p < p1; ++p) {
      const float g = grad_out[p * dim + d];
      const int32_t* id = ids + p * stride + s * group;
      for (int64_t k = 0; k < group; ++k) {
        const int64_t r = s * vocab + id[k];
        if (id[k] >= 0 && id[k] < vocab && r >= r0 && r < r1) tile[(r - r0) * dim + d] += g;
      }
    }
  }
  __syncthreads();
  float* out = partials + blockIdx.x * table_rows * dim + r0 * dim;
  for (int64_t i = threadIdx.x; i < tile_floats; i += blockDim.x) out[i] = tile[i];
}

// grad_tables[e] = Σ_c partials[c, e], c in order, in double; zeros on the rows v = padding_idx
// of every table (e = (s·V + v)·D + d).
__global__ void embedding_sum_backward_total_kernel(const float* __restrict__ partials, int64_t chunks,
                                                    int64_t elements, int64_t vocab, int64_t dim,
                                                    int64_t padding_idx, float* __restrict__ grad_tables) {
  URPE_GRID_STRIDE(e, elements) {
    double total = 0;
    if ((e / dim) % vocab != padding_idx)
      for (int64_t c = 0; c < chunks; ++c) total += partials[c * elements + e];
    grad_tables[e] = static_cast<float>(total);
  }
}

// out: (R, C) ids; packed: (R, W) words of `per` fields of `bits` bits (unpack_ids in embedding.h).
__global__ void unpack_ids_kernel(const uint32_t* __restrict__ packed, int64_t words, int64_t columns, int bits,
                                  int32_t* __restrict__ out, int64_t total) {
  const int64_t per = 32 / bits;
  const uint32_t mask = (uint32_t(1) << bits) - 1;
  URPE_GRID_STRIDE(e, total) {
    const int64_t r = e / columns, k = e % columns;
    out[e] = static_cast<int32_t>((packed[r * words + k / per] >> (bits * (k % per))) & mask);
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

// ∂tables (S, V, D) = Σ over rows p and slots k of g[p, :] into table k / group, row ids[p, k]
// (embedding_sum's backward; embedding's with S = group = 1), row padding_idx of each table zero.
// Chunks of rows: `rows / 256` rounded up to a power of two in [32, kSumChunkRows], so that a
// small batch still spreads over ~256 blocks; then doubled while the partials exceed their cap.
// The chunking depends on the shapes only: the same bits on any GPU.
// grad_tables: (tables, vocab, dim) on the device.
void sum_rows_by_id_cuda(cuda::Context& ctx, const float* grad_out, const int32_t* ids, int64_t stride, int64_t rows,
                         int64_t group, int64_t padding_idx, int64_t tables, int64_t vocab, int64_t dim,
                         float* grad_tables) {
  const int64_t elements = tables * vocab * dim;
  if (elements == 0) return;
  URPE_CHECK(dim <= kSumTileFloats, "embedding_sum backward (CUDA): rows of " << dim << " floats exceed the "
                                                                              << kSumTileFloats << " of a block's tile");
  const int64_t rows_per_tile = kSumTileFloats / dim;
  const int64_t tiles = (tables * vocab + rows_per_tile - 1) / rows_per_tile;
  URPE_CHECK(tiles <= 65535, "embedding_sum backward (CUDA): " << tiles << " tiles of the tables exceed the grid");
  int64_t chunk_rows = 32;
  while (chunk_rows < kSumChunkRows && chunk_rows * 256 < rows) chunk_rows *= 2;
  while (((rows + chunk_rows - 1) / chunk_rows) * elements > kSumPartialFloats) chunk_rows *= 2;
  const int64_t chunks = std::max<int64_t>(1, (rows + chunk_rows - 1) / chunk_rows);
  cuda::DeviceBuffer partials(ctx, sizeof(float) * chunks * elements);
  const int threads = 256;
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(tiles));
  embedding_sum_backward_partial_kernel<<<grid, threads, 0, ctx.stream()>>>(
      grad_out, dim, ids, stride, rows, tables, vocab, group, chunk_rows, rows_per_tile, partials.as<float>());
  CUDA_CHECK_LAUNCH("embedding_sum_backward_partial_kernel");
  embedding_sum_backward_total_kernel<<<grid_for(ctx, elements, threads), threads, 0, ctx.stream()>>>(
      partials.as<float>(), chunks, elements, vocab, dim, padding_idx, grad_tables);
  CUDA_CHECK_LAUNCH("embedding_sum_backward_total_kernel");
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
  if (vocab * dim <= kSumTileFloats) {
    // The whole table fits one block's shared tile (Graphormer's atom, degree and bias tables):
    // embedding_sum's chunked partials, no sort.
    sum_rows_by_id_cuda(ctx, grad_out.f32(), ids.i32(), 1, ids.numel(), 1, padding_idx, 1, vocab, dim,
                        grad_table.f32());
    return;
  }
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
  const int threads = kRowsThreads;
  embedding_backward_rows_kernel<<<grid_for(ctx, vocab * threads, threads), threads, 0,
                                   ctx.stream()>>>(grad_out.f32(), dim, index.positions(),
                                                   index.offsets(), vocab, padding_idx,
                                                   grad_table.f32());
  CUDA_CHECK_LAUNCH("embedding_backward_rows_kernel");
}

void embedding_sum_forward_cuda(const Tensor& tables, const Tensor& ids, int64_t group, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const int64_t vocab = tables.size(1), dim = tables.size(2), stride = ids.size(-1);
  const int64_t total = out.numel();
  if (total == 0) return;
  const int threads = 256;
  embedding_sum_forward_kernel<<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
      tables.f32(), vocab, dim, ids.i32(), stride, tables.size(0) * group, group, out.f32(), total);
  CUDA_CHECK_LAUNCH("embedding_sum_forward_kernel");
}

void embedding_sum_backward_cuda(const Tensor& ids, int64_t group, const Tensor& grad_out, Tensor& grad_tables) {
  cuda::Context& ctx = context_of(grad_tables);
  const int64_t stride = ids.size(-1), rows = stride == 0 ? 0 : ids.numel() / stride;
  sum_rows_by_id_cuda(ctx, grad_out.f32(), ids.i32(), stride, rows, group, kNoPadding, grad_tables.size(0),
                      grad_tables.size(1), grad_tables.size(2), grad_tables.f32());
}

void unpack_ids_cuda(const Tensor& packed, int bits, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const int64_t total = out.numel();
  if (total == 0) return;
  const int threads = 256;
  unpack_ids_kernel<<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
      reinterpret_cast<const uint32_t*>(packed.i32()), packed.size(-1), out.size(-1), bits, out.i32(), total);
  CUDA_CHECK_LAUNCH("unpack_ids_kernel");
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
