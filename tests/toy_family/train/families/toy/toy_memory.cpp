// The toy's parameters (width weights and a bias) and its largest tensor (one batch of features).
#include "train/families/toy/toy_memory.h"

namespace urpe {

MemoryEstimate estimate_toy_memory(const Config& config) {
  using size_terms::key_factor;
  using size_terms::value_of;
  MemoryEstimate e;
  e.parameters = {{"the regression weights and bias", {SizeFactor{"(width + 1)", value_of(config, "width") + 1, 1, {"width"}}}}};
  e.activations = {{"the batch's features", {key_factor(config, "batch"), key_factor(config, "width")}}};
  return e;
}

}  // namespace urpe
