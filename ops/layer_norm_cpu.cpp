// CPU reference kernels for layer normalisation; see layer_norm.h for the maths. Row statistics
// are accumulated in double (two passes: mean, then the centred variance), each sum spread over
// the SIMD lanes (`omp simd reduction`): a fixed order for a given build, whatever the threads,
// and a sum no longer bound by the latency of one double add after another. The per-element
// passes that use them (y, ∂x) run in float with μ (as hi + lo in the forward) and r rounded to
// float once per row: twice the vector width of double (measured on one core at 4096 × 128: the
// forward 0.29 → 0.16 ms, the backward 0.33 → 0.25 ms), within a few float ulps of the double
// expression, which is all the float output holds anyway. The backward reads the saved float μ. ∂γ and ∂β are sums
// over rows: they are reduced in fixed blocks of rows, then the block partials are added in block
// order, so the result is the same for any thread count (no float atomics).
// bf16 x, y, ∂y, ∂x (precision=bf16): the same code reading widened values (statistics in double
// as for f32) and rounding each result once on store (ops/bf16_values.h); μ, r, γ, β, ∂γ, ∂β f32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/bf16_values.h"
#include "ops/layer_norm.h"

namespace urpe::kernels {

namespace {
constexpr int64_t kRowsPerBlock = 64;  // row block of the ∂γ/∂β partial sums
}

// ---- forward ----
// x, y: (rows, D); gamma, beta: (D,); mean, rstd: (rows,)

template <typename T>
static void layer_norm_forward_typed(const T* px, const Tensor& gamma, const Tensor& beta, float eps,
                                     int64_t rows, int64_t D, T* py, Tensor& mean, Tensor& rstd) {
  const float* pg = gamma.f32();
  const float* pb = beta.f32();
  float* pmean = mean.f32();
  float* prstd = rstd.f32();
#pragma omp parallel for if (rows * D > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = px + r * D;
    double mu = 0;
#pragma omp simd reduction(+ : mu)
    for (int64_t d = 0; d < D; ++d) mu += load(xr, d);
    mu /= static_cast<double>(D);
    double var = 0;
#pragma omp simd reduction(+ : var)
    for (int64_t d = 0; d < D; ++d) var += (load(xr, d) - mu) * (load(xr, d) - mu);
    var /= static_cast<double>(D);
    const double inv = 1.0 / std::sqrt(var + eps);
    // μ as float hi + lo: x − μ_hi is exact for x near μ, so a row whose mean is large against
    // its spread keeps the double expression's accuracy (tests/test_cpu_kernels.cpp)
    const float mu_hi = static_cast<float>(mu), mu_lo = static_cast<float>(mu - mu_hi);
    const float inv_f = static_cast<float>(inv);
    pmean[r] = mu_hi;
    prstd[r] = inv_f;
    T* yr = py + r * D;
    for (int64_t d = 0; d < D; ++d) store(yr, d, pg[d] * (((load(xr, d) - mu_hi) - mu_lo) * inv_f) + pb[d]);
  }
}

void layer_norm_forward_cpu(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                            Tensor& y, Tensor& mean, Tensor& rstd) {
  const int64_t D = x.size(-1), rows = x.numel() / D;
  with_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    layer_norm_forward_typed<T>(x.data<T>(), gamma, beta, eps, rows, D, y.data<T>(), mean, rstd);
  });
}

// ---- backward ----
// Per row, with x̂ = (x − μ)·r and ĝ = g·γ:
//   ∂x = r·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂))
//   ∂γ = Σ_rows g·x̂,   ∂β = Σ_rows g
// x, grad_y, grad_x: (rows, D); gamma, grad_gamma, grad_beta: (D,); mean, rstd: (rows,)

template <typename T>
static void layer_norm_backward_typed(const T* px, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                                      const T* g, int64_t rows, int64_t D, T* gx, Tensor& grad_gamma,
                                      Tensor& grad_beta) {
  const float* pgamma = gamma.f32();
  const float* pmean = mean.f32();
  const float* prstd = rstd.f32();

  // ∂x, one row at a time.
#pragma omp parallel for if (rows * D > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = px + r * D;
    const T* gr = g + r * D;
    const float mu = pmean[r], inv = prstd[r];
    double mean_gh = 0, mean_gh_xh = 0;  // mean(ĝ), mean(ĝ·x̂)
#pragma omp simd reduction(+ : mean_gh, mean_gh_xh)
    for (int64_t d = 0; d < D; ++d) {
      const float gh = load(gr, d) * pgamma[d];
      mean_gh += gh;
      mean_gh_xh += static_cast<double>(gh) * ((load(xr, d) - mu) * inv);
    }
    const float mean_gh_f = static_cast<float>(mean_gh / static_cast<double>(D));
    const float mean_gh_xh_f = static_cast<float>(mean_gh_xh / static_cast<double>(D));
    T* gxr = gx + r * D;
    for (int64_t d = 0; d < D; ++d) {
      const float gh = load(gr, d) * pgamma[d];
      const float xh = (load(xr, d) - mu) * inv;
      store(gxr, d, inv * (gh - mean_gh_f - xh * mean_gh_xh_f));
    }
  }

  // ∂γ, ∂β: partial sums per block of rows, then the partials in block order.
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  std::vector<double> part_gamma(blocks * D, 0.0), part_beta(blocks * D, 0.0);  // (blocks, D)
#pragma omp parallel for if (rows * D > 32768)
  for (int64_t b = 0; b < blocks; ++b) {
    double* pgm = part_gamma.data() + b * D;
    double* pbt = part_beta.data() + b * D;
    const int64_t end = std::min(rows, (b + 1) * kRowsPerBlock);
    for (int64_t r = b * kRowsPerBlock; r < end; ++r) {
      const float mu = pmean[r], inv = prstd[r];
      for (int64_t d = 0; d < D; ++d) {
        const float gv = load(g, r * D + d);
        pgm[d] += static_cast<double>(gv * ((load(px, r * D + d) - mu) * inv));
        pbt[d] += gv;
      }
    }
  }
  float* ggamma = grad_gamma.f32();
  float* gbeta = grad_beta.f32();
  for (int64_t d = 0; d < D; ++d) {
    double total_gamma = 0, total_beta = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      total_gamma += part_gamma[b * D + d];
      total_beta += part_beta[b * D + d];
    }
    ggamma[d] = static_cast<float>(total_gamma);
    gbeta[d] = static_cast<float>(total_beta);
  }
}

void layer_norm_backward_cpu(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                             const Tensor& rstd, const Tensor& grad_y, Tensor& grad_x,
                             Tensor& grad_gamma, Tensor& grad_beta) {
  const int64_t D = x.size(-1), rows = x.numel() / D;
  with_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    layer_norm_backward_typed<T>(x.data<T>(), gamma, mean, rstd, grad_y.data<T>(), rows, D, grad_x.data<T>(),
                                 grad_gamma, grad_beta);
  });
}

}  // namespace urpe::kernels
