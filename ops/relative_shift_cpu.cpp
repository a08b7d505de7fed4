// CPU reference kernels of the Transformer-XL relative shift (maths in relative_shift.h): each
// row i of each (Nq, Nk) slice is moved left (forward) or right (backward) by Nq − 1 − i columns,
// with zeros filling the columns that have no source. The CUDA kernel is checked against this.
#include <algorithm>
#include <cstring>

#include "ops/relative_shift.h"

namespace urpe::kernels {

// ---- forward ----
// x, y: (rows, Nq, Nk). y[r, i, j] = x[r, i, j + s] for j < Nk − s, else 0, with s = Nq − 1 − i.

void relative_shift_forward_cpu(const Tensor& x, Tensor& y) {
  const int64_t nq = x.size(-2), nk = x.size(-1), slices = x.numel() / (nq * nk);
  const float* px = x.f32();
  float* py = y.f32();
#pragma omp parallel for if (x.numel() > 65536)
  for (int64_t row = 0; row < slices * nq; ++row) {
    const int64_t s = nq - 1 - row % nq;  // shift of query i = row mod Nq
    const float* src = px + row * nk;
    float* dst = py + row * nk;
    std::memcpy(dst, src + s, static_cast<size_t>(nk - s) * sizeof(float));
    std::fill(dst + (nk - s), dst + nk, 0.0f);
  }
}

// ---- backward ----
// g, grad_x: (rows, Nq, Nk). grad_x[r, i, k] = g[r, i, k − s] for k ≥ s, else 0.

void relative_shift_backward_cpu(const Tensor& g, Tensor& grad_x) {
  const int64_t nq = g.size(-2), nk = g.size(-1), slices = g.numel() / (nq * nk);
  const float* pg = g.f32();
  float* px = grad_x.f32();
#pragma omp parallel for if (g.numel() > 65536)
  for (int64_t row = 0; row < slices * nq; ++row) {
    const int64_t s = nq - 1 - row % nq;
    const float* src = pg + row * nk;
    float* dst = px + row * nk;
    std::fill(dst, dst + s, 0.0f);
    std::memcpy(dst + s, src, static_cast<size_t>(nk - s) * sizeof(float));
  }
}

}  // namespace urpe::kernels
