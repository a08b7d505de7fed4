// One place that decides which backend runs an op: the CPU kernel, or (in a CUDA build, for CUDA
// tensors) the CUDA kernel inside an NVTX range named after the op, which is what Nsight shows.
#pragma once
#include "tensor/cuda_backend.h"
#include "tensor/nvtx_range.h"
#include "tensor/tensor.h"

#if defined(URPE_WITH_CUDA)
#define URPE_DISPATCH(op_name, device, cpu_call, cuda_call) \
  do {                                                      \
    if ((device).is_cuda()) {                               \
      ::urpe::NvtxRange urpe_op_range_(op_name);            \
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
