// The walk over a query block's key tiles, shared by the tensor-core kernels that stream K and V:
// the forward (both of its kernels, urpe_flash_tc_forward.cuh's ForwardShared) and the backward's
// dQ kernel (urpe_flash_tc_backward_cuda.cu). Why one place: each of them loads, tile after tile,
// kKeys rows of K and V into its own fragment tiles plus the tile's B and C diagonals, either
// straight from global memory or, pipelined, from a cp.async staging copy of the tile made one
// tile ahead; the barriers, the staging and the prefetch are the same in all three and had been
// written out three times. KeyTileWalk holds the diagonals, the padding scratch and the staging
// (its shared arrays) and that per-tile sequence; a kernel passes only how K and V rows become
// its own tiles (the loaders of urpe_flash_tc_tiles.cuh, from GlobalRows or StagedRows).
#pragma once
#include <cstdint>

#include "ops/urpe_flash_tc_tiles.cuh"

namespace urpe::kernels::flash_tc {

// Where a task's keys come from: its (b, h) slice of K and V, nk rows of dh and dv elements.
template <typename TIn>
struct KeyRows {
  const TIn* __restrict__ k;
  const TIn* __restrict__ v;
  int nk, dh, dv;
};

// Staging: the tile's KeyTileStaging (keys, diagonals, the dynamic layout); kQueryRows the query
// rows of a block (the diagonals span kQueryRows + kKeys − 1). declare() declares the arrays once
// per kernel: the diagonals and the scratch in static shared memory, the staging (pipelined only)
// in dynamic shared memory at Staging's offsets.
template <typename Staging, int kDim, typename TIn, int kQueryRows, bool kPipelined>
struct KeyTileWalk {
  static constexpr int kKeys = Staging::kKeys, kDiag = Staging::kDiag;
  static_assert(kDiag == kQueryRows + kKeys - 1, "the staging is laid out for this block's rows");
  using Stage = float4[kKeys][Staging::kStageVectors];
  using Diagonals = float[kDiag];
  using MapDiagonals = int32_t[kDiag];

  Diagonals* bias_s;  // B and C of the tile's diagonals (stage_diagonals)
  Diagonals* c_s;
  int (*pad_scratch)[kWarps];
  Stage* k_stage = nullptr;  // the pipelined variant's staging, declared only by it
  Stage* v_stage = nullptr;
  MapDiagonals* bias_map_s = nullptr;
  MapDiagonals* c_map_s = nullptr;

  static __device__ __forceinline__ KeyTileWalk declare() {
    URPE_SHARED(float, bias_s, [kDiag]);
    URPE_SHARED(float, c_s, [kDiag]);
    URPE_SHARED(int, pad_scratch, [kWarps]);
    KeyTileWalk walk{&bias_s, &c_s, &pad_scratch};
    if constexpr (kPipelined) {
      URPE_DYNAMIC_SHARED(float4, k_stage_d, [kKeys][Staging::kStageVectors], Staging::kKStage);
      URPE_DYNAMIC_SHARED(float4, v_stage_d, [kKeys][Staging::kStageVectors], Staging::kVStage);
      URPE_DYNAMIC_SHARED(int32_t, bias_map_d, [kDiag], Staging::kBiasMap);
      URPE_DYNAMIC_SHARED(int32_t, c_map_d, [kDiag], Staging::kCMap);
      walk.k_stage = &k_stage_d, walk.v_stage = &v_stage_d, walk.bias_map_s = &bias_map_d;
      walk.c_map_s = &c_map_d;
    }
    return walk;
  }

  // Pipelined: key tile j0's copies into the staging, one cp.async group. The staging is free:
  // the last read of it (the previous tile's transform) is behind a barrier.
  __device__ __forceinline__ void prefetch(const FlashGeometry& g, const KeyRows<TIn>& keys, int i0, int j0) const {
    prefetch_rows<kKeys, kDim>(*k_stage, keys.k + j0 * keys.dh, keys.nk - j0, keys.dh);
    prefetch_rows<kKeys, kDim>(*v_stage, keys.v + j0 * keys.dv, keys.nk - j0, keys.dv);
    prefetch_diagonal_maps(g, i0, j0, kQueryRows - 1, *bias_map_s, *c_map_s);
    async::commit();
  }

  // A task's start: pipelined, its first key tile's copies go out (before the kernel loads its
  // query-side fragments, so the two overlap).
  __device__ __forceinline__ void begin_task(const FlashGeometry& g, const KeyRows<TIn>& keys, int i0,
                                             int key_end) const {
    if constexpr (kPipelined)
      if (key_end > 0) prefetch(g, keys, i0, 0);
  }

  // Key tile j0 of head h into the kernel's tiles and the diagonals; every thread of the block
  // calls it (barriers inside: after it the tiles are ready, and no warp still reads the previous
  // ones). to_tiles(k_src, v_src, valid_rows, k_cols, v_cols, layout) runs the kernel's loaders:
  // pipelined from the swizzled staging (StagedRows: kKeys rows of kDim columns, the zeros
  // included; the same rounding and pairing as from global memory), then the next tile's copies
  // go out, in flight while this tile computes; otherwise from the tensors (GlobalRows).
  template <typename ToTiles>
  __device__ __forceinline__ void load_key_tile(const FlashGeometry& g, const KeyRows<TIn>& keys, int h, int i0,
                                                int j0, int key_end, ToTiles&& to_tiles) const {
    if constexpr (kPipelined) {
      async::wait<0>();  // this thread's copies of tile j0 have landed
      __syncthreads();   // everyone's have, and the previous tile's reads of the tiles and diagonals are done
      to_tiles(reinterpret_cast<const TIn*>(&(*k_stage)[0][0]), reinterpret_cast<const TIn*>(&(*v_stage)[0][0]),
               kKeys, kDim, kDim, StagedRows{});
      stage_diagonals<kDiag, true>(g, h, i0, j0, kQueryRows - 1, *bias_s, *c_s, *bias_map_s, *c_map_s);
      __syncthreads();  // the tiles and diagonals ready; the staging is free again
      if (j0 + kKeys < key_end) prefetch(g, keys, i0, j0 + kKeys);
    } else {
      __syncthreads();  // the previous tile's reads of the tiles and diagonals are done
      to_tiles(keys.k + j0 * keys.dh, keys.v + j0 * keys.dv, keys.nk - j0, keys.dh, keys.dv, GlobalRows{});
      stage_diagonals(g, h, i0, j0, kQueryRows - 1, *bias_s, *c_s);
      __syncthreads();
    }
  }
};

}  // namespace urpe::kernels::flash_tc
