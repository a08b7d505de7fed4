// Collectives on device memory, for ranks that train on GPUs (docs/distributed.md#gpus): NCCL all-reduces, reduce-scatters and all-gathers the gradient buffer where
// it lives, instead of staging it through the host for MPI. Built when the CUDA toolkit ships NCCL
// (URPE_NCCL) and MPI is on; the ranks' NCCL communicator is set up from a unique id that rank 0
// broadcasts over MPI. In the CUDA simulator (tests/cuda_sim) a stand-in nccl.h runs each
// collective as the MPI one on the simulated device memory, so this path runs in CI.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "tensor/device.h"
#include "base/dist/communicator.h"

namespace urpe::dist {

class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
  virtual std::string describe() const = 0;  // e.g. "NCCL 2.28.9"
  // All on the device's stream, device pointers, `factor` the scalar this rank's input is
  // multiplied by before the sum (NCCL's PreMulSum): data ← Σ_r factor_r · data_r, in place.
  virtual void all_reduce_sum(float* data, int64_t n, float factor) = 0;
  // `in`: size() blocks of `count`; rank r receives block r of Σ_r factor_r · in_r in `out`.
  virtual void reduce_scatter_sum(const float* in, float* out, int64_t count, float factor) = 0;
  // Every rank's `count` floats of `mine`, in rank order, into `all` (size() × count).
  virtual void all_gather(const float* mine, float* all, int64_t count) = 0;
};

// Whether this build has the NCCL path.
bool built_with_nccl();
// NCCL over `comm`'s ranks on `device` (a collective: every rank calls it); nullptr when this
// build has no NCCL or the device is the CPU.
std::unique_ptr<DeviceCollectives> nccl_collectives(Communicator& comm, const Device& device);

}  // namespace urpe::dist
