// CPU reference kernels for cross_entropy and l1_loss; see loss.h for the maths. Per-row work
// runs in parallel; the final means add the per-row terms serially in row order, in double, so the
// loss is the same for any thread count. The softmax exponentials are float, from
// ops/fast_math_cpu.h (≤ 2 ulp, vectorised); log and the sums stay in double.
#include <cmath>
#include <vector>

#include "ops/bf16_values.h"
#include "ops/fast_math_cpu.h"
#include "ops/loss.h"

namespace urpe::kernels {

// ---- cross_entropy forward ----
// logits: (N, C); targets: i32 (N,); loss: (); lse: (N,); count: # rows with target ≠ ignore_index
//   lse_i = m_i + log Σ_c e^{logits[i,c] − m_i},   L = (1/M) Σ_{counted} (lse_i − logits[i, t_i])
// bf16 logits: each row widened (exactly) into a float buffer, then the same FP32/double sweep.

void cross_entropy_forward_cpu(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                               Tensor& loss, Tensor& lse, Tensor& count_out) {
  const int64_t N = logits.size(0), C = logits.size(1);
  const bool widen = logits.dtype() == DType::bf16;
  const float* px = widen ? nullptr : logits.f32();
  const bf16* ph = widen ? logits.data<bf16>() : nullptr;
  const int32_t* pt = targets.i32();
  float* plse = lse.f32();
  std::vector<double> row_loss(N, 0.0);  // (N,): 0 for ignored rows
#pragma omp parallel if (N * C > 32768)
  {
    std::vector<float> row(widen ? static_cast<size_t>(C) : 0);  // a bf16 row, widened
#pragma omp for
    for (int64_t i = 0; i < N; ++i) {
      const float* xr = row.data();
      if (widen) {
        for (int64_t c = 0; c < C; ++c) row[c] = to_float(ph[i * C + c]);
      } else {
        xr = px + i * C;
      }
      double m = xr[0];
      for (int64_t c = 1; c < C; ++c) m = xr[c] > m ? xr[c] : m;
      // Each e^{x − m} ≤ 1 after the max subtraction: float exp is exact enough, the sum is double
      // (in order).
      const double total = fast::sum_exp_shifted(xr, C, static_cast<float>(m));
      const double row_lse = m + std::log(total);
      plse[i] = static_cast<float>(row_lse);
      if (pt[i] != ignore_index) row_loss[i] = row_lse - xr[pt[i]];
    }
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
// grad_loss: () read on the host; grad_logits: (N, C), the logits' dtype (T: float or bf16)

namespace {

template <typename T>
void cross_entropy_backward_typed(const T* px, const int32_t* pt, const float* plse, int64_t N, int64_t C,
                                  int32_t ignore_index, double g_over_m, T* gx) {
#pragma omp parallel for if (N * C > 32768)
  for (int64_t i = 0; i < N; ++i) {
    T* gr = gx + i * C;
    const T* xr = px + i * C;
    if (pt[i] == ignore_index) {
      for (int64_t c = 0; c < C; ++c) store(gr, c, 0.0f);
      continue;
    }
    // Softmax p = e^{x − lse} in float (p ≤ 1; the subtraction is done in float as well).
    const float scale = static_cast<float>(g_over_m);
    const float row_lse = plse[i];
    for (int64_t c = 0; c < C; ++c) store(gr, c, fast::exp_fast(load(xr, c) - row_lse) * scale);
    store(gr, pt[i], (fast::exp_fast(load(xr, pt[i]) - row_lse) - 1.0f) * scale);
  }
}

}  // namespace

void cross_entropy_backward_cpu(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                                const Tensor& lse, const Tensor& count_in, const Tensor& grad_loss,
                                Tensor& grad_logits) {
  const int64_t N = logits.size(0), C = logits.size(1);
  const int64_t count = count_in.i32()[0];
  const double g_over_m = count > 0 ? static_cast<double>(grad_loss.f32()[0]) / count : 0.0;
  with_value_type(logits.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_backward_typed<T>(logits.data<T>(), targets.i32(), lse.f32(), N, C, ignore_index, g_over_m,
                                    grad_logits.data<T>());
  });
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
