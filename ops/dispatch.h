// One place that decides which backend runs an op: the CPU kernel, or (in a CUDA build, for CUDA
// tensors) the CUDA kernel inside an NVTX range named after the op, which is what Nsight shows.
#pragma once
#include "tensor/cuda_backend.h"
#include "tensor/tensor.h"

namespace urpe::kernels {
// Pushes an NVTX range for the lifetime of the object (a no-op without CUDA).
class OpRange {
 public:
  explicit OpRange(const char* name);
  ~OpRange();
  OpRange(const OpRange&) = delete;
  OpRange& operator=(const OpRange&) = delete;
};
}  // namespace urpe::kernels

#if defined(URPE_WITH_CUDA)
#define URPE_DISPATCH(op_name, device, cpu_call, cuda_call) \
  do {                                                      \
    if ((device).is_cuda()) {                               \
      ::urpe::kernels::OpRange urpe_op_range_(op_name);     \
      cuda_call;                                            \
    } else {                                                \
      cpu_call;                                             \
    }                                                       \
  } while (0)
#else
#define URPE_DISPATCH(op_name, device, cpu_call, cuda_call)                              \
  do {                                                                                   \
    if ((device).is_cuda()) URPE_FAIL(op_name << ": this urpe build has no CUDA backend"); \
    cpu_call;                                                                            \
  } while (0)
#endif
