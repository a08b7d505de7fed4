// Device pieces shared by the two URPE attention ops on CUDA, the materialised core
// (ops/urpe_attention_cuda.cu) and the fused one (ops/urpe_flash_attention_cuda.cu): the causal
// and key-padding mask, and the walk over the cells of one bucket of a dense map in the table
// gradients. One copy, so both ops hide the same keys and sum the same cells in the same order.
#pragma once
#include <cstdint>

#include "ops/cuda_common.cuh"
#include "ops/urpe_attention.h"

namespace urpe::kernels {

// The masks of UrpeAttentionParams as a kernel reads them: key j is hidden from query i of batch
// item b when it is causally in the future (j > i + offset) or a padding key.
struct AttentionMask {
  const int32_t* key_padding;  // (B, Nk) or null
  bool causal;
  int64_t causal_offset;

  // j < nk assumed.
  __device__ __forceinline__ bool masked(int64_t b, int64_t i, int64_t j, int64_t nk) const {
    if (causal && j > i + causal_offset) return true;
    return key_padding != nullptr && key_padding[b * nk + j] != 0;
  }
};

inline AttentionMask attention_mask_of(const UrpeAttentionParams& params) {
  return {params.key_padding.defined() ? params.key_padding.i32() : nullptr, params.causal,
          params.causal_offset};
}

// Cell `item` of one bucket of a dense map, whose positions (BucketIndex) are
// positions[begin, begin + length): for a map shared by the batch the items run over
// (batch item, position) and a position is i·Nk + j; for a per-batch map a position is
// b·Nq·Nk + i·Nk + j (cells = Nq·Nk). ij = i·Nk + j.
struct BucketCell {
  int64_t b, ij;
};

__device__ __forceinline__ BucketCell bucket_cell(const int32_t* __restrict__ positions,
                                                  int64_t begin, int64_t length, int64_t item,
                                                  bool shared_map, int64_t cells) {
  if (shared_map) return {item / length, positions[begin + item % length]};
  const int64_t position = positions[begin + item];
  return {position / cells, position % cells};
}

}  // namespace urpe::kernels
