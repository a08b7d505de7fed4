// CPU reference kernels for relu and the exact (erf) gelu; see activation.h for the maths.
// The gelu terms are evaluated in double: cheap next to the memory traffic, and it keeps this
// the accurate reference the CUDA kernels are checked against.
#include <cmath>

#include "ops/activation.h"

namespace urpe::kernels {

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;     // 1/√2
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/√(2π)

// Φ(x), the standard normal CDF.
inline double normal_cdf(double x) { return 0.5 * (1.0 + std::erf(x * kInvSqrt2)); }

// Applies f to every element: out[k] = f(k).
template <typename F>
void pointwise(int64_t n, float* out, F f) {
#pragma omp parallel for if (n > 32768)
  for (int64_t k = 0; k < n; ++k) out[k] = f(k);
}

}  // namespace

// ---- forward ----
//   relu: y = max(x, 0)          gelu: y = x·Φ(x)

void activation_forward_cpu(Activation kind, const Tensor& x, Tensor& y) {
  const float* px = x.f32();
  const int64_t n = x.numel();
  switch (kind) {
    case Activation::relu:
      // Written so a NaN input stays NaN: a diverging run should show it, not hide it as 0.
      pointwise(n, y.f32(), [px](int64_t k) { return px[k] < 0.0f ? 0.0f : px[k]; });
      break;
    case Activation::gelu:
      pointwise(n, y.f32(), [px](int64_t k) {
        const double v = px[k];
        return static_cast<float>(v * normal_cdf(v));
      });
      break;
  }
}

// ---- backward ----
//   relu: ∂x = g·[x > 0]         gelu: ∂x = g·(Φ(x) + x·φ(x)),  φ(x) = e^{−x²/2}/√(2π)

void activation_backward_cpu(Activation kind, const Tensor& x, const Tensor& grad_y, Tensor& grad_x) {
  const float* px = x.f32();
  const float* g = grad_y.f32();
  const int64_t n = x.numel();
  switch (kind) {
    case Activation::relu:
      pointwise(n, grad_x.f32(), [px, g](int64_t k) { return px[k] > 0.0f ? g[k] : 0.0f; });
      break;
    case Activation::gelu:
      pointwise(n, grad_x.f32(), [px, g](int64_t k) {
        const double v = px[k];
        const double slope = normal_cdf(v) + v * kInvSqrt2Pi * std::exp(-0.5 * v * v);
        return static_cast<float>(g[k] * slope);
      });
      break;
  }
}

}  // namespace urpe::kernels
