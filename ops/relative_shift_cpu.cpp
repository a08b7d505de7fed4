// CPU reference kernels of the Transformer-XL relative shift (maths in relative_shift.h): each
// row i of each (Nq, Nk) slice is moved left (forward) or right (backward) by Nq − 1 − i columns,
// with zeros filling the columns that have no source. The CUDA kernel is checked against this.
// Words are moved as bits (4 bytes for f32, 2 for bf16; a zero word is +0 in both).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/relative_shift.h"

namespace urpe::kernels {

namespace {

// ---- forward ----
// x, y: (rows, Nq, Nk). y[r, i, j] = x[r, i, j + s] for j < Nk − s, else 0, with s = Nq − 1 − i.
template <typename Word>
void shift_forward(const Tensor& x, Tensor& y) {
  const int64_t nq = x.size(-2), nk = x.size(-1), slices = x.numel() / (nq * nk);
  const Word* px = static_cast<const Word*>(x.impl().storage->data);
  Word* py = static_cast<Word*>(y.impl().storage->data);
#pragma omp parallel for if (x.numel() > 65536)
  for (int64_t row = 0; row < slices * nq; ++row) {
    const int64_t s = nq - 1 - row % nq;  // shift of query i = row mod Nq
    const Word* src = px + row * nk;
    Word* dst = py + row * nk;
    std::memcpy(dst, src + s, static_cast<size_t>(nk - s) * sizeof(Word));
    std::fill(dst + (nk - s), dst + nk, Word(0));
  }
}

// ---- backward ----
// g, grad_x: (rows, Nq, Nk). grad_x[r, i, k] = g[r, i, k − s] for k ≥ s, else 0.
template <typename Word>
void shift_backward(const Tensor& g, Tensor& grad_x) {
  const int64_t nq = g.size(-2), nk = g.size(-1), slices = g.numel() / (nq * nk);
  const Word* pg = static_cast<const Word*>(g.impl().storage->data);
  Word* px = static_cast<Word*>(grad_x.impl().storage->data);
#pragma omp parallel for if (g.numel() > 65536)
  for (int64_t row = 0; row < slices * nq; ++row) {
    const int64_t s = nq - 1 - row % nq;
    const Word* src = pg + row * nk;
    Word* dst = px + row * nk;
    std::fill(dst, dst + s, Word(0));
    std::memcpy(dst + s, src, static_cast<size_t>(nk - s) * sizeof(Word));
  }
}

}  // namespace

void relative_shift_forward_cpu(const Tensor& x, Tensor& y) {
  if (dtype_size(x.dtype()) == 2) shift_forward<uint16_t>(x, y);
  else shift_forward<uint32_t>(x, y);
}

void relative_shift_backward_cpu(const Tensor& g, Tensor& grad_x) {
  if (dtype_size(g.dtype()) == 2) shift_backward<uint16_t>(g, grad_x);
  else shift_backward<uint32_t>(g, grad_x);
}

}  // namespace urpe::kernels
