// The pieces of the tensor-core forward that its two kernels share: the one-row-block kernel
// (urpe_flash_tc_forward_cuda.cu, every warp 16 query rows) and the two-row-block kernel
// (urpe_flash_tc_forward_rows2_cuda.cu, every warp 32 rows, BF16 tiles at d 64): a key tile's
// logits and weights for one warp's 16 rows (the per-cell maths, so both kernels compute the same
// bits), the tiles' shared-memory layout and sizes, the shared arrays and the per-tile staging of
// K, V and the diagonals (ForwardShared), and whether the pipelined variant takes a call. The maths is in urpe_flash_tc_forward_cuda.cu's header.
#pragma once
#include <type_traits>

#include "ops/sfu_exp2.cuh"
#include "ops/urpe_flash_tc.h"
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

// Where a task's keys come from: its (b, h) slice of K and V, nk rows of dh and dv elements.
template <typename TIn>
struct KeyRows {
  const TIn* __restrict__ k;
  const TIn* __restrict__ v;
  int nk, dh, dv;
};

// A forward block's shared memory and its walk over the key tiles, the same in both forward
// kernels (kQueryRows: 64 or 128 rows a block): K and V of the current key tile in the loaders'
// layouts, the tile's B and C diagonals, the padding scratch and, pipelined, the raw staging of
// the next tile (Tiles' layout) that they are made from. declare() declares the arrays once per
// kernel (static shared memory, and dynamic for the staging).
template <int kDim, bool kBf16, typename TIn, int kQueryRows, bool kPipelined>
struct ForwardShared {
  using Tiles = ForwardTiles<kDim, kBf16, TIn, kQueryRows>;
  static constexpr int kKeys = Tiles::kKeys, kDiag = Tiles::kDiag;
  using KTile = float4[kKeys][Tiles::kKVectors];
  using VTile = float4[Tiles::kVRows][Tiles::kVVectors];
  using Stage = float4[kKeys][Tiles::kStageVectors];
  using Diagonals = float[kDiag];
  using MapDiagonals = int32_t[kDiag];

  KTile* k_s4;
  VTile* v_s4;
  Diagonals* bias_s;  // B and C of the tile's diagonals (stage_diagonals)
  Diagonals* c_s;
  int (*pad_scratch)[kWarps];
  Stage* k_stage = nullptr;  // the pipelined variant's staging, declared only by it
  Stage* v_stage = nullptr;
  MapDiagonals* bias_map_s = nullptr;
  MapDiagonals* c_map_s = nullptr;

  static __device__ __forceinline__ ForwardShared declare() {
    URPE_SHARED(float4, k_s4, [kKeys][Tiles::kKVectors]);
    URPE_SHARED(float4, v_s4, [Tiles::kVRows][Tiles::kVVectors]);
    URPE_SHARED(float, bias_s, [kDiag]);
    URPE_SHARED(float, c_s, [kDiag]);
    URPE_SHARED(int, pad_scratch, [kWarps]);
    ForwardShared shared{&k_s4, &v_s4, &bias_s, &c_s, &pad_scratch};
    if constexpr (kPipelined) {
      URPE_DYNAMIC_SHARED(float4, k_stage_d, [kKeys][Tiles::kStageVectors], Tiles::kKStage);
      URPE_DYNAMIC_SHARED(float4, v_stage_d, [kKeys][Tiles::kStageVectors], Tiles::kVStage);
      URPE_DYNAMIC_SHARED(int32_t, bias_map_d, [kDiag], Tiles::kBiasMap);
      URPE_DYNAMIC_SHARED(int32_t, c_map_d, [kDiag], Tiles::kCMap);
      shared.k_stage = &k_stage_d, shared.v_stage = &v_stage_d, shared.bias_map_s = &bias_map_d;
      shared.c_map_s = &c_map_d;
    }
    return shared;
  }

  // Pipelined: key tile j0's copies into the staging, one cp.async group. The staging is free:
  // the last read of it (the previous tile's transform) is behind a barrier.
  __device__ __forceinline__ void prefetch(const FlashGeometry& g, const KeyRows<TIn>& keys, int i0, int j0) const {
    prefetch_rows<kKeys, kDim>(*k_stage, keys.k + j0 * keys.dh, keys.nk - j0, keys.dh);
    prefetch_rows<kKeys, kDim>(*v_stage, keys.v + j0 * keys.dv, keys.nk - j0, keys.dv);
    prefetch_diagonal_maps(g, i0, j0, kQueryRows - 1, *bias_map_s, *c_map_s);
    async::commit();
  }

  // A task's start: pipelined, its first key tile's copies go out (before Q's fragments load).
  __device__ __forceinline__ void begin_task(const FlashGeometry& g, const KeyRows<TIn>& keys, int i0,
                                             int key_end) const {
    if constexpr (kPipelined)
      if (key_end > 0) prefetch(g, keys, i0, 0);
  }

  // Key tile j0 of head h into k_s, v_s and the diagonals; every thread of the block calls it
  // (barriers inside: after it the tiles are ready, and no warp still reads the previous ones).
  // Pipelined: turned from the staging into the fragment layouts (the loaders' whole-tile path from
  // the swizzled staging, StagedRows: kKeys rows of kDim columns, the zeros included; the same
  // rounding and pairing as from global memory), then the next tile's copies go out, in flight
  // while this tile computes. Otherwise read from global memory.
  __device__ __forceinline__ void load_key_tile(const FlashGeometry& g, const KeyRows<TIn>& keys, int h, int i0,
                                                int j0, int key_end) const {
    constexpr int kKWords = Tiles::kKWords, kVWords = Tiles::kVWords;
    if constexpr (kPipelined) {
      async::wait<0>();  // this thread's copies of tile j0 have landed
      __syncthreads();   // everyone's have, and the previous tile's reads of k_s, v_s, diagonals are done
      const TIn* k_raw = reinterpret_cast<const TIn*>(&(*k_stage)[0][0]);
      const TIn* v_raw = reinterpret_cast<const TIn*>(&(*v_stage)[0][0]);
      if constexpr (kBf16) {
        load_bf16_rows<kKeys, kDim>(tile_view<uint32_t, kKWords>(*k_s4), k_raw, kKeys, kDim, StagedRows{});
        load_bf16_quad_rows<kKeys, kDim>(tile_view<uint32_t, kVWords>(*v_s4), v_raw, kKeys, kDim, StagedRows{});
      } else {
        load_rounded_column_pairs<kKeys, kDim>(tile_view<float2, kDim / 2 + 4>(*k_s4), k_raw, kKeys, kDim,
                                               StagedRows{});
        load_rounded_row_pairs<kKeys, kDim>(tile_view<float2, kDim + 4>(*v_s4), v_raw, kKeys, kDim, StagedRows{});
      }
      stage_diagonals<kDiag, true>(g, h, i0, j0, kQueryRows - 1, *bias_s, *c_s, *bias_map_s, *c_map_s);
      __syncthreads();  // k_s, v_s and the diagonals ready; the staging is free again
      if (j0 + kKeys < key_end) prefetch(g, keys, i0, j0 + kKeys);
    } else {
      __syncthreads();  // the previous tile's reads of k_s, v_s and the diagonals are done
      const TIn* k_rows = keys.k + j0 * keys.dh;
      const TIn* v_rows = keys.v + j0 * keys.dv;
      if constexpr (kBf16) {
        load_bf16_rows<kKeys, kDim>(tile_view<uint32_t, kKWords>(*k_s4), k_rows, keys.nk - j0, keys.dh);
        load_bf16_quad_rows<kKeys, kDim>(tile_view<uint32_t, kVWords>(*v_s4), v_rows, keys.nk - j0, keys.dv);
      } else {
        load_rounded_column_pairs<kKeys, kDim>(tile_view<float2, kDim / 2 + 4>(*k_s4), k_rows, keys.nk - j0,
                                               keys.dh);
        load_rounded_row_pairs<kKeys, kDim>(tile_view<float2, kDim + 4>(*v_s4), v_rows, keys.nk - j0, keys.dv);
      }
      stage_diagonals(g, h, i0, j0, kQueryRows - 1, *bias_s, *c_s);
      __syncthreads();
    }
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
