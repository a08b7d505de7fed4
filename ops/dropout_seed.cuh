// A dropout seed as a CUDA kernel takes it (ops/dropout.h, "Seeds and CUDA graphs"): read from the
// context's step anchor plus a constant delta, so a captured graph replays each step with that
// step's seeds, or passed by value where no anchor is set for the seed's stream. Either way the
// kernel gets the 64 bits Rng::next_seed drew on the host, and draws the same mask.
#pragma once
#include <cstdint>

#include "ops/dropout.h"
#include "tensor/cuda_context.h"
#include "tensor/philox.h"

namespace urpe::kernels {

struct KernelDropoutSeed {
  const uint64_t* anchor = nullptr;  // device {stream seed, offset at the step's start}, or null
  uint64_t delta = 0;                // with an anchor: the draw's offset − the step's start
  uint64_t value = 0;                // without: the seed itself
  // philox_child_seed(seed, start + delta): one Philox block, once per thread.
  __device__ __forceinline__ uint64_t get() const {
    return anchor ? philox_child_seed(anchor[0], anchor[1] + delta) : value;
  }
};

// The anchor is used when it belongs to the seed's stream (same stream seed). Any offset of that
// stream then resolves right, since the kernel recomputes start + (offset − start) = offset.
inline KernelDropoutSeed kernel_dropout_seed(const cuda::Context& ctx, const DropoutSeed& seed) {
  const cuda::Context::DropoutAnchor& anchor = ctx.dropout_anchor();
  KernelDropoutSeed k;
  k.value = seed.value;
  if (seed.from_stream && anchor.device != nullptr && anchor.seed == seed.stream_seed) {
    k.anchor = anchor.device;
    k.delta = seed.offset - anchor.start;  // mod 2^64: exact even below the start
  }
  return k;
}

}  // namespace urpe::kernels
