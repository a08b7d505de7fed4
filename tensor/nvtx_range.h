// NVTX ranges: the names Nsight Systems shows on its timeline — each op call, each model block
// (e.g. "encoder.layer0.attention"), each op's backward ("softmax backward") and each training
// step. Without the CUDA backend they compile to nothing. The device-aware constructor pushes only
// for CUDA work, so CPU runs stay out of the profile.
#pragma once
#include <string>

#include "tensor/device.h"

namespace urpe {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name);                      // always pushed (CUDA builds)
  NvtxRange(const Device& device, const std::string& name);  // pushed for CUDA devices only
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace urpe
