// CPU reference kernel of the rotary embedding (maths in rotary.h): each (row, position) pair of
// features is rotated by the position's angle, forward or inverse. The CUDA kernel is checked
// against this. x and y are f32 or bf16 (one template: the f32 instantiation is the FP32 kernel
// unchanged); the arithmetic is FP32, a bf16 result rounded once (ops/bf16_values.h).
#include "ops/bf16_values.h"
#include "ops/rotary.h"

namespace urpe::kernels {

namespace {

template <typename T>
void rotate(const T* px, const float* pc, const float* ps, float sign, int64_t n, int64_t half,
            int64_t vectors, T* py) {
  const int64_t d = 2 * half;
#pragma omp parallel for if (vectors * d > 65536)
  for (int64_t v = 0; v < vectors; ++v) {
    const int64_t pos = v % n;
    const T* src = px + v * d;
    T* dst = py + v * d;
    for (int64_t i = 0; i < half; ++i) {
      const float c = pc[pos * half + i], s = sign * ps[pos * half + i];
      const float a = load(src, i), b = load(src, i + half);
      store(dst, i, a * c - b * s);
      store(dst, i + half, b * c + a * s);
    }
  }
}

}  // namespace

// x, y: (rows, N, D). For inverse the sine changes sign (rotation by −angle).
void rotary_cpu(const Tensor& x, const Tensor& cos, const Tensor& sin, bool inverse, Tensor& y) {
  const int64_t n = x.size(-2), half = x.size(-1) / 2, vectors = x.numel() / x.size(-1);
  with_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    rotate<T>(x.data<T>(), cos.f32(), sin.f32(), inverse ? -1.0f : 1.0f, n, half, vectors, y.data<T>());
  });
}

}  // namespace urpe::kernels
