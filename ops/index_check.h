// Range checks of the index tensors the public ops take (embedding ids, gather_table maps,
// cross_entropy targets): a bad value is one readable error naming the op, the position and the
// value, never an out-of-bounds read on a device.
//
// On the CPU the values are checked at the call. On CUDA they are not read back (a training step
// would wait for the GPU at every embedding): a kernel counts the bad values into a slot of the
// context's deferred checks (tensor/cuda_backend.h, defer_check), and at the context's next read
// (the step's loss read) a nonzero count makes the host find the first bad value and raise the
// same error as the CPU. Until then the ops' kernels stay in bounds (an out-of-range id reads
// zeros, an out-of-range target is left uncounted). Cost on the device: 4 B read per index.
#pragma once
#include <cstdint>
#include <functional>

#include "tensor/tensor.h"

namespace urpe {

// Throws the op's error for the first bad value: `value` at flat position `position`.
using IndexFailure = std::function<void(int64_t position, int32_t value)>;

// Every value of the i32 tensor `indices` must lie in [0, size) or equal `ignore` (when
// `has_ignore`); `fail` is called with the first one that does not (on CUDA: at the next read).
void check_index_range(const Tensor& indices, int64_t size, bool has_ignore, int32_t ignore, IndexFailure fail);

namespace kernels {
// slot[0] = the number of values of `indices` (CUDA, i32) outside [0, size) and not `ignore`.
void count_outside_range_cuda(const Tensor& indices, int64_t size, bool has_ignore, int32_t ignore, int64_t* slot);
}  // namespace kernels

}  // namespace urpe
