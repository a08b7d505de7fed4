// Helpers shared by the golden-fixture suites (encoder, Transformer-XL, Graphormer): where the
// fixtures are, how to read their metadata, and the one error measure they are judged by.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "models/parameters.h"
#include "tensor/tensor.h"
#include "base/io/safetensors.h"

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

// Loads every "param.<name>" tensor of the fixture into the model's parameter of that name, after
// checking that the fixture holds exactly the model's parameters, with the same shapes.
inline void load_fixture_parameters(const TensorFile& f, const ParameterSet& parameters) {
  int64_t fixture_params = 0;
  for (const auto& [tensor_name, t] : f.tensors) fixture_params += tensor_name.rfind("param.", 0) == 0;
  CHECK(fixture_params == static_cast<int64_t>(parameters.items().size()));
  for (const auto& [pname, p] : parameters.items()) {
    INFO("parameter " << pname);
    REQUIRE(f.contains("param." + pname));
    REQUIRE(f.at("param." + pname).shape() == p.shape());
    p.copy_from(f.at("param." + pname));  // p is a handle: this writes the model's storage
  }
}

// A scalar loss within 1e-4 relative error of the fixture's tensor `name`.
inline void check_fixture_loss(const TensorFile& f, const std::string& name, const Tensor& loss) {
  const float expected = f.at(name).item();
  CHECK(std::fabs(loss.item() - expected) < 1e-4 * std::fabs(expected));
}

// After backward: every parameter has a gradient, within 1e-4 relative error of "grad.<name>".
inline void check_fixture_gradients(const TensorFile& f, const ParameterSet& parameters) {
  for (const auto& [pname, p] : parameters.items()) {
    INFO("gradient of " << pname);
    REQUIRE(p.grad().defined());
    CHECK(relative_error(p.grad(), f.at("grad." + pname)) < 1e-4);
  }
}

}  // namespace urpe::test
