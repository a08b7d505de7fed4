// CPU reductions: each output accumulates its n inputs in double, in index order.
#include "ops/reduce.h"

namespace urpe::kernels {

void sum_axis_cpu(const Tensor& x, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out) {
  const float* px = x.f32();
  float* po = out.f32();
#pragma omp parallel for if (outer * inner > 4096)
  for (int64_t oi = 0; oi < outer * inner; ++oi) {
    const int64_t o = oi / inner, i = oi % inner;
    double total = 0;
    for (int64_t j = 0; j < n; ++j) total += px[(o * n + j) * inner + i];
    po[oi] = static_cast<float>(alpha * total);
  }
}

void broadcast_axis_cpu(const Tensor& g, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out) {
  const float* pg = g.f32();
  float* po = out.f32();
  const int64_t total = outer * n * inner;
#pragma omp parallel for if (total > 32768)
  for (int64_t k = 0; k < total; ++k) {
    const int64_t o = k / (n * inner), i = k % inner;
    po[k] = alpha * pg[o * inner + i];
  }
}

}  // namespace urpe::kernels
