// Learning-rate schedules: linear warm-up to a peak, then linear or cosine decay to end_lr (or a
// constant peak). t is the number of the update about to be taken (1 for the first; t = 0 gives
// the value before any update), W = warmup, T = total:
//   warm-up, t < W:           lr(t) = peak · t / W
//   linear,  W ≤ t ≤ T:       lr(t) = end + (peak − end) · (T − t) / (T − W)
//   cosine,  W ≤ t ≤ T:       lr(t) = end + ½ · (peak − end) · (1 + cos(π · (t − W) / (T − W)))
//   constant, t ≥ W:          lr(t) = peak
//   linear / cosine, t ≥ T:   lr(t) = end       (when T = W: peak at t = W, end after it)
// With end = 0 the cosine branch is ½·peak·(1 + cos(π·τ/T')), τ = t − W, T' = T − W; the linear
// branch is fairseq's polynomial_decay with power 1 (the synthetic tasks and Graphormer) and the
// cosine branch is Transformer-XL's cosine schedule after its warm-up.
#pragma once
#include <cstdint>
#include <string>

namespace urpe {

enum class DecayKind { linear, cosine, constant };

// "linear", "cosine" or "constant"; anything else is an error listing the three.
DecayKind parse_decay_kind(const std::string& text);
const char* decay_kind_name(DecayKind kind);

struct LrSchedule {
  float peak_lr = 1e-3f;
  int64_t warmup = 0;  // W ≥ 0
  int64_t total = 1;   // T ≥ W (ignored by constant)
  float end_lr = 0.0f;
  DecayKind decay = DecayKind::linear;

  // Throws urpe::Error naming the bad field.
  void validate() const;
  // lr(t) for t ≥ 0 by the formulas above.
  float at(int64_t t) const;
};

}  // namespace urpe
