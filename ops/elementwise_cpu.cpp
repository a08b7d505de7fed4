// CPU reference kernels for elementwise arithmetic (see elementwise.h for the maths).
#include <algorithm>
#include <vector>

#include "ops/bf16_values.h"
#include "ops/elementwise.h"

namespace urpe::kernels {

// ---- forward ----

// Broadcasting (elementwise.h): one operand has the output's n elements, the other either n too
// or a trailing-dims suffix of `inner` elements that repeats n / inner times. Element k of the
// output is f(a[k % na], b[k % nb]); writing k = o·inner + i turns both indices into either k or
// i, so the loops below need no per-element modulo.
struct Repeats {
  int64_t outer, inner;    // n = outer·inner; the smaller operand has `inner` elements
  int64_t a_step, b_step;  // how far an operand advances per outer step: inner, or 0 if it repeats
};

static Repeats repeats_of(int64_t n, int64_t na, int64_t nb) {
  const int64_t inner = std::min(na, nb);
  if (inner == 0) return {0, 0, 0, 0};
  return {n / inner, inner, na == n ? inner : 0, nb == n ? inner : 0};
}

constexpr int64_t kParallelElements = 32768;  // below this, OpenMP start-up costs more than it saves

template <typename F>
static void binary_loop(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const float* pa = a.f32();
  const float* pb = b.f32();
  float* po = out.f32();
  const int64_t n = out.numel();
  const Repeats r = repeats_of(n, a.numel(), b.numel());
  // Reference: for (k = 0; k < n; ++k) po[k] = f(pa[k % na], pb[k % nb]);
  if (r.outer == 1) {  // same shapes: one long row, split across threads
#pragma omp parallel for if (n > kParallelElements)
    for (int64_t k = 0; k < n; ++k) po[k] = f(pa[k], pb[k]);
    return;
  }
#pragma omp parallel for if (n > kParallelElements)
  for (int64_t o = 0; o < r.outer; ++o) {
    const float* ra = pa + o * r.a_step;
    const float* rb = pb + o * r.b_step;
    float* ro = po + o * r.inner;
    for (int64_t i = 0; i < r.inner; ++i) ro[i] = f(ra[i], rb[i]);
  }
}

// Any operand or output in bf16 (ops/bf16_values.h): element k is f(a[k mod na], b[k mod nb]) in
// FP32, rounded once when out is bf16. The plain reference loop; the f32 path above is unchanged.
template <typename F>
static void binary_loop_any(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const AnyValues va = any_values(a), vb = any_values(b);
  const int64_t n = out.numel(), na = a.numel(), nb = b.numel();
  with_value_type(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* po = out.data<T>();
#pragma omp parallel for if (n > kParallelElements)
    for (int64_t k = 0; k < n; ++k) store(po, k, f(va[k % na], vb[k % nb]));
  });
}

void binary_forward_cpu(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  if (a.dtype() != DType::f32 || b.dtype() != DType::f32) {
    switch (op) {
      case BinaryOp::add: binary_loop_any(a, b, out, [](float x, float y) { return x + y; }); break;
      case BinaryOp::sub: binary_loop_any(a, b, out, [](float x, float y) { return x - y; }); break;
      case BinaryOp::mul: binary_loop_any(a, b, out, [](float x, float y) { return x * y; }); break;
      case BinaryOp::div: binary_loop_any(a, b, out, [](float x, float y) { return x / y; }); break;
    }
    return;
  }
  switch (op) {
    case BinaryOp::add: binary_loop(a, b, out, [](float x, float y) { return x + y; }); break;
    case BinaryOp::sub: binary_loop(a, b, out, [](float x, float y) { return x - y; }); break;
    case BinaryOp::mul: binary_loop(a, b, out, [](float x, float y) { return x * y; }); break;
    case BinaryOp::div: binary_loop(a, b, out, [](float x, float y) { return x / y; }); break;
  }
}

// ---- backward ----

// ∂operand, where the operand repeats every `size` output elements: the per-element local
// gradient local(k, i) (output element k = o·inner + i of Repeats r) is summed over repeats in
// increasing o, in double (deterministic: the order never depends on the threads).
template <typename F>
static void reduce_repeats(int64_t n, int64_t size, const Repeats& r, float* grad, F local) {
  if (size == n && r.outer == 1) {  // same shapes: k = i
#pragma omp parallel for if (n > kParallelElements)
    for (int64_t k = 0; k < n; ++k) grad[k] = local(k, k);
    return;
  }
  if (size == n) {  // this operand is full, the other repeats
#pragma omp parallel for if (n > kParallelElements)
    for (int64_t o = 0; o < r.outer; ++o)
      for (int64_t i = 0; i < r.inner; ++i) grad[o * r.inner + i] = local(o * r.inner + i, i);
    return;
  }
  // Reference: for (k = 0; k < n; ++k) total[k % size] += local(k); here size == r.inner.
  // Threads take disjoint blocks of columns i; each column still adds its terms in increasing o.
  constexpr int64_t kColumns = 64;
  const int64_t blocks = (size + kColumns - 1) / kColumns;
#pragma omp parallel for if (n > kParallelElements)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i0 = blk * kColumns, i1 = std::min(size, i0 + kColumns);
    double total[kColumns] = {0.0};
    for (int64_t o = 0; o < r.outer; ++o)
      for (int64_t i = i0; i < i1; ++i) total[i - i0] += local(o * r.inner + i, i);
    for (int64_t i = i0; i < i1; ++i) grad[i] = static_cast<float>(total[i - i0]);
  }
}

// Any bf16 among g, a, b (ops/bf16_values.h): ∂operand[e] = Σ_t local(t·size + e) over the
// operand's repeats t in increasing order, in double, rounded once to the gradient's dtype. The
// local terms are the f32 path's (float products of widened values).
static void binary_backward_any(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& grad_out,
                                Tensor* grad, bool side_a) {
  const AnyValues g = any_values(grad_out), va = any_values(a), vb = any_values(b);
  const int64_t n = grad_out.numel(), na = a.numel(), nb = b.numel(), size = grad->numel();
  if (size == 0) return;
  const int64_t repeats = n / size;
  auto local = [&](int64_t k) -> float {
    const float gk = g[k];
    if (side_a) {
      switch (op) {
        case BinaryOp::add:
        case BinaryOp::sub: return gk;
        case BinaryOp::mul: return gk * vb[k % nb];
        default: return gk / vb[k % nb];
      }
    }
    switch (op) {
      case BinaryOp::add: return gk;
      case BinaryOp::sub: return -gk;
      case BinaryOp::mul: return gk * va[k % na];
      default: {
        const float y = vb[k % nb];
        return -gk * va[k % na] / (y * y);
      }
    }
  };
  with_value_type(grad->dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = grad->data<T>();
#pragma omp parallel for if (n > kParallelElements)
    for (int64_t e = 0; e < size; ++e) {
      double total = 0;
      for (int64_t t = 0; t < repeats; ++t) total += local(t * size + e);
      store(out, e, static_cast<float>(total));
    }
  });
}

void binary_backward_cpu(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& grad_out,
                         Tensor* grad_a, Tensor* grad_b) {
  if (grad_out.dtype() != DType::f32 || a.dtype() != DType::f32 || b.dtype() != DType::f32) {
    if (grad_a) binary_backward_any(op, a, b, grad_out, grad_a, true);
    if (grad_b) binary_backward_any(op, a, b, grad_out, grad_b, false);
    return;
  }
  const float* g = grad_out.f32();
  const int64_t n = grad_out.numel(), na = a.numel(), nb = b.numel();
  const Repeats r = repeats_of(n, na, nb);
  // a[k % na] and b[k % nb] for output element k = o·inner + i: k when full, i when repeating.
  const float* pa_full = na == n ? a.f32() : nullptr;
  const float* pa_rep = na == n ? nullptr : a.f32();
  const float* pb_full = nb == n ? b.f32() : nullptr;
  const float* pb_rep = nb == n ? nullptr : b.f32();
  auto at_a = [=](int64_t k, int64_t i) { return pa_full ? pa_full[k] : pa_rep[i]; };
  auto at_b = [=](int64_t k, int64_t i) { return pb_full ? pb_full[k] : pb_rep[i]; };
  if (grad_a) {
    float* ga = grad_a->f32();
    switch (op) {
      case BinaryOp::add:
      case BinaryOp::sub: reduce_repeats(n, na, r, ga, [&](int64_t k, int64_t) { return g[k]; }); break;
      case BinaryOp::mul:
        reduce_repeats(n, na, r, ga, [&](int64_t k, int64_t i) { return g[k] * at_b(k, i); });
        break;
      case BinaryOp::div:
        reduce_repeats(n, na, r, ga, [&](int64_t k, int64_t i) { return g[k] / at_b(k, i); });
        break;
    }
  }
  if (grad_b) {
    float* gb = grad_b->f32();
    switch (op) {
      case BinaryOp::add: reduce_repeats(n, nb, r, gb, [&](int64_t k, int64_t) { return g[k]; }); break;
      case BinaryOp::sub: reduce_repeats(n, nb, r, gb, [&](int64_t k, int64_t) { return -g[k]; }); break;
      case BinaryOp::mul:
        reduce_repeats(n, nb, r, gb, [&](int64_t k, int64_t i) { return g[k] * at_a(k, i); });
        break;
      case BinaryOp::div:
        reduce_repeats(n, nb, r, gb, [&](int64_t k, int64_t i) {
          const float y = at_b(k, i);
          return -g[k] * at_a(k, i) / (y * y);
        });
        break;
    }
  }
}

void affine_cpu(const Tensor& x, float alpha, float beta, Tensor& out) {
  with_value_type(x.dtype(), [&](auto tag) {  // bf16: FP32 maths, rounded once on store
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const int64_t n = x.numel();
#pragma omp parallel for if (n > kParallelElements)
    for (int64_t k = 0; k < n; ++k) store(po, k, alpha * load(px, k) + beta);
  });
}

}  // namespace urpe::kernels
