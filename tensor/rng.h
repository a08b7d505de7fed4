// A seeded random stream for host-side draws (weight init, data generation, dropout seeds).
// State is just (seed, offset): draws consume `offset`, so saving the pair in a checkpoint and
// restoring it continues the stream bit-identically.
#pragma once
#include <cstdint>

#include "tensor/philox.h"

namespace urpe {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0, uint64_t offset = 0) : seed_(seed), offset_(offset) {}

  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }

  // Reserves n numbers of the stream and returns the first index: bulk fills use
  // philox_uniform(seed, start, k) for k < n, in any order, on any device.
  uint64_t reserve(uint64_t n) {
    const uint64_t start = offset_;
    offset_ += (n + 3) & ~uint64_t(3);  // keep whole Philox blocks per draw
    return start;
  }
  float uniform() { return philox_uniform(seed_, reserve(1), 0); }
  // Integer uniform in [0, n).
  int64_t below(int64_t n) {
    const PhiloxBlock b = philox4x32(seed_, reserve(4) >> 2);
    const uint64_t r = (static_cast<uint64_t>(b.x[0]) << 32) | b.x[1];
    return static_cast<int64_t>(r % static_cast<uint64_t>(n));
  }
  // A fresh 64-bit seed for a child stream (e.g. one dropout call).
  uint64_t next_seed() { return philox_child_seed(seed_, reserve(4)); }

 private:
  uint64_t seed_;
  uint64_t offset_;
};

}  // namespace urpe
