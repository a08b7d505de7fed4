// CPU optimizer kernels: the Adam update element by element (f32, as on the GPU; the bias
// corrections 1 − βᵗ in double), and a sum of squares whose summation order is fixed.
// Memory traffic of an Adam step: read θ, g, m, v and write θ, m, v: 28 bytes per parameter.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/optimizer_kernels.h"

namespace urpe::kernels {

// ---- Adam / AdamW ----

// The parameters' elements in chunks of kAdamChunk, one parallel loop over the chunks of every
// parameter: a model's many small tensors (biases, norms) keep both threads busy instead of each
// running alone below a size threshold, and there is one parallel region per step, not one per
// parameter. Each element's update is independent, so the result is the same for any split.
constexpr int64_t kAdamChunk = 16384;

void adam_update_cpu(const std::vector<AdamSlot>& slots, const AdamHyper& hyper) {
  const AdamStepScalars s = adam_step_scalars(hyper);  // the CUDA kernel's values
  const float correction1 = s.bias_correction1, correction2 = s.bias_correction2;
  const float lr = s.lr, b1 = s.beta1, b2 = s.beta2, eps = s.eps;
  const float wd = s.weight_decay;
  const bool decoupled = s.decoupled != 0;
  struct Chunk {
    const AdamSlot* slot;
    int64_t begin, end;
  };
  std::vector<Chunk> chunks;
  for (const AdamSlot& slot : slots)
    for (int64_t begin = 0; begin < slot.param.numel(); begin += kAdamChunk)
      chunks.push_back({&slot, begin, std::min(slot.param.numel(), begin + kAdamChunk)});
#pragma omp parallel for schedule(dynamic) if (chunks.size() > 1)
  for (size_t c = 0; c < chunks.size(); ++c) {
    const Chunk& chunk = chunks[c];
    float* __restrict theta = chunk.slot->param.f32();
    const float* __restrict grad = chunk.slot->grad.f32();
    float* __restrict m = chunk.slot->m.f32();
    float* __restrict v = chunk.slot->v.f32();
    for (int64_t k = chunk.begin; k < chunk.end; ++k) {
      float g = grad[k];
      if (decoupled) theta[k] -= lr * wd * theta[k];  // AdamW: decay outside the moments
      else g += wd * theta[k];                         // Adam + L2: decay inside the gradient
      m[k] = b1 * m[k] + (1.0f - b1) * g;
      v[k] = b2 * v[k] + (1.0f - b2) * g * g;
      const float m_hat = m[k] / correction1;
      const float v_hat = v[k] / correction2;
      theta[k] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
}

// ---- gradient norm and scaling ----

// Fixed-size chunks summed in parallel, then the chunk sums added in index order: the result
// does not depend on the number of threads.
double sum_of_squares_cpu(const std::vector<Tensor>& tensors) {
  constexpr int64_t kChunk = 1 << 16;
  double total = 0;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    const float* x = t.f32();
    const int64_t n = t.numel(), chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> partial(static_cast<size_t>(chunks), 0.0);
#pragma omp parallel for if (chunks > 1)
    for (int64_t c = 0; c < chunks; ++c) {
      double s = 0;
      const int64_t end = std::min(n, (c + 1) * kChunk);
      for (int64_t k = c * kChunk; k < end; ++k) s += static_cast<double>(x[k]) * x[k];
      partial[c] = s;
    }
    for (double s : partial) total += s;
  }
  return total;
}

// clip_grad_norm's rule (optimizer_kernels.cpp), writing the norm into a tensor.
void clip_grad_norm_cpu(const std::vector<Tensor>& grads, float max_norm, Tensor& norm) {
  const float n = static_cast<float>(std::sqrt(sum_of_squares_cpu(grads)));
  norm.f32()[0] = n;
  if (!std::isfinite(n)) return;
  const double factor = static_cast<double>(max_norm) / (static_cast<double>(n) + 1e-6);
  if (factor >= 1.0) return;
  for (const Tensor& g : grads)
    if (g.defined()) scale_in_place_cpu(g, static_cast<float>(factor));
}

void scale_in_place_cpu(const Tensor& x, float factor) {
  float* p = x.f32();
  const int64_t n = x.numel();
#pragma omp parallel for if (n > 65536)
  for (int64_t k = 0; k < n; ++k) p[k] *= factor;
}

}  // namespace urpe::kernels
