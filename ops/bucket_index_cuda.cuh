// A stable grouping of positions by bucket key, the building block of every deterministic
// "sum by index" backward on CUDA (embedding, gather_table, the URPE table gradients): instead of
// float atomics, the positions are radix-sorted by key (stable, so equal keys keep ascending
// position order) and each bucket's contributions are then added by one owner in that order.
#pragma once
#include <cstdint>
#include <climits>

#include "tensor/cuda_context.h"

namespace urpe::kernels {

// The positions 0..n−1 of `keys` grouped by key: bucket k's positions, ascending, are
// positions[offsets[k] .. offsets[k+1]).
class BucketIndex {
 public:
  // Validates every key against [0, buckets) (a bad one throws "<op>: <what> <value> at position
  // <p> is outside [0, buckets)"), then sorts. keys: device int32 (n,).
  BucketIndex(cuda::Context& context, const int32_t* keys, int64_t n, int64_t buckets,
              const char* op, const char* what);
  const int32_t* positions() const { return positions_.as<int32_t>(); }  // (n,)
  const int32_t* offsets() const { return offsets_.as<int32_t>(); }      // (buckets + 1,)

 private:
  cuda::DeviceBuffer positions_, offsets_;
};

// Launches a kernel that flags (see cuda::check_index_error) any key outside [0, limit); the
// caller checks the flag. allow_value: one extra accepted value (cross-entropy's ignore_index),
// or kNoAllowedValue (no int32 equals it).
constexpr int64_t kNoAllowedValue = INT64_MIN;
void flag_keys_out_of_range(cuda::Context& context, const int32_t* keys, int64_t n, int64_t limit,
                            int64_t allow_value);

}  // namespace urpe::kernels
