// "Same run, same weights": the trainer tests compare two saved safetensors files (a run split by
// a resume against one that was not, a best checkpoint against its copy) bit for bit, name by name.
#pragma once
#include <cstring>
#include <string>

#include "doctest/doctest.h"
#include "base/io/safetensors.h"

namespace urpe::test {

// Both files hold the same tensor names with the same f32 bytes (memcmp, so -0 ≠ +0 and NaN = NaN
// by bits: a resume must reproduce the run exactly, not approximately).
inline void check_same_saved_tensors(const std::string& path_a, const std::string& path_b) {
  const TensorFile a = load_safetensors(path_a), b = load_safetensors(path_b);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& [name, x] : a.tensors) {
    INFO(name);
    const Tensor& y = b.at(name);
    REQUIRE(x.numel() == y.numel());
    CHECK(std::memcmp(x.impl().storage->data, y.impl().storage->data, x.numel() * 4) == 0);
  }
}

}  // namespace urpe::test
