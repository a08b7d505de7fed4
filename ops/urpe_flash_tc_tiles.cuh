// Tile pieces shared by the tensor-core kernels of the fused attention
// (urpe_flash_tc_forward_cuda.cu, urpe_flash_tc_backward_cuda.cu): the head-dim classes, loading
// a tile of rows into shared memory already rounded to TF32, the per-tile bias and C of a
// relative map staged by diagonal, and what one score cell (i, j) is: masked, its bias, its C.
#pragma once
#include <cstdint>

#include "ops/mma_tf32.cuh"
#include "ops/urpe_flash_geometry.cuh"

namespace urpe::kernels::flash_tc {

constexpr int kWarps = 4;                 // every tensor-core kernel: 128 threads
constexpr int kThreads = kWarps * kWarp;
constexpr int kWarpRows = tc::kM;         // 16 rows of the block's own side per warp
constexpr int kBlockRows = kWarps * kWarpRows;

// The head-dim classes: dh and dv are padded with zeros up to 32, 64 or 128 (kDim), a multiple of
// the k-step 8. Rows in shared memory are kDim + 4 floats apart: a lane reading B(t, g) of a
// fragment then hits bank 4g + t, and one reading row 2t (+1), column g hits bank 8t + g, both
// all 32 banks (no conflicts in either access pattern of the kernels).
template <int kDim>
struct Dim {
  static constexpr int kSteps = kDim / 8;   // k-steps (or n-blocks) over the head dim
  static constexpr int kStride = kDim + 4;  // floats per shared row
};

inline int dim_class(int64_t dh, int64_t dv) {
  const int64_t d = dh > dv ? dh : dv;
  return d <= 32 ? 32 : d <= 64 ? 64 : 128;
}

// Rows [first_row, first_row + kRows) of src (`cols` floats per row) into tile, rounded to TF32;
// rows from `valid_rows` on and columns from `cols` to kDim become zeros, so every fragment read
// later is of a written, finite value. The whole block calls it; the caller places the barriers.
template <int kRows, int kDim, int kStride>
__device__ __forceinline__ void load_rounded(float (&tile)[kRows][kStride], const float* __restrict__ src,
                                             int64_t first_row, int64_t valid_rows, int64_t cols) {
  src += first_row * cols;
  for (int e = threadIdx.x; e < kRows * kDim; e += blockDim.x) {
    const int r = e / kDim, d = e % kDim;
    const float x = r < valid_rows && d < cols ? src[r * cols + d] : 0.0f;
    tile[r][d] = __uint_as_float(tc::to_tf32(x));
  }
}

// A row of a fragment-A operand straight from global memory (rows of the block's own side, read
// once per task): a[s][r] = src(row a_row, column 8s + a_col), rounded, zero outside.
template <int kSteps>
__device__ __forceinline__ void load_a_fragments(uint32_t (&a)[kSteps][4], const float* __restrict__ src,
                                                 int64_t first_row, int64_t valid_rows, int64_t cols,
                                                 int lane) {
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = tc::a_row(lane, r), col = 8 * s + tc::a_col(lane, r);
      const float x = row < valid_rows && col < cols ? src[(first_row + row) * cols + col] : 0.0f;
      a[s][r] = tc::to_tf32(x);
    }
}

// The bias and C of a tile whose cells (i, j) run over rows [r0, r0 + kRowsT) of the query side
// and columns [c0, c0 + kColsT) of the key side: for a relative map both depend on j − i alone,
// so the tile needs kRowsT + kColsT − 1 values of each, x = (j − c0) − (i − r0) + kRowsT − 1.
// Entries of a diagonal outside the matrix get B = 0, C = 1 (never used by an unmasked cell).
// Dense maps are read per cell (cell_bias / cell_c) and leave these untouched.
template <int kDiag>
__device__ __forceinline__ void stage_diagonals(const FlashGeometry& g, int64_t h, int64_t r0, int64_t c0,
                                                int rows_minus_1, float (&bias_s)[kDiag], float (&c_s)[kDiag]) {
  for (int x = threadIdx.x; x < kDiag; x += blockDim.x) {
    const int64_t m = c0 - r0 + x - rows_minus_1 + g.nq - 1;  // index into the (Nq + Nk − 1) map
    const bool valid = m >= 0 && m < g.nq + g.nk - 1;
    bias_s[x] = g.bias_table && g.bias_kind == kRelative && valid ? g.bias_table[h * g.bias_buckets + g.bias_map[m]] : 0.0f;
    c_s[x] = g.c_table && g.c_kind == kRelative && valid ? g.c_table[h * g.c_buckets + g.c_map[m]] : 1.0f;
  }
}

// A tile whose every cell (i, j), i in [i_lo, i_hi), j in [j_lo, j_hi), is inside the matrix and
// unmasked, with no dropout: most tiles of a long sequence. The kernels then skip the per-cell
// mask and κ (the same values: false and 1), a few instructions of every cell's twenty.
__device__ __forceinline__ bool tile_is_plain(const FlashGeometry& g, int64_t i_lo, int64_t i_hi, int64_t j_lo,
                                              int64_t j_hi) {
  return g.mask.key_padding == nullptr && g.drop_p <= 0.0f && i_hi <= g.nq && j_hi <= g.nk &&
         (!g.mask.causal || j_hi - 1 <= i_lo + g.mask.causal_offset) && j_lo >= 0;
}

// Cell (i, j) of batch item b: hidden when outside the matrix, causally in the future or a padded
// key (then every kernel treats it as P = 0).
__device__ __forceinline__ bool cell_masked(const FlashGeometry& g, int64_t b, int64_t i, int64_t j) {
  return i >= g.nq || j >= g.nk || g.masked(b, i, j);
}
// B and C of an unmasked cell; x its staged diagonal (stage_diagonals).
__device__ __forceinline__ float cell_bias(const FlashGeometry& g, const float* bias_s, int x, int64_t b,
                                           int64_t h, int64_t i, int64_t j) {
  if (g.bias_table == nullptr) return 0.0f;
  return g.bias_kind == kRelative ? bias_s[x] : g.bias(b, h, i, j);
}
__device__ __forceinline__ float cell_c(const FlashGeometry& g, const float* c_s, int x, int64_t b,
                                        int64_t h, int64_t i, int64_t j) {
  if (g.c_table == nullptr) return 1.0f;
  return g.c_kind == kRelative ? c_s[x] : g.c_value(b, h, i, j);
}

// Max and sum over the four lanes of a fragment row's group (lanes 4g … 4g + 3): a fixed tree.
__device__ __forceinline__ float group_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float group_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

}  // namespace urpe::kernels::flash_tc
