// A stable grouping of positions by bucket key, the building block of every deterministic
// "sum by index" backward on CUDA (embedding, gather_table, the URPE table gradients): instead of
// float atomics, the positions are radix-sorted by key (stable, so equal keys keep ascending
// position order) and each bucket's contributions are then added by one owner in that order.
#pragma once
#include <cstdint>

#include "tensor/cuda_context.h"

namespace urpe::kernels {

// The positions 0..n−1 of `keys` grouped by key: bucket k's positions, ascending, are
// positions[offsets[k] .. offsets[k+1]).
// Keys must lie in [0, buckets): the public ops check ids and maps on the host before any kernel
// runs. A key outside that range cannot make a kernel read out of bounds (every position is in
// [0, n) and offsets in [0, n]); its contribution just lands in an unspecified bucket or none.
class BucketIndex {
 public:
  // keys: device int32 (n,). `op` names the caller in the size-limit error.
  BucketIndex(cuda::Context& context, const int32_t* keys, int64_t n, int64_t buckets,
              const char* op);
  const int32_t* positions() const { return positions_.as<int32_t>(); }  // (n,)
  const int32_t* offsets() const { return offsets_.as<int32_t>(); }      // (buckets + 1,)

 private:
  cuda::DeviceBuffer positions_, offsets_;
};

}  // namespace urpe::kernels
