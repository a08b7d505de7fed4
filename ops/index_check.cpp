// Range checks of index tensors (index_check.h): the host scan that names the first bad value,
// run at the call on the CPU and, on CUDA, only when the device has counted a bad value.
#include "ops/index_check.h"

#include <memory>
#include <vector>

#include "tensor/cuda_backend.h"
#include "tensor/error.h"

namespace urpe {

namespace {

bool bad(int32_t v, int64_t size, bool has_ignore, int32_t ignore) {
  return !(has_ignore && v == ignore) && (v < 0 || v >= size);
}

// Calls `fail` with the first bad value; returns whether there was one.
bool scan(const Tensor& indices, int64_t size, bool has_ignore, int32_t ignore, const IndexFailure& fail) {
  const std::vector<int32_t> v = indices.to_vector_i32();
  for (size_t p = 0; p < v.size(); ++p)
    if (bad(v[p], size, has_ignore, ignore)) {
      fail(static_cast<int64_t>(p), v[p]);
      return true;
    }
  return false;
}

}  // namespace

void check_index_range(const Tensor& indices, int64_t size, bool has_ignore, int32_t ignore, IndexFailure fail) {
  if (indices.numel() == 0) return;
#if defined(URPE_WITH_CUDA)
  if (indices.device().is_cuda()) {
    // The tensor stays alive until the check is reported (the closure holds it).
    int64_t* slot = cuda::defer_check(
        indices.device().context(), [indices, size, has_ignore, ignore, fail](int64_t count) {
          if (scan(indices, size, has_ignore, ignore, fail)) return;
          URPE_FAIL("index check: " << count << " value(s) of " << indices.describe() << " were outside [0, "
                                    << size << ") on the device, but the tensor has changed since");
        });
    kernels::count_outside_range_cuda(indices, size, has_ignore, ignore, slot);
    return;
  }
#endif
  scan(indices, size, has_ignore, ignore, fail);
}

}  // namespace urpe
