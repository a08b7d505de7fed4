// CPU reference kernels for cross_entropy and l1_loss; see loss.h for the maths. Per-row work
// runs in parallel; the final means add the per-row terms serially in row order, in double, so the
// loss is the same for any thread count. The softmax exponentials are float, from
// ops/fast_math_cpu.h (≤ 2 ulp, vectorised); log and the sums stay in double.
#include <cmath>
#include <vector>

#include "ops/fast_math_cpu.h"
#include "ops/loss.h"

namespace urpe::kernels {

// ---- cross_entropy forward ----
// logits: (N, C); targets: i32 (N,); loss: (); lse: (N,); count: # rows with target ≠ ignore_index
//   lse_i = m_i + log Σ_c e^{logits[i,c] − m_i},   L = (1/M) Σ_{counted} (lse_i − logits[i, t_i])

void cross_entropy_forward_cpu(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                               Tensor& loss, Tensor& lse, Tensor& count_out) {
  const int64_t N = logits.size(0), C = logits.size(1);
  const float* px = logits.f32();
  const int32_t* pt = targets.i32();
  float* plse = lse.f32();
  std::vector<double> row_loss(N, 0.0);  // (N,): 0 for ignored rows
#pragma omp parallel for if (N * C > 32768)
  for (int64_t i = 0; i < N; ++i) {
    const float* xr = px + i * C;
    double m = xr[0];
    for (int64_t c = 1; c < C; ++c) m = xr[c] > m ? xr[c] : m;
    // Each e^{x − m} ≤ 1 after the max subtraction: float exp is exact enough, the sum is double
    // (in order).
    const double total = fast::sum_exp_shifted(xr, C, static_cast<float>(m));
    const double row_lse = m + std::log(total);
    plse[i] = static_cast<float>(row_lse);
    if (pt[i] != ignore_index) row_loss[i] = row_lse - xr[pt[i]];
  }
  double sum = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (pt[i] == ignore_index) continue;
    sum += row_loss[i];
    ++count;
  }
  loss.f32()[0] = count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
  count_out.i32()[0] = static_cast<int32_t>(count);
}

// ---- cross_entropy backward ----
//   ∂logits[i, c] = (e^{logits[i,c] − lse_i} − [c = t_i])·g/M for counted rows, 0 otherwise
// grad_loss: () read on the host; grad_logits: (N, C)

void cross_entropy_backward_cpu(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                                const Tensor& lse, const Tensor& count_in, const Tensor& grad_loss,
                                Tensor& grad_logits) {
  const int64_t N = logits.size(0), C = logits.size(1);
  const int64_t count = count_in.i32()[0];
  const float* px = logits.f32();
  const int32_t* pt = targets.i32();
  const float* plse = lse.f32();
  float* gx = grad_logits.f32();
  const double g_over_m = count > 0 ? static_cast<double>(grad_loss.f32()[0]) / count : 0.0;
#pragma omp parallel for if (N * C > 32768)
  for (int64_t i = 0; i < N; ++i) {
    float* gr = gx + i * C;
    const float* xr = px + i * C;
    if (pt[i] == ignore_index) {
      for (int64_t c = 0; c < C; ++c) gr[c] = 0.0f;
      continue;
    }
    // Softmax p = e^{x − lse} in float (p ≤ 1; the subtraction is done in float as well).
    const float scale = static_cast<float>(g_over_m);
    const float row_lse = plse[i];
    for (int64_t c = 0; c < C; ++c) gr[c] = fast::exp_fast(xr[c] - row_lse) * scale;
    gr[pt[i]] = (fast::exp_fast(xr[pt[i]] - row_lse) - 1.0f) * scale;
  }
}

// ---- l1_loss forward ----
// pred, target: same shape, n elements; loss: ()   L = (1/n) Σ |pred − target|   (n = 0 gives 0)

void l1_loss_forward_cpu(const Tensor& pred, const Tensor& target, Tensor& loss) {
  const int64_t n = pred.numel();
  const float* pp = pred.f32();
  const float* pt = target.f32();
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += std::fabs(static_cast<double>(pp[k]) - pt[k]);
  loss.f32()[0] = n > 0 ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
}

// ---- l1_loss backward ----
//   ∂pred = sign(pred − target)·g/n   (sign(0) = 0)

void l1_loss_backward_cpu(const Tensor& pred, const Tensor& target, const Tensor& grad_loss,
                          Tensor& grad_pred) {
  const int64_t n = pred.numel();
  const float* pp = pred.f32();
  const float* pt = target.f32();
  float* gp = grad_pred.f32();
  const float g_over_n = n > 0 ? static_cast<float>(static_cast<double>(grad_loss.f32()[0]) / n) : 0.0f;
#pragma omp parallel for if (n > 32768)
  for (int64_t k = 0; k < n; ++k) {
    const float d = pp[k] - pt[k];
    gp[k] = d > 0.0f ? g_over_n : (d < 0.0f ? -g_over_n : 0.0f);
  }
}

}  // namespace urpe::kernels
