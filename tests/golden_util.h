// Helpers shared by the golden-fixture suites (encoder, Transformer-XL, Graphormer): where the
// fixtures are, how to read their metadata, and the one error measure they are judged by.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "tensor/tensor.h"
#include "train/io/safetensors.h"

namespace urpe::test {

// ‖a − b‖ / max(‖b‖, floor) over all elements. The absolute floor is there because some reference
// gradients are exactly zero in exact arithmetic (the key bias: softmax ignores a shift shared by
// a whole row; embedding rows no input uses), and float32 leaves ~1e-9 there, which no relative
// bound can judge.
inline double relative_error(const Tensor& a, const Tensor& b, double floor = 1e-3) {
  const std::vector<float> x = a.to_vector_f32(), y = b.to_vector_f32();
  REQUIRE(x.size() == y.size());
  double diff = 0, norm = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    diff += (static_cast<double>(x[k]) - y[k]) * (static_cast<double>(x[k]) - y[k]);
    norm += static_cast<double>(y[k]) * y[k];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), floor);
}

// tests/fixtures/<file> in the source tree.
inline std::string fixture_path(const std::string& file) {
  return std::string(URPE_SOURCE_DIR) + "/tests/fixtures/" + file;
}

inline int64_t meta_int(const TensorFile& f, const std::string& key) { return std::stoll(f.meta(key)); }

}  // namespace urpe::test
