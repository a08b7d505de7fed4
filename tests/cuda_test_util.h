// What the CUDA suites (parity, tensor-core attention) share: the device every case runs on, and
// NaN-poisoned outputs, so an element a kernel never writes fails the comparison with the CPU.
#pragma once
#include <limits>

#include "tensor/cuda_backend.h"
#include "tensor/tensor.h"

#if defined(URPE_WITH_CUDA)

namespace urpe::test {

// GPU 0 (the simulator's device in a simulator build), one context for the whole suite.
inline const Device& gpu() {
  static const Device device = Device::cuda(cuda::create_context(0));
  return device;
}

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

inline Tensor poisoned(const Shape& shape) { return Tensor::full(shape, kNaN, gpu()); }

}  // namespace urpe::test

#endif
