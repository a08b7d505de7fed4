// What every fused-attention kernel on CUDA knows about its problem (maths in
// urpe_flash_attention.h): sizes, the scale, both tables with their maps, the masks and dropout,
// and how to evaluate z, C, the masks and κ at one cell (b, h, i, j). One copy for the scalar
// FP32 kernels (urpe_flash_attention_cuda.cu) and the tensor-core ones
// (urpe_flash_tc_forward_cuda.cu, urpe_flash_tc_backward_cuda.cu), so all of them hide the same
// keys, read the same bias and C, and drop the same weights.
#pragma once
#include <cstdint>

#include "ops/cuda_common.cuh"
#include "ops/dropout_seed.cuh"
#include "ops/urpe_attention_cells.cuh"
#include "ops/urpe_flash_attention.h"
#include "tensor/philox.h"

namespace urpe::kernels {

constexpr int kFlashMaxDim = 128;  // largest dh and dv of every fused kernel

enum MapKind : int { kNoMap = 0, kRelative = 1, kShared = 2, kPerBatch = 3 };

// Everything a kernel needs to evaluate z, C, the masks and κ at (b, h, i, j).
struct FlashGeometry {
  int64_t batch, heads, nq, nk, dh, dv;
  float scale;
  const float* bias_table;  // (H, Kb) or null
  int64_t bias_buckets;
  const int32_t* bias_map;
  int bias_kind;
  const float* c_table;     // (H, Kc) or null: C ≡ 1
  int64_t c_buckets;
  const int32_t* c_map;
  int c_kind;
  AttentionMask mask;
  float drop_p, keep_scale;
  KernelDropoutSeed drop_seed;  // where the dropout seed comes from (ops/dropout_seed.cuh)

  // The dropout seed keep() takes: each kernel that drops computes it once per thread, at its
  // start, into a local (writing it into g instead made ptxas copy g to local memory and spill).
  __device__ __forceinline__ uint64_t dropout_seed() const { return drop_p > 0.0f ? drop_seed.get() : 0; }

  __device__ __forceinline__ int64_t map_index(int kind, int64_t b, int64_t i, int64_t j) const {
    if (kind == kRelative) return j - i + nq - 1;
    return (kind == kPerBatch ? b * nq * nk : 0) + i * nk + j;
  }
  __device__ __forceinline__ float bias(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return bias_table ? bias_table[h * bias_buckets + bias_map[map_index(bias_kind, b, i, j)]] : 0.0f;
  }
  __device__ __forceinline__ float c_value(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return c_table ? c_table[h * c_buckets + c_map[map_index(c_kind, b, i, j)]] : 1.0f;
  }
  // j < nk assumed.
  __device__ __forceinline__ bool masked(int64_t b, int64_t i, int64_t j) const {
    return mask.masked(b, i, j, nk);
  }
  // κ: the dropout factor ops/dropout.h applies to A[b,h,i,j] (element ((b·H + h)·Nq + i)·Nk + j).
  __device__ __forceinline__ float keep(uint64_t seed, int64_t bh, int64_t i, int64_t j) const {
    if (drop_p <= 0.0f) return 1.0f;
    const uint64_t element = static_cast<uint64_t>((bh * nq + i) * nk + j);
    return philox_uniform(seed, 0, element) >= drop_p ? keep_scale : 0.0f;
  }
  // Keys [0, key_limit(i)) can be unmasked for query i.
  __device__ __forceinline__ int64_t key_limit(int64_t i) const {
    if (!mask.causal) return nk;
    const int64_t limit = i + mask.causal_offset + 1;
    return limit < 0 ? 0 : (limit > nk ? nk : limit);
  }
  // The logit of an unmasked cell, z_ij = s·scale + B with s = q_i·k_j: one expression for the
  // forward and every backward kernel, so the recomputed P is the forward's to the bit.
  __device__ __forceinline__ float logit(float s, int64_t b, int64_t h, int64_t i, int64_t j) const {
    return s * scale + bias(b, h, i, j);
  }
  // P_ij = e^{z_ij − L_i}, recomputed by the backward kernels from the saved L.
  __device__ __forceinline__ float prob(float s, int64_t b, int64_t h, int64_t i, int64_t j,
                                        float row_lse) const {
    return expf(logit(s, b, h, i, j) - row_lse);
  }
  // dZ_ij = P·(G·C − D_i) with G = κ·(dO_i·v_j), in double like the CPU reference (G·C − D_i
  // cancels); dS_ij = scale·dZ_ij.
  __device__ __forceinline__ static double logit_grad(float p, float gk, float c, double d) {
    return static_cast<double>(p) * (static_cast<double>(gk) * c - d);
  }
  __device__ __forceinline__ float score_grad(float p, float gk, float c, double d) const {
    return static_cast<float>(scale * logit_grad(p, gk, c, d));
  }
};

// The tasks of the forward, dq and dkdv kernels: tiles of `rows` consecutive rows (queries, or
// keys for dkdv) out of n, per (b, h). Task t is rows [first, first + count) of bh = b·H + h.
__host__ __device__ __forceinline__ int64_t row_tiles(const FlashGeometry& g, int64_t n, int rows) {
  return g.batch * g.heads * ((n + rows - 1) / rows);
}

struct RowTile {
  int64_t bh, b, h, first, count;
};

__device__ __forceinline__ RowTile row_tile(const FlashGeometry& g, int64_t task, int64_t n,
                                            int rows) {
  const int64_t tiles = (n + rows - 1) / rows;
  const int64_t bh = task / tiles, first = (task % tiles) * rows;
  return {bh, bh / g.heads, bh % g.heads, first, min(int64_t(rows), n - first)};
}

inline int map_kind(const Tensor& map) {
  if (!map.defined()) return kNoMap;
  return map.dim() == 1 ? kRelative : map.dim() == 2 ? kShared : kPerBatch;
}

inline FlashGeometry geometry_of(const Tensor& q, const Tensor& k, const Tensor& v,
                          const UrpeAttentionParams& p, const AttentionDropout& dropout) {
  FlashGeometry g{};
  g.batch = q.size(0);
  g.heads = q.size(1);
  g.nq = q.size(2);
  g.nk = k.size(2);
  g.dh = q.size(3);
  g.dv = v.size(3);
  URPE_CHECK(g.dh <= kFlashMaxDim && g.dv <= kFlashMaxDim,
             "urpe_flash_attention on CUDA: head dims up to " << kFlashMaxDim << " (the shared-memory "
             "tiles are sized for it), got dh = " << g.dh << ", dv = " << g.dv);
  g.scale = p.scale;
  if (p.bias_table.defined()) {
    g.bias_table = p.bias_table.f32();
    g.bias_buckets = p.bias_table.size(1);
    g.bias_map = p.bias_map.i32();
    g.bias_kind = map_kind(p.bias_map);
  }
  if (p.c_table.defined()) {
    g.c_table = p.c_table.f32();
    g.c_buckets = p.c_table.size(1);
    g.c_map = p.c_map.i32();
    g.c_kind = map_kind(p.c_map);
  }
  g.mask = attention_mask_of(p);
  g.drop_p = dropout.p;
  g.keep_scale = 1.0f / (1.0f - dropout.p);
  if (dropout.p > 0.0f) g.drop_seed = kernel_dropout_seed(*q.device().context(), dropout.seed);
  return g;
}

}  // namespace urpe::kernels
