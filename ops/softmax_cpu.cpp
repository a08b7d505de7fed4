// CPU reference kernels for softmax and log_softmax over the last axis; see softmax.h for the
// maths. One row at a time, max-subtracted, exponentials and sums in double.
// bf16 x, y, ∂y, ∂x (precision=bf16): the same loops reading widened values and rounding each
// result once on store (ops/bf16_values.h); the sums stay double.
//
// Fully masked rows (every x = −inf, so the max m = −inf): both ops write zeros instead of NaN.
//   softmax: y = 0, and backward gives ∂x = y·(…) = 0 with no special case.
//   log_softmax: y = 0 too; backward gives ∂x = 0 on any row whose outputs are all exactly 0.
//   That test cannot misfire: a real log_softmax row with n > 1 has Σ e^y = 1, so not all y = 0;
//   with n = 1 (y = 0 always) the true gradient g − e^0·g is 0 anyway.
#include <cmath>
#include <limits>

#include "ops/bf16_values.h"
#include "ops/softmax.h"

namespace urpe::kernels {

namespace {

// x viewed as (rows, n) over its leading dims.
struct Rows {
  int64_t rows = 0, n = 0;
};
Rows rows_of(const Tensor& x) {
  const int64_t n = x.size(-1);
  return Rows{n > 0 ? x.numel() / n : 0, n};
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The row's max: −inf exactly when every entry is −inf (a fully masked row); NaN when any entry
// is NaN, so a row of NaNs comes out NaN rather than passing for a masked row.
template <typename T>
float row_max(const T* xr, int64_t n) {
  float m = kNegInf;
  for (int64_t j = 0; j < n; ++j) {
    const float v = load(xr, j);
    if (std::isnan(v)) return v;
    m = v > m ? v : m;
  }
  return m;
}

// The part both forwards share, row by row: m = max_j x_j and total = Σ_j e^{x_j − m} (in
// double), then write_row(xr, yr, n, m, total) fills the row's outputs; a fully masked row
// (m = −inf) gets zeros instead.
template <typename T, typename WriteRow>
void forward_rows_typed(const Tensor& x, Tensor& y, WriteRow write_row) {
  const Rows v = rows_of(x);
  const T* px = x.data<T>();
  T* py = y.data<T>();
#pragma omp parallel for if (v.rows * v.n > 32768)
  for (int64_t r = 0; r < v.rows; ++r) {
    const T* xr = px + r * v.n;
    T* yr = py + r * v.n;
    const float m = row_max(xr, v.n);
    if (m == kNegInf) {  // fully masked row
      for (int64_t j = 0; j < v.n; ++j) store(yr, j, 0.0f);
      continue;
    }
    double total = 0;
    for (int64_t j = 0; j < v.n; ++j) total += std::exp(static_cast<double>(load(xr, j)) - m);
    write_row(xr, yr, v.n, m, total);
  }
}
template <typename WriteRow>
void forward_rows(const Tensor& x, Tensor& y, WriteRow write_row) {
  with_value_type(x.dtype(), [&](auto tag) { forward_rows_typed<decltype(tag)>(x, y, write_row); });
}

// Row by row, the same way for both backwards: write_row(yr, gr, gxr, n) fills a row of ∂x from
// that row of y and of g.
template <typename T, typename WriteRow>
void backward_rows_typed(const Tensor& y, const Tensor& grad_y, Tensor& grad_x, WriteRow write_row) {
  const Rows v = rows_of(y);
  const T* py = y.data<T>();
  const T* pg = grad_y.data<T>();
  T* pgx = grad_x.data<T>();
#pragma omp parallel for if (v.rows * v.n > 32768)
  for (int64_t r = 0; r < v.rows; ++r) write_row(py + r * v.n, pg + r * v.n, pgx + r * v.n, v.n);
}
template <typename WriteRow>
void backward_rows(const Tensor& y, const Tensor& grad_y, Tensor& grad_x, WriteRow write_row) {
  with_value_type(y.dtype(), [&](auto tag) { backward_rows_typed<decltype(tag)>(y, grad_y, grad_x, write_row); });
}

}  // namespace

// ---- forward ----
// x, y: (rows, n)

// y_j = e^{x_j − m} / total
void softmax_forward_cpu(const Tensor& x, Tensor& y) {
  forward_rows(x, y, [](const auto* xr, auto* yr, int64_t n, float m, double total) {
    for (int64_t j = 0; j < n; ++j)
      store(yr, j, static_cast<float>(std::exp(static_cast<double>(load(xr, j)) - m) / total));
  });
}

// y_j = x_j − m − log(total)
void log_softmax_forward_cpu(const Tensor& x, Tensor& y) {
  forward_rows(x, y, [](const auto* xr, auto* yr, int64_t n, float m, double total) {
    const double log_total = std::log(total);
    for (int64_t j = 0; j < n; ++j)
      store(yr, j, static_cast<float>(static_cast<double>(load(xr, j)) - m - log_total));
  });
}

// ---- backward ----
// y, grad_y, grad_x: (rows, n)

// ∂x_j = y_j·(g_j − Σ_k g_k y_k)
void softmax_backward_cpu(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  backward_rows(y, grad_y, grad_x, [](const auto* yr, const auto* gr, auto* gxr, int64_t n) {
    double dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += static_cast<double>(load(gr, j)) * load(yr, j);
    for (int64_t j = 0; j < n; ++j) store(gxr, j, static_cast<float>(load(yr, j) * (load(gr, j) - dot)));
  });
}

// ∂x_j = g_j − e^{y_j}·Σ_k g_k   (0 on a row of all-zero outputs: see the file comment)
void log_softmax_backward_cpu(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  backward_rows(y, grad_y, grad_x, [](const auto* yr, const auto* gr, auto* gxr, int64_t n) {
    bool all_zero = true;
    double total = 0;
    for (int64_t j = 0; j < n; ++j) {
      all_zero = all_zero && load(yr, j) == 0.0f;
      total += load(gr, j);
    }
    for (int64_t j = 0; j < n; ++j)
      store(gxr, j, all_zero ? 0.0f : static_cast<float>(load(gr, j) - std::exp(static_cast<double>(load(yr, j))) * total));
  });
}

}  // namespace urpe::kernels
