// The geometry of one URPE attention core call as its CUDA kernels read it (the tables, maps,
// masks and sizes behind Z = S·scale + B_h[bias_map], A = P ⊙ C_h[c_map]), shared by the forward
// and rows kernels (urpe_attention_cuda.cu) and the table gradients
// (urpe_attention_table_grad_cuda.cu).
#pragma once
#include <cstdint>

#include "ops/cuda_common.cuh"
#include "ops/urpe_attention.h"
#include "ops/urpe_attention_cells.cuh"

namespace urpe::kernels {

// Everything a kernel needs to evaluate Z, C and the masks at (b, h, i, j).
struct AttentionGeometry {
  int64_t batch, heads, nq, nk;
  float scale;
  const float* bias_table;   // (H, Kb) or null
  int64_t bias_buckets;
  const int32_t* bias_map;   // (Nq, Nk) or (B, Nq, Nk)
  int64_t bias_map_stride;   // 0 when shared by the batch, Nq·Nk otherwise
  const float* c_table;      // (H, Kc) or null: C ≡ 1
  int64_t c_buckets;
  const int32_t* c_map;
  int64_t c_map_stride;
  AttentionMask mask;
  bool normalize;  // false: AttentionNorm::exp

  __device__ __forceinline__ bool masked(int64_t b, int64_t i, int64_t j) const {
    return mask.masked(b, i, j, nk);
  }
  __device__ __forceinline__ float bias(int64_t b, int64_t h, int64_t ij) const {
    return bias_table ? bias_table[h * bias_buckets + bias_map[b * bias_map_stride + ij]] : 0.0f;
  }
  __device__ __forceinline__ float c_value(int64_t b, int64_t h, int64_t ij) const {
    return c_table ? c_table[h * c_buckets + c_map[b * c_map_stride + ij]] : 1.0f;
  }
};

inline int64_t map_stride(const Tensor& map, int64_t nq, int64_t nk) {
  return map.dim() == 3 ? nq * nk : 0;
}

inline AttentionGeometry geometry_of(const Tensor& scores, const UrpeAttentionParams& params) {
  AttentionGeometry geo{};
  geo.batch = scores.size(0);
  geo.heads = scores.size(1);
  geo.nq = scores.size(2);
  geo.nk = scores.size(3);
  geo.scale = params.scale;
  if (params.bias_table.defined()) {
    geo.bias_table = params.bias_table.f32();
    geo.bias_buckets = params.bias_table.size(1);
    geo.bias_map = params.bias_map.i32();
    geo.bias_map_stride = map_stride(params.bias_map, geo.nq, geo.nk);
  }
  if (params.c_table.defined()) {
    geo.c_table = params.c_table.f32();
    geo.c_buckets = params.c_table.size(1);
    geo.c_map = params.c_map.i32();
    geo.c_map_stride = map_stride(params.c_map, geo.nq, geo.nk);
  }
  geo.mask = attention_mask_of(params);
  geo.normalize = params.norm == AttentionNorm::softmax;
  return geo;
}

// ∂B (grad_bias) and ∂C (grad_c) of the core, either null when not wanted; row_dot: t_i per row
// (B·H·Nq, from the rows kernel) when grad_bias is wanted. In urpe_attention_table_grad_cuda.cu.
void urpe_attention_table_gradients_cuda(cuda::Context& ctx, const AttentionGeometry& geo,
                                         const UrpeAttentionParams& params, const Tensor& grad_out,
                                         const Tensor& probs, const double* row_dot,
                                         Tensor* grad_bias, Tensor* grad_c);

}  // namespace urpe::kernels
