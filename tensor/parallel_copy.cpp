// Large host copies over the OpenMP threads (why: tensor/parallel_copy.h).
#include "tensor/parallel_copy.h"

#include <algorithm>
#include <cstring>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace urpe {

int parallel_copy_threads(size_t bytes) {
#if defined(_OPENMP)
  if (bytes < kParallelCopyMinBytes || omp_in_parallel()) return 1;
  const size_t by_size = bytes / kParallelCopySliceBytes;
  return static_cast<int>(std::max<size_t>(1, std::min<size_t>(by_size, static_cast<size_t>(omp_get_max_threads()))));
#else
  (void)bytes;
  return 1;
#endif
}

void parallel_copy(void* dst, const void* src, size_t bytes) {
  const int threads = parallel_copy_threads(bytes);
  if (threads <= 1) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return;
  }
#if defined(_OPENMP)
  auto* out = static_cast<unsigned char*>(dst);
  const auto* in = static_cast<const unsigned char*>(src);
  // Slice t is [t·slice, min((t+1)·slice, bytes)), slice rounded up to 4 KiB so that no two
  // threads write into one page; the last slice takes the remainder.
  const size_t page = 4096;
  const size_t slice = ((bytes + threads - 1) / threads + page - 1) / page * page;
#pragma omp parallel num_threads(threads)
  {
    const size_t begin = std::min(bytes, static_cast<size_t>(omp_get_thread_num()) * slice);
    const size_t end = std::min(bytes, begin + slice);
    if (end > begin) std::memcpy(out + begin, in + begin, end - begin);
  }
#endif
}

}  // namespace urpe
