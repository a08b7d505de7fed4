// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator. Random number k of a stream depends only on (seed, k), never on which
// thread computed it or in what order, so CPU and CUDA produce the same bits for the same seed,
// dropout masks can be regenerated in backward instead of stored, and results don't depend on
// the number of threads. Header-only and usable from host and device code.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define URPE_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define URPE_HOST_DEVICE inline
#endif

namespace urpe {

struct PhiloxBlock { uint32_t x[4]; };

// Ten rounds of the Philox bijection on a 128-bit counter, keyed by the 64-bit seed.
URPE_HOST_DEVICE PhiloxBlock philox4x32(uint64_t seed, uint64_t counter) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return PhiloxBlock{{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with 24 random bits: element `index` of stream (seed, offset).
URPE_HOST_DEVICE float philox_uniform(uint64_t seed, uint64_t offset, uint64_t index) {
  const uint64_t k = offset + index;
  const PhiloxBlock block = philox4x32(seed, k >> 2);
  return static_cast<float>(block.x[k & 3] >> 8) * (1.0f / 16777216.0f);
}

// The seed of a child stream drawn at `offset` (a multiple of 4) of the stream `seed`: words 2–3 of
// its Philox block. Rng::next_seed on the host, and dropout's kernels on the device from the step
// anchor (ops/dropout.h), compute the same 64 bits.
URPE_HOST_DEVICE uint64_t philox_child_seed(uint64_t seed, uint64_t offset) {
  const PhiloxBlock block = philox4x32(seed, offset >> 2);
  return (static_cast<uint64_t>(block.x[2]) << 32) | block.x[3];
}

}  // namespace urpe
