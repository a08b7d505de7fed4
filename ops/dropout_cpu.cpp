// CPU reference kernel for inverted dropout; see dropout.h for the maths. Element k's mask bit is
// philox_uniform(seed, 0, k) ≥ p whatever thread computes it, so the CUDA kernel (and backward,
// which calls this same kernel on the gradient) draws exactly the same mask.
#include "ops/dropout.h"
#include "tensor/philox.h"

namespace urpe::kernels {

// out = x·keep/(1 − p)   x, out: any shape, flat index k
void dropout_apply_cpu(const Tensor& x, float p, uint64_t seed, Tensor& out) {
  const float* px = x.f32();
  float* po = out.f32();
  const int64_t n = x.numel();
  const float keep_scale = 1.0f / (1.0f - p);
#pragma omp parallel for if (n > 16384)
  for (int64_t k = 0; k < n; ++k) {
    const bool keep = philox_uniform(seed, 0, static_cast<uint64_t>(k)) >= p;
    po[k] = keep ? px[k] * keep_scale : 0.0f;
  }
}

}  // namespace urpe::kernels
