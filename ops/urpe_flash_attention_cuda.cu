// The fused URPE attention on CUDA (maths in urpe_flash_attention.h): the scalar FP32 kernels,
// the reference and the path of strict-FP32 runs. With the context's TF32 switch on (--tf32) or
// its BF16 switch (precision=bf16) the host functions at the end hand the work to the tensor-core
// kernels (urpe_flash_tc.h, TF32 or BF16 tiles), keeping
// only D_i and, for dense maps, the table gradients' bucket walk. Every kernel here walks tiles of
// 32 keys (or queries) held in shared memory, one per lane, and gives each output row to one
// warp, so no two threads ever add into the same float: no atomics, the same bits every run.
//
// urpe_flash_attention_forward_kernel: one block (4 warps) per (b, h, 16 query rows); each warp
//   owns 4 rows. Per tile of 32 keys (K_J, V_J in shared memory, rows padded to dodge bank
//   conflicts) lane j computes z_ij = q_i·k_j·scale + B (−∞ where masked), the warp the running
//   max and sum, and each lane adds Σ_j w_ij·v_j to its 4 of the dv output columns, w_j being
//   broadcast by shuffle. Writes O and L = m + ln ℓ. Causal: tiles past the last row's limit are
//   never loaded.
//   Bytes: Q, O once; K and V once per 16 query rows (B·H·Nk·(dh + dv)·4·Nq/16), maps and
//   tables from cache; nothing of size Nq·Nk.
// urpe_flash_attention_backward_dot_kernel: D_i = dO_i·O_i in double, one warp per row (dO and O
//   in their dtype, f32 or bf16, widened exactly).
// bf16 q, k, v (precision=bf16 with the fused path): the BF16 tiles read them as they are and
//   write O, dQ, dK, dV in bf16 (flash_cuda_reads_bf16 says when); for the scalar kernels, the
//   TF32 tiles and a dense map's table gradients urpe_flash_attention.cpp makes FP32 copies
//   (widened exactly) and rounds the f32 results once, so those kernels are the f32 ones
//   unchanged (host code: no tensor is made in a kernel file).
// urpe_flash_attention_backward_dq_kernel: one block per (b, h, 8 query rows); per key tile it
//   recomputes P_ij = e^{z_ij − L_i} and dS_ij = scale·P_ij·(κ·C·(dO_i·v_j) − D_i) (double),
//   then dQ_i += Σ_j dS_ij·k_j (lane = columns).
// urpe_flash_attention_backward_dkdv_kernel: one block per (b, h, 8 key rows); per tile of 32
//   queries it recomputes P, Ã = P·C·κ and dS, then dV_j += Σ_i Ã_ij·dO_i, dK_j += Σ_i dS_ij·q_i.
//   Bytes (dq + dkdv): Q, K, V, dO read once per 8 rows of the other side; dQ, dK, dV written once.
// urpe_flash_attention_bias_grad_kernel / urpe_flash_attention_c_grad_kernel: one block per
//   (h, bucket k). The map's entries are grouped by bucket with a stable sort (BucketIndex; for a
//   relative map its Nq + Nk − 1 diagonals, so nothing of size Nq·Nk), and the block's warps walk
//   the bucket's cells (every batch item for a shared map) in a fixed order, one cell per warp:
//   the two dot products q_i·k_j and dO_i·v_j across the lanes, then dZ_ij (for ∂B) or
//   P_ij·κ_ij·(dO_i·v_j) (for ∂C), summed in double per warp and over the block by a fixed tree.
//   Bytes: q_i, k_j, dO_i, v_j per cell (from cache when cells of a row or column are close).
// Head dims up to kMaxDim = 128 (the shared tiles are sized for it); larger is an error naming
// the limit.
#include "ops/bf16_values.cuh"
#include "ops/bucket_index_cuda.cuh"
#include "ops/cuda_common.cuh"
#include "ops/urpe_flash_geometry.cuh"
#include "ops/urpe_flash_tc.h"

namespace urpe::kernels {

namespace {

constexpr int kTile = 32;                       // keys (or queries) per tile: one per lane
constexpr int kMaxDim = kFlashMaxDim;            // largest dh and dv
constexpr int kDimsPerLane = kMaxDim / kWarp;   // output columns per lane
constexpr int kWarps = 4;                       // warps per block
constexpr int kForwardRowsPerWarp = 4;          // forward: 16 query rows per block
constexpr int kBackwardRowsPerWarp = 2;         // dq / dkdv: 8 rows per block (two more tiles)
constexpr int kForwardRows = kWarps * kForwardRowsPerWarp;
constexpr int kBackwardRows = kWarps * kBackwardRowsPerWarp;

// Rows [first_row, first_row + kRows) of src (row stride `cols`) into a shared tile (row stride
// kStride); rows from `valid_rows` on become zeros, so a partial tile needs no bounds checks
// later. Called by the whole block; the caller places the barriers.
template <int kRows, int kStride>
__device__ __forceinline__ void load_tile(float (&tile)[kRows][kStride], const float* __restrict__ src,
                                          int64_t first_row, int64_t valid_rows, int64_t cols) {
  src += first_row * cols;
  for (int64_t e = threadIdx.x; e < kRows * cols; e += blockDim.x) {
    const int64_t r = e / cols, d = e % cols;
    tile[r][d] = r < valid_rows ? src[r * cols + d] : 0.0f;
  }
}

// The same rows of two tensors that a kernel reads together: K_J and V_J (forward, dq), a dq
// block's Q_I and dO_I, a dkdv block's K_J and V_J, and its Q_I and dO_I tiles.
template <int kRows, int kStrideA, int kStrideB>
__device__ __forceinline__ void load_tiles(float (&a_s)[kRows][kStrideA], const float* __restrict__ a,
                                           int64_t a_cols, float (&b_s)[kRows][kStrideB],
                                           const float* __restrict__ b, int64_t b_cols,
                                           int64_t first_row, int64_t valid_rows) {
  load_tile(a_s, a, first_row, valid_rows, a_cols);
  load_tile(b_s, b, first_row, valid_rows, b_cols);
}

// Σ_d a[d]·b[d] over d < n, a and b in shared memory.
__device__ __forceinline__ float dot(const float* a, const float* b, int64_t n) {
  float total = 0.0f;
  for (int64_t d = 0; d < n; ++d) total += a[d] * b[d];
  return total;
}

// A warp's output row lives in its lanes: lane owns columns d = lane + t·32 (t < kDimsPerLane)
// in acc[t]. Fixed-size arrays indexed by unrolled constants only, so they stay in registers.
template <int kRows>
__device__ __forceinline__ void zero_rows(float (&acc)[kRows][kDimsPerLane]) {
#pragma unroll
  for (int rr = 0; rr < kRows; ++rr)
#pragma unroll
    for (int t = 0; t < kDimsPerLane; ++t) acc[rr][t] = 0.0f;
}

// acc += Σ_jj w_jj·tile[jj] over the tile's 32 rows (columns d < cols), w_jj held by lane jj and
// broadcast by shuffle: the product of a row of weights with a shared tile, added in jj order.
template <int kStride>
__device__ __forceinline__ void add_weighted_rows(float (&acc)[kDimsPerLane], float w,
                                                  const float (*tile)[kStride], int lane,
                                                  int64_t cols) {
  for (int jj = 0; jj < kTile; ++jj) {
    const float wj = __shfl_sync(0xffffffffu, w, jj);
#pragma unroll
    for (int t = 0; t < kDimsPerLane; ++t) {
      const int d = lane + t * kWarp;
      if (d < cols) acc[t] += wj * tile[jj][d];
    }
  }
}

// dst[d] = acc[t] for this lane's columns d < cols.
__device__ __forceinline__ void store_row(float* __restrict__ dst, const float (&acc)[kDimsPerLane],
                                          int lane, int64_t cols) {
#pragma unroll
  for (int t = 0; t < kDimsPerLane; ++t) {
    const int d = lane + t * kWarp;
    if (d < cols) dst[d] = acc[t];
  }
}

__global__ void urpe_flash_attention_forward_kernel(FlashGeometry g, const float* __restrict__ q,
                                                    const float* __restrict__ k,
                                                    const float* __restrict__ v,
                                                    float* __restrict__ out,
                                                    float* __restrict__ lse) {
  const uint64_t seed = g.dropout_seed();  // once per thread
  URPE_SHARED(float, q_s, [kForwardRows][kMaxDim]);
  URPE_SHARED(float, k_s, [kTile][kMaxDim + 1]);
  URPE_SHARED(float, v_s, [kTile][kMaxDim]);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t tasks = row_tiles(g, g.nq, kForwardRows);
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const auto [bh, b, h, i0, rows] = row_tile(g, task, g.nq, kForwardRows);
    __syncthreads();  // the previous task's reads of q_s are done
    load_tile(q_s, q, bh * g.nq + i0, rows, g.dh);
    float o[kForwardRowsPerWarp][kDimsPerLane];
    float m[kForwardRowsPerWarp], l[kForwardRowsPerWarp];
    zero_rows(o);
#pragma unroll
    for (int rr = 0; rr < kForwardRowsPerWarp; ++rr) {
      m[rr] = -INFINITY;
      l[rr] = 0.0f;
    }
    const int64_t key_end = g.key_limit(i0 + rows - 1);  // masked for every row beyond
    for (int64_t j0 = 0; j0 < key_end; j0 += kTile) {
      const int64_t cols = min(int64_t(kTile), key_end - j0);
      __syncthreads();  // the previous tile's reads are done
      load_tiles(k_s, k, g.dh, v_s, v, g.dv, bh * g.nk + j0, cols);
      __syncthreads();
#pragma unroll
      for (int rr = 0; rr < kForwardRowsPerWarp; ++rr) {
        const int r = warp * kForwardRowsPerWarp + rr;
        if (r >= rows) continue;  // the same for the whole warp
        const int64_t i = i0 + r, j = j0 + lane;
        float z = -INFINITY;
        if (lane < cols && !g.masked(b, i, j)) z = g.logit(dot(q_s[r], k_s[lane], g.dh), b, h, i, j);
        const float m_new = fmaxf(m[rr], warp_max(z));
        if (m_new == -INFINITY) continue;  // nothing unmasked yet in this row (warp-uniform)
        const float alpha = m[rr] == m_new ? 1.0f : expf(m[rr] - m_new);  // 0 from −∞
        const float e = z == -INFINITY ? 0.0f : expf(z - m_new);
        l[rr] = l[rr] * alpha + warp_sum(e);
        m[rr] = m_new;
        const float w = e == 0.0f ? 0.0f : e * g.c_value(b, h, i, j) * g.keep(seed, bh, i, j);
#pragma unroll
        for (int t = 0; t < kDimsPerLane; ++t) o[rr][t] *= alpha;
        add_weighted_rows(o[rr], w, v_s, lane, g.dv);
      }
    }
#pragma unroll
    for (int rr = 0; rr < kForwardRowsPerWarp; ++rr) {
      const int r = warp * kForwardRowsPerWarp + rr;
      if (r >= rows) continue;
      const int64_t row = bh * g.nq + i0 + r;
      const bool empty = l[rr] == 0.0f;  // no unmasked key: O = 0, L = −∞
      const float inv = empty ? 0.0f : 1.0f / l[rr];
#pragma unroll
      for (int t = 0; t < kDimsPerLane; ++t) o[rr][t] *= inv;
      store_row(out + row * g.dv, o[rr], lane, g.dv);
      if (lse != nullptr && lane == 0) lse[row] = empty ? -INFINITY : m[rr] + logf(l[rr]);
    }
  }
}

template <typename T>
__global__ void urpe_flash_attention_backward_dot_kernel(int64_t rows, int64_t dv,
                                                         const T* __restrict__ grad_out,
                                                         const T* __restrict__ out,
                                                         double* __restrict__ d_row) {
  const int lane = threadIdx.x % kWarp;
  URPE_WARP_STRIDE(r, rows) {
    double total = 0.0;
    for (int64_t d = lane; d < dv; d += kWarp)
      total += static_cast<double>(load(grad_out, r * dv + d)) * load(out, r * dv + d);
    total = warp_sum(total);
    if (lane == 0) d_row[r] = total;
  }
}

__global__ void urpe_flash_attention_backward_dq_kernel(
    FlashGeometry g, const float* __restrict__ q, const float* __restrict__ k,
    const float* __restrict__ v, const float* __restrict__ grad_out, const float* __restrict__ lse,
    const double* __restrict__ d_row, float* __restrict__ grad_q) {
  const uint64_t seed = g.dropout_seed();  // once per thread
  URPE_SHARED(float, q_s, [kBackwardRows][kMaxDim]);
  URPE_SHARED(float, go_s, [kBackwardRows][kMaxDim]);
  URPE_SHARED(float, k_s, [kTile][kMaxDim + 1]);
  URPE_SHARED(float, v_s, [kTile][kMaxDim + 1]);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t tasks = row_tiles(g, g.nq, kBackwardRows);
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const auto [bh, b, h, i0, rows] = row_tile(g, task, g.nq, kBackwardRows);
    __syncthreads();
    load_tiles(q_s, q, g.dh, go_s, grad_out, g.dv, bh * g.nq + i0, rows);
    float dq[kBackwardRowsPerWarp][kDimsPerLane];
    zero_rows(dq);
    const int64_t key_end = g.key_limit(i0 + rows - 1);
    for (int64_t j0 = 0; j0 < key_end; j0 += kTile) {
      const int64_t cols = min(int64_t(kTile), key_end - j0);
      __syncthreads();  // the previous tile's reads are done
      load_tiles(k_s, k, g.dh, v_s, v, g.dv, bh * g.nk + j0, cols);
      __syncthreads();
#pragma unroll
      for (int rr = 0; rr < kBackwardRowsPerWarp; ++rr) {
        const int r = warp * kBackwardRowsPerWarp + rr;
        if (r >= rows) continue;
        const int64_t i = i0 + r, j = j0 + lane;
        const float row_lse = lse[bh * g.nq + i];
        if (row_lse == -INFINITY) continue;  // a fully masked row: nothing flows
        float ds = 0.0f;
        if (lane < cols && !g.masked(b, i, j)) {
          const float p = g.prob(dot(q_s[r], k_s[lane], g.dh), b, h, i, j, row_lse);
          const float gk = dot(go_s[r], v_s[lane], g.dv) * g.keep(seed, bh, i, j);
          ds = g.score_grad(p, gk, g.c_value(b, h, i, j), d_row[bh * g.nq + i]);
        }
        add_weighted_rows(dq[rr], ds, k_s, lane, g.dh);
      }
    }
#pragma unroll
    for (int rr = 0; rr < kBackwardRowsPerWarp; ++rr) {
      const int r = warp * kBackwardRowsPerWarp + rr;
      if (r < rows) store_row(grad_q + (bh * g.nq + i0 + r) * g.dh, dq[rr], lane, g.dh);
    }
  }
}

__global__ void urpe_flash_attention_backward_dkdv_kernel(
    FlashGeometry g, const float* __restrict__ q, const float* __restrict__ k,
    const float* __restrict__ v, const float* __restrict__ grad_out, const float* __restrict__ lse,
    const double* __restrict__ d_row, float* __restrict__ grad_k, float* __restrict__ grad_v) {
  const uint64_t seed = g.dropout_seed();  // once per thread
  URPE_SHARED(float, k_s, [kBackwardRows][kMaxDim]);
  URPE_SHARED(float, v_s, [kBackwardRows][kMaxDim]);
  URPE_SHARED(float, q_s, [kTile][kMaxDim + 1]);
  URPE_SHARED(float, go_s, [kTile][kMaxDim + 1]);
  URPE_SHARED(float, lse_s, [kTile]);
  URPE_SHARED(double, d_s, [kTile]);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t tasks = row_tiles(g, g.nk, kBackwardRows);
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const auto [bh, b, h, j0, keys] = row_tile(g, task, g.nk, kBackwardRows);
    __syncthreads();
    load_tiles(k_s, k, g.dh, v_s, v, g.dv, bh * g.nk + j0, keys);
    float dk[kBackwardRowsPerWarp][kDimsPerLane], dv[kBackwardRowsPerWarp][kDimsPerLane];
    zero_rows(dk);
    zero_rows(dv);
    // Causal: query i sees key j when j ≤ i + offset, so queries before j0 − offset see none.
    int64_t first_query = g.mask.causal ? j0 - g.mask.causal_offset : 0;
    first_query = first_query < 0 ? 0 : first_query;
    for (int64_t i0 = first_query; i0 < g.nq; i0 += kTile) {
      const int64_t count = min(int64_t(kTile), g.nq - i0);
      __syncthreads();
      load_tiles(q_s, q, g.dh, go_s, grad_out, g.dv, bh * g.nq + i0, count);
      if (threadIdx.x < kTile) {
        lse_s[threadIdx.x] = threadIdx.x < count ? lse[bh * g.nq + i0 + threadIdx.x] : -INFINITY;
        d_s[threadIdx.x] = threadIdx.x < count ? d_row[bh * g.nq + i0 + threadIdx.x] : 0.0;
      }
      __syncthreads();
#pragma unroll
      for (int rr = 0; rr < kBackwardRowsPerWarp; ++rr) {
        const int r = warp * kBackwardRowsPerWarp + rr;
        if (r >= keys) continue;
        const int64_t j = j0 + r, i = i0 + lane;
        float a = 0.0f, ds = 0.0f;
        if (lse_s[lane] != -INFINITY && !g.masked(b, i, j)) {  // rows past Nq have L = −∞
          const float p = g.prob(dot(q_s[lane], k_s[r], g.dh), b, h, i, j, lse_s[lane]);
          const float kappa = g.keep(seed, bh, i, j), cv = g.c_value(b, h, i, j);
          const float gk = dot(go_s[lane], v_s[r], g.dv) * kappa;
          a = p * cv * kappa;
          ds = g.score_grad(p, gk, cv, d_s[lane]);
        }
        // dV_j += Σ_i Ã_ij·dO_i and dK_j += Σ_i dS_ij·q_i in one pass over the tile's queries
        // (add_weighted_rows twice would shuffle and loop twice).
        for (int ii = 0; ii < kTile; ++ii) {
          const float ai = __shfl_sync(0xffffffffu, a, ii);
          const float dsi = __shfl_sync(0xffffffffu, ds, ii);
#pragma unroll
          for (int t = 0; t < kDimsPerLane; ++t) {
            const int d = lane + t * kWarp;
            if (d < g.dv) dv[rr][t] += ai * go_s[ii][d];
            if (d < g.dh) dk[rr][t] += dsi * q_s[ii][d];
          }
        }
      }
    }
#pragma unroll
    for (int rr = 0; rr < kBackwardRowsPerWarp; ++rr) {
      const int r = warp * kBackwardRowsPerWarp + rr;
      if (r >= keys) continue;
      const int64_t row = bh * g.nk + j0 + r;
      store_row(grad_k + row * g.dh, dk[rr], lane, g.dh);
      store_row(grad_v + row * g.dv, dv[rr], lane, g.dv);
    }
  }
}

// One block per (h, k): the sum over the cells (b, i, j) of bucket k of dZ (∂B) or G·P (∂C),
// each cell recomputed by one warp from q_i, k_j, dO_i, v_j, L_i and D_i.
template <bool kForC>
__device__ __forceinline__ void table_grad_blocks(
    const FlashGeometry& g, uint64_t seed, int kind, const int32_t* __restrict__ positions,
    const int32_t* __restrict__ offsets, int64_t buckets, const float* __restrict__ q,
    const float* __restrict__ k, const float* __restrict__ v, const float* __restrict__ grad_out,
    const float* __restrict__ lse, const double* __restrict__ d_row, float* __restrict__ grad_table) {
  URPE_SHARED(double, shared, [32]);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int warps = blockDim.x / kWarp;
  const int64_t cells = g.nq * g.nk;
  // The value of cell (b, i, j) for head h (0 where masked), the same in every lane.
  auto cell_value = [&](int64_t b, int64_t h, int64_t i, int64_t j) -> double {
    const int64_t bh = b * g.heads + h;
    const float row_lse = lse[bh * g.nq + i];
    if (row_lse == -INFINITY || g.masked(b, i, j)) return 0.0;
    float s = 0.0f, gh = 0.0f;
    for (int64_t d = lane; d < g.dh; d += kWarp) s += q[(bh * g.nq + i) * g.dh + d] * k[(bh * g.nk + j) * g.dh + d];
    for (int64_t d = lane; d < g.dv; d += kWarp)
      gh += grad_out[(bh * g.nq + i) * g.dv + d] * v[(bh * g.nk + j) * g.dv + d];
    s = warp_sum(s);
    gh = warp_sum(gh);
    const float p = g.prob(s, b, h, i, j, row_lse);
    const float gk = gh * g.keep(seed, bh, i, j);
    if (kForC) return static_cast<double>(gk) * p;
    return FlashGeometry::logit_grad(p, gk, g.c_value(b, h, i, j), d_row[bh * g.nq + i]);
  };
  for (int64_t hk = blockIdx.x; hk < g.heads * buckets; hk += gridDim.x) {
    const int64_t h = hk / buckets, key = hk % buckets;
    const int64_t begin = offsets[key], end = offsets[key + 1];
    double total = 0.0;  // this warp's cells; lane 0 keeps the sum
    if (kind == kRelative) {
      // Each position is a diagonal d: cells (i, i + d − (Nq − 1)) of every batch item.
      for (int64_t p = begin; p < end; ++p) {
        const int64_t delta = positions[p] - (g.nq - 1);  // j − i
        const int64_t i_lo = delta < 0 ? -delta : 0;
        const int64_t i_hi = min(g.nq, g.nk - delta);
        const int64_t length = i_hi - i_lo;
        for (int64_t item = warp; item < length * g.batch; item += warps) {
          const int64_t b = item / length, i = i_lo + item % length;
          const double value = cell_value(b, h, i, i + delta);
          if (lane == 0) total += value;
        }
      }
    } else {
      const bool shared_map = kind == kShared;
      const int64_t length = end - begin;
      const int64_t items = shared_map ? length * g.batch : length;
      for (int64_t item = warp; item < items; item += warps) {
        const auto [b, ij] = bucket_cell(positions, begin, length, item, shared_map, cells);
        const double value = cell_value(b, h, ij / g.nk, ij % g.nk);
        if (lane == 0) total += value;
      }
    }
    total = block_sum(total, shared);
    if (threadIdx.x == 0) grad_table[hk] = static_cast<float>(total);
  }
}

// ∂B_h[k] and ∂C_h[k]: two kernels (two names in Nsight) over the same loop.
__global__ void urpe_flash_attention_bias_grad_kernel(
    FlashGeometry g, int kind, const int32_t* __restrict__ positions,
    const int32_t* __restrict__ offsets, int64_t buckets, const float* __restrict__ q,
    const float* __restrict__ k, const float* __restrict__ v, const float* __restrict__ grad_out,
    const float* __restrict__ lse, const double* __restrict__ d_row, float* __restrict__ grad_table) {
  const uint64_t seed = g.dropout_seed();  // once per thread
  table_grad_blocks<false>(g, seed, kind, positions, offsets, buckets, q, k, v, grad_out, lse, d_row,
                           grad_table);
}

__global__ void urpe_flash_attention_c_grad_kernel(
    FlashGeometry g, int kind, const int32_t* __restrict__ positions,
    const int32_t* __restrict__ offsets, int64_t buckets, const float* __restrict__ q,
    const float* __restrict__ k, const float* __restrict__ v, const float* __restrict__ grad_out,
    const float* __restrict__ lse, const double* __restrict__ d_row, float* __restrict__ grad_table) {
  const uint64_t seed = g.dropout_seed();  // once per thread
  table_grad_blocks<true>(g, seed, kind, positions, offsets, buckets, q, k, v, grad_out, lse, d_row,
                          grad_table);
}

template <bool kForC>
void table_gradient(cuda::Context& ctx, const FlashGeometry& g, const Tensor& map,
                    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& grad_out,
                    const Tensor& lse, const double* d_row, Tensor& grad_table) {
  const int64_t buckets = grad_table.size(1);
  if (g.heads * buckets == 0) return;
  const BucketIndex index(ctx, map.i32(), map.numel(), buckets, "urpe_flash_attention backward");
  const int threads = kWarp * 8;
  auto kernel = kForC ? urpe_flash_attention_c_grad_kernel : urpe_flash_attention_bias_grad_kernel;
  kernel<<<grid_for(ctx, g.heads * buckets, 1), threads, 0, ctx.stream()>>>(
      g, map_kind(map), index.positions(), index.offsets(), buckets, q.f32(), k.f32(), v.f32(),
      grad_out.f32(), lse.f32(), d_row, grad_table.f32());
  CUDA_CHECK_LAUNCH(kForC ? "urpe_flash_attention_c_grad_kernel" : "urpe_flash_attention_bias_grad_kernel");
}

}  // namespace

// ---- which tensors the kernels read as they are ----

bool flash_cuda_reads_bf16(const Tensor& q, const Tensor& k, const Tensor& v, const UrpeAttentionParams& params,
                           const Tensor* grad_bias_table, const Tensor* grad_c_table) {
  const cuda::Context& ctx = context_of(q);
  const FlashGeometry g = geometry_of(q, k, v, params, {});
  const bool dense_table_grad = (grad_bias_table != nullptr && g.bias_table != nullptr && g.bias_kind != kRelative) ||
                                (grad_c_table != nullptr && g.c_table != nullptr && g.c_kind != kRelative);
  return ctx.bf16_tiles() && flash_tc_supports(g.dh, g.dv) && !dense_table_grad;
}

// ---- forward ----

void urpe_flash_attention_forward_cuda_native(const Tensor& q, const Tensor& k, const Tensor& v,
                                              const UrpeAttentionParams& params, const AttentionDropout& dropout,
                                              Tensor& out, Tensor& lse) {
  cuda::Context& ctx = context_of(out);
  const FlashGeometry g = geometry_of(q, k, v, params, dropout);
  URPE_CHECK(q.dtype() == DType::f32 || flash_cuda_reads_bf16(q, k, v, params, nullptr, nullptr),
             "urpe_flash_attention on CUDA: these kernels read f32 q, k, v; got " << q.describe());
  if ((ctx.tf32() || ctx.bf16_tiles()) && flash_tc_supports(g.dh, g.dv)) {  // the tensor-core kernels
    urpe_flash_tc_forward(ctx, q, k, v, params, dropout, out, lse, ctx.bf16_tiles() ? TcMath::bf16 : TcMath::tf32);
    return;
  }
  const int64_t tasks = row_tiles(g, g.nq, kForwardRows);
  if (tasks == 0 || g.dv == 0) return;
  urpe_flash_attention_forward_kernel<<<grid_for(ctx, tasks, 1), kWarp * kWarps, 0, ctx.stream()>>>(
      g, q.f32(), k.f32(), v.f32(), out.f32(), lse.defined() ? lse.f32() : nullptr);
  CUDA_CHECK_LAUNCH("urpe_flash_attention_forward_kernel");
}

// ---- backward ----

void urpe_flash_attention_backward_cuda_native(const Tensor& q, const Tensor& k, const Tensor& v,
                                               const Tensor& out, const Tensor& lse, const Tensor& grad_out,
                                               const UrpeAttentionParams& params, const AttentionDropout& dropout,
                                               Tensor& grad_q, Tensor& grad_k, Tensor& grad_v,
                                               Tensor* grad_bias_table, Tensor* grad_c_table) {
  cuda::Context& ctx = context_of(grad_q);
  const FlashGeometry g = geometry_of(q, k, v, params, dropout);
  URPE_CHECK(q.dtype() == DType::f32 || flash_cuda_reads_bf16(q, k, v, params, grad_bias_table, grad_c_table),
             "urpe_flash_attention on CUDA: these kernels read f32 q, k, v; got " << q.describe());
  const int64_t rows = g.batch * g.heads * g.nq;
  const bool want_bias = grad_bias_table != nullptr && g.bias_table != nullptr;
  const bool want_c = grad_c_table != nullptr && g.c_table != nullptr;
  if (rows == 0 || g.nk == 0) {
    for (Tensor* t : {&grad_q, &grad_k, &grad_v, grad_bias_table, grad_c_table})
      if (t != nullptr && t->numel()) t->fill(0.0f);
    return;
  }
  cuda::DeviceBuffer d_row(ctx, sizeof(double) * rows);  // D_i = dO_i·O_i
  const int dot_threads = kWarp * 8;
  with_device_value_type(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    urpe_flash_attention_backward_dot_kernel<T><<<grid_for(ctx, rows, 8), dot_threads, 0, ctx.stream()>>>(
        rows, g.dv, values<T>(grad_out), values<T>(out), d_row.as<double>());
  });
  CUDA_CHECK_LAUNCH("urpe_flash_attention_backward_dot_kernel");

  if ((ctx.tf32() || ctx.bf16_tiles()) && flash_tc_supports(g.dh, g.dv)) {
    // --tf32 (TF32 tiles) or precision=bf16 (BF16 tiles): dQ, dK, dV and the tables of relative maps on the tensor cores; a table with a
    // dense map (not a function of j − i) keeps the bucket walk below.
    Tensor* tc_bias = want_bias && g.bias_kind == kRelative ? grad_bias_table : nullptr;
    Tensor* tc_c = want_c && g.c_kind == kRelative ? grad_c_table : nullptr;
    urpe_flash_tc_backward(ctx, q, k, v, lse, grad_out, d_row.as<double>(), params, dropout, grad_q,
                           grad_k, grad_v, tc_bias, tc_c, 0, ctx.bf16_tiles() ? TcMath::bf16 : TcMath::tf32);
    if (want_bias && tc_bias == nullptr)
      table_gradient<false>(ctx, g, params.bias_map, q, k, v, grad_out, lse, d_row.as<double>(),
                            *grad_bias_table);
    if (want_c && tc_c == nullptr)
      table_gradient<true>(ctx, g, params.c_map, q, k, v, grad_out, lse, d_row.as<double>(),
                           *grad_c_table);
    return;
  }

  const int64_t dq_tasks = row_tiles(g, g.nq, kBackwardRows);
  urpe_flash_attention_backward_dq_kernel<<<grid_for(ctx, dq_tasks, 1), kWarp * kWarps, 0, ctx.stream()>>>(
      g, q.f32(), k.f32(), v.f32(), grad_out.f32(), lse.f32(), d_row.as<double>(), grad_q.f32());
  CUDA_CHECK_LAUNCH("urpe_flash_attention_backward_dq_kernel");

  const int64_t kv_tasks = row_tiles(g, g.nk, kBackwardRows);
  urpe_flash_attention_backward_dkdv_kernel<<<grid_for(ctx, kv_tasks, 1), kWarp * kWarps, 0, ctx.stream()>>>(
      g, q.f32(), k.f32(), v.f32(), grad_out.f32(), lse.f32(), d_row.as<double>(), grad_k.f32(),
      grad_v.f32());
  CUDA_CHECK_LAUNCH("urpe_flash_attention_backward_dkdv_kernel");

  if (want_bias)
    table_gradient<false>(ctx, g, params.bias_map, q, k, v, grad_out, lse, d_row.as<double>(),
                          *grad_bias_table);
  if (want_c)
    table_gradient<true>(ctx, g, params.c_map, q, k, v, grad_out, lse, d_row.as<double>(),
                         *grad_c_table);
}

}  // namespace urpe::kernels
