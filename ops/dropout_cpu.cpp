// CPU reference kernel for inverted dropout; see dropout.h for the maths. Element k's mask bit is
// philox_uniform(seed, 0, k) ≥ p whatever thread computes it, so the CUDA kernel (and backward,
// which calls this same kernel on the gradient) draws exactly the same mask.
// bf16 x: the product in FP32, rounded once on store (ops/bf16_values.h).
#include "ops/bf16_values.h"
#include "ops/dropout.h"
#include "tensor/philox.h"

namespace urpe::kernels {

namespace {

template <typename T>
void dropout_apply_typed(const T* px, float p, uint64_t seed, T* po, int64_t n) {
  const float keep_scale = 1.0f / (1.0f - p);
#pragma omp parallel for if (n > 16384)
  for (int64_t k = 0; k < n; ++k) {
    const bool keep = philox_uniform(seed, 0, static_cast<uint64_t>(k)) >= p;
    store(po, k, keep ? load(px, k) * keep_scale : 0.0f);
  }
}

}  // namespace

// out = x·keep/(1 − p)   x, out: any shape, flat index k, one dtype
void dropout_apply_cpu(const Tensor& x, float p, uint64_t seed, Tensor& out) {
  with_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    dropout_apply_typed<T>(x.data<T>(), p, seed, out.data<T>(), x.numel());
  });
}

}  // namespace urpe::kernels
