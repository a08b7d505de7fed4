// CPU kernels of linear_cross_entropy (maths in linear_cross_entropy.h): the per-row statistics of
// one chunk of logits, the mean of the row terms, and dz in place. Rows run in parallel, each row
// by one thread, and the mean adds the terms serially in row order (double), so every result is
// the same for any thread count. The exponentials are ops/fast_math_cpu.h's, as cross_entropy's.
#include <cmath>

#include "ops/fast_math_cpu.h"
#include "ops/linear_cross_entropy.h"

namespace urpe::kernels {

// ---- forward: per row of the chunk ----
// m = max_c z_c (its first index is the argmax),  lse = m + log Σ_c e^{z_c − m},  term = lse − z_t
// logits: (≥ rows, classes) chunk; targets, lse, term, argmax: (N,), rows row0 … row0 + rows − 1

void linear_ce_chunk_stats_cpu(const Tensor& logits, int64_t rows, int64_t classes, const Tensor& targets,
                               int64_t row0, int32_t ignore_index, Tensor& lse, Tensor& term, Tensor& argmax) {
  const float* px = logits.f32();
  const int32_t* pt = targets.i32() + row0;
  float* plse = lse.f32() + row0;
  float* pterm = term.f32() + row0;
  int32_t* pbest = argmax.defined() ? argmax.i32() + row0 : nullptr;
#pragma omp parallel for if (rows * classes > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = px + r * classes;
    // The first largest entry; NaN never compares greater, so a row of NaNs gives 0 (argmax_last).
    float m = -INFINITY;
    int32_t best = 0;
    for (int64_t c = 0; c < classes; ++c)
      if (z[c] > m) m = z[c], best = static_cast<int32_t>(c);
    const double total = fast::sum_exp_shifted(z, classes, m);
    const double row_lse = static_cast<double>(m) + std::log(total);
    plse[r] = static_cast<float>(row_lse);
    pterm[r] = pt[r] == ignore_index ? 0.0f : static_cast<float>(row_lse - z[pt[r]]);
    if (pbest) pbest[r] = best;
  }
}

// L = Σ_i term_i / M, in row order, in double (M = 0 gives 0)
void linear_ce_mean_cpu(const Tensor& term, int64_t count, Tensor& loss) {
  const float* p = term.f32();
  double sum = 0;
  for (int64_t i = 0; i < term.numel(); ++i) sum += p[i];
  loss.f32()[0] = count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
}

// ---- backward: dz in place over the chunk ----
// dz_c = (e^{z_c − lse} − [c = t])·g/M on counted rows, 0 on ignored rows

void linear_ce_chunk_grad_cpu(Tensor& logits, int64_t rows, int64_t classes, const Tensor& targets, int64_t row0,
                              int32_t ignore_index, const Tensor& lse, int64_t count, const Tensor& grad_loss) {
  float* px = logits.f32();
  const int32_t* pt = targets.i32() + row0;
  const float* plse = lse.f32() + row0;
  const float scale =
      count > 0 ? static_cast<float>(static_cast<double>(grad_loss.f32()[0]) / static_cast<double>(count)) : 0.0f;
#pragma omp parallel for if (rows * classes > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    float* z = px + r * classes;
    if (pt[r] == ignore_index) {
      for (int64_t c = 0; c < classes; ++c) z[c] = 0.0f;
      continue;
    }
    const float row_lse = plse[r];
    const float target_logit = z[pt[r]];
    for (int64_t c = 0; c < classes; ++c) z[c] = fast::exp_fast(z[c] - row_lse) * scale;
    z[pt[r]] = (fast::exp_fast(target_logit - row_lse) - 1.0f) * scale;
  }
}

}  // namespace urpe::kernels
