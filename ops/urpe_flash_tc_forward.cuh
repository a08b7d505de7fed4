// The pieces of the tensor-core forward that its two kernels share: the one-row-block kernel
// (urpe_flash_tc_forward_cuda.cu, every warp 16 query rows) and the two-row-block kernel
// (urpe_flash_tc_forward_rows2_cuda.cu, every warp 32 rows, BF16 tiles at d 64): a key tile's
// logits and weights for one warp's 16 rows (the per-cell maths, so both kernels compute the same
// bits), the tiles' shared-memory layout and sizes, the shared arrays and the per-tile staging of
// K, V and the diagonals (ForwardShared, on urpe_flash_tc_key_walk.cuh's KeyTileWalk), and whether the pipelined variant takes a call. The maths is in urpe_flash_tc_forward_cuda.cu's header.
#pragma once
#include <type_traits>

#include "ops/sfu_exp2.cuh"
#include "ops/urpe_flash_tc.h"
#include "ops/urpe_flash_tc_key_walk.cuh"
#include "ops/urpe_flash_tc_tiles.cuh"

namespace urpe::kernels::flash_tc {

// The scores S of a key tile become logits z = S·scale + B in place (−∞ where masked), and
// tile_max their max per row. kInterior: the fast path (tile_is_interior), no mask and B staged.
template <bool kInterior, int kKeyBlocks>
__device__ __forceinline__ void forward_logits(const FlashGeometry& g, float (&s)[kKeyBlocks][4],
                                               float (&tile_max)[2], const float* bias_s, const LaneCells& at,
                                               int b, int h) {
#pragma unroll
  for (int nb = 0; nb < kKeyBlocks; ++nb)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int x = cell_diagonal(at, nb, r);
      float z;
      if constexpr (kInterior) {
        z = s[nb][r] * g.scale + bias_s[x];
      } else {
        const int64_t i = cell_row(at, r), j = cell_key(at, nb, r);
        z = cell_masked(g, b, i, j) ? -INFINITY : s[nb][r] * g.scale + cell_bias(g, bias_s, x, b, h, i, j);
      }
      s[nb][r] = z;
      tile_max[r / 2] = fmaxf(tile_max[r / 2], z);
    }
}

// The logits become the weights W = e^{z − m'}·C·κ in place; row_sum gets Σ e^{z − m'} per row.
// e^{z − m'} = 2^(z·log2 e − m'·log2 e), one FFMA and one MUFU.EX2 (ops/sfu_exp2.cuh), exactly 0
// for a masked cell (z = −∞) without a branch; `offset` is base2_offset(m') per row.
template <bool kInterior, int kKeyBlocks>
__device__ __forceinline__ void forward_weights(const FlashGeometry& g, uint64_t seed, float (&s)[kKeyBlocks][4],
                                                const float (&offset)[2], float (&row_sum)[2], const float* c_s,
                                                const LaneCells& at, int b, int h, int bh) {
#pragma unroll
  for (int nb = 0; nb < kKeyBlocks; ++nb)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int x = cell_diagonal(at, nb, r);
      const float z = s[nb][r];
      const float e = tc::exp2_approx(fmaf(z, tc::kLog2e, -offset[r / 2]));
      row_sum[r / 2] += e;
      float w;
      if constexpr (kInterior) {
        w = e * c_s[x];
      } else {
        w = 0.0f;  // a masked cell's C and κ are never read (a dense map's index would be out of range)
        if (z != -INFINITY) {
          const int64_t i = cell_row(at, r), j = cell_key(at, nb, r);
          w = e * cell_c(g, c_s, x, b, h, i, j);
          w *= g.keep(seed, bh, i, j);
        }
      }
      s[nb][r] = w;
    }
}

// The forward's tiles for a head-dim class and tile math. Key tiles of 64, 32 at kDim = 128 in
// TF32 (to fit 48 KiB of static shared memory). At kDim = 64 the 64-key TF32 tile needs a few more
// than the 168 registers that 3 blocks per SM allow and spills ~40 bytes (ptxas -v, sm_90); the
// spill-free 32-key variant (158 registers, twice the barriers, staging and O rescales per key)
// measured ~20% slower on the H200 (2026-11-27: 57.5 against 71 TFLOP/s at n = 4096,
// bench/cuda_notes.md), so the spill stays. BF16 tiles are half the bytes and Q's fragments half
// the registers: 64 keys at every kDim.
// The pipelined variant (kPipelined) adds, in dynamic shared memory, a raw staging copy of the
// next K and V tiles and of the next tile's map entries (KeyTileStaging, urpe_flash_tc_tiles.cuh)
// (the staged rows' 16-byte units swizzled against bank conflicts: StagedRows, urpe_flash_tc_tiles.cuh)
// bytes per block (static + dynamic, sm_90 allows 227 KiB a block, 228 KiB an SM): TF32 kDim 32:
// 20.5 K + 17 K, 64: 37 K + 33.8 K (3 blocks: 215 K), 128: 35 K + 33.5 K (2 blocks); BF16 from f32
// tensors 32: 11 K + 17 K, 64: 19.5 K + 33.8 K, 128: 36 K + 66.5 K (2 blocks: 207 K); from bf16
// tensors half the staging. So the pipeline keeps today's blocks per SM everywhere on sm_90.
// kQueryRows: the query rows of a block, kBlockRows (one 16-row block per warp) or, for the
// two-row-block variant (urpe_flash_tc_forward_rows2_cuda.cu), 2·kBlockRows: only the staged
// diagonals (kQueryRows + kKeys − 1 of them) grow.
template <int kDim, bool kBf16, typename TIn, int kQueryRows = kBlockRows>
struct ForwardTiles : KeyTileStaging<kDim == 128 && !kBf16 ? 32 : 64, kDim, TIn, kQueryRows> {
  static constexpr int kKeys = ForwardTiles::KeyTileStaging::kKeys;
  // K and V tiles in 16-byte rows (tile_view): TF32 floats or BF16 words (the loaders' layouts):
  // K in kKeys rows (column pairs, bf16 rows), V in kVRows rows (row pairs, bf16 quad rows).
  static constexpr int kKWords = kBf16 ? bf16_rows_words(kDim) : 2 * (kDim / 2 + 4);
  static constexpr int kVWords = kBf16 ? bf16_quad_words(kDim) : 2 * (kDim + 4);
  static constexpr int kVRows = kBf16 ? kKeys / 4 : kKeys / 2;
  static constexpr int kKVectors = kKWords / 4, kVVectors = kVWords / 4;
  static constexpr size_t kStaticBytes =
      16 * size_t(kKeys * kKVectors + kVRows * kVVectors) + 8 * ForwardTiles::KeyTileStaging::kDiag + 4 * kWarps;
};

// A forward block's shared memory and its walk over the key tiles, the same in both forward
// kernels (kQueryRows: 64 or 128 rows a block): K and V of the current key tile in the loaders'
// layouts (declared here), and the walk's diagonals, padding scratch and, pipelined, the raw
// staging of the next tile that they are made from (KeyTileWalk, urpe_flash_tc_key_walk.cuh, in
// Tiles' layout). declare() declares the arrays once per kernel.
template <int kDim, bool kBf16, typename TIn, int kQueryRows, bool kPipelined>
struct ForwardShared : KeyTileWalk<ForwardTiles<kDim, kBf16, TIn, kQueryRows>, kDim, TIn, kQueryRows, kPipelined> {
  using Tiles = ForwardTiles<kDim, kBf16, TIn, kQueryRows>;
  using Walk = KeyTileWalk<Tiles, kDim, TIn, kQueryRows, kPipelined>;
  static constexpr int kKeys = Tiles::kKeys;
  using KTile = float4[kKeys][Tiles::kKVectors];
  using VTile = float4[Tiles::kVRows][Tiles::kVVectors];

  KTile* k_s4;
  VTile* v_s4;

  static __device__ __forceinline__ ForwardShared declare() {
    URPE_SHARED(float4, k_s4, [kKeys][Tiles::kKVectors]);
    URPE_SHARED(float4, v_s4, [Tiles::kVRows][Tiles::kVVectors]);
    return ForwardShared{Walk::declare(), &k_s4, &v_s4};
  }

  // Key tile j0 of head h into k_s, v_s and the diagonals (Walk::load_key_tile: its barriers, and
  // pipelined its staging): K as column pairs (TF32) or bf16 rows, V as row pairs or bf16 quad rows.
  __device__ __forceinline__ void load_key_tile(const FlashGeometry& g, const KeyRows<TIn>& keys, int h, int i0,
                                                int j0, int key_end) const {
    constexpr int kKWords = Tiles::kKWords, kVWords = Tiles::kVWords;
    Walk::load_key_tile(g, keys, h, i0, j0, key_end,
                        [&](const TIn* k_src, const TIn* v_src, int valid_rows, int k_cols, int v_cols, auto layout) {
                          if constexpr (kBf16) {
                            load_bf16_rows<kKeys, kDim>(tile_view<uint32_t, kKWords>(*k_s4), k_src, valid_rows, k_cols,
                                                        layout);
                            load_bf16_quad_rows<kKeys, kDim>(tile_view<uint32_t, kVWords>(*v_s4), v_src, valid_rows,
                                                             v_cols, layout);
                          } else {
                            load_rounded_column_pairs<kKeys, kDim>(tile_view<float2, kDim / 2 + 4>(*k_s4), k_src,
                                                                   valid_rows, k_cols, layout);
                            load_rounded_row_pairs<kKeys, kDim>(tile_view<float2, kDim + 4>(*v_s4), v_src, valid_rows,
                                                                v_cols, layout);
                          }
                        });
  }
};

// Whether the pipelined variant takes these tensors: the context's mode asks for it
// (cuda::tc_pipeline_wanted) and they fit it (pipeline_fits: 16-byte rows, the shared memory).
// Otherwise the single-buffered kernel runs.
template <int kDim, bool kBf16, typename TIn, int kQueryRows = kBlockRows>
bool pipeline_takes(const cuda::Context& ctx, const FlashGeometry& g, const TIn* k, const TIn* v) {
  using Tiles = ForwardTiles<kDim, kBf16, TIn, kQueryRows>;
  return cuda::tc_pipeline_wanted(ctx.tc_pipeline(), kDim, kBf16, /*backward=*/false) &&
         pipeline_fits(ctx, g, k, v, Tiles::kStaticBytes + Tiles::kDynamicBytes);
}

// The two-row-block forward (urpe_flash_tc_forward_rows2_cuda.cu), BF16 tiles at the 64 class,
// as urpe_flash_tc_forward's launcher calls it: q, k, v and out f32 or (bf16_tensors) bf16;
// lse null or (B·H·Nq) f32. forward_rows2_pipelined: whether it runs its pipelined variant.
bool forward_rows2_pipelined(const cuda::Context& ctx, const FlashGeometry& g, const Tensor& k, const Tensor& v);
void launch_forward_rows2(cuda::Context& ctx, const FlashGeometry& g, const Tensor& q, const Tensor& k,
                          const Tensor& v, Tensor& out, float* lse);

}  // namespace urpe::kernels::flash_tc
