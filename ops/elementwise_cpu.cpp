// CPU reference kernels for elementwise arithmetic (see elementwise.h for the maths).
#include <vector>

#include "ops/elementwise.h"

namespace urpe::kernels {

// ---- forward ----

template <typename F>
static void binary_loop(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const float* pa = a.f32();
  const float* pb = b.f32();
  float* po = out.f32();
  const int64_t n = out.numel(), na = a.numel(), nb = b.numel();
#pragma omp parallel for if (n > 32768)
  for (int64_t k = 0; k < n; ++k) po[k] = f(pa[k % na], pb[k % nb]);
}

void binary_forward_cpu(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  switch (op) {
    case BinaryOp::add: binary_loop(a, b, out, [](float x, float y) { return x + y; }); break;
    case BinaryOp::sub: binary_loop(a, b, out, [](float x, float y) { return x - y; }); break;
    case BinaryOp::mul: binary_loop(a, b, out, [](float x, float y) { return x * y; }); break;
    case BinaryOp::div: binary_loop(a, b, out, [](float x, float y) { return x / y; }); break;
  }
}

// ---- backward ----

// ∂operand, where the operand repeats every `size` output elements: the per-element local
// gradient is summed over repeats in index order (deterministic).
template <typename F>
static void reduce_repeats(int64_t n, int64_t size, float* grad, F local) {
  if (size == n) {
#pragma omp parallel for if (n > 32768)
    for (int64_t k = 0; k < n; ++k) grad[k] = local(k);
    return;
  }
  std::vector<double> total(size, 0.0);
  for (int64_t k = 0; k < n; ++k) total[k % size] += local(k);
  for (int64_t k = 0; k < size; ++k) grad[k] = static_cast<float>(total[k]);
}

void binary_backward_cpu(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& grad_out,
                         Tensor* grad_a, Tensor* grad_b) {
  const float* pa = a.f32();
  const float* pb = b.f32();
  const float* g = grad_out.f32();
  const int64_t n = grad_out.numel(), na = a.numel(), nb = b.numel();
  if (grad_a) {
    float* ga = grad_a->f32();
    switch (op) {
      case BinaryOp::add:
      case BinaryOp::sub: reduce_repeats(n, na, ga, [&](int64_t k) { return g[k]; }); break;
      case BinaryOp::mul: reduce_repeats(n, na, ga, [&](int64_t k) { return g[k] * pb[k % nb]; }); break;
      case BinaryOp::div: reduce_repeats(n, na, ga, [&](int64_t k) { return g[k] / pb[k % nb]; }); break;
    }
  }
  if (grad_b) {
    float* gb = grad_b->f32();
    switch (op) {
      case BinaryOp::add: reduce_repeats(n, nb, gb, [&](int64_t k) { return g[k]; }); break;
      case BinaryOp::sub: reduce_repeats(n, nb, gb, [&](int64_t k) { return -g[k]; }); break;
      case BinaryOp::mul: reduce_repeats(n, nb, gb, [&](int64_t k) { return g[k] * pa[k % na]; }); break;
      case BinaryOp::div:
        reduce_repeats(n, nb, gb, [&](int64_t k) {
          const float y = pb[k % nb];
          return -g[k] * pa[k % na] / (y * y);
        });
        break;
    }
  }
}

void affine_cpu(const Tensor& x, float alpha, float beta, Tensor& out) {
  const float* px = x.f32();
  float* po = out.f32();
  const int64_t n = x.numel();
#pragma omp parallel for if (n > 32768)
  for (int64_t k = 0; k < n; ++k) po[k] = alpha * px[k] + beta;
}

}  // namespace urpe::kernels
