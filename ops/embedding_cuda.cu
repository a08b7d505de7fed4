// CUDA kernels for embedding lookup and gather_table (maths in embedding.h).
//
// embedding forward: out[p, d] = table[ids[p], d], one thread per output element (consecutive d:
//   coalesced). Bytes: 4·N·D read from the table rows used, 4·N·D written, 4·N ids.
// embedding backward: ∂table[v, :] = Σ_{p: ids[p]=v} g[p, :], and embedding_sum backward:
//   ∂tables[s, v, :] = Σ_{(p, k): k/G = s, ids[p,k] = v} g[p, :] (embedding's is S = G = 1). No
//   float atomics anywhere: every sum has a fixed order that depends on the shapes only, so the
//   same bits come out every run, on any GPU. Three paths, picked by shape:
//   - chunked partials, when all of ∂tables fits one block's 48 KiB shared tile (S·V·D ≤ 12,288
//     floats: Graphormer's atom, degree and bias tables, ZINC's 20 × 64 × 8 multi-hop tables).
//     The rows p are cut into chunks (a power of two from 32 to 512 rows, from the row count
//     alone; more when the partials would not fit kSumPartialFloats); block c owns a shared copy
//     of ∂tables, each of its threads the columns (s, d), so it alone adds into them, p then k in
//     order; the copy goes to the chunk's partials, and a second kernel adds the chunks per table
//     element in chunk order (in double). No sort. Bytes: 4·P·K ids and 4·P·D of g read once, the
//     partials (chunks · S·V·D) written and read once, 4·S·V·D written. Why not a sort here:
//     Graphormer's multi-hop ids (20 hops × 175k pairs on ZINC) are almost all the few bond types
//     and the padding id, so a per-id owner would walk ~10^5 positions in sequence; the chunks
//     spread them over every SM.
//   - sorted segments, larger tables with D ≥ 32 (and every larger embedding_sum): each slot
//     (p, k) becomes the table row r = (k/G)·V + ids[p,k] (keys kernel), the slots are grouped by
//     r with a stable sort (BucketIndex: ascending p within a row), and each row's slots are cut
//     into segments of T = slices·64 (slices = 256 / min(D, 256): from D alone). One block per
//     segment (a map from work units to rows, written by a thread per row: no search, no prefix
//     sum): its threads split the columns and, in a fixed stride, the segment's slots, and add
//     the slices in slice order (double). A row of one segment is written straight to ∂tables; a
//     longer one (the padding id, carbon) writes one double partial per segment, and a block per
//     row adds them in order (the total kernel); a last pass zeroes the unused and padding rows.
//     So a frequent id is spread over ~count/T blocks instead of being walked by one, g is read
//     once per slot whatever the table's size, and an unused row costs a read or two. Bytes:
//     4·P·K ids read, 4·P·K keys written, the sort (~2 passes of 16 B per slot for ≤ 16 key
//     bits, onesweep), 4·P·K positions and 4·D·P·K of g gathered (each row of g once per slot
//     that reads it: K times, in ascending p within a row, so mostly from L2), 8·D per segment
//     of partials (≤ 2·P·K/T segments), 4·(P·K/T + S·V) of the unit map, 4·S·V·D written. PCQM4M's multi-hop term (S·V·D = 5 × 1,537 × 32, 21 tiles)
//     was chunked before: 21 tiles × 85 chunks of 4,096 rows, 32–64 threads of 256 busy, 8 ms
//     on an H100 (bench/cuda_notes.md "embedding_sum backward at PCQM4M's shape").
//   - narrow (D < 32, embedding only: Graphormer's per-head bias tables, D = H = 8, read by
//     millions of ids) past one tile: the positions sorted by id (BucketIndex), one block per
//     (v, d), its threads split the row's positions in a fixed stride, added by a fixed shuffle
//     tree. (One thread per (v, d) walking a row's positions in sequence took 43 ms of a 149 ms
//     Graphormer step on an H200.)
//   Rows nobody used get zeros, and so do the padding rows (v = padding_idx in every table, −1
//   for none).
// embedding_sum forward: out[p, d] = Σ_{k < S·G} tables[k / G, ids[p, k], d], one thread per
//   (p, d), k in order (the CPU's order: the same float sum). Bytes: 4·P·K ids (each read by the D
//   threads of its row, cached), the K table rows (small, cached), 4·P·D written.
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

// grid (chunks). partials: (chunks, S·V·D), S·V·D ≤ kSumTileFloats; block c adds rows
// [c·chunk_rows, …) into its shared copy of ∂tables, element (s·V + v)·D + d, and writes it to
// chunk c's partials. Thread `column` owns the columns (s, d).
__global__ void embedding_sum_backward_partial_kernel(const float* __restrict__ grad_out, int64_t dim,
                                                      const int32_t* __restrict__ ids, int64_t stride,
                                                      int64_t rows, int64_t tables, int64_t vocab,
                                                      int64_t group, int64_t chunk_rows,
                                                      float* __restrict__ partials) {
  URPE_SHARED(float, tile, [kSumTileFloats]);
  const int64_t elements = tables * vocab * dim;
  const int64_t p0 = blockIdx.x * chunk_rows, p1 = min(p0 + chunk_rows, rows);
  for (int64_t i = threadIdx.x; i < elements; i += blockDim.x) tile[i] = 0.0f;
  __syncthreads();
  for (int64_t column = threadIdx.x; column < tables * dim; column += blockDim.x) {
    const int64_t s = column / dim, d = column % dim;
#pragma unroll 4
    for (int64_t p = p0; p < p1; ++p) {
      const float g = grad_out[p * dim + d];
      const int32_t* id = ids + p * stride + s * group;
      for (int64_t k = 0; k < group; ++k)
        if (id[k] >= 0 && id[k] < vocab) tile[(s * vocab + id[k]) * dim + d] += g;
    }
  }
  __syncthreads();
  float* out = partials + blockIdx.x * elements;
  for (int64_t i = threadIdx.x; i < elements; i += blockDim.x) out[i] = tile[i];
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

// ---- sorted segments (tables past one tile; the header's second path) ----
// Block size and slots per thread of a segment: T = (256 / min(D, 256))·64 slots, from D alone.
constexpr int kSegmentThreads = 256;
constexpr int64_t kSegmentSlotsPerThread = 64;

// keys: (P·K,); keys[p·K + k] = (k / G)·V + ids[p, k], the row r = s·V + v of ∂tables that slot k
// of row p adds g[p, :] into. An id outside [0, V) (the op's deferred range check reports it)
// gets key S·V: a bucket no kernel adds, so it contributes nothing.
__global__ void embedding_backward_keys_kernel(const int32_t* __restrict__ ids, int64_t stride, int64_t slots,
                                               int64_t group, int64_t vocab, int64_t table_rows,
                                               int32_t* __restrict__ keys, int64_t total) {
  URPE_GRID_STRIDE(t, total) {
    const int64_t p = t / slots, k = t % slots;
    const int32_t id = ids[p * stride + k];
    keys[t] = static_cast<int32_t>(id >= 0 && id < vocab ? (k / group) * vocab + id : table_rows);
  }
}

// Work units u (one block each in the segments kernel) enumerate the segments: unit (r, j) is
// u = first(r) + j, first(r) = ⌊offsets[r] / T⌋ + r, for the segments j < ⌈count_r / T⌉ of row r,
// i.e. the sorted slots offsets[r] + j·T … + T − 1. That map is injective and below
// units = ⌊n / T⌋ + rows (with o = offsets[r] = aT + x, count c = bT + y: its last unit
// a + r + b + [y>0] − 1 is below row r+1's first, ⌊(o + c) / T⌋ + r + 1 ≥ a + b + r + 1), so no
// prefix sum is needed. unit_rows: (units,); thread r writes r on its row's units and −1 on the
// (at most two) units after them, up to row r+1's first (the last row: up to `units`); padding
// rows get no units.
__global__ void embedding_backward_units_kernel(const int32_t* __restrict__ offsets, int64_t table_rows,
                                                int64_t vocab, int64_t padding_idx, int64_t segment, int64_t units,
                                                int32_t* __restrict__ unit_rows) {
  URPE_GRID_STRIDE(r, table_rows) {
    const int64_t start = offsets[r], count = offsets[r + 1] - start, first = start / segment + r;
    const int64_t next = r + 1 < table_rows ? offsets[r + 1] / segment + r + 1 : units;
    const int64_t segments = r % vocab == padding_idx ? 0 : (count + segment - 1) / segment;
    for (int64_t u = first; u < next; ++u) unit_rows[u] = u - first < segments ? static_cast<int32_t>(r) : -1;
  }
}

// One block per unit u (grid-strided), segment j of row r = unit_rows[u]. Thread (slice, column):
// columns d ≡ column (mod cols), slots t ≡ slice (mod slices) of the segment, summed in double;
// slice 0 adds the slices in order. A row of one segment is written to ∂tables; segment j of a
// longer row to partials[2·⌊offsets[r] / T⌋ + j]: below 2·⌊n / T⌋ + 1 and injective over those
// rows (there b ≥ 1, so the last, 2a + b + [y>0] − 1, is below 2(a + b) ≤ the next one's first).
// positions[t] = p·K + k (below 2^31, as are the offsets and T: 32-bit divisions).
// partials: (2·⌊n / T⌋ + 1, D) doubles; grad_tables: (S·V, D).
__global__ void embedding_backward_segments_kernel(const float* __restrict__ grad_out, int64_t dim,
                                                   const int32_t* __restrict__ positions,
                                                   const int32_t* __restrict__ offsets,
                                                   const int32_t* __restrict__ unit_rows, int64_t slots,
                                                   int64_t segment, int64_t units, double* __restrict__ partials,
                                                   float* __restrict__ grad_tables) {
  URPE_SHARED(double, partial, [kSegmentThreads]);
  const int64_t cols = min(dim, int64_t(blockDim.x)), slices = blockDim.x / cols;
  const int64_t column = threadIdx.x % cols, slice = threadIdx.x / cols;
  const bool active = slice < slices;  // blockDim.x − slices·cols threads have no slice
  for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
    const int64_t r = unit_rows[u];
    if (r < 0) continue;  // between rows (the same for the whole block)
    const int64_t start = offsets[r], stop = offsets[r + 1];
    const int64_t j = u - (uint32_t(start) / uint32_t(segment) + r), begin = start + j * segment;
    const int64_t end = min(begin + segment, stop);
    const bool whole = stop - start <= segment;  // the row's only segment: its sum is final
    for (int64_t d0 = 0; d0 < dim; d0 += cols) {
      const int64_t d = d0 + column;
      double total = 0;
      if (active && d < dim) {
#pragma unroll 4
        for (int64_t t = begin + slice; t < end; t += slices)
          total += grad_out[int64_t(uint32_t(positions[t]) / uint32_t(slots)) * dim + d];
      }
      partial[threadIdx.x] = total;
      __syncthreads();
      if (slice == 0 && d < dim) {
        double sum = 0;
        for (int64_t k = 0; k < slices; ++k) sum += partial[k * cols + column];
        if (whole) grad_tables[r * dim + d] = static_cast<float>(sum);
        else partials[(2 * (start / segment) + j) * dim + d] = sum;
      }
      __syncthreads();
    }
  }
}

// grad_tables[r·D + d] = 0 on the rows nobody used and the padding rows (thread per element).
__global__ void embedding_backward_zero_rows_kernel(const int32_t* __restrict__ offsets, int64_t vocab,
                                                    int64_t dim, int64_t padding_idx,
                                                    float* __restrict__ grad_tables, int64_t total) {
  URPE_GRID_STRIDE(e, total) {
    const int64_t r = e / dim;
    if (offsets[r + 1] == offsets[r] || r % vocab == padding_idx) grad_tables[e] = 0.0f;
  }
}

// Blocks grid-strided over the rows r of ∂tables; a row of several segments (not padding) gets
// Σ_j partials[2·⌊offsets[r] / T⌋ + j], j < ⌈count / T⌉, split over the slices by j (mod slices)
// and the slices added in order (double); the other rows are skipped at the cost of one read.
__global__ void embedding_backward_segments_total_kernel(const double* __restrict__ partials, int64_t dim,
                                                         const int32_t* __restrict__ offsets, int64_t table_rows,
                                                         int64_t vocab, int64_t padding_idx, int64_t segment,
                                                         float* __restrict__ grad_tables) {
  URPE_SHARED(double, partial, [kSegmentThreads]);
  const int64_t cols = min(dim, int64_t(blockDim.x)), slices = blockDim.x / cols;
  const int64_t column = threadIdx.x % cols, slice = threadIdx.x / cols;
  const bool active = slice < slices;
  for (int64_t r = blockIdx.x; r < table_rows; r += gridDim.x) {
    const int64_t start = offsets[r], count = offsets[r + 1] - start;
    if (count <= segment || r % vocab == padding_idx) continue;  // the same for the whole block
    const int64_t segments = (count + segment - 1) / segment;
    const double* first = partials + 2 * (start / segment) * dim;
    for (int64_t d0 = 0; d0 < dim; d0 += cols) {
      const int64_t d = d0 + column;
      double total = 0;
      if (active && d < dim) {
#pragma unroll 8
        for (int64_t j = slice; j < segments; j += slices) total += first[j * dim + d];
      }
      partial[threadIdx.x] = total;
      __syncthreads();
      if (slice == 0 && d < dim) {
        double sum = 0;
        for (int64_t k = 0; k < slices; ++k) sum += partial[k * cols + column];
        grad_tables[r * dim + d] = static_cast<float>(sum);
      }
      __syncthreads();
    }
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
// ids: (rows, stride) on the device, slots k < tables·group read; grad_out: (rows, dim);
// grad_tables: (tables, vocab, dim) on the device.

// Chunked partials (S·V·D ≤ kSumTileFloats). Chunks of rows: `rows / 256` rounded up to a power
// of two in [32, kSumChunkRows], so that a small batch still spreads over ~256 blocks; then
// doubled while the partials exceed their cap. The chunking depends on the shapes only.
void sum_rows_chunked_cuda(cuda::Context& ctx, const float* grad_out, const int32_t* ids, int64_t stride,
                           int64_t rows, int64_t group, int64_t padding_idx, int64_t tables, int64_t vocab,
                           int64_t dim, float* grad_tables) {
  const int64_t elements = tables * vocab * dim;
  URPE_CHECK(elements <= kSumTileFloats, "embedding backward (CUDA): the chunked path takes tables of at most "
                                             << kSumTileFloats << " floats, got " << elements);
  int64_t chunk_rows = 32;
  while (chunk_rows < kSumChunkRows && chunk_rows * 256 < rows) chunk_rows *= 2;
  while (((rows + chunk_rows - 1) / chunk_rows) * elements > kSumPartialFloats) chunk_rows *= 2;
  const int64_t chunks = std::max<int64_t>(1, (rows + chunk_rows - 1) / chunk_rows);
  cuda::DeviceBuffer partials(ctx, sizeof(float) * chunks * elements);
  const int threads = 256;
  embedding_sum_backward_partial_kernel<<<static_cast<unsigned>(chunks), threads, 0, ctx.stream()>>>(
      grad_out, dim, ids, stride, rows, tables, vocab, group, chunk_rows, partials.as<float>());
  CUDA_CHECK_LAUNCH("embedding_sum_backward_partial_kernel");
  embedding_sum_backward_total_kernel<<<grid_for(ctx, elements, threads), threads, 0, ctx.stream()>>>(
      partials.as<float>(), chunks, elements, vocab, dim, padding_idx, grad_tables);
  CUDA_CHECK_LAUNCH("embedding_sum_backward_total_kernel");
}

// Sorted segments (any size): keys, the stable sort, the units' rows, the segments, the rows of
// several segments, the zero rows. The segment length T depends on dim only.
void sum_rows_sorted_cuda(cuda::Context& ctx, const float* grad_out, const int32_t* ids, int64_t stride,
                          int64_t rows, int64_t group, int64_t padding_idx, int64_t tables, int64_t vocab,
                          int64_t dim, float* grad_tables) {
  const int64_t slots = tables * group, items = rows * slots, table_rows = tables * vocab;
  URPE_CHECK(table_rows < (int64_t(1) << 31) - 1,
             "embedding backward (CUDA): " << table_rows << " table rows exceed the 32-bit keys of the sort");
  cuda::DeviceBuffer keys(ctx, sizeof(int32_t) * std::max<int64_t>(items, 1));
  const int threads = kSegmentThreads;
  if (items > 0) {
    embedding_backward_keys_kernel<<<grid_for(ctx, items, threads), threads, 0, ctx.stream()>>>(
        ids, stride, slots, group, vocab, table_rows, keys.as<int32_t>(), items);
    CUDA_CHECK_LAUNCH("embedding_backward_keys_kernel");
  }
  // Bucket table_rows holds the ids out of range: sorted last, summed by nobody.
  const BucketIndex index(ctx, keys.as<int32_t>(), items, table_rows + 1, "embedding backward");
  const int64_t slices = kSegmentThreads / std::min<int64_t>(dim, kSegmentThreads);
  const int64_t segment = slices * kSegmentSlotsPerThread;
  const int64_t units = items / segment + table_rows;
  if (items > 0) {
    cuda::DeviceBuffer unit_rows(ctx, sizeof(int32_t) * units);
    embedding_backward_units_kernel<<<grid_for(ctx, table_rows, threads), threads, 0, ctx.stream()>>>(
        index.offsets(), table_rows, vocab, padding_idx, segment, units, unit_rows.as<int32_t>());
    CUDA_CHECK_LAUNCH("embedding_backward_units_kernel");
    cuda::DeviceBuffer partials(ctx, sizeof(double) * (2 * (items / segment) + 1) * dim);
    embedding_backward_segments_kernel<<<grid_for(ctx, units * threads, threads), threads, 0, ctx.stream()>>>(
        grad_out, dim, index.positions(), index.offsets(), unit_rows.as<int32_t>(), slots, segment, units,
        partials.as<double>(), grad_tables);
    CUDA_CHECK_LAUNCH("embedding_backward_segments_kernel");
    embedding_backward_segments_total_kernel<<<grid_for(ctx, table_rows * threads, threads), threads, 0,
                                               ctx.stream()>>>(partials.as<double>(), dim, index.offsets(),
                                                               table_rows, vocab, padding_idx, segment, grad_tables);
    CUDA_CHECK_LAUNCH("embedding_backward_segments_total_kernel");
  }
  embedding_backward_zero_rows_kernel<<<grid_for(ctx, table_rows * dim, threads), threads, 0, ctx.stream()>>>(
      index.offsets(), vocab, dim, padding_idx, grad_tables, table_rows * dim);
  CUDA_CHECK_LAUNCH("embedding_backward_zero_rows_kernel");
}

// The path by shape (the header): chunked when ∂tables fits one tile, else sorted segments.
void sum_rows_by_id_cuda(cuda::Context& ctx, const float* grad_out, const int32_t* ids, int64_t stride, int64_t rows,
                         int64_t group, int64_t padding_idx, int64_t tables, int64_t vocab, int64_t dim,
                         float* grad_tables) {
  if (tables * vocab * dim == 0) return;
  if (tables * vocab * dim <= kSumTileFloats)
    sum_rows_chunked_cuda(ctx, grad_out, ids, stride, rows, group, padding_idx, tables, vocab, dim, grad_tables);
  else
    sum_rows_sorted_cuda(ctx, grad_out, ids, stride, rows, group, padding_idx, tables, vocab, dim, grad_tables);
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
  if (vocab * dim <= kSumTileFloats || dim >= kWarp) {
    // One tile (Graphormer's atom, degree and bias tables): chunked partials, no sort. Wider
    // tables: sorted segments, a frequent id spread over many blocks.
    sum_rows_by_id_cuda(ctx, grad_out.f32(), ids.i32(), 1, ids.numel(), 1, padding_idx, 1, vocab, dim,
                        grad_table.f32());
    return;
  }
  // Narrow and past one tile: one block per (v, d).
  const BucketIndex index(ctx, ids.i32(), ids.numel(), vocab, "embedding backward");
  const int threads = 256;
  embedding_backward_narrow_kernel<<<grid_for(ctx, vocab * dim * threads, threads), threads, 0, ctx.stream()>>>(
      grad_out.f32(), dim, index.positions(), index.offsets(), vocab, padding_idx, grad_table.f32());
  CUDA_CHECK_LAUNCH("embedding_backward_narrow_kernel");
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
