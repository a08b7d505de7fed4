// Tile pieces shared by the tensor-core kernels of the fused attention
// (urpe_flash_tc_forward_cuda.cu, urpe_flash_tc_backward_cuda.cu): the head-dim classes, tasks
// with 32-bit offsets inside a (b, h) slice, loading a tile of rows into shared memory already
// rounded to TF32 (or to BF16, packed two per word), the per-tile bias and C of a relative map staged by diagonal, the test that
// sends an interior tile down the mask-free fast path, and what one score cell (i, j) of an edge
// tile is: masked, its bias, its C.
#pragma once
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>

#include "ops/bf16_values.cuh"
#include "ops/cp_async.cuh"
#include "ops/mma_bf16.cuh"
#include "ops/mma_tf32.cuh"
#include "ops/urpe_flash_geometry.cuh"

namespace urpe::kernels::flash_tc {

constexpr int kWarps = 4;                 // every tensor-core kernel: 128 threads
constexpr int kThreads = kWarps * kWarp;
constexpr int kWarpRows = tc::kM;         // 16 rows of the block's own side per warp
constexpr int kBlockRows = kWarps * kWarpRows;

// The head-dim classes: dh and dv are padded with zeros up to 32, 64 or 128 (kDim), a multiple of
// the k-step 8 (the shared tiles' layouts: load_rounded_column_pairs, load_rounded_row_pairs).
template <int kDim>
struct Dim {
  static constexpr int kSteps = kDim / 8;  // k-steps (or n-blocks) over the head dim
};

inline int dim_class(int64_t dh, int64_t dv) {
  const int64_t d = dh > dv ? dh : dv;
  return d <= 32 ? 32 : d <= 64 ? 64 : 128;
}

// ---- tasks and 32-bit offsets ----
// Inside one (b, h) slice every offset is a 32-bit int (the host checks the sizes with
// check_tc_sizes); only the slice's base pointer is 64-bit, computed once per task. The task
// number splits into (slice, tile) with one 32-bit unsigned division, inline (a 64-bit one is a
// called subroutine on the GPU).
struct TcTask {
  int bh, b, h, first;  // slice b·H + h, its batch item and head, the tile's first row
};
__device__ __forceinline__ TcTask tc_task(unsigned task, unsigned tiles_per_slice, unsigned heads, int rows) {
  const unsigned bh = task / tiles_per_slice, b = bh / heads;
  return {int(bh), int(b), int(bh - b * heads), int(task - bh * tiles_per_slice) * rows};
}

// What the kernels assume of 32-bit offsets, checked once on the host: tasks, rows × head dim of
// a slice, and the relative map's Nq + Nk − 1 diagonals (plus a tile) fit an int.
inline void check_tc_sizes(const FlashGeometry& g) {
  const int64_t limit = int64_t(1) << 31, d = g.dh > g.dv ? g.dh : g.dv;
  const int64_t tiles = g.batch * g.heads * (((g.nq > g.nk ? g.nq : g.nk) + kBlockRows - 1) / kBlockRows);
  URPE_CHECK(tiles < limit && g.nq * d < limit && g.nk * d < limit && g.nq + g.nk + 2 * kBlockRows < limit,
             "urpe_flash_attention on CUDA (tensor cores): a (b, h) slice of Nq = " << g.nq << ", Nk = " << g.nk
             << ", head dim " << d << " with " << g.batch * g.heads << " slices exceeds the kernels' 32-bit offsets");
}

// The shared tiles are declared as float4 arrays, so that every row starts on a 16-byte boundary
// (a plain __shared__ float array is only 4-byte aligned) and the loaders below can store whole
// float4s; the kernels read them through a view of floats or float2s (the same bytes).
template <typename T, int kCols, int kRows, int kVectors>
__device__ __forceinline__ T (&tile_view(float4 (&tile)[kRows][kVectors]))[kRows][kCols] {
  static_assert(kCols * sizeof(T) == kVectors * sizeof(float4), "a view of the same bytes per row");
  return reinterpret_cast<T(&)[kRows][kCols]>(tile);
}

// One loader unit of the paired layouts below: 8 consecutive 4-byte words of a shared row, its
// first half (words 0–3) and second half (4–7) written as two float4 stores. The unit's first
// word is 8u words past a row start, and rows are ≡ 8 words (mod 32 banks) apart in the paired
// layouts, so the 8 lanes of a quarter-warp (one 128-bit store wavefront) start at 4 different
// banks, two lanes each. Against that, unit e's halves trade places when bit 2 of e is set
// (unit_swapped): the first store of those lanes goes 4 banks further and each store instruction
// is conflict-free (ncu counted 7.3-way conflicts on the forward's scalar-order float2 stores,
// H200 2026-11-27). Trading addresses rather than values needs no selects (the first fix stored
// the swapped lanes' second half first: 8 FSEL a unit, bench/cuda_notes.md, sixth pass); the
// fragment readers apply the same swap (a float2 at place p of the unit is read at p ^ 2).
__host__ __device__ constexpr bool unit_swapped(int e) { return (e >> 2) & 1; }
__device__ __forceinline__ void store_unit_halves(void* unit, const float4& first, const float4& second, bool swapped) {
  float4* d = static_cast<float4*>(unit);
  d[swapped ? 1 : 0] = first;
  d[swapped ? 0 : 1] = second;
}

// ---- where a loader reads: a tensor's rows, or a staging tile ----
// GlobalRows: the rows of a tensor (global memory), `cols` elements apart from the tile's first
// row, zeros past `valid_rows` and `cols`; read as 16-byte vectors when the tile is whole (kDim
// columns, every row valid, 16-byte aligned), element by element otherwise.
// StagedRows: a staging tile in shared memory that prefetch_rows filled (the pipelined kernels):
// kRows rows of kDim elements, zeros included, so always whole, with its 16-byte units swizzled:
// unit f (row-major, f = row·units per row + unit) lies at staged_unit(f) = f ^ ((f >> 3) & 7),
// i.e. in the k-th aligned group of 8 units, unit u sits at u ^ (k mod 8). Why: a quarter-warp's
// 8 lanes (one 128-bit shared load wavefront) must hit 8 distinct 16-byte slots of a 128-byte
// line (slot = unit mod 8), and the loaders read the staging in three patterns:
//   * 8 consecutive units (the row-pair loaders, the bf16-tensor loaders, prefetch_rows' cp.async
//     writes): one aligned group, the swizzle a permutation of it: distinct slots;
//   * units 2l, l = 0…7, then 2l + 1 (the TF32 row loader: 8 floats a thread): unswizzled slots
//     0, 2, 4, 6 twice (2-way; bench/cuda_notes.md, fourth pass); swizzled, lanes 0–3 and 4–7 are
//     in groups c and c + 1 (c even), slots {0, 2, 4, 6} ^ c and ^ (c + 1): all 8;
//   * units 4l + j, j = 0…3 (the BF16 loaders from f32 tensors: 16 floats a thread): unswizzled
//     slots 0, 4, 0, 4, …; swizzled (4·(l & 1) + j) ^ (c + (l >> 1)), c ∈ {0, 4}: all 8.
// The bank model measured it (URPE_SIM_BANKS; bench/cuda_notes.md, "Bank conflicts on the
// simulator"): the last pattern's excess wavefronts in the BF16 pipelined forward, dQ and dK/dV
// 2048 / 4096 / 4096 → 0; the others stay at 0. (Until 2026-11-28 the swizzle was f ^ (bit 3 of f),
// which covered the first two patterns only.) It moves addresses only, never values: the loaders
// produce the same tiles, the same bits.
struct GlobalRows {};
struct StagedRows {};

__device__ __forceinline__ unsigned staged_unit(unsigned f) { return f ^ ((f >> 3) & 7u); }

// Element (row_offset + c + k) of a tile of T (row_offset = row · kDim for a staging tile): for a
// tensor the pointer as the single-buffered loaders always formed it, (src + row_offset) + c + k;
// for a staging tile its swizzled place (unit staged_unit(u), the same place inside the unit).
template <typename Layout, typename T>
__device__ __forceinline__ const T* tile_at(const T* src, int row_offset, int c, int k = 0) {
  if constexpr (std::is_same_v<Layout, StagedRows>) {
    constexpr unsigned kPerUnit = 16 / unsigned(sizeof(T));
    const unsigned e = unsigned(row_offset + c + k);
    return src + (staged_unit(e / kPerUnit) * kPerUnit + e % kPerUnit);
  } else {
    return src + row_offset + c + k;
  }
}

template <int kRows, int kDim, typename Layout, typename T>
__device__ __forceinline__ bool whole_tile(const T* src, int valid_rows, int cols) {
  if constexpr (std::is_same_v<Layout, StagedRows>)
    return true;
  else
    return cols == kDim && valid_rows >= kRows && (reinterpret_cast<uintptr_t>(src) & 15) == 0;
}

// One loader unit read from global memory (or a staging tile): floats c…c+7 of row r
// (read_row_unit), or floats c…c+3 of rows r and r + 1 (read_row_pair_unit), with zeros for rows
// from `valid_rows` on and columns from `cols` on. A whole tile (`whole`: kDim columns, every row
// valid, 16-byte aligned) is read as float4s with no per-element bounds; the loaders below differ
// only in how they store the unit.
template <int kDim, typename Layout = GlobalRows>
__device__ __forceinline__ void read_row_unit(float (&x)[8], const float* __restrict__ src, int r, int c, bool whole,
                                              int valid_rows, int cols) {
  if (whole) {
    const float4 a = *reinterpret_cast<const float4*>(tile_at<Layout>(src, r * kDim, c));
    const float4 b = *reinterpret_cast<const float4*>(tile_at<Layout>(src, r * kDim, c, 4));
    x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w, x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
  } else {
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = r < valid_rows && c + k < cols ? src[r * cols + c + k] : 0.0f;
  }
}

template <int kDim, typename Layout = GlobalRows>
__device__ __forceinline__ void read_row_pair_unit(float (&even)[4], float (&odd)[4], const float* __restrict__ src,
                                                   int r, int c, bool whole, int valid_rows, int cols) {
  if (whole) {
    const float4 a = *reinterpret_cast<const float4*>(tile_at<Layout>(src, r * kDim, c));
    const float4 b = *reinterpret_cast<const float4*>(tile_at<Layout>(src, (r + 1) * kDim, c));
    even[0] = a.x, even[1] = a.y, even[2] = a.z, even[3] = a.w;
    odd[0] = b.x, odd[1] = b.y, odd[2] = b.z, odd[3] = b.w;
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      even[k] = r < valid_rows && c + k < cols ? src[r * cols + c + k] : 0.0f;
      odd[k] = r + 1 < valid_rows && c + k < cols ? src[(r + 1) * cols + c + k] : 0.0f;
    }
  }
}

// Rows [0, kRows) of src (`cols` floats per row, the tile's first row) into a shared tile, rounded
// to TF32, in one of two layouts that give each mma's two B registers in one 64-bit shared load
// (half the shared loads of a plain row-major tile; the same TF32 values, so the same products):
//   column pairs (a tile read by rows, as the n side of X·Tᵀ: B(t, g) = T(g, t), B(t + 4, g) =
//     T(g, t + 4)): T(r, 8s + t) and T(r, 8s + t + 4) side by side at tile[r][4s + t]; rows
//     kDim + 8 floats apart, so the 16 lanes of a half-warp (rows g = 0..3, t = 0..3) hit banks
//     8g + 2t, 8g + 2t + 1;
//   row pairs (a tile read as the k side of X·T with X from the accumulators, paired: rows 2t,
//     2t + 1, column g): T(2p, d) and T(2p + 1, d) side by side at tile[p][d]; pair rows
//     2·kDim + 8 floats apart: a half-warp's lanes hit banks 8t + 2g, 8t + 2g + 1.
// Rows from `valid_rows` on and columns from `cols` to kDim become zeros, so every fragment read
// later is of a written, finite value. A whole tile of kDim columns on a 16-byte boundary (the
// common case) is read as float4s, with no per-element bounds. Each thread writes 8 consecutive
// floats (8 columns of one row, or 4 columns of two rows) as two float4s (store_unit_halves; the
// readers column_pairs_fragment and row_pairs_fragment below undo its swap).
// The whole block calls a loader; the caller places the barriers.
template <int kRows, int kDim, int kCols2, typename Layout = GlobalRows>
__device__ __forceinline__ void load_rounded_column_pairs(float2 (&tile)[kRows][kCols2], const float* __restrict__ src,
                                                          int valid_rows, int cols, Layout = {}) {
  static_assert(kCols2 == kDim / 2 + 4, "rows kDim + 8 floats apart");
  constexpr int kUnits = kRows * kDim / 8;  // 8 columns of one row each
  static_assert(kUnits % kThreads == 0, "every thread loads the same number of units");
  const bool whole = whole_tile<kRows, kDim, Layout>(src, valid_rows, cols);
#pragma unroll
  for (int n = 0; n < kUnits / kThreads; ++n) {
    const int e = threadIdx.x + n * kThreads, r = e / (kDim / 8), c = 8 * (e % (kDim / 8));
    float x[8];
    read_row_unit<kDim, Layout>(x, src, r, c, whole, valid_rows, cols);
    float t[8];  // the float2s (x[k], x[k + 4]), k = 0…3, one after the other
#pragma unroll
    for (int k = 0; k < 4; ++k) t[2 * k] = __uint_as_float(tc::to_tf32(x[k])), t[2 * k + 1] = __uint_as_float(tc::to_tf32(x[k + 4]));
    store_unit_halves(&tile[r][c / 2], make_float4(t[0], t[1], t[2], t[3]), make_float4(t[4], t[5], t[6], t[7]),
                      unit_swapped(e));
  }
}

template <int kRows, int kDim, int kPairs, int kCols, typename Layout = GlobalRows>
__device__ __forceinline__ void load_rounded_row_pairs(float2 (&tile)[kPairs][kCols], const float* __restrict__ src,
                                                       int valid_rows, int cols, Layout = {}) {
  static_assert(kPairs * 2 == kRows && kCols == kDim + 4, "pair rows 2·kDim + 8 floats apart");
  constexpr int kUnits = kPairs * kDim / 4;  // 4 columns of two rows each
  static_assert(kUnits % kThreads == 0, "every thread loads the same number of units");
  const bool whole = whole_tile<kRows, kDim, Layout>(src, valid_rows, cols);
#pragma unroll
  for (int n = 0; n < kUnits / kThreads; ++n) {
    const int e = threadIdx.x + n * kThreads, p = e / (kDim / 4), c = 4 * (e % (kDim / 4)), r = 2 * p;
    float even[4], odd[4];
    read_row_pair_unit<kDim, Layout>(even, odd, src, r, c, whole, valid_rows, cols);
    float t[8];  // the float2s (even[k], odd[k]), k = 0…3, one after the other
#pragma unroll
    for (int k = 0; k < 4; ++k) t[2 * k] = __uint_as_float(tc::to_tf32(even[k])), t[2 * k + 1] = __uint_as_float(tc::to_tf32(odd[k]));
    store_unit_halves(&tile[p][c], make_float4(t[0], t[1], t[2], t[3]), make_float4(t[4], t[5], t[6], t[7]),
                      unit_swapped(e));
  }
}

// The B fragment of an m16n8k8 product from the two TF32 layouts, one 64-bit shared load:
//   column pairs: (T(row, 8s + t), T(row, 8s + t + 4)), place t of unit row·kDim/8 + s;
//   row pairs: (T(2p, d), T(2p + 1, d)), place d mod 4 of unit p·kDim/4 + d/4 (bit 2 of it is
//     bit 4 of d, as kDim/4 ≥ 8).
// A swapped unit has its float2 at place t read at t ^ 2. `row` is the kernels' nb·8 + g and d
// their nd·8 + g, so the swap depends on g and the unrolled step alone.
template <int kDim, int kRows, int kCols>
__device__ __forceinline__ float2 column_pairs_fragment(const float2 (&tile)[kRows][kCols], int row, int s,
                                                        int member) {
  return tile[row][4 * s + (member ^ (unit_swapped(row * (kDim / 8) + s) ? 2 : 0))];
}
template <int kPairs, int kCols>
__device__ __forceinline__ float2 row_pairs_fragment(const float2 (&tile)[kPairs][kCols], int p, int d) {
  return tile[p][d ^ ((d >> 4) & 1 ? 2 : 0)];
}

// ---- BF16 tiles (the m16n8k16 kernels) ----
// The same rows rounded to BF16 (pack_bf16, once per element) and packed two per 32-bit word, in
// one of two layouts that give each mma's two B registers in one 64-bit shared load, as the TF32
// pairs above do (two 32-bit loads an mma before 2026-11-28: bench/cuda_notes.md, sixth pass):
//   bf16 rows (a tile read by rows, as the n side of X·Tᵀ: b[0] = T(g, 16s + 2t | +1), b[1] =
//     T(g, 16s + 8 + 2t | +1)): of each 16 columns of row r, word w = T(r, 16s + 2w | +1), w = 0…7,
//     sits at place 2·(w mod 4) + w / 4, so lane t's b[0], b[1] are places 2t, 2t + 1:
//     tile[r][8s + 2t] as a uint2 (bf16_rows_fragment, which also undoes the swap below). Rows kDim/2 + 8 words apart: at kDim 64 and 128 ≡ 8
//     (mod 32 banks), so the 16 lanes of a half-warp (rows g = 0…3, t = 0…3) hit banks 8g + 2t, +1;
//     at 32, 24 apart: banks (24g mod 32) + 2t, +1, also all distinct;
//   bf16 quad rows (a tile read as the k side of X·T: b[0] = T(16κ + 2t | +1, g), b[1] =
//     T(16κ + 8 + 2t | +1, g)): the word T(2p, d) | T(2p + 1, d) of row pair p sits in quad row
//     4·(p / 8) + p mod 4 at word 2d + (p / 4) mod 2, so lane t's b[0], b[1] are words 2d, 2d + 1
//     of quad row 4κ + t: tile[4κ + t][2d] as a uint2. Quad rows 2·kDim + 8 words apart (≡ 8):
//     a half-warp's lanes hit banks 8t + 2g, +1.
// Rows from `valid_rows` on and columns from `cols` to kDim become zeros. Each thread writes a
// unit of 8 words (16 columns of one row, or 4 columns of four rows) as two 16-byte stores. Against
// store conflicts the two halves of unit e trade places when bit 2 of e is set (unit_swapped,
// store_unit_halves, as for TF32); the fragment readers below apply the same swap (at kDim 32,
// rows 24 words apart, the stores stay 2-way).
// A whole tile on a 16-byte boundary is read as float4s. When a tile has fewer units than the
// block has threads (a 32-row tile at kDim 32) the others skip. The whole block calls a loader;
// the caller places barriers.
constexpr int bf16_rows_words(int dim) { return dim / 2 + 8; }  // words a bf16 row takes
constexpr int bf16_quad_words(int dim) { return 2 * dim + 8; }  // words a bf16 quad row takes

__device__ __forceinline__ float4 bf16_words(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return make_float4(__uint_as_float(a), __uint_as_float(b), __uint_as_float(c), __uint_as_float(d));
}

// The loops of the two BF16 loaders: unit e = 0…kUnits − 1 of the tile, kThreads apart.
template <int kUnits, typename Body>
__device__ __forceinline__ void for_each_bf16_unit(Body body) {
#pragma unroll
  for (int n = 0; n < (kUnits + kThreads - 1) / kThreads; ++n) {
    const int e = threadIdx.x + n * kThreads;
    if (kUnits % kThreads != 0 && e >= kUnits) break;
    body(e);
  }
}

// The words of 8 columns of one row (w[k] = T(r, c + 2k | +1)) or of 4 columns of a row pair
// (w[k] = T(r, c + k) | T(r + 1, c + k)), from f32 rows (rounded here) or bf16 rows (as they are,
// the overloads further down).
template <int kDim, typename Layout>
__device__ __forceinline__ void read_bf16_row_words(uint32_t (&w)[4], const float* __restrict__ src, int r, int c,
                                                    bool whole, int valid_rows, int cols) {
  float x[8];
  read_row_unit<kDim, Layout>(x, src, r, c, whole, valid_rows, cols);
#pragma unroll
  for (int k = 0; k < 4; ++k) w[k] = tc::pack_bf16(x[2 * k], x[2 * k + 1]);
}
template <int kDim, typename Layout>
__device__ __forceinline__ void read_bf16_pair_words(uint32_t (&w)[4], const float* __restrict__ src, int r, int c,
                                                     bool whole, int valid_rows, int cols) {
  float even[4], odd[4];
  read_row_pair_unit<kDim, Layout>(even, odd, src, r, c, whole, valid_rows, cols);
#pragma unroll
  for (int k = 0; k < 4; ++k) w[k] = tc::pack_bf16(even[k], odd[k]);
}

// ---- BF16 tiles from bf16 tensors (precision=bf16 with the fused path) ----
// The same two layouts and zeros, from a (rows, cols) bf16 source: its values are BF16 already,
// so nothing is rounded and a tile is half the bytes. Two neighbouring bf16 values in memory are
// a packed word as it is (the lower-indexed one in the low 16 bits, little-endian: pack_bf16's
// order), so a whole row unit is one 16-byte load as it came, and a row-pair unit two 8-byte loads
// whose halves are interleaved, (T(r, c + k), T(r + 1, c + k)).
__device__ __forceinline__ uint32_t bf16_bits(const __nv_bfloat16* __restrict__ src, int k) {
  return uint32_t(reinterpret_cast<const uint16_t*>(src)[k]);
}

template <int kDim, typename Layout>
__device__ __forceinline__ void read_bf16_row_words(uint32_t (&w)[4], const __nv_bfloat16* __restrict__ src, int r,
                                                    int c, bool whole, int valid_rows, int cols) {
  if (whole) {
    const float4 a = *reinterpret_cast<const float4*>(tile_at<Layout>(src, r * kDim, c));  // 16 bytes of bf16 pairs
    w[0] = __float_as_uint(a.x), w[1] = __float_as_uint(a.y), w[2] = __float_as_uint(a.z), w[3] = __float_as_uint(a.w);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const bool in = r < valid_rows;
      const uint32_t lo = in && c + 2 * k < cols ? bf16_bits(src, r * cols + c + 2 * k) : 0u;
      const uint32_t hi = in && c + 2 * k + 1 < cols ? bf16_bits(src, r * cols + c + 2 * k + 1) : 0u;
      w[k] = lo | (hi << 16);
    }
  }
}

template <int kDim, typename Layout>
__device__ __forceinline__ void read_bf16_pair_words(uint32_t (&w)[4], const __nv_bfloat16* __restrict__ src, int r,
                                                     int c, bool whole, int valid_rows, int cols) {
  if (whole) {
    // row r, columns c…c+3, then row r + 1 (8 bytes each: half a 16-byte unit, which the swizzle keeps whole)
    const float2 ef = *reinterpret_cast<const float2*>(tile_at<Layout>(src, r * kDim, c));
    const float2 of = *reinterpret_cast<const float2*>(tile_at<Layout>(src, (r + 1) * kDim, c));
    const uint32_t e0 = __float_as_uint(ef.x), e1 = __float_as_uint(ef.y);
    const uint32_t o0 = __float_as_uint(of.x), o1 = __float_as_uint(of.y);
    w[0] = (e0 & 0xFFFFu) | (o0 << 16), w[1] = (e0 >> 16) | (o0 & 0xFFFF0000u);
    w[2] = (e1 & 0xFFFFu) | (o1 << 16), w[3] = (e1 >> 16) | (o1 & 0xFFFF0000u);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const bool col_in = c + k < cols;
      const uint32_t lo = r < valid_rows && col_in ? bf16_bits(src, r * cols + c + k) : 0u;
      const uint32_t hi = r + 1 < valid_rows && col_in ? bf16_bits(src, (r + 1) * cols + c + k) : 0u;
      w[k] = lo | (hi << 16);
    }
  }
}

// Rows [0, kRows) of src (TIn: float, rounded here, or __nv_bfloat16) into a bf16-rows tile: a unit
// is 16 columns of one row, its two halves read as two row units.
template <int kRows, int kDim, int kWords, typename TIn, typename Layout = GlobalRows>
__device__ __forceinline__ void load_bf16_rows(uint32_t (&tile)[kRows][kWords], const TIn* __restrict__ src,
                                               int valid_rows, int cols, Layout = {}) {
  static_assert(kWords == bf16_rows_words(kDim), "rows kDim/2 + 8 words apart");
  const bool whole = whole_tile<kRows, kDim, Layout>(src, valid_rows, cols);
  for_each_bf16_unit<kRows * kDim / 16>([&](int e) {
    const int r = e / (kDim / 16), c = 16 * (e % (kDim / 16));
    uint32_t w[4], x[4];  // words 0…3 and 4…7 of the group, in column order
    read_bf16_row_words<kDim, Layout>(w, src, r, c, whole, valid_rows, cols);
    read_bf16_row_words<kDim, Layout>(x, src, r, c + 8, whole, valid_rows, cols);
    // places 0…7 hold words 0, 4, 1, 5, 2, 6, 3, 7
    store_unit_halves(&tile[r][c / 2], bf16_words(w[0], x[0], w[1], x[1]), bf16_words(w[2], x[2], w[3], x[3]),
                      unit_swapped(e));
  });
}

// Rows [0, kRows) of src into a bf16 quad-rows tile (kQuads = kRows / 4): a unit is 4 columns of
// quad row q, i.e. of row pairs p = 8·(q / 4) + q mod 4 and p + 4 (rows 2p, 2p + 1, 2p + 8, 2p + 9).
template <int kRows, int kDim, int kQuads, int kWords, typename TIn, typename Layout = GlobalRows>
__device__ __forceinline__ void load_bf16_quad_rows(uint32_t (&tile)[kQuads][kWords], const TIn* __restrict__ src,
                                                    int valid_rows, int cols, Layout = {}) {
  static_assert(kQuads * 4 == kRows && kRows % 16 == 0 && kWords == bf16_quad_words(kDim),
                "quad rows of 16-row blocks, 2·kDim + 8 words apart");
  const bool whole = whole_tile<kRows, kDim, Layout>(src, valid_rows, cols);
  for_each_bf16_unit<kQuads * kDim / 4>([&](int e) {
    const int q = e / (kDim / 4), c = 4 * (e % (kDim / 4));
    const int r = 2 * (8 * (q / 4) + q % 4);  // the first row of row pair p
    uint32_t lo[4], hi[4];
    read_bf16_pair_words<kDim, Layout>(lo, src, r, c, whole, valid_rows, cols);
    read_bf16_pair_words<kDim, Layout>(hi, src, r + 8, c, whole, valid_rows, cols);
    // words 2k, 2k + 1 of the unit: column c + k of row pairs p (lo) and p + 4 (hi)
    store_unit_halves(&tile[q][2 * c], bf16_words(lo[0], hi[0], lo[1], hi[1]), bf16_words(lo[2], hi[2], lo[3], hi[3]),
                      unit_swapped(e));
  });
}

// The B fragment of an mma read from the two BF16 layouts: b[0], b[1] as one 64-bit shared load.
//   rows: b = T(row, 16s + 2t | +1), T(row, 16s + 8 + 2t | +1), places 2t, 2t + 1 of group s of
//     the row (unit row·kDim/16 + s; its halves swapped: places 2t ^ 4, +1);
//   quads: b = T(16κ + 2t | +1, d), T(16κ + 8 + 2t | +1, d), words 2d, 2d + 1 of quad row 4κ + t
//     (unit (4κ + t)·kDim/4 + d/4, whose bit 2 is bit 4 of d for kDim ≥ 32; swapped: column d ^ 2).
// `row` is the kernels' nb·8 + g, so the swap depends on g and s alone (constants per lane and step).
template <int kDim, int kRows, int kWords>
__device__ __forceinline__ void bf16_rows_fragment(uint32_t (&b)[2], const uint32_t (&tile)[kRows][kWords], int row,
                                                   int s, int member) {
  const bool swapped = unit_swapped(row * (kDim / 16) + s);
  const uint2 v = *reinterpret_cast<const uint2*>(&tile[row][8 * s + ((2 * member) ^ (swapped ? 4 : 0))]);
  b[0] = v.x, b[1] = v.y;
}
template <int kQuads, int kWords>
__device__ __forceinline__ void bf16_quads_fragment(uint32_t (&b)[2], const uint32_t (&tile)[kQuads][kWords],
                                                    int kappa, int d, int member) {
  const int column = d ^ ((d >> 4) & 1 ? 2 : 0);
  const uint2 v = *reinterpret_cast<const uint2*>(&tile[4 * kappa + member][2 * column]);
  b[0] = v.x, b[1] = v.y;
}

// The BF16 A fragments of 16 rows from a bf16 source: a[s][r] = the word src(row first_row +
// a16_row, columns 16s + a16_col(half 0, 1)) as it is, zero outside. One 32-bit load per
// register when the pair is inside and 4-byte aligned (cols even), else two 16-bit loads.
template <int kSteps16>
__device__ __forceinline__ void load_a_fragments_bf16(uint32_t (&a)[kSteps16][4], const __nv_bfloat16* __restrict__ src,
                                                      int first_row, int valid_rows, int cols, int lane) {
  src += first_row * cols;
  const bool words = cols % 2 == 0 && (reinterpret_cast<uintptr_t>(src) & 3) == 0;
#pragma unroll
  for (int s = 0; s < kSteps16; ++s)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = tc::a16_row(lane, r, 0), col = 16 * s + tc::a16_col(lane, r, 0);
      const bool in = row < valid_rows;
      if (words) {
        a[s][r] = in && col < cols ? *reinterpret_cast<const uint32_t*>(src + row * cols + col) : 0u;
      } else {
        const uint32_t lo = in && col < cols ? bf16_bits(src, row * cols + col) : 0u;
        const uint32_t hi = in && col + 1 < cols ? bf16_bits(src, row * cols + col + 1) : 0u;
        a[s][r] = lo | (hi << 16);
      }
    }
}

// The BF16 A fragments of 16 rows from global memory: a[s][r] = the pair src(row first_row +
// a16_row, columns 16s + a16_col(half 0, 1)), rounded, zero outside.
template <int kSteps16>
__device__ __forceinline__ void load_a_fragments_bf16(uint32_t (&a)[kSteps16][4], const float* __restrict__ src,
                                                      int first_row, int valid_rows, int cols, int lane) {
  src += first_row * cols;
#pragma unroll
  for (int s = 0; s < kSteps16; ++s)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = tc::a16_row(lane, r, 0), col = 16 * s + tc::a16_col(lane, r, 0);
      const bool in = row < valid_rows;
      const float lo = in && col < cols ? src[row * cols + col] : 0.0f;
      const float hi = in && col + 1 < cols ? src[row * cols + col + 1] : 0.0f;
      a[s][r] = tc::pack_bf16(lo, hi);
    }
}

// A row of a fragment-A operand straight from global memory (rows of the block's own side, read
// once per task): a[s][r] = src(row first_row + a_row, column 8s + a_col), rounded, zero outside
// (rows from valid_rows, columns from cols).
template <int kSteps>
__device__ __forceinline__ void load_a_fragments(uint32_t (&a)[kSteps][4], const float* __restrict__ src,
                                                 int first_row, int valid_rows, int cols, int lane) {
  src += first_row * cols;
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = tc::a_row(lane, r), col = 8 * s + tc::a_col(lane, r);
      const float x = row < valid_rows && col < cols ? src[row * cols + col] : 0.0f;
      a[s][r] = tc::to_tf32(x);
    }
}

// The bias and C of a tile whose cells (i, j) run over rows [r0, r0 + kRowsT) of the query side
// and columns [c0, c0 + kColsT) of the key side: for a relative map both depend on j − i alone,
// so the tile needs kRowsT + kColsT − 1 values of each, x = (j − c0) − (i − r0) + kRowsT − 1.
// Entries of a diagonal outside the matrix, and every entry of a missing or dense table, get
// B = 0, C = 1 (never used by an unmasked cell; the fast path below reads them as "no table").
// Dense maps are read per cell (cell_bias / cell_c) on the edge path.
// kStagedMaps (the pipelined forward): the maps' entries of the tile were copied beforehand to
// bias_map_s[x], c_map_s[x] (prefetch_diagonal_maps), and are read there instead of from global
// memory: the same buckets, so the same values.
template <int kDiag, bool kStagedMaps = false>
__device__ __forceinline__ void stage_diagonals(const FlashGeometry& g, int h, int r0, int c0, int rows_minus_1,
                                                float (&bias_s)[kDiag], float (&c_s)[kDiag],
                                                const int32_t* bias_map_s = nullptr, const int32_t* c_map_s = nullptr) {
  const int diagonals = int(g.nq + g.nk) - 1, m0 = c0 - r0 - rows_minus_1 + int(g.nq) - 1;
  const bool bias_rel = g.bias_table != nullptr && g.bias_kind == kRelative;
  const bool c_rel = g.c_table != nullptr && g.c_kind == kRelative;
  const float* bias_row = bias_rel ? g.bias_table + h * g.bias_buckets : nullptr;
  const float* c_row = c_rel ? g.c_table + h * g.c_buckets : nullptr;
  for (int x = threadIdx.x; x < kDiag; x += kThreads) {
    const int m = m0 + x;  // index into the (Nq + Nk − 1) map
    const bool valid = m >= 0 && m < diagonals;
    if constexpr (kStagedMaps) {
      bias_s[x] = bias_rel && valid ? bias_row[bias_map_s[x]] : 0.0f;
      c_s[x] = c_rel && valid ? c_row[c_map_s[x]] : 1.0f;
    } else {
      bias_s[x] = bias_rel && valid ? bias_row[g.bias_map[m]] : 0.0f;
      c_s[x] = c_rel && valid ? c_row[g.c_map[m]] : 1.0f;
    }
  }
}

// ---- the pipelined forward's copies (ops/cp_async.cuh) ----
// Rows [0, kRows) of src (`cols` elements of TIn per row, the tile's first row) to a raw staging
// tile of kDim elements per row, as they are, with cp.async: 16 bytes a copy, zeros (nothing read)
// for rows from `valid_rows` on and columns from `cols` on, unit f at staged_unit(f) (StagedRows).
// The caller guarantees that a row is whole 16-byte units (cols·sizeof(TIn) % 16 = 0) and src is
// 16-byte aligned (pipeline_takes); the loaders above, given StagedRows, then turn the staged tile
// into the fragment layouts exactly as they turn global memory (their whole path).
// Consecutive threads copy consecutive 16-byte units: each warp's copies write 512 contiguous bytes.
template <int kRows, int kDim, typename TIn, int kVectors>
__device__ __forceinline__ void prefetch_rows(float4 (&stage)[kRows][kVectors], const TIn* __restrict__ src,
                                              int valid_rows, int cols) {
  constexpr int kPerVector = 16 / int(sizeof(TIn));  // elements per 16-byte unit
  static_assert(kVectors * kPerVector == kDim, "a staged row is kDim elements");
  static_assert(kRows * kVectors % kThreads == 0, "every thread copies the same number of units");
  const int row_vectors = cols / kPerVector;
#pragma unroll
  for (int n = 0; n < kRows * kVectors / kThreads; ++n) {
    const int e = threadIdx.x + n * kThreads, r = e / kVectors, u = e % kVectors;
    const bool in = r < valid_rows && u < row_vectors;
    async::copy16(&stage[0][0] + staged_unit(unsigned(e)), in ? src + r * cols + u * kPerVector : src, in ? 16 : 0);
  }
}

// The entries of the bias and C maps that stage_diagonals<kDiag, true> will read for the tile at
// (r0, c0), copied to bias_map_s[x], c_map_s[x] with 4-byte cp.async (only valid diagonals of
// relative maps; the others are never read).
template <int kDiag>
__device__ __forceinline__ void prefetch_diagonal_maps(const FlashGeometry& g, int r0, int c0, int rows_minus_1,
                                                       int32_t (&bias_map_s)[kDiag], int32_t (&c_map_s)[kDiag]) {
  const int diagonals = int(g.nq + g.nk) - 1, m0 = c0 - r0 - rows_minus_1 + int(g.nq) - 1;
  const bool bias_rel = g.bias_table != nullptr && g.bias_kind == kRelative;
  const bool c_rel = g.c_table != nullptr && g.c_kind == kRelative;
  for (int x = threadIdx.x; x < kDiag; x += kThreads) {
    const int m = m0 + x;
    if (m < 0 || m >= diagonals) continue;
    if (bias_rel) async::copy4(&bias_map_s[x], g.bias_map + m, 4);
    if (c_rel) async::copy4(&c_map_s[x], g.c_map + m, 4);
  }
}

// The dynamic shared memory of a kernel that streams key tiles pipelined (the forward and dQ): a
// raw staging copy of the next tile's K and V rows (kKeys rows of kDim TIn each) and of its map
// entries, in this order, each part 16-byte aligned:
//   k_stage (kKeys × kDim TIn) | v_stage (kKeys × kDim TIn) | bias_map_s (kDiag int) | c_map_s (kDiag int)
// kQueryRows: the query rows of a block (the two-row-block forward's 128; kBlockRows elsewhere).
template <int kKeyTile, int kDim, typename TIn, int kQueryRows = kBlockRows>
struct KeyTileStaging {
  static constexpr int kKeys = kKeyTile;
  static constexpr int kDiag = kQueryRows + kKeys - 1;  // the diagonals a query block × key tile touches
  static constexpr int kStageVectors = kDim * int(sizeof(TIn)) / 16;  // 16-byte units per staged row
  static constexpr size_t kStageBytes = 16 * size_t(kKeys) * kStageVectors;
  static constexpr size_t kKStage = 0, kVStage = kStageBytes, kBiasMap = 2 * kStageBytes;
  static constexpr size_t kCMap = kBiasMap + (4 * kDiag + 15) / 16 * 16;
  static constexpr size_t kDynamicBytes = kCMap + 4 * kDiag;
};

// Whether a pipelined kernel can take these tensors, whatever the mode asks: its cp.async copies
// need the two staged tensors' rows (dh and dv elements of TIn) in whole 16-byte units on 16-byte
// boundaries, and its shared memory (static + dynamic) within the device's per-block limit
// (sharedMemPerBlockOptin, read once with the context's device properties: no query per launch).
// The forward (pipeline_takes) and the backward's two kernels (backward_pipelines) ask it;
// otherwise their single-buffered kernels run.
template <typename TIn>
bool pipeline_fits(const cuda::Context& ctx, const FlashGeometry& g, const TIn* a, const TIn* b,
                   size_t shared_bytes) {
  const auto aligned = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; };
  if ((g.dh * int64_t(sizeof(TIn))) % 16 != 0 || (g.dv * int64_t(sizeof(TIn))) % 16 != 0 || !aligned(a) || !aligned(b))
    return false;
  return shared_bytes <= ctx.properties().sharedMemPerBlockOptin;
}

// ---- the interior fast path ----
// A tile takes the fast path when each of its cells (i, j), i in [i_lo, i_hi), j in [j_lo, j_hi),
// is inside the matrix, not causally cut, not a padded key, with no dropout, and B and C come
// from staged diagonals (relative maps, or no table: staged as 0 and 1). Its cells then skip the
// mask, κ and the map kind: the same values (unmasked, κ = 1, the staged B and C), so the fast
// path gives the edge path's bits. The choice is block-uniform, one branch per tile.
__device__ __forceinline__ bool fast_path_possible(const FlashGeometry& g) {
  return g.drop_p <= 0.0f && (g.bias_table == nullptr || g.bias_kind == kRelative) &&
         (g.c_table == nullptr || g.c_kind == kRelative);
}
// bench/sass_mix.sh compiles the kernels a second time with URPE_TC_SASS_INTERIOR_ONLY defined,
// every tile sent down the fast path (wrong results for edge tiles: never built into a program),
// to count the fast path's instructions apart from the edge path's.
#if defined(URPE_TC_SASS_INTERIOR_ONLY)
constexpr bool kSassInteriorOnly = true;
#else
constexpr bool kSassInteriorOnly = false;
#endif

// pad_from: the first padded key of the tile's batch item (first_padded_key), Nk when none.
__device__ __forceinline__ bool tile_is_interior(const FlashGeometry& g, int i_lo, int i_hi, int j_lo, int j_hi,
                                                 int pad_from) {
  if (kSassInteriorOnly) return true;
  return i_hi <= g.nq && j_hi <= g.nk && j_hi <= pad_from &&
         (!g.mask.causal || int64_t(j_hi) - 1 <= int64_t(i_lo) + g.mask.causal_offset);
}

// The first padded key of batch item b (Nk when it has none or there is no padding), found by the
// whole block once per task: each thread its first in a strided walk, then a fixed min tree over
// the warp and over the kWarps warps in `scratch`. Barriers inside: every thread calls it.
__device__ __forceinline__ int first_padded_key(const FlashGeometry& g, int b, int (&scratch)[kWarps]) {
  const int nk = int(g.nk);
  if (g.mask.key_padding == nullptr) return nk;
  const int32_t* pad = g.mask.key_padding + int64_t(b) * nk;
  int first = nk;
  for (int j = threadIdx.x; j < nk; j += kThreads)
    if (pad[j] != 0) {
      first = j;
      break;
    }
#pragma unroll
  for (int offset = 1; offset < kWarp; offset *= 2) first = min(first, __shfl_xor_sync(0xffffffffu, first, offset));
  if (threadIdx.x % kWarp == 0) scratch[threadIdx.x / kWarp] = first;
  __syncthreads();
  int result = scratch[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) result = min(result, scratch[w]);
  __syncthreads();  // scratch read by all before the next task writes it
  return result;
}

// Where a lane's cells sit in its warp's 16 × kKeys tile of a query-row kernel (forward, dQ): rows i + {0, 8}, keys j + 8·nb + {0, 1}
// (the C fragment layout), and x, the staged diagonal of register 0 of key block 0; register r of
// key block nb is diagonal x + 8·nb + (r & 1) − 8·(r >> 1), a constant offset after unrolling.
struct LaneCells {
  int i, j, x;
};
__device__ __forceinline__ int cell_row(const LaneCells& at, int r) { return at.i + 8 * (r >> 1); }
__device__ __forceinline__ int cell_key(const LaneCells& at, int nb, int r) { return at.j + 8 * nb + (r & 1); }
__device__ __forceinline__ int cell_diagonal(const LaneCells& at, int nb, int r) {
  return at.x + 8 * nb + (r & 1) - 8 * (r >> 1);
}

// ---- the edge path: one cell at a time ----
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

// Rows [first, first + 16) of a (rows, cols) output slice from the accumulators (valid rows and
// columns only).
// T is float or __nv_bfloat16 (the gradient's dtype: rounded once here, to nearest even).
template <int kSteps, typename T>
__device__ __forceinline__ void store_rows(T* __restrict__ dst, const float (&acc)[kSteps][4], int first,
                                           int rows, int cols, int lane) {
#pragma unroll
  for (int nd = 0; nd < kSteps; ++nd)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = first + tc::c_row(lane, r), col = nd * 8 + tc::c_col(lane, r);
      if (row < rows && col < cols) {
        if constexpr (std::is_same_v<T, float>)
          dst[row * cols + col] = acc[nd][r];
        else
          dst[row * cols + col] = __float2bfloat16_rn(acc[nd][r]);
      }
    }
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
