// CPU cast between f32 and bf16 (maths in cast.h): tensor/bf16.h's conversions, element by
// element. The reference for ops/cast_cuda.cu, which must agree bit for bit.
#include "ops/cast.h"

namespace urpe::kernels {

void cast_cpu(const Tensor& x, Tensor& out) {
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32) {  // f32 → bf16
    const float* src = x.f32();
    bf16* dst = out.data<bf16>();
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t k = 0; k < n; ++k) dst[k] = to_bf16(src[k]);
  } else {                        // bf16 → f32
    const bf16* src = x.data<bf16>();
    float* dst = out.f32();
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t k = 0; k < n; ++k) dst[k] = to_float(src[k]);
  }
}

}  // namespace urpe::kernels
