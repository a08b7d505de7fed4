// CPU copies for permute / concat / slice. Works on raw 32-bit words, so f32 and i32 share it.
#include <cstring>

#include "ops/shape.h"

namespace urpe::kernels {

void permute_cpu(const Tensor& x, const std::vector<int>& order, Tensor& out) {
  const int d = x.dim();
  // Strides of x, and x's stride for each output axis.
  int64_t in_stride[kMaxDims] = {0}, out_dims[kMaxDims] = {0}, step[kMaxDims] = {0};
  int64_t s = 1;
  for (int k = d - 1; k >= 0; --k) { in_stride[k] = s; s *= x.shape()[k]; }
  for (int k = 0; k < d; ++k) { out_dims[k] = out.shape()[k]; step[k] = in_stride[order[k]]; }
  const uint32_t* src = static_cast<const uint32_t*>(x.impl().storage->data);
  uint32_t* dst = static_cast<uint32_t*>(out.impl().storage->data);
  const int64_t n = out.numel();
#pragma omp parallel for if (n > 32768)
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat, offset = 0;
    for (int k = d - 1; k >= 0; --k) {
      offset += (rest % out_dims[k]) * step[k];
      rest /= out_dims[k];
    }
    dst[flat] = src[offset];
  }
}

void copy_window_cpu(const Tensor& src, int64_t src_n, int64_t src_start, Tensor& dst,
                     int64_t dst_n, int64_t dst_start, int64_t outer, int64_t count,
                     int64_t inner, bool accumulate) {
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t s = (o * src_n + src_start) * inner, t = (o * dst_n + dst_start) * inner;
    if (accumulate) {
      const float* ps = src.f32() + s;
      float* pd = dst.f32() + t;
      for (int64_t k = 0; k < count * inner; ++k) pd[k] += ps[k];
    } else {
      std::memcpy(static_cast<uint32_t*>(dst.impl().storage->data) + t,
                  static_cast<const uint32_t*>(src.impl().storage->data) + s,
                  count * inner * sizeof(uint32_t));
    }
  }
}

}  // namespace urpe::kernels
