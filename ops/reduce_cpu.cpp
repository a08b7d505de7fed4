// CPU reductions: each output accumulates its n inputs in double, in index order.
#include "ops/reduce.h"

#include <algorithm>
#include <cmath>

namespace urpe::kernels {

// Work is split into (o, block of kColumns inner indices) items; each item walks j in order and
// adds whole rows of its block into double totals, so the reads are contiguous and the adds
// vectorise, while every output still sums its n inputs in increasing j (the same result as one
// scalar loop per output, whatever the threads).
void sum_axis_cpu(const Tensor& x, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out) {
  constexpr int64_t kColumns = 64;
  const float* px = x.f32();
  float* po = out.f32();
  const int64_t blocks = (inner + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static) if (outer * n * inner > 32768 && outer * blocks > 1)
  for (int64_t item = 0; item < outer * blocks; ++item) {
    const int64_t o = item / blocks, i0 = (item % blocks) * kColumns;
    const int64_t width = std::min(kColumns, inner - i0);
    double total[kColumns] = {0.0};
    for (int64_t j = 0; j < n; ++j) {
      const float* row = px + (o * n + j) * inner + i0;
      for (int64_t i = 0; i < width; ++i) total[i] += row[i];
    }
    for (int64_t i = 0; i < width; ++i) po[o * inner + i0 + i] = static_cast<float>(alpha * total[i]);
  }
}

// One output row (o, j) at a time: a plain scaled copy of g's row o.
void broadcast_axis_cpu(const Tensor& g, int64_t outer, int64_t n, int64_t inner, float alpha, Tensor& out) {
  const float* pg = g.f32();
  float* po = out.f32();
#pragma omp parallel for schedule(static) if (outer * n * inner > 32768)
  for (int64_t row = 0; row < outer * n; ++row) {
    const float* src = pg + (row / n) * inner;
    float* dst = po + row * inner;
    for (int64_t i = 0; i < inner; ++i) dst[i] = alpha * src[i];
  }
}

// Row by row, left to right: a later entry wins only if strictly larger (ties keep the first).
void argmax_rows_cpu(const Tensor& x, int64_t rows, int64_t cols, Tensor& out) {
  const float* px = x.f32();
  int32_t* po = out.i32();
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = px + r * cols;
    int64_t best = 0;
    float best_value = std::isnan(row[0]) ? -INFINITY : row[0];
    for (int64_t c = 1; c < cols; ++c)
      if (row[c] > best_value) {  // false for NaN
        best = c;
        best_value = row[c];
      }
    po[r] = static_cast<int32_t>(best);
  }
}

}  // namespace urpe::kernels
