// The first NaN or infinity of a set of tensors (see finite_check.h).
#include "train/loop/finite_check.h"

#include <cmath>
#include <sstream>

namespace urpe {

std::string NonFiniteValue::describe() const {
  if (!found) return "";
  std::ostringstream out;
  out << "tensor '" << tensor << "' holds " << (std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf")
      << " (element " << index << " of " << numel << ")";
  return out.str();
}

NonFiniteValue first_non_finite(const std::vector<NamedTensor>& tensors) {
  NonFiniteValue bad;
  for (const auto& [name, tensor] : tensors) {
    if (!tensor.defined() || tensor.dtype() != DType::f32) continue;
    const Tensor host = tensor.cpu();
    const float* values = host.f32();
    const int64_t n = host.numel();
    for (int64_t k = 0; k < n; ++k)
      if (!std::isfinite(values[k])) {
        bad.found = true;
        bad.tensor = name;
        bad.index = k;
        bad.value = values[k];
        bad.numel = n;
        return bad;
      }
  }
  return bad;
}

}  // namespace urpe
