// Named parameters of a model, in a fixed order: what the optimizer updates, what a checkpoint
// stores, and what the golden-fixture test compares gradient by gradient.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace urpe {

class ParameterSet {
 public:
  // Registers a leaf tensor under `name` (marks it as requiring a gradient) and returns it.
  Tensor add(const std::string& name, Tensor value) {
    for (const auto& [existing, t] : items_)
      URPE_CHECK(existing != name, "parameter '" << name << "' registered twice");
    value.set_requires_grad(true);
    value.set_name(name);
    items_.emplace_back(name, value);
    return value;
  }
  const std::vector<std::pair<std::string, Tensor>>& items() const { return items_; }
  std::vector<Tensor> tensors() const {
    std::vector<Tensor> out;
    for (const auto& item : items_) out.push_back(item.second);
    return out;
  }
  Tensor find(const std::string& name) const {
    for (const auto& [n, t] : items_)
      if (n == name) return t;
    return Tensor();
  }
  int64_t count() const {
    int64_t total = 0;
    for (const auto& item : items_) total += item.second.numel();
    return total;
  }
  void zero_grad() const {
    for (const auto& item : items_) item.second.zero_grad();
  }

 private:
  std::vector<std::pair<std::string, Tensor>> items_;
};

}  // namespace urpe
