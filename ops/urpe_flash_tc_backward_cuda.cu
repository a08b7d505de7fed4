// The fused URPE attention's backward on the tensor cores (TF32 mma.sync m16n8k8 through
// ops/mma_tf32.cuh, or BF16 m16n8k16 through ops/mma_bf16.cuh: each kernel's kBf16, its tiles of
// packed BF16 words and P, dS rounded to BF16 before their products; the tables stay FP32). With A = P ⊙ C, Ã = A ⊙ κ, O = Ã·V and D_i = dO_i·O_i
// (urpe_flash_attention.h):
//   dA = dO·Vᵀ,   dZ = P ⊙ (C ⊙ κ ⊙ dA − D),   dS = scale·dZ
//   dQ = dS·K,    dK = dSᵀ·Q,    dV = Ãᵀ·dO
//   ∂C[k] = Σ_{map(i,j) = k} P·κ·dA,    ∂B[k] = Σ_{map(i,j) = k} dZ
// which is FlashAttention-2's backward with two extra elementwise factors (C, κ) and two table
// sums. No float atomics anywhere, so every output repeats bit for bit:
//
// urpe_flash_tc_backward_dq_kernel<kDim>: one block per (b, h, 64 query rows), 16 per warp, Q and
//   dO fragments in registers; per key tile (64 keys at kDim = 32, 32 at 64, 16 at 128) K_J twice
//   (column pairs and row pairs), V_J (column pairs) and the tile's diagonals in shared memory,
//   every B fragment one 64-bit shared load
//     S = Q·K_Jᵀ, dA = dO·V_Jᵀ (tensor cores), P = e^{S·scale + B − L}, dS as above
//     (P as 2^((S·scale + B)·log2 e − L·log2 e): FFMA + MUFU.EX2, ops/sfu_exp2.cuh; 0 where L = −∞)
//     dQ += dS·K_J  (dS from the accumulators as the A operand, keys paired as in the forward)
//   and writes its dQ rows once. FlashAttention-2 adds dQ from the dK/dV loop with atomics; this
//   kernel spends two more tile products (S, dA) per tile to keep dQ deterministic.
// urpe_flash_tc_backward_dkdv_kernel<kDim>: one block per (b, h, 64 keys), 16 per warp, K and V
//   fragments in registers; per tile of kQueries queries (32, or 16 for kDim = 128) Q_I and dO_I
//   (each twice: column pairs and row pairs), L_I, D_I in shared memory; per warp
//     Sᵀ = K·Q_Iᵀ, dAᵀ = V·dO_Iᵀ, then Ãᵀ and dSᵀ in the accumulators
//     dV += Ãᵀ·dO_I,  dK += dSᵀ·Q_I
//   Table gradients of a relative map (bucket = f(j − i)): the tile's dZ and P·κ·dA go to two
//   shared 64 × kQueries tiles, and thread x sums diagonal x of each (64 + kQueries − 1 of them)
//   in ascending query order into a sliding window of per-diagonal sums. Walking the query tiles
//   upwards, the window moves down by kQueries diagonals per tile, and a diagonal no later tile
//   reaches is written out, once: partial[b·H + h, J, u] for the block's Nq + 63 diagonals
//   u = (j − i) + Nq − 1 − j0 (0 for those no tile touched).
// urpe_flash_tc_diagonal_totals_kernel: totals[h, m] (m = j − i + Nq − 1) = Σ over (b, J), in
//   that order, of the partials; urpe_flash_tc_bucket_sums_kernel: grad[h, k] = Σ over the map's
//   diagonals m with bucket k, ascending (a BucketIndex over the relative map). Second pass reads
//   B·H·(Nk/64)·(Nq + 63) floats per table: at Nq = Nk = n that is n²/64 per (b, h), so it is
//   done in chunks of (b, h) whose partials fit max(64 MiB, the bytes of q) and memory stays
//   linear in n; totals accumulate chunk after chunk in double, in a fixed order.
// Dense maps ((Nq, Nk), (Bsz, Nq, Nk): SPD, per-batch) are not functions of j − i; their table
//   gradients stay with the scalar bucket walk (urpe_flash_attention_cuda.cu), the documented
//   fallback.
//   FLOPs on the tensor cores per (b, h): dq 3 products, dkdv 4, each 2·Nq·Nk·kDim (7 against
//   FlashAttention-2's 5: the price of no atomics); bytes: Q, K, V, dO once per 64 rows of the
//   other side, dQ, dK, dV once, the partials above.
// Pipelined variants (kPipelined; cuda::TcPipeline, the forward's switch, by default at d 64): the same bytes and the same bits, but each kernel's streamed tiles (dQ: the next key
//   tile's K and V rows and map entries; dK/dV: the next query tile's Q and dO rows, L, D and map
//   entries) are copied with cp.async (ops/cp_async.cuh) to a staging buffer in dynamic shared
//   memory while the current tile computes, and turned into the paired tiles from there by the
//   same loaders, so no warp waits for global memory inside a task but at its first tile
//   (DqTiles and DkdvTiles below have the layouts and the bytes).
#include <algorithm>
#include <type_traits>

#include "ops/bucket_index_cuda.cuh"
#include "ops/sfu_exp2.cuh"
#include "ops/urpe_flash_tc.h"
#include "ops/urpe_flash_tc_key_walk.cuh"
#include "ops/urpe_flash_tc_tiles.cuh"

namespace urpe::kernels {

namespace {

using namespace flash_tc;

constexpr int kKeysPerBlock = kBlockRows;  // dkdv: 64 keys per block

template <int kSteps, int kBlocks>
__device__ __forceinline__ void zero(float (&acc)[kSteps][kBlocks]) {
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int r = 0; r < kBlocks; ++r) acc[s][r] = 0.0f;
}

// acc[nb] += A·B over kSteps k-steps: a product X·Tᵀ with T's rows as the n side (S = Q·Kᵀ,
// dA = dO·Vᵀ, Sᵀ = K·Qᵀ, dAᵀ = V·dOᵀ), T stored as column pairs (load_rounded_column_pairs:
// T(r, 8s + t) beside T(r, 8s + t + 4)), so each B fragment, (T(nb·8 + group, ks·8 + member),
// T(…, ks·8 + member + 4)), is one 64-bit shared load.
template <int kSteps, int kBlocks, int kRows, int kCols2>
__device__ __forceinline__ void product_with_column_pairs(float (&acc)[kBlocks][4], const uint32_t (&a)[kSteps][4],
                                                          const float2 (&tile)[kRows][kCols2], int group,
                                                          int member) {
#pragma unroll
  for (int ks = 0; ks < kSteps; ++ks)
#pragma unroll
    for (int nb = 0; nb < kBlocks; ++nb) {
      const float2 f = column_pairs_fragment<8 * kSteps>(tile, nb * 8 + group, ks, member);
      const uint32_t bf[2] = {__float_as_uint(f.x), __float_as_uint(f.y)};
      tc::mma_m16n8k8(acc[nb], a[ks], bf);
    }
}

// acc[nd] += X·T for X (16 × 8·kBlocks) held in accumulators and T's rows as the k side, paired
// (rows 2t, 2t + 1 of each group of 8 ↔ A columns t, t + 4; ops/mma_tf32.cuh), T stored as row
// pairs (load_rounded_row_pairs: T(2p, c) beside T(2p + 1, c)): each B fragment one 64-bit load.
template <int kSteps, int kBlocks, int kPairs, int kCols>
__device__ __forceinline__ void product_row_pairs(float (&acc)[kSteps][4], const float (&x)[kBlocks][4],
                                                  const float2 (&tile)[kPairs][kCols], int group, int member) {
#pragma unroll
  for (int kb = 0; kb < kBlocks; ++kb) {
    uint32_t xa[4];
    tc::accumulator_as_a(xa, x[kb]);
#pragma unroll
    for (int nd = 0; nd < kSteps; ++nd) {
      const float2 f = row_pairs_fragment(tile, kb * 4 + member, nd * 8 + group);  // T(8kb + 2t | + 1, ·)
      const uint32_t bf[2] = {__float_as_uint(f.x), __float_as_uint(f.y)};
      tc::mma_m16n8k8(acc[nd], xa, bf);
    }
  }
}

// ---- the same products and loaders on BF16 tiles (m16n8k16, ops/mma_bf16.cuh) ----
// The kernels below are written once over a tile element type: float2 (TF32 column pairs / row
// pairs) or uint32_t (two BF16 values: load_bf16_rows / load_bf16_quad_rows), and the overloads
// pick the instruction. A BF16 A operand holds 16 columns a k-step (kDim/16 steps).

// acc[nb] += A·Tᵀ with T in bf16 rows: b = T(nb·8 + g, 16ks + 2t | +1), T(…, 16ks + 8 + 2t | +1).
template <int kSteps16, int kBlocks, int kRows, int kWords>
__device__ __forceinline__ void product_with_column_pairs(float (&acc)[kBlocks][4], const uint32_t (&a)[kSteps16][4],
                                                          const uint32_t (&tile)[kRows][kWords], int group,
                                                          int member) {
#pragma unroll
  for (int ks = 0; ks < kSteps16; ++ks)
#pragma unroll
    for (int nb = 0; nb < kBlocks; ++nb) {
      uint32_t bf[2];
      bf16_rows_fragment<16 * kSteps16>(bf, tile, nb * 8 + group, ks, member);
      tc::mma_m16n8k16_bf16(acc[nb], a[ks], bf);
    }
}

// acc[nd] += X·T for X (16 × 8·kBlocks) in accumulators, T in bf16 quad rows: blocks 2κ, 2κ + 1
// of X are k-step κ's A fragment as they are (rounded), b = T(16κ + 2t | +1, ·), T(16κ + 8 + 2t | +1, ·).
template <int kSteps, int kBlocks, int kQuads, int kWords>
__device__ __forceinline__ void product_row_pairs(float (&acc)[kSteps][4], const float (&x)[kBlocks][4],
                                                  const uint32_t (&tile)[kQuads][kWords], int group, int member) {
  static_assert(kBlocks % 2 == 0, "16 keys (or queries) a BF16 k-step");
#pragma unroll
  for (int kb = 0; kb < kBlocks / 2; ++kb) {
    uint32_t xa[4];
    tc::accumulators_as_a_bf16(xa, x[2 * kb], x[2 * kb + 1]);
#pragma unroll
    for (int nd = 0; nd < kSteps; ++nd) {
      uint32_t bf[2];
      bf16_quads_fragment(bf, tile, kb, nd * 8 + group, member);
      tc::mma_m16n8k16_bf16(acc[nd], xa, bf);
    }
  }
}

// A tile read by rows (the n side of X·Tᵀ) and one read by row pairs (the k side of X·T), in the
// element type's layout, from a tensor's rows (GlobalRows) or a staging tile (StagedRows).
template <int kRows, int kDim, int kCols, typename Layout = GlobalRows>
__device__ __forceinline__ void load_rows_tile(float2 (&tile)[kRows][kCols], const float* src, int valid, int cols,
                                               Layout layout = {}) {
  load_rounded_column_pairs<kRows, kDim>(tile, src, valid, cols, layout);
}
template <int kRows, int kDim, int kCols, typename Layout = GlobalRows>
__device__ __forceinline__ void load_rows_tile(uint32_t (&tile)[kRows][kCols], const float* src, int valid, int cols,
                                               Layout layout = {}) {
  load_bf16_rows<kRows, kDim>(tile, src, valid, cols, layout);
}
template <int kRows, int kDim, int kPairs, int kCols, typename Layout = GlobalRows>
__device__ __forceinline__ void load_pairs_tile(float2 (&tile)[kPairs][kCols], const float* src, int valid, int cols,
                                                Layout layout = {}) {
  load_rounded_row_pairs<kRows, kDim>(tile, src, valid, cols, layout);
}
template <int kRows, int kDim, int kQuads, int kCols, typename Layout = GlobalRows>
__device__ __forceinline__ void load_pairs_tile(uint32_t (&tile)[kQuads][kCols], const float* src, int valid, int cols,
                                                Layout layout = {}) {
  load_bf16_quad_rows<kRows, kDim>(tile, src, valid, cols, layout);
}
// From bf16 tensors (BF16 tiles only): the words as they are (ops/urpe_flash_tc_tiles.cuh).
template <int kRows, int kDim, int kCols, typename Layout = GlobalRows>
__device__ __forceinline__ void load_rows_tile(uint32_t (&tile)[kRows][kCols], const __nv_bfloat16* src, int valid,
                                               int cols, Layout layout = {}) {
  load_bf16_rows<kRows, kDim>(tile, src, valid, cols, layout);
}
template <int kRows, int kDim, int kQuads, int kCols, typename Layout = GlobalRows>
__device__ __forceinline__ void load_pairs_tile(uint32_t (&tile)[kQuads][kCols], const __nv_bfloat16* src, int valid,
                                                int cols, Layout layout = {}) {
  load_bf16_quad_rows<kRows, kDim>(tile, src, valid, cols, layout);
}
template <bool kBf16, int kSteps>
__device__ __forceinline__ void load_a(uint32_t (&a)[kSteps][4], const __nv_bfloat16* src, int first_row,
                                       int valid_rows, int cols, int lane) {
  static_assert(kBf16, "bf16 tensors feed BF16 tiles only");
  load_a_fragments_bf16(a, src, first_row, valid_rows, cols, lane);
}
template <bool kBf16, int kSteps>
__device__ __forceinline__ void load_a(uint32_t (&a)[kSteps][4], const float* src, int first_row, int valid_rows,
                                       int cols, int lane) {
  if constexpr (kBf16)
    load_a_fragments_bf16(a, src, first_row, valid_rows, cols, lane);
  else
    load_a_fragments(a, src, first_row, valid_rows, cols, lane);
}

// The element type of a kernel's shared tiles, the elements per rows-layout row and per
// pair-layout row, and the 16-byte vectors of each.
template <int kDim, bool kBf16>
struct TileShape {
  using Elem = std::conditional_t<kBf16, uint32_t, float2>;
  static constexpr int kRowCols = kBf16 ? bf16_rows_words(kDim) : kDim / 2 + 4;   // float2s, or BF16 words
  static constexpr int kPairCols = kBf16 ? bf16_quad_words(kDim) : kDim + 4;  // float2s a pair row, BF16 words a quad row
  static constexpr int kASteps = kBf16 ? kDim / 16 : kDim / 8;  // k-steps of an A operand over kDim
  // Shared rows of a paired tile of `pairs` row pairs: TF32 one per pair, BF16 one per two (quad rows).
  static constexpr int pair_rows(int pairs) { return kBf16 ? pairs / 2 : pairs; }
  static constexpr int row_vectors(int rows) { return rows * kRowCols * int(sizeof(Elem)) / 16; }
  static constexpr int kPairRowVectors = kPairCols * int(sizeof(Elem)) / 16;  // float4s of one shared row
  static constexpr int pair_vectors(int pairs) { return pair_rows(pairs) * kPairRowVectors; }
};

// A piece of a raw shared buffer as a 2-D array of T, `offset` float4s from its start.
template <typename T, int kRows, int kCols, int kVectors>
__device__ __forceinline__ T (&carve(float4 (&raw)[kVectors], int offset))[kRows][kCols] {
  static_assert(kRows * kCols * sizeof(T) % sizeof(float4) == 0, "pieces of whole float4s");
  return *static_cast<T(*)[kRows][kCols]>(static_cast<void*>(raw + offset));
}

// ---- dQ ----

// The scores S of a key tile become dS = scale·P·(dA·κ·C − D) in place (0 where masked or the row
// has no unmasked key). row_offset: base2_offset(L) of the lane's two rows (ops/sfu_exp2.cuh).
// kInterior: the fast path (tile_is_interior), B and C staged, κ = 1.
template <bool kInterior, int kKeyBlocks>
__device__ __forceinline__ void dq_cells(const FlashGeometry& g, uint64_t seed, float (&s)[kKeyBlocks][4],
                                         const float (&da)[kKeyBlocks][4], const float (&row_offset)[2],
                                         const float (&row_d)[2], const float* bias_s, const float* c_s,
                                         const LaneCells& at, int b, int h, int bh) {
#pragma unroll
  for (int nb = 0; nb < kKeyBlocks; ++nb)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int x = cell_diagonal(at, nb, r);
      float ds = 0.0f;
      if constexpr (kInterior) {
        const float p = tc::exp2_approx(fmaf(s[nb][r] * g.scale + bias_s[x], tc::kLog2e, -row_offset[r / 2]));
        ds = g.scale * (p * (da[nb][r] * c_s[x] - row_d[r / 2]));
      } else {
        const int64_t i = cell_row(at, r), j = cell_key(at, nb, r);
        if (row_offset[r / 2] != INFINITY && !cell_masked(g, b, i, j)) {
          const float z = s[nb][r] * g.scale + cell_bias(g, bias_s, x, b, h, i, j);
          const float p = tc::exp2_approx(fmaf(z, tc::kLog2e, -row_offset[r / 2]));
          const float gk = da[nb][r] * g.keep(seed, bh, i, j);
          ds = g.scale * (p * (gk * cell_c(g, c_s, x, b, h, i, j) - row_d[r / 2]));
        }
      }
      s[nb][r] = ds;
    }
}

// The dQ kernel's tiles. Key tiles of 64 at kDim = 32, 32 at 64, 16 at 128. K_J is read two ways,
// by rows (S = Q·K_Jᵀ) and by row pairs (dQ += dS·K_J), so it is staged twice, as column pairs and
// as row pairs, and V_J, read by rows only, as column pairs: every B fragment is one 64-bit shared
// load. Those three copies of a 64-key tile at d 64 would need 54 KB of static shared memory (the
// limit is 48), hence 32 keys there; at d 128, Q, dO fragments and the dQ accumulators hold 192
// registers, and 16 keys keep the S and dA tiles within 255 (no spill). dQ accumulates key block
// after key block in the same order whatever the tile: the same bits. BF16 tiles are half the
// bytes; they keep TF32's key tiles (the registers bound them as much).
// The pipelined variant (kPipelined) adds, in dynamic shared memory, a raw staging copy of the next
// key tile's K and V rows and of its map entries (KeyTileStaging, urpe_flash_tc_tiles.cuh);
// bytes per block (static + dynamic; sm_90: 227 KiB a block, 228 KiB an SM with 1 KiB a block
// reserved): TF32 kDim 32: 30 K + 17 K (3 blocks: 144 K an SM), 64: 27.3 K + 16.7 K (3 blocks:
// 135 K), 128: 25.9 K + 16.6 K (2 blocks, its registers); BF16 from f32 tensors 16 K, 14.3 K,
// 13.4 K static and the same staging; from bf16 tensors half the staging. Every instantiation keeps
// its blocks per SM on sm_90 (an A100's 164 K an SM too).
template <int kDim, bool kBf16, typename TIn>
struct DqTiles : KeyTileStaging<kDim == 32 ? 64 : kDim == 64 ? 32 : 16, kDim, TIn> {
  static constexpr int kKeys = DqTiles::KeyTileStaging::kKeys;
  using Shape = TileShape<kDim, kBf16>;
  static constexpr size_t kStaticBytes = 16 * size_t(2 * Shape::row_vectors(kKeys) + Shape::pair_vectors(kKeys / 2)) +
                                         8 * DqTiles::KeyTileStaging::kDiag + 4 * kWarps;
};

// The dQ block's shared memory and its walk over the key tiles: K read by rows (the n side of
// Q·Kᵀ) and by row pairs (the k side of dS·K), V by rows (the n side of dO·Vᵀ), declared here, and
// the walk's diagonals, padding scratch and, pipelined, the staging of the next tile
// (KeyTileWalk, urpe_flash_tc_key_walk.cuh, in DqTiles' layout). declare() declares them once.
template <int kDim, bool kBf16, typename TIn, bool kPipelined>
struct DqShared : KeyTileWalk<DqTiles<kDim, kBf16, TIn>, kDim, TIn, kBlockRows, kPipelined> {
  using DTiles = DqTiles<kDim, kBf16, TIn>;
  using Walk = KeyTileWalk<DTiles, kDim, TIn, kBlockRows, kPipelined>;
  using Tiles = TileShape<kDim, kBf16>;
  using Elem = typename Tiles::Elem;
  static constexpr int kKeys = DTiles::kKeys;
  using RowsTile = float4[kKeys][Tiles::row_vectors(1)];  // 16-byte rows (tile_view)
  using PairsTile = float4[Tiles::pair_rows(kKeys / 2)][Tiles::kPairRowVectors];

  RowsTile* k_rows4;
  PairsTile* k_pairs4;
  RowsTile* v_rows4;

  static __device__ __forceinline__ DqShared declare() {
    URPE_SHARED(float4, k_rows4, [kKeys][Tiles::row_vectors(1)]);
    URPE_SHARED(float4, k_pairs4, [Tiles::pair_rows(kKeys / 2)][Tiles::kPairRowVectors]);
    URPE_SHARED(float4, v_rows4, [kKeys][Tiles::row_vectors(1)]);
    return DqShared{Walk::declare(), &k_rows4, &k_pairs4, &v_rows4};
  }
  // The tiles in the element type's layout: column pairs (TF32) or bf16 rows; row pairs (TF32) or
  // bf16 quad rows.
  __device__ __forceinline__ auto& k_rows() const { return tile_view<Elem, Tiles::kRowCols>(*k_rows4); }
  __device__ __forceinline__ auto& k_pairs() const { return tile_view<Elem, Tiles::kPairCols>(*k_pairs4); }
  __device__ __forceinline__ auto& v_rows() const { return tile_view<Elem, Tiles::kRowCols>(*v_rows4); }

  // Key tile j0 of head h into the three tiles and the diagonals (Walk::load_key_tile: its
  // barriers, and pipelined its staging).
  __device__ __forceinline__ void load_key_tile(const FlashGeometry& g, const KeyRows<TIn>& keys, int h, int i0,
                                                int j0, int key_end) const {
    Walk::load_key_tile(g, keys, h, i0, j0, key_end,
                        [&](const TIn* k_src, const TIn* v_src, int valid_rows, int k_cols, int v_cols, auto layout) {
                          load_rows_tile<kKeys, kDim>(k_rows(), k_src, valid_rows, k_cols, layout);
                          load_pairs_tile<kKeys, kDim>(k_pairs(), k_src, valid_rows, k_cols, layout);
                          load_rows_tile<kKeys, kDim>(v_rows(), v_src, valid_rows, v_cols, layout);
                        });
  }
};

// 3 blocks per SM at kDim ≤ 64 (≤ 168 registers; ncu on the H200, 2026-11-27, found dQ at 8 warps
// per SM with 252 registers, most of its stalls latencies that more warps hide). Its fast path
// needs 166; the cap costs one 4-byte spill, a predicate mask saved before the key loop and
// reloaded after it (sm_90 SASS), nothing per tile.
// TIn: the tensors' element type (float, or __nv_bfloat16 on BF16 tiles): q, k, v, dO read as
// they are, dQ written in it; L and D stay FP32 (double).
// kPipelined: the key tiles' global loads software-pipelined as in the forward: while tile j
// computes, tile j + 1's raw K and V rows and its map entries are in flight (cp.async) to the
// staging buffer; after tile j the block turns them into the column-pair and row-pair tiles with
// the same loaders (the same rounding and pairing), so dQ is the single-buffered kernel's, bit
// for bit, and a block waits for global memory once per task, not once per key tile.
template <int kDim, bool kBf16, typename TIn, bool kPipelined>
__global__ void __launch_bounds__(kThreads, kDim == 128 ? 1 : 3) urpe_flash_tc_backward_dq_kernel(
    FlashGeometry g, const TIn* __restrict__ q, const TIn* __restrict__ k, const TIn* __restrict__ v,
    const TIn* __restrict__ grad_out, const float* __restrict__ lse, const double* __restrict__ d_row,
    TIn* __restrict__ grad_q) {
  const uint64_t seed = g.dropout_seed();  // once per thread
  using Shared = DqShared<kDim, kBf16, TIn, kPipelined>;
  constexpr int kKeys = Shared::kKeys;
  constexpr int kKeyBlocks = kKeys / 8;
  constexpr int kSteps = Dim<kDim>::kSteps;
  constexpr int kASteps = Shared::Tiles::kASteps;
  const Shared shared = Shared::declare();
  const float* bias_s = *shared.bias_s;
  const float* c_s = *shared.c_s;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int group = lane / 4, member = lane % 4;
  const int nq = int(g.nq), nk = int(g.nk), dh = int(g.dh), dv = int(g.dv);  // check_tc_sizes
  const unsigned tiles = (nq + kBlockRows - 1) / kBlockRows, tasks = tiles * unsigned(g.batch * g.heads);
  const bool fast_path = kSassInteriorOnly || fast_path_possible(g);
  for (unsigned task = blockIdx.x; task < tasks; task += gridDim.x) {
    const TcTask t = tc_task(task, tiles, unsigned(g.heads), kBlockRows);
    const int i0 = t.first, rows = min(kBlockRows, nq - i0);
    const int w0 = i0 + warp * kWarpRows;
    const KeyRows<TIn> keys{k + int64_t(t.bh) * nk * dh, v + int64_t(t.bh) * nk * dv, nk, dh, dv};
    const int key_end = int(g.key_limit(i0 + rows - 1));  // masked for every row beyond
    shared.begin_task(g, keys, i0, key_end);  // pipelined: the first key tile's copies go out
    uint32_t qa[kASteps][4], ga[kASteps][4];
    load_a<kBf16>(qa, q + int64_t(t.bh) * nq * dh, w0, nq - w0, dh, lane);
    load_a<kBf16>(ga, grad_out + int64_t(t.bh) * nq * dv, w0, nq - w0, dv, lane);
    float row_offset[2], row_d[2];  // base2_offset(L) and D of the warp's two rows
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int i = w0 + group + 8 * half;
      row_offset[half] = tc::base2_offset(i < nq ? lse[int64_t(t.bh) * nq + i] : -INFINITY);
      row_d[half] = i < nq ? static_cast<float>(d_row[int64_t(t.bh) * nq + i]) : 0.0f;
    }
    float dq[kSteps][4];
    zero(dq);
    const int pad_from = first_padded_key(g, t.b, *shared.pad_scratch);
    for (int j0 = 0; j0 < key_end; j0 += kKeys) {
      shared.load_key_tile(g, keys, t.h, i0, j0, key_end);
      float s[kKeyBlocks][4], da[kKeyBlocks][4];
      zero(s);
      zero(da);
      product_with_column_pairs(s, qa, shared.k_rows(), group, member);
      product_with_column_pairs(da, ga, shared.v_rows(), group, member);
      const LaneCells at{w0 + group, j0 + 2 * member, 2 * member - warp * kWarpRows - group + kBlockRows - 1};
      if (fast_path && tile_is_interior(g, i0, i0 + kBlockRows, j0, j0 + kKeys, pad_from))
        dq_cells<true>(g, seed, s, da, row_offset, row_d, bias_s, c_s, at, t.b, t.h, t.bh);
      else
        dq_cells<false>(g, seed, s, da, row_offset, row_d, bias_s, c_s, at, t.b, t.h, t.bh);
      product_row_pairs(dq, s, shared.k_pairs(), group, member);
    }
    store_rows(grad_q + int64_t(t.bh) * nq * dh, dq, w0, nq, dh, lane);
  }
}

// ---- dK, dV and the table partials ----

// Where the dkdv kernel writes the per-diagonal partial sums of the tables it is asked for.
struct TablePartials {
  float* bias;  // (chunk of b·H + h, key blocks, width) or null
  float* c;
  int64_t bh_begin, bh_end;  // the chunk of (b, h) this launch covers
  int64_t key_blocks, width;  // width = Nq + 63
};

// Where a lane's cells sit in its warp's 16 keys × kQueries tile (keys the accumulator rows):
// keys j + {0, 8}, queries i + 8·nb + {0, 1}, their tile-local query index li + 8·nb + {0, 1}, and
// x the staged diagonal of register 0 of query block nb = 0; register r of block nb is diagonal
// x + 8·(r >> 1) − 8·nb − (r & 1).
struct KeyLaneCells {
  int j, i, li, x;
};

// One query tile of the dK/dV kernel in place: Sᵀ becomes Ãᵀ = P·C·κ and dAᵀ becomes
// dSᵀ = scale·P·(dA·κ·C − D); with tables, the tile's dZ and P·κ·dA go to zb_s and zc_s, query-major
// (zb_s[query][key]: DkdvTiles).
// offset_s: each query's base2_offset(L) (ops/sfu_exp2.cuh), +∞ for a row with no unmasked key.
// kInterior: the fast path (tile_is_interior), B and C staged, κ = 1.
template <bool kInterior, int kQueryBlocks, int kQueries, int kTermKeys>
__device__ __forceinline__ void dkdv_cells(const FlashGeometry& g, uint64_t seed, float (&st)[kQueryBlocks][4],
                                           float (&dat)[kQueryBlocks][4], const float* offset_s, const float* d_s,
                                           const float* bias_s, const float* c_s,
                                           float (&zb_s)[kQueries][kTermKeys],
                                           float (&zc_s)[kQueries][kTermKeys], bool tables,
                                           const KeyLaneCells& at, int lj0, int b, int h, int bh) {
#pragma unroll
  for (int nb = 0; nb < kQueryBlocks; ++nb)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int li = at.li + 8 * nb + (r & 1), lj = lj0 + 8 * (r >> 1);
      const int x = at.x + 8 * (r >> 1) - 8 * nb - (r & 1);
      float a = 0.0f, dz = 0.0f, cterm = 0.0f;
      if constexpr (kInterior) {
        const float p = tc::exp2_approx(fmaf(st[nb][r] * g.scale + bias_s[x], tc::kLog2e, -offset_s[li]));
        const float cv = c_s[x], gk = dat[nb][r];
        a = p * cv;
        dz = p * (gk * cv - d_s[li]);
        cterm = p * gk;
      } else {
        const int64_t j = at.j + 8 * (r >> 1), i = at.i + 8 * nb + (r & 1);
        if (offset_s[li] != INFINITY && !cell_masked(g, b, i, j)) {
          const float z = st[nb][r] * g.scale + cell_bias(g, bias_s, x, b, h, i, j);
          const float p = tc::exp2_approx(fmaf(z, tc::kLog2e, -offset_s[li]));
          const float kappa = g.keep(seed, bh, i, j), cv = cell_c(g, c_s, x, b, h, i, j);
          const float gk = dat[nb][r] * kappa;
          a = p * cv * kappa;
          dz = p * (gk * cv - d_s[li]);
          cterm = p * gk;
        }
      }
      st[nb][r] = a;
      dat[nb][r] = g.scale * dz;
      if (tables) {
        zb_s[li][lj] = dz;
        zc_s[li][lj] = cterm;
      }
    }
}

// The dK/dV kernel's tiles: query tiles of kQueries (32, or 16 at kDim = 128).
// The tile's terms are stored query-major, zb_s[query][key], rows kTermKeys = 64 + 4 floats apart
// (≡ 4 banks): a warp's store (lane 4g + t at query row 2t (+1, +8·nb), key column g (+8, +16·warp))
// hits bank 8t + g (+ a constant), 32 lanes on 32 banks, and the diagonal walk's loads (thread x at
// key ql + x − (kQueries − 1) of query row ql) are consecutive words. Key-major, rows kQueries + 3
// apart, the stores hit bank 3g + 2t: two lanes a bank on every one (the simulator's bank model,
// bench/cuda_notes.md; ncu's 66 M conflicts of 209 M dK/dV store wavefronts, H200 2026-11-28), and
// no row stride there serves both the stores and the walk.
// Q_I and dO_I are read two ways: by rows (Sᵀ = K·Q_Iᵀ, dAᵀ = V·dO_Iᵀ: column pairs) and by row
// pairs (dV += Ãᵀ·dO_I, dK += dSᵀ·Q_I), so each is staged twice, once per paired layout, and
// every B fragment is one 64-bit shared load. The column-pair copies are dead once the first two
// products are done, and the tile's table terms (zb, zc) are written only after them: at
// kDim ≥ 64 the terms share those bytes (with a barrier between), which keeps the kernel under
// 48 KB of static shared memory (55 KB at d 64 otherwise).
// The pipelined variant (kPipelined) adds, in dynamic shared memory, a raw staging copy of the next
// query tile's Q and dO rows, its rows' D and L, and its map entries:
//   q_stage (kQueries × kDim TIn) | go_stage (kQueries × kDim TIn) | d_stage (kQueries double) |
//   lse_stage (kQueries float) | bias_map_s (kDiag int) | c_map_s (kDiag int)
// bytes per block (static + dynamic; sm_90: 227 KiB a block, 228 KiB an SM): TF32 kDim 32:
// 37.8 K + 9.1 K, 64: 36.8 K + 17.1 K, 128: 34.9 K + 16.8 K; BF16 from f32 tensors 29.3 K, 37.3 K
// (their terms do not fit the column-pair copies), 18.6 K (at kDim 128 they do) static (ptxas,
// sm_90) and the same staging; from bf16 tensors half the staging. The kernel runs 2 blocks per SM (its registers): at most 111 K an SM.
template <int kDim, bool kBf16, typename TIn>
struct DkdvTiles {
  static constexpr int kQueries = kDim == 128 ? 16 : 32;
  static constexpr int kDiag = kKeysPerBlock + kQueries - 1;  // diagonals of one tile
  static constexpr int kTermKeys = kKeysPerBlock + 4;
  using Shape = TileShape<kDim, kBf16>;
  static constexpr int kRowVectors = Shape::row_vectors(kQueries);        // float4s of one column-pair copy
  static constexpr int kPairVectors = Shape::pair_vectors(kQueries / 2);  // … of one row-pair copy
  static constexpr int kTermVectors = kQueries * kTermKeys / 4;           // … of one table-term tile
  static constexpr bool kTermsShareRows = 2 * kRowVectors >= 2 * kTermVectors;
  static constexpr int kRawVectors = 2 * kRowVectors + 2 * kPairVectors + (kTermsShareRows ? 0 : 2 * kTermVectors);
  static constexpr size_t kStaticBytes = 16 * size_t(kRawVectors) + 8 * kQueries + 16 * kDiag + 4 * kWarps;
  // ---- the pipelined variant's dynamic shared memory ----
  static constexpr int kStageVectors = kDim * int(sizeof(TIn)) / 16;  // 16-byte units per staged row
  static constexpr size_t kStageBytes = 16 * size_t(kQueries) * kStageVectors;
  static constexpr size_t kQStage = 0, kGoStage = kStageBytes, kDStage = 2 * kStageBytes;
  static constexpr size_t kLseStage = kDStage + 8 * kQueries;
  static constexpr size_t kBiasMap = kLseStage + (4 * kQueries + 15) / 16 * 16;
  static constexpr size_t kCMap = kBiasMap + (4 * kDiag + 15) / 16 * 16;
  static constexpr size_t kDynamicBytes = kCMap + 4 * kDiag;
};

// The rows' L and D of the query tile at i0 (lse_bh, d_bh: the (b, h) slice's), copied as they
// are to lse_stage[x], d_stage[x] with 4- and 8-byte cp.async; rows from Nq on are not copied
// (the transform gives them L = −∞, D = 0, as the single-buffered kernel's loads do).
template <int kQueries>
__device__ __forceinline__ void prefetch_query_rows(float (&lse_stage)[kQueries], double (&d_stage)[kQueries],
                                                    const float* __restrict__ lse_bh,
                                                    const double* __restrict__ d_bh, int i0, int nq) {
  for (int x = threadIdx.x; x < kQueries; x += kThreads) {
    if (i0 + x >= nq) continue;
    async::copy4(&lse_stage[x], lse_bh + i0 + x, 4);
    async::copy8(&d_stage[x], d_bh + i0 + x, 8);
  }
}

// kPipelined: the query tiles' global loads software-pipelined as in the forward: while query
// tile i computes, tile i + 1's raw Q and dO rows, its L and D and its map entries are in flight
// (cp.async) to the staging buffer; after tile i the block turns them into the column-pair and
// row-pair tiles with the same loaders (the same rounding and pairing), so dK, dV and the table
// partials are the single-buffered kernel's, bit for bit.
template <int kDim, bool kBf16, typename TIn, bool kPipelined>
__global__ void __launch_bounds__(kThreads) urpe_flash_tc_backward_dkdv_kernel(
    FlashGeometry g, const TIn* __restrict__ q, const TIn* __restrict__ k, const TIn* __restrict__ v,
    const TIn* __restrict__ grad_out, const float* __restrict__ lse, const double* __restrict__ d_row,
    TIn* __restrict__ grad_k, TIn* __restrict__ grad_v, TablePartials tp) {
  const uint64_t seed = g.dropout_seed();  // once per thread
  using KTiles = DkdvTiles<kDim, kBf16, TIn>;
  constexpr int kQueries = KTiles::kQueries;
  constexpr int kQueryBlocks = kQueries / 8;
  constexpr int kSteps = Dim<kDim>::kSteps;
  constexpr int kDiag = KTiles::kDiag;
  constexpr int kTermKeys = KTiles::kTermKeys;
  using Tiles = TileShape<kDim, kBf16>;
  using Elem = typename Tiles::Elem;
  constexpr int kASteps = Tiles::kASteps;
  constexpr int kCols2 = Tiles::kRowCols;  // float2s (BF16 words) per column-pair (bf16) row
  constexpr int kRowVectors = KTiles::kRowVectors, kPairVectors = KTiles::kPairVectors;
  constexpr int kTermVectors = KTiles::kTermVectors;
  constexpr bool kTermsShareRows = KTiles::kTermsShareRows;
  constexpr int kStageVectors = KTiles::kStageVectors;
  URPE_SHARED(float4, tiles_raw, [KTiles::kRawVectors]);
  auto& q_rows = carve<Elem, kQueries, kCols2>(tiles_raw, 0);
  auto& go_rows = carve<Elem, kQueries, kCols2>(tiles_raw, kRowVectors);
  constexpr int kPairRows = Tiles::pair_rows(kQueries / 2);
  auto& q_pairs = carve<Elem, kPairRows, Tiles::kPairCols>(tiles_raw, 2 * kRowVectors);
  auto& go_pairs = carve<Elem, kPairRows, Tiles::kPairCols>(tiles_raw, 2 * kRowVectors + kPairVectors);
  const int terms_at = kTermsShareRows ? 0 : 2 * kRowVectors + 2 * kPairVectors;
  auto& zb_s = carve<float, kQueries, kTermKeys>(tiles_raw, terms_at);                 // dZ (∂B's terms)
  auto& zc_s = carve<float, kQueries, kTermKeys>(tiles_raw, terms_at + kTermVectors);  // P·κ·dA (∂C's)
  URPE_SHARED(float, offset_s, [kQueries]);
  URPE_SHARED(float, d_s, [kQueries]);
  URPE_SHARED(float, bias_s, [kDiag]);
  URPE_SHARED(float, c_s, [kDiag]);
  URPE_SHARED(float, wb_s, [kDiag]);  // the sliding window of per-diagonal sums
  URPE_SHARED(float, wc_s, [kDiag]);
  URPE_SHARED(int, pad_scratch, [kWarps]);
  // The pipelined variant's staging (DkdvTiles' layout), as pointers so that only it declares them.
  float4 (*q_stage)[kQueries][kStageVectors] = nullptr;
  float4 (*go_stage)[kQueries][kStageVectors] = nullptr;
  double (*d_stage)[kQueries] = nullptr;
  float (*lse_stage)[kQueries] = nullptr;
  int32_t (*bias_map_s)[kDiag] = nullptr;
  int32_t (*c_map_s)[kDiag] = nullptr;
  if constexpr (kPipelined) {
    URPE_DYNAMIC_SHARED(float4, q_stage_d, [kQueries][kStageVectors], KTiles::kQStage);
    URPE_DYNAMIC_SHARED(float4, go_stage_d, [kQueries][kStageVectors], KTiles::kGoStage);
    URPE_DYNAMIC_SHARED(double, d_stage_d, [kQueries], KTiles::kDStage);
    URPE_DYNAMIC_SHARED(float, lse_stage_d, [kQueries], KTiles::kLseStage);
    URPE_DYNAMIC_SHARED(int32_t, bias_map_d, [kDiag], KTiles::kBiasMap);
    URPE_DYNAMIC_SHARED(int32_t, c_map_d, [kDiag], KTiles::kCMap);
    q_stage = &q_stage_d, go_stage = &go_stage_d, d_stage = &d_stage_d, lse_stage = &lse_stage_d;
    bias_map_s = &bias_map_d, c_map_s = &c_map_d;
  }
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int group = lane / 4, member = lane % 4;
  const bool tables = tp.bias != nullptr || tp.c != nullptr;
  const int nq = int(g.nq), nk = int(g.nk), dh = int(g.dh), dv = int(g.dv);  // check_tc_sizes
  const int width = int(tp.width);
  const unsigned blocks_per_bh = (nk + kKeysPerBlock - 1) / kKeysPerBlock;
  const unsigned tasks = unsigned(tp.bh_end - tp.bh_begin) * blocks_per_bh;
  const bool fast_path = kSassInteriorOnly || fast_path_possible(g);
  for (unsigned task = blockIdx.x; task < tasks; task += gridDim.x) {
    const unsigned chunk_bh = task / blocks_per_bh, key_block = task - chunk_bh * blocks_per_bh;
    const int bh = int(tp.bh_begin) + int(chunk_bh), b = bh / int(g.heads), h = bh - b * int(g.heads);
    const int j0 = int(key_block) * kKeysPerBlock, wj0 = j0 + warp * kWarpRows;
    const TIn* q_bh = q + int64_t(bh) * nq * dh;
    const TIn* go_bh = grad_out + int64_t(bh) * nq * dv;
    // Causal: query i sees key j when j ≤ i + offset, so queries before j0 − offset see none.
    int64_t first_query64 = g.mask.causal ? j0 - g.mask.causal_offset : 0;
    const int first_query = int(first_query64 < 0 ? 0 : first_query64 > nq ? nq : first_query64);
    // Pipelined: query tile i0's copies into the staging buffers, one group per tile. The staging
    // is free: the last read of it (the previous tile's transform) is behind a barrier.
    auto prefetch_tile = [&](int i0) {
      prefetch_rows<kQueries, kDim>(*q_stage, q_bh + i0 * dh, nq - i0, dh);
      prefetch_rows<kQueries, kDim>(*go_stage, go_bh + i0 * dv, nq - i0, dv);
      prefetch_query_rows(*lse_stage, *d_stage, lse + int64_t(bh) * nq, d_row + int64_t(bh) * nq, i0, nq);
      prefetch_diagonal_maps(g, i0, j0, kQueries - 1, *bias_map_s, *c_map_s);
      async::commit();
    };
    if constexpr (kPipelined)
      if (first_query < nq) prefetch_tile(first_query);
    uint32_t ka[kASteps][4], va[kASteps][4];
    load_a<kBf16>(ka, k + int64_t(bh) * nk * dh, wj0, nk - wj0, dh, lane);
    load_a<kBf16>(va, v + int64_t(bh) * nk * dv, wj0, nk - wj0, dv, lane);
    float dk[kSteps][4], dv_acc[kSteps][4];
    zero(dk);
    zero(dv_acc);
    const int64_t part_row = (int64_t(chunk_bh) * tp.key_blocks + key_block) * width;
    float* part_b = tp.bias ? tp.bias + part_row : nullptr;
    float* part_c = tp.c ? tp.c + part_row : nullptr;
    const int pad_from = first_padded_key(g, b, pad_scratch);
    __syncthreads();  // the previous task's reads of the windows are done
    if (tables) {
      for (int x = threadIdx.x; x < kDiag; x += kThreads) wb_s[x] = wc_s[x] = 0.0f;
      // Diagonals above the first tile's window are reached by no tile: zeros.
      const int touched = first_query < nq ? nq - first_query + kKeysPerBlock - 1 : 0;
      for (int u = touched + threadIdx.x; u < width; u += kThreads) {
        if (part_b) part_b[u] = 0.0f;
        if (part_c) part_c[u] = 0.0f;
      }
    }
    const KeyLaneCells at0{wj0 + group, 2 * member, 2 * member,
                           warp * kWarpRows + group - 2 * member + kQueries - 1};
    for (int i0 = first_query; i0 < nq; i0 += kQueries) {
      const bool last = i0 + kQueries >= nq;
      if constexpr (kPipelined) {
        async::wait<0>();  // this thread's copies of tile i0 have landed
        __syncthreads();   // everyone's have, and the previous tile's reads of the copies and terms are done
        // The staged rows to the paired layouts: the loaders' whole-tile path from the swizzled
        // staging (StagedRows: the zeros included), the same rounding and pairing as from global.
        const TIn* q_raw = reinterpret_cast<const TIn*>(&(*q_stage)[0][0]);
        const TIn* go_raw = reinterpret_cast<const TIn*>(&(*go_stage)[0][0]);
        load_rows_tile<kQueries, kDim>(q_rows, q_raw, kQueries, kDim, StagedRows{});
        load_rows_tile<kQueries, kDim>(go_rows, go_raw, kQueries, kDim, StagedRows{});
        load_pairs_tile<kQueries, kDim>(q_pairs, q_raw, kQueries, kDim, StagedRows{});
        load_pairs_tile<kQueries, kDim>(go_pairs, go_raw, kQueries, kDim, StagedRows{});
        for (int x = threadIdx.x; x < kQueries; x += kThreads) {
          const bool in = i0 + x < nq;
          offset_s[x] = tc::base2_offset(in ? (*lse_stage)[x] : -INFINITY);
          d_s[x] = in ? static_cast<float>((*d_stage)[x]) : 0.0f;
        }
        stage_diagonals<kDiag, true>(g, h, i0, j0, kQueries - 1, bias_s, c_s, *bias_map_s, *c_map_s);
        __syncthreads();  // the tiles, L, D and diagonals ready; the staging is free again
        if (!last) prefetch_tile(i0 + kQueries);  // in flight while this tile computes
      } else {
        __syncthreads();  // the previous tile's reads of the Q, dO copies and the terms are done
        load_rows_tile<kQueries, kDim>(q_rows, q_bh + i0 * dh, nq - i0, dh);
        load_rows_tile<kQueries, kDim>(go_rows, go_bh + i0 * dv, nq - i0, dv);
        load_pairs_tile<kQueries, kDim>(q_pairs, q_bh + i0 * dh, nq - i0, dh);
        load_pairs_tile<kQueries, kDim>(go_pairs, go_bh + i0 * dv, nq - i0, dv);
        for (int x = threadIdx.x; x < kQueries; x += kThreads) {
          const int i = i0 + x;
          offset_s[x] = tc::base2_offset(i < nq ? lse[int64_t(bh) * nq + i] : -INFINITY);
          d_s[x] = i < nq ? static_cast<float>(d_row[int64_t(bh) * nq + i]) : 0.0f;
        }
        stage_diagonals(g, h, i0, j0, kQueries - 1, bias_s, c_s);
        __syncthreads();
      }
      float st[kQueryBlocks][4], dat[kQueryBlocks][4];
      zero(st);
      zero(dat);
      product_with_column_pairs(st, ka, q_rows, group, member);   // Sᵀ = K·Qᵀ
      product_with_column_pairs(dat, va, go_rows, group, member);  // dAᵀ = V·dOᵀ
      if (kTermsShareRows && tables) __syncthreads();  // every warp's reads of q_rows, go_rows are done
      const KeyLaneCells at{at0.j, i0 + at0.i, at0.li, at0.x};
      const int lj0 = warp * kWarpRows + group;
      if (fast_path && tile_is_interior(g, i0, i0 + kQueries, j0, j0 + kKeysPerBlock, pad_from))
        dkdv_cells<true>(g, seed, st, dat, offset_s, d_s, bias_s, c_s, zb_s, zc_s, tables, at, lj0, b, h, bh);
      else
        dkdv_cells<false>(g, seed, st, dat, offset_s, d_s, bias_s, c_s, zb_s, zc_s, tables, at, lj0, b, h, bh);
      product_row_pairs(dv_acc, st, go_pairs, group, member);  // dV += Ãᵀ·dO
      product_row_pairs(dk, dat, q_pairs, group, member);      // dK += dSᵀ·Q
      if (!tables) continue;
      __syncthreads();  // the tile's terms are in zb_s, zc_s
      // Diagonal x of the tile: cells (key kl, query ql) with kl − ql = x − (kQueries − 1),
      // summed by thread x alone in ascending ql. The walk is unrolled over all kQueries columns
      // with the cells off the diagonal's range read as 0 (their key clamped into the tile), so
      // the 2·kQueries shared loads are independent and issue back to back; the loop with the
      // diagonal's own bounds waited for each load in turn while the block sat at the barrier
      // after it (ncu, H200 2026-11-27: 0.95 of the dK/dV kernel's 6.06 cycles per issued
      // instruction stalled at barriers). Adding +0 is exact and the sum is never −0 (it starts
      // at +0, and round-to-nearest gives +0 for x + (−x)), so these are the loop's bits.
      for (int x = threadIdx.x; x < kDiag; x += kThreads) {
        const int shift = x - (kQueries - 1);
        const int ql_lo = shift < 0 ? -shift : 0;
        const int ql_hi = kKeysPerBlock - shift < kQueries ? kKeysPerBlock - shift : kQueries;
        float sum_b = 0.0f, sum_c = 0.0f;
#pragma unroll
        for (int ql = 0; ql < kQueries; ++ql) {
          const bool on = ql >= ql_lo && ql < ql_hi;
          const int kl = on ? ql + shift : 0;
          sum_b += on ? zb_s[ql][kl] : 0.0f;
          sum_c += on ? zc_s[ql][kl] : 0.0f;
        }
        wb_s[x] += sum_b;
        wc_s[x] += sum_c;
        // Window entry x is diagonal u = base + x of the partial row. Written out: every entry
        // after the last tile; else the top kQueries, which no later tile reaches.
        const int u = nq - i0 - kQueries + x;
        if ((last || x >= kKeysPerBlock - 1) && u >= 0 && u < width) {
          if (part_b) part_b[u] = wb_s[x];
          if (part_c) part_c[u] = wc_s[x];
        }
      }
      if (last) continue;
      // Slide: the next tile's entry x is this tile's x − kQueries.
      float next_b[2] = {0.0f, 0.0f}, next_c[2] = {0.0f, 0.0f};
      __syncthreads();
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        const int x = threadIdx.x + p * kThreads;
        if (x < kDiag && x >= kQueries) {
          next_b[p] = wb_s[x - kQueries];
          next_c[p] = wc_s[x - kQueries];
        }
      }
      __syncthreads();
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        const int x = threadIdx.x + p * kThreads;
        if (x < kDiag) {
          wb_s[x] = next_b[p];
          wc_s[x] = next_c[p];
        }
      }
    }
    store_rows(grad_k + int64_t(bh) * nk * dh, dk, wj0, nk, dh, lane);
    store_rows(grad_v + int64_t(bh) * nk * dv, dv_acc, wj0, nk, dv, lane);
  }
}

// totals[h, m] (+)= Σ over b with b·H + h in [bh_begin, bh_end), then key blocks J, of
// partial[b·H + h − bh_begin, J, m − 64·J] (the blocks whose row holds diagonal m).
__global__ void urpe_flash_tc_diagonal_totals_kernel(int64_t heads, int64_t diagonals, TablePartials tp,
                                                     const float* __restrict__ partial, bool first_chunk,
                                                     double* __restrict__ totals) {
  URPE_GRID_STRIDE(hm, heads * diagonals) {
    const int64_t h = hm / diagonals, m = hm % diagonals;
    double sum = first_chunk ? 0.0 : totals[hm];
    // Block J holds m when 0 ≤ m − 64·J < width.
    const int64_t j_lo = m - tp.width + 1 > 0 ? (m - tp.width + kKeysPerBlock) / kKeysPerBlock : 0;
    const int64_t j_hi = min(tp.key_blocks - 1, m / kKeysPerBlock);
    int64_t bh = tp.bh_begin + ((h - tp.bh_begin % heads) % heads + heads) % heads;
    for (; bh < tp.bh_end; bh += heads)
      for (int64_t J = j_lo; J <= j_hi; ++J)
        sum += partial[((bh - tp.bh_begin) * tp.key_blocks + J) * tp.width + (m - J * kKeysPerBlock)];
    totals[hm] = sum;
  }
}

// grad[h, k] = Σ over the diagonals m of bucket k (positions of a BucketIndex), ascending.
__global__ void urpe_flash_tc_bucket_sums_kernel(int64_t heads, int64_t buckets, int64_t diagonals,
                                                 const int32_t* __restrict__ positions,
                                                 const int32_t* __restrict__ offsets,
                                                 const double* __restrict__ totals, float* __restrict__ grad) {
  URPE_GRID_STRIDE(hk, heads * buckets) {
    const int64_t h = hk / buckets, key = hk % buckets;
    double sum = 0.0;
    for (int32_t o = offsets[key]; o < offsets[key + 1]; ++o) sum += totals[h * diagonals + positions[o]];
    grad[hk] = static_cast<float>(sum);
  }
}

// Whether a pipelined backward kernel takes these tensors: the context's mode asks for it and the
// two row streams it copies with cp.async (a, b: K and V for dQ, Q and dO for dK/dV) and its
// shared memory fit it (pipeline_fits). Otherwise the single-buffered kernel runs.
template <int kDim, bool kBf16, typename TIn>
bool backward_pipeline_takes(const cuda::Context& ctx, const FlashGeometry& g, const TIn* a, const TIn* b,
                             size_t shared_bytes) {
  return cuda::tc_pipeline_wanted(ctx.tc_pipeline(), kDim, kBf16, /*backward=*/true) &&
         pipeline_fits(ctx, g, a, b, shared_bytes);
}

template <int kDim, bool kBf16, typename TIn>
TcBackwardPipelines backward_pipelines(const cuda::Context& ctx, const FlashGeometry& g, const Tensor& q,
                                       const Tensor& k, const Tensor& v, const Tensor& grad_out) {
  using DTiles = DqTiles<kDim, kBf16, TIn>;
  using KTiles = DkdvTiles<kDim, kBf16, TIn>;
  return {backward_pipeline_takes<kDim, kBf16>(ctx, g, values<TIn>(k), values<TIn>(v),
                                               DTiles::kStaticBytes + DTiles::kDynamicBytes),
          backward_pipeline_takes<kDim, kBf16>(ctx, g, values<TIn>(q), values<TIn>(grad_out),
                                               KTiles::kStaticBytes + KTiles::kDynamicBytes)};
}

template <int kDim, bool kBf16, typename TIn>
void launch_backward(cuda::Context& ctx, const FlashGeometry& g, const Tensor& q, const Tensor& k,
                     const Tensor& v, const Tensor& lse, const Tensor& grad_out, const double* d_row,
                     Tensor& grad_q, Tensor& grad_k, Tensor& grad_v, Tensor* grad_bias, Tensor* grad_c,
                     int64_t partial_cap_bytes) {
  const int64_t dq_tasks = row_tiles(g, g.nq, kBlockRows);
  constexpr bool kBf16Tensors = std::is_same_v<TIn, __nv_bfloat16>;
  const TcBackwardPipelines pipelined = backward_pipelines<kDim, kBf16, TIn>(ctx, g, q, k, v, grad_out);
  cuda::TcKernelsRan& ran = ctx.tc_kernels_ran();  // what ran, for the benchmark's rows
  ran.backward = true, ran.dq_pipelined = pipelined.dq, ran.dkdv_pipelined = pipelined.dkdv;
  // The pipelined kernels' staging is dynamic shared memory (above 48 KiB only once allowed).
  auto* dq_kernel = pipelined.dq ? urpe_flash_tc_backward_dq_kernel<kDim, kBf16, TIn, true>
                                 : urpe_flash_tc_backward_dq_kernel<kDim, kBf16, TIn, false>;
  const size_t dq_bytes = pipelined.dq ? DqTiles<kDim, kBf16, TIn>::kDynamicBytes : 0;
  if (pipelined.dq) CUDA_CHECK(cudaFuncSetAttribute(dq_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(dq_bytes)));
  auto* dkdv_kernel = pipelined.dkdv ? urpe_flash_tc_backward_dkdv_kernel<kDim, kBf16, TIn, true>
                                     : urpe_flash_tc_backward_dkdv_kernel<kDim, kBf16, TIn, false>;
  const size_t dkdv_bytes = pipelined.dkdv ? DkdvTiles<kDim, kBf16, TIn>::kDynamicBytes : 0;
  if (pipelined.dkdv)
    CUDA_CHECK(cudaFuncSetAttribute(dkdv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(dkdv_bytes)));
  dq_kernel<<<grid_for(ctx, dq_tasks, 1), kThreads, dq_bytes, ctx.stream()>>>(
      g, values<TIn>(q), values<TIn>(k), values<TIn>(v), values<TIn>(grad_out), lse.f32(), d_row,
      values<TIn>(grad_q));
  CUDA_CHECK_LAUNCH(!kBf16         ? "urpe_flash_tc_backward_dq_kernel"
                    : kBf16Tensors ? "urpe_flash_tc_backward_dq_kernel (bf16 tensors)"
                                   : "urpe_flash_tc_backward_dq_kernel (bf16)");

  const int64_t key_blocks = (g.nk + kKeysPerBlock - 1) / kKeysPerBlock;
  const int64_t width = g.nq + kKeysPerBlock - 1, diagonals = g.nq + g.nk - 1;
  const int64_t bhs = g.batch * g.heads;
  const int tables = (grad_bias ? 1 : 0) + (grad_c ? 1 : 0);
  // Chunks of (b, h) whose partials fit the cap (at least one (b, h) per chunk).
  const double per_bh = double(key_blocks) * width * sizeof(float) * tables;
  const double cap = partial_cap_bytes > 0 ? double(partial_cap_bytes)
                                           : std::max(double(64 << 20), double(q.numel()) * sizeof(float));
  const int64_t chunk = tables ? std::clamp<int64_t>(static_cast<int64_t>(cap / per_bh), 1, bhs) : bhs;
  cuda::DeviceBuffer partial_b(ctx, grad_bias ? sizeof(float) * chunk * key_blocks * width : 0);
  cuda::DeviceBuffer partial_c(ctx, grad_c ? sizeof(float) * chunk * key_blocks * width : 0);
  cuda::DeviceBuffer totals_b(ctx, grad_bias ? sizeof(double) * g.heads * diagonals : 0);
  cuda::DeviceBuffer totals_c(ctx, grad_c ? sizeof(double) * g.heads * diagonals : 0);
  const int threads = 256;
  for (int64_t begin = 0; begin < bhs; begin += chunk) {
    const TablePartials tp{grad_bias ? partial_b.as<float>() : nullptr, grad_c ? partial_c.as<float>() : nullptr,
                           begin, std::min(bhs, begin + chunk), key_blocks, width};
    const int64_t kv_tasks = (tp.bh_end - tp.bh_begin) * key_blocks;
    dkdv_kernel<<<grid_for(ctx, kv_tasks, 1), kThreads, dkdv_bytes, ctx.stream()>>>(
        g, values<TIn>(q), values<TIn>(k), values<TIn>(v), values<TIn>(grad_out), lse.f32(), d_row,
        values<TIn>(grad_k), values<TIn>(grad_v), tp);
    CUDA_CHECK_LAUNCH(!kBf16         ? "urpe_flash_tc_backward_dkdv_kernel"
                      : kBf16Tensors ? "urpe_flash_tc_backward_dkdv_kernel (bf16 tensors)"
                                     : "urpe_flash_tc_backward_dkdv_kernel (bf16)");
    for (int t = 0; t < 2; ++t) {
      const float* partial = t == 0 ? tp.bias : tp.c;
      if (partial == nullptr) continue;
      double* totals = t == 0 ? totals_b.as<double>() : totals_c.as<double>();
      urpe_flash_tc_diagonal_totals_kernel<<<grid_for(ctx, g.heads * diagonals, threads), threads, 0,
                                             ctx.stream()>>>(g.heads, diagonals, tp, partial, begin == 0, totals);
      CUDA_CHECK_LAUNCH("urpe_flash_tc_diagonal_totals_kernel");
    }
  }
  for (int t = 0; t < 2; ++t) {
    Tensor* grad = t == 0 ? grad_bias : grad_c;
    if (grad == nullptr) continue;
    const int32_t* map = t == 0 ? g.bias_map : g.c_map;
    const int64_t buckets = grad->size(1);
    if (g.heads * buckets == 0) continue;
    const BucketIndex index(ctx, map, diagonals, buckets, "urpe_flash_attention backward");
    urpe_flash_tc_bucket_sums_kernel<<<grid_for(ctx, g.heads * buckets, threads), threads, 0, ctx.stream()>>>(
        g.heads, buckets, diagonals, index.positions(), index.offsets(),
        t == 0 ? totals_b.as<double>() : totals_c.as<double>(), grad->f32());
    CUDA_CHECK_LAUNCH("urpe_flash_tc_bucket_sums_kernel");
  }
}

}  // namespace

TcBackwardPipelines flash_tc_backward_pipelined(cuda::Context& ctx, const Tensor& q, const Tensor& k,
                                                const Tensor& v, const Tensor& grad_out, TcMath math) {
  const FlashGeometry g = geometry_of(q, k, v, UrpeAttentionParams{}, AttentionDropout{});
  if (math == TcMath::tf32 && (q.dtype() != DType::f32 || grad_out.dtype() != DType::f32)) return {};
  const int variant = math == TcMath::tf32 ? 0 : q.dtype() == DType::bf16 ? 2 : 1;
  switch (dim_class(g.dh, g.dv) * 4 + variant) {
    case 32 * 4 + 0: return backward_pipelines<32, false, float>(ctx, g, q, k, v, grad_out);
    case 32 * 4 + 1: return backward_pipelines<32, true, float>(ctx, g, q, k, v, grad_out);
    case 32 * 4 + 2: return backward_pipelines<32, true, __nv_bfloat16>(ctx, g, q, k, v, grad_out);
    case 64 * 4 + 0: return backward_pipelines<64, false, float>(ctx, g, q, k, v, grad_out);
    case 64 * 4 + 1: return backward_pipelines<64, true, float>(ctx, g, q, k, v, grad_out);
    case 64 * 4 + 2: return backward_pipelines<64, true, __nv_bfloat16>(ctx, g, q, k, v, grad_out);
    case 128 * 4 + 0: return backward_pipelines<128, false, float>(ctx, g, q, k, v, grad_out);
    case 128 * 4 + 1: return backward_pipelines<128, true, float>(ctx, g, q, k, v, grad_out);
    default: return backward_pipelines<128, true, __nv_bfloat16>(ctx, g, q, k, v, grad_out);
  }
}

void urpe_flash_tc_backward(cuda::Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& lse, const Tensor& grad_out, const double* d_row,
                            const UrpeAttentionParams& params, const AttentionDropout& dropout,
                            Tensor& grad_q, Tensor& grad_k, Tensor& grad_v, Tensor* grad_bias_table,
                            Tensor* grad_c_table, int64_t partial_cap_bytes, TcMath math) {
  const FlashGeometry g = geometry_of(q, k, v, params, dropout);
  check_tc_sizes(g);
  URPE_CHECK(q.dtype() == DType::f32 || math == TcMath::bf16,
             "urpe_flash_tc_backward: TF32 tiles read f32 q, k, v; got " << q.describe());
  // The tiles (TF32; BF16 from f32 tensors; BF16 from bf16 tensors), one per head-dim class.
  const auto run = [&](auto launch) {
    launch(ctx, g, q, k, v, lse, grad_out, d_row, grad_q, grad_k, grad_v, grad_bias_table, grad_c_table,
           partial_cap_bytes);
  };
  const int variant = math == TcMath::tf32 ? 0 : q.dtype() == DType::bf16 ? 2 : 1;
  switch (dim_class(g.dh, g.dv) * 4 + variant) {
    case 32 * 4 + 0: run(launch_backward<32, false, float>); break;
    case 32 * 4 + 1: run(launch_backward<32, true, float>); break;
    case 32 * 4 + 2: run(launch_backward<32, true, __nv_bfloat16>); break;
    case 64 * 4 + 0: run(launch_backward<64, false, float>); break;
    case 64 * 4 + 1: run(launch_backward<64, true, float>); break;
    case 64 * 4 + 2: run(launch_backward<64, true, __nv_bfloat16>); break;
    case 128 * 4 + 0: run(launch_backward<128, false, float>); break;
    case 128 * 4 + 1: run(launch_backward<128, true, float>); break;
    default: run(launch_backward<128, true, __nv_bfloat16>); break;
  }
}

}  // namespace urpe::kernels
