// The table gradients of the URPE attention core on CUDA (maths in urpe_attention.h). With
// G = ∂L/∂A and t_i = Σ_j P·G·C (0 without the softmax denominator):
//   ∂C_h[k] = Σ over the unmasked cells (b, i, j) with c_map = k    of G·P
//   ∂B_h[k] = Σ over the unmasked cells (b, i, j) with bias_map = k of P·(G·C − t_i)   (= dZ)
// Deterministic, no float atomics: every sum runs in a fixed order, in double.
//
// Two paths, picked per table on the host:
// * Diagonal: a (Nq, Nk) map shared by the batch whose value depends on j − i alone (the Toeplitz
//   maps of the encoder and Transformer-XL, unique or T5-bucketed; bucket_map_is_diagonal_constant
//   knows it from the map's one host read). A cell's bucket is then its diagonal's,
//   d = j − i + Nq − 1 (D = Nq + Nk − 1 diagonals), so the cells are summed per diagonal first,
//   with G and P read once, along rows, for both tables in the same pass:
//   urpe_attention_diagonal_partials_kernel: one block per (h, tile of query rows, chunk of batch
//     items), one thread per diagonal; for every (b, i) of its tile and chunk, in order, it adds
//     the cell (i, i + d − Nq + 1). A warp holds 32 consecutive diagonals, so for one (b, i) it
//     reads 32 consecutive floats of G and of P. Writes the block's D sums per table (0 for the
//     diagonals its rows do not reach).
//   urpe_attention_diagonal_totals_kernel: per (h, d), the partial sums of every block in order.
//   urpe_attention_diagonal_buckets_kernel: each diagonal's bucket, read off the map's first
//     column and first row.
//   urpe_attention_bucket_sum_kernel: per (h, k), bucket k's diagonal totals in ascending d
//     (a BucketIndex over the D diagonal buckets: one diagonal per bucket for the unique map).
//   Bytes: 8·B·H·Nq·Nk read once for both tables (G, P), the C map (4·Nq·Nk) from cache,
//   16·H·blocks·D of partials written and read back.
// * General (SPD maps, per-batch maps, any other map): the map's cells grouped by bucket with a
//   stable sort (BucketIndex), one block per (h, k) over its cells (× the batch when the map is
//   shared), urpe_attention_bias_grad_kernel / urpe_attention_c_grad_kernel.
//   Bytes: 8·B·H·Nq·Nk read per table, gathered along each bucket's cells. For a Toeplitz bucket
//   (a diagonal) that is one 32-byte sector per 4-byte element: on an H100 (2026-11-25, B = 32,
//   H = 4, N = 1024) the two kernels took 3.6 + 2.6 ms beside 1.6 ms for the whole rows kernel,
//   which is why the diagonal path exists.
// bf16 G and P (precision=bf16; T = __nv_bfloat16): read widened, the same double sums.
#include "ops/bf16_values.cuh"
#include "ops/bucket_index_cuda.cuh"
#include "ops/urpe_attention_checks.h"
#include "ops/urpe_attention_geometry.cuh"

namespace urpe::kernels {

namespace {

// ---- general path: one block per (h, bucket) over the bucket's cells ----

// grad_table[h, k] = Σ over the cells of bucket k (× the batch when the map is shared) of G·P
// (kForC) or P·(G·C − t) (the bias table).
template <bool kForC, typename T>
__device__ __forceinline__ void table_grad_blocks(const AttentionGeometry& geo,
                                                  const T* __restrict__ grad_out,
                                                  const T* __restrict__ probs,
                                                  const double* __restrict__ row_dot,
                                                  const int32_t* __restrict__ positions,
                                                  const int32_t* __restrict__ offsets,
                                                  int64_t buckets, bool shared_map,
                                                  float* __restrict__ grad_table) {
  URPE_SHARED(double, shared, [32]);
  const int64_t cells = geo.nq * geo.nk;
  for (int64_t hk = blockIdx.x; hk < geo.heads * buckets; hk += gridDim.x) {
    const int64_t h = hk / buckets, key = hk % buckets;
    const int64_t begin = offsets[key], length = offsets[key + 1] - begin;
    const int64_t items = shared_map ? length * geo.batch : length;
    double total = 0;
    for (int64_t item = threadIdx.x; item < items; item += blockDim.x) {
      const auto [b, ij] = bucket_cell(positions, begin, length, item, shared_map, cells);
      const int64_t i = ij / geo.nk, j = ij % geo.nk;
      if (geo.masked(b, i, j)) continue;
      const int64_t row = (b * geo.heads + h) * geo.nq + i;
      const int64_t e = row * geo.nk + j;
      const float g = load(grad_out, e), p = load(probs, e);
      if (kForC) {
        total += static_cast<double>(g) * p;
      } else {
        const float dp = g * geo.c_value(b, h, ij);
        total += static_cast<double>(p) * (dp - row_dot[row]);
      }
    }
    total = block_sum(total, shared);
    if (threadIdx.x == 0) grad_table[hk] = static_cast<float>(total);
  }
}

// ∂B_h[k] and ∂C_h[k]: two kernels (two names in Nsight) over the same loop.
template <typename T>
__global__ void urpe_attention_bias_grad_kernel(AttentionGeometry geo,
                                                const T* __restrict__ grad_out,
                                                const T* __restrict__ probs,
                                                const double* __restrict__ row_dot,
                                                const int32_t* __restrict__ positions,
                                                const int32_t* __restrict__ offsets,
                                                int64_t buckets, bool shared_map,
                                                float* __restrict__ grad_table) {
  table_grad_blocks<false, T>(geo, grad_out, probs, row_dot, positions, offsets, buckets, shared_map,
                           grad_table);
}

template <typename T>
__global__ void urpe_attention_c_grad_kernel(AttentionGeometry geo,
                                             const T* __restrict__ grad_out,
                                             const T* __restrict__ probs,
                                             const double* __restrict__ row_dot,
                                             const int32_t* __restrict__ positions,
                                             const int32_t* __restrict__ offsets,
                                             int64_t buckets, bool shared_map,
                                             float* __restrict__ grad_table) {
  table_grad_blocks<true, T>(geo, grad_out, probs, row_dot, positions, offsets, buckets, shared_map,
                          grad_table);
}

template <bool kForC>
void general_table_gradient(cuda::Context& ctx, const AttentionGeometry& geo, const Tensor& map,
                            const Tensor& grad_out, const Tensor& probs, const double* row_dot,
                            Tensor& grad_table) {
  const int64_t buckets = grad_table.size(1);
  if (geo.heads * buckets == 0) return;
  const BucketIndex index(ctx, map.i32(), map.numel(), buckets, "urpe_attention backward");
  const int threads = 256;
  with_device_value_type(probs.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto kernel = kForC ? urpe_attention_c_grad_kernel<T> : urpe_attention_bias_grad_kernel<T>;
    kernel<<<grid_for(ctx, geo.heads * buckets * threads, threads), threads, 0, ctx.stream()>>>(
        geo, values<T>(grad_out), values<T>(probs), row_dot, index.positions(), index.offsets(), buckets,
        map.dim() == 2, grad_table.f32());
    CUDA_CHECK_LAUNCH(kForC ? "urpe_attention_c_grad_kernel" : "urpe_attention_bias_grad_kernel");
  });
}

// ---- diagonal path: sums per diagonal, then per bucket ----

// How the partials kernel cuts the (b, i) plane: blocks = heads · tiles · chunks.
struct DiagonalTiling {
  int64_t diagonals;        // D = Nq + Nk − 1
  int64_t rows_per_tile, tiles;
  int64_t batch_per_chunk, chunks;
  __host__ __device__ int64_t parts() const { return tiles * chunks; }  // partial sums per (h, d)
};

// Tiles of at least 32 query rows and at most 64 tiles (so the partials stay 64·chunks·D per
// head at any length), then as many batch chunks as it takes to give the device about four
// blocks per multiprocessor.
DiagonalTiling diagonal_tiling(const cuda::Context& ctx, const AttentionGeometry& geo) {
  DiagonalTiling t{};
  t.diagonals = geo.nq + geo.nk - 1;
  t.rows_per_tile = std::max<int64_t>(32, (geo.nq + 63) / 64);
  t.tiles = (geo.nq + t.rows_per_tile - 1) / t.rows_per_tile;
  const int64_t wanted = 4 * static_cast<int64_t>(ctx.multiprocessors());
  const int64_t chunks = std::clamp<int64_t>((wanted + geo.heads * t.tiles - 1) / (geo.heads * t.tiles),
                                             1, geo.batch);
  t.batch_per_chunk = (geo.batch + chunks - 1) / chunks;
  t.chunks = (geo.batch + t.batch_per_chunk - 1) / t.batch_per_chunk;
  return t;
}

// partial_b / partial_c: (H, tiles · chunks, D) in double, or null for a table not wanted here.
template <typename T>
__global__ void urpe_attention_diagonal_partials_kernel(AttentionGeometry geo, DiagonalTiling t,
                                                        const T* __restrict__ grad_out,
                                                        const T* __restrict__ probs,
                                                        const double* __restrict__ row_dot,
                                                        double* __restrict__ partial_b,
                                                        double* __restrict__ partial_c) {
  const int64_t parts = t.parts();
  for (int64_t slot = blockIdx.x; slot < geo.heads * parts; slot += gridDim.x) {
    const int64_t h = slot / parts, tile = (slot % parts) / t.chunks, chunk = slot % t.chunks;
    const int64_t i0 = tile * t.rows_per_tile, i1 = min(geo.nq, i0 + t.rows_per_tile);
    const int64_t b0 = chunk * t.batch_per_chunk, b1 = min(geo.batch, b0 + t.batch_per_chunk);
    for (int64_t d = threadIdx.x; d < t.diagonals; d += blockDim.x) {
      const int64_t offset = d - (geo.nq - 1);  // j = i + offset on diagonal d
      // The tile's rows whose cell on this diagonal exists: 0 ≤ i + offset < Nk.
      const int64_t lo = max(i0, -offset), hi = min(i1, geo.nk - offset);
      double sum_b = 0, sum_c = 0;
      for (int64_t b = b0; b < b1; ++b) {
        for (int64_t i = lo; i < hi; ++i) {
          const int64_t j = i + offset;
          if (geo.masked(b, i, j)) continue;
          const int64_t row = (b * geo.heads + h) * geo.nq + i;
          const int64_t e = row * geo.nk + j;
          const float g = load(grad_out, e), p = load(probs, e);
          if (partial_c) sum_c += static_cast<double>(g) * p;
          if (partial_b) {
            const float dp = g * geo.c_value(b, h, i * geo.nk + j);
            sum_b += static_cast<double>(p) * (dp - row_dot[row]);
          }
        }
      }
      if (partial_b) partial_b[slot * t.diagonals + d] = sum_b;
      if (partial_c) partial_c[slot * t.diagonals + d] = sum_c;
    }
  }
}

// totals[h, d] = Σ_part partial[h, part, d], parts in order.
__global__ void urpe_attention_diagonal_totals_kernel(int64_t heads, int64_t parts, int64_t diagonals,
                                                      const double* __restrict__ partial,
                                                      double* __restrict__ totals) {
  URPE_GRID_STRIDE(hd, heads * diagonals) {
    const int64_t h = hd / diagonals, d = hd % diagonals;
    double sum = 0;
    for (int64_t part = 0; part < parts; ++part) sum += partial[(h * parts + part) * diagonals + d];
    totals[hd] = sum;
  }
}

// bucket[d] = map[first cell of diagonal d]: (Nq − 1 − d, 0) for d < Nq, else (0, d − Nq + 1).
__global__ void urpe_attention_diagonal_buckets_kernel(const int32_t* __restrict__ map, int64_t nq,
                                                       int64_t nk, int32_t* __restrict__ bucket) {
  URPE_GRID_STRIDE(d, nq + nk - 1) {
    const int64_t i = d < nq ? nq - 1 - d : 0, j = d < nq ? 0 : d - (nq - 1);
    bucket[d] = map[i * nk + j];
  }
}

// grad_table[h, k] = Σ over bucket k's diagonals d, ascending, of totals[h, d].
__global__ void urpe_attention_bucket_sum_kernel(int64_t heads, int64_t buckets, int64_t diagonals,
                                                 const int32_t* __restrict__ positions,
                                                 const int32_t* __restrict__ offsets,
                                                 const double* __restrict__ totals,
                                                 float* __restrict__ grad_table) {
  URPE_GRID_STRIDE(hk, heads * buckets) {
    const int64_t h = hk / buckets, k = hk % buckets;
    double sum = 0;
    for (int64_t o = offsets[k]; o < offsets[k + 1]; ++o) sum += totals[h * diagonals + positions[o]];
    grad_table[hk] = static_cast<float>(sum);
  }
}

// Per-diagonal totals → the (H, K) table gradient through map's diagonal buckets.
void diagonal_totals_to_table(cuda::Context& ctx, const DiagonalTiling& t, int64_t heads,
                              const Tensor& map, const double* partial, Tensor& grad_table) {
  const int64_t nq = map.size(0), nk = map.size(1), buckets = grad_table.size(1);
  const int threads = 256;
  cuda::DeviceBuffer totals(ctx, sizeof(double) * heads * t.diagonals);
  urpe_attention_diagonal_totals_kernel<<<grid_for(ctx, heads * t.diagonals, threads), threads, 0,
                                          ctx.stream()>>>(heads, t.parts(), t.diagonals, partial,
                                                          totals.as<double>());
  CUDA_CHECK_LAUNCH("urpe_attention_diagonal_totals_kernel");
  cuda::DeviceBuffer bucket(ctx, sizeof(int32_t) * t.diagonals);
  urpe_attention_diagonal_buckets_kernel<<<grid_for(ctx, t.diagonals, threads), threads, 0,
                                           ctx.stream()>>>(map.i32(), nq, nk, bucket.as<int32_t>());
  CUDA_CHECK_LAUNCH("urpe_attention_diagonal_buckets_kernel");
  const BucketIndex index(ctx, bucket.as<int32_t>(), t.diagonals, buckets, "urpe_attention backward");
  urpe_attention_bucket_sum_kernel<<<grid_for(ctx, heads * buckets, threads), threads, 0,
                                     ctx.stream()>>>(heads, buckets, t.diagonals, index.positions(),
                                                     index.offsets(), totals.as<double>(),
                                                     grad_table.f32());
  CUDA_CHECK_LAUNCH("urpe_attention_bucket_sum_kernel");
}

// Both tables' gradients along diagonals (either may be null: not wanted on this path).
void diagonal_table_gradients(cuda::Context& ctx, const AttentionGeometry& geo,
                              const UrpeAttentionParams& params, const Tensor& grad_out,
                              const Tensor& probs, const double* row_dot, Tensor* grad_bias,
                              Tensor* grad_c) {
  const DiagonalTiling t = diagonal_tiling(ctx, geo);
  const int64_t per_table = geo.heads * t.parts() * t.diagonals;
  cuda::DeviceBuffer partial_b(ctx, grad_bias ? sizeof(double) * per_table : 0);
  cuda::DeviceBuffer partial_c(ctx, grad_c ? sizeof(double) * per_table : 0);
  const int threads = 256;
  with_device_value_type(probs.dtype(), [&](auto tag) {
    using T = decltype(tag);
    urpe_attention_diagonal_partials_kernel<T><<<static_cast<unsigned>(geo.heads * t.parts()), threads, 0,
                                                 ctx.stream()>>>(
        geo, t, values<T>(grad_out), values<T>(probs), row_dot, grad_bias ? partial_b.as<double>() : nullptr,
        grad_c ? partial_c.as<double>() : nullptr);
    CUDA_CHECK_LAUNCH("urpe_attention_diagonal_partials_kernel");
  });
  if (grad_bias) diagonal_totals_to_table(ctx, t, geo.heads, params.bias_map, partial_b.as<double>(), *grad_bias);
  if (grad_c) diagonal_totals_to_table(ctx, t, geo.heads, params.c_map, partial_c.as<double>(), *grad_c);
}

}  // namespace

void urpe_attention_table_gradients_cuda(cuda::Context& ctx, const AttentionGeometry& geo,
                                         const UrpeAttentionParams& params, const Tensor& grad_out,
                                         const Tensor& probs, const double* row_dot,
                                         Tensor* grad_bias, Tensor* grad_c) {
  const bool diagonal_b = grad_bias && bucket_map_is_diagonal_constant(params.bias_map);
  const bool diagonal_c = grad_c && bucket_map_is_diagonal_constant(params.c_map);
  if (diagonal_b || diagonal_c)
    diagonal_table_gradients(ctx, geo, params, grad_out, probs, row_dot, diagonal_b ? grad_bias : nullptr,
                             diagonal_c ? grad_c : nullptr);
  if (grad_bias && !diagonal_b)
    general_table_gradient<false>(ctx, geo, params.bias_map, grad_out, probs, row_dot, *grad_bias);
  if (grad_c && !diagonal_c)
    general_table_gradient<true>(ctx, geo, params.c_map, grad_out, probs, nullptr, *grad_c);
}

}  // namespace urpe::kernels
