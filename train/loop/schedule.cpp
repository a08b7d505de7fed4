// Learning-rate schedules (formulas in schedule.h), evaluated in double.
#include "train/loop/schedule.h"

#include <cmath>

#include "tensor/error.h"

namespace urpe {

DecayKind parse_decay_kind(const std::string& text) {
  if (text == "linear") return DecayKind::linear;
  if (text == "cosine") return DecayKind::cosine;
  if (text == "constant") return DecayKind::constant;
  URPE_FAIL("learning-rate decay '" << text << "': expected linear, cosine or constant");
}

const char* decay_kind_name(DecayKind kind) {
  switch (kind) {
    case DecayKind::linear: return "linear";
    case DecayKind::cosine: return "cosine";
    default: return "constant";
  }
}

void LrSchedule::validate() const {
  URPE_CHECK(std::isfinite(peak_lr) && peak_lr >= 0, "schedule: peak_lr must be finite and ≥ 0, got " << peak_lr);
  URPE_CHECK(std::isfinite(end_lr) && end_lr >= 0, "schedule: end_lr must be finite and ≥ 0, got " << end_lr);
  URPE_CHECK(warmup >= 0, "schedule: warmup must be ≥ 0 steps, got " << warmup);
  URPE_CHECK(decay == DecayKind::constant || total >= warmup,
             "schedule: total (" << total << ") must be ≥ warmup (" << warmup << ") for "
                                 << decay_kind_name(decay) << " decay");
}

float LrSchedule::at(int64_t t) const {
  validate();
  URPE_CHECK(t >= 0, "schedule: step must be ≥ 0, got " << t);
  const double peak = peak_lr, end = end_lr;
  if (t < warmup) return static_cast<float>(peak * static_cast<double>(t) / static_cast<double>(warmup));
  if (decay == DecayKind::constant) return peak_lr;
  if (total == warmup) return t == warmup ? peak_lr : end_lr;  // no decay phase: a step down
  if (t >= total) return end_lr;
  const double progress = static_cast<double>(t - warmup) / static_cast<double>(total - warmup);
  if (decay == DecayKind::linear) return static_cast<float>(end + (peak - end) * (1.0 - progress));
  const double pi = std::acos(-1.0);
  return static_cast<float>(end + 0.5 * (peak - end) * (1.0 + std::cos(pi * progress)));
}

}  // namespace urpe
