// CPU reference kernel of the rotary embedding (maths in rotary.h): each (row, position) pair of
// features is rotated by the position's angle, forward or inverse. The CUDA kernel is checked
// against this.
#include "ops/rotary.h"

namespace urpe::kernels {

// x, y: (rows, N, D). For inverse the sine changes sign (rotation by −angle).
void rotary_cpu(const Tensor& x, const Tensor& cos, const Tensor& sin, bool inverse, Tensor& y) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2, vectors = x.numel() / d;
  const float* px = x.f32();
  const float* pc = cos.f32();
  const float* ps = sin.f32();
  float* py = y.f32();
  const float sign = inverse ? -1.0f : 1.0f;
#pragma omp parallel for if (x.numel() > 65536)
  for (int64_t v = 0; v < vectors; ++v) {
    const int64_t pos = v % n;
    const float* src = px + v * d;
    float* dst = py + v * d;
    for (int64_t i = 0; i < half; ++i) {
      const float c = pc[pos * half + i], s = sign * ps[pos * half + i];
      const float a = src[i], b = src[i + half];
      dst[i] = a * c - b * s;
      dst[i + half] = b * c + a * s;
    }
  }
}

}  // namespace urpe::kernels
