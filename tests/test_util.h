// Shared helpers for the doctest suites: seeded random inputs (never zeros) and a gradcheck
// assertion that prints the first mismatching element.
#pragma once
#include <cmath>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/node.h"
#include "doctest/doctest.h"
#include "tensor/tensor.h"

namespace urpe::test {

// Uniform in [-1, 1) (or [low, high)), flagged as requiring a gradient.
inline Tensor random_param(const Shape& shape, uint64_t seed, float low = -1.0f, float high = 1.0f) {
  Rng rng(seed);
  Tensor t = Tensor::uniform(shape, low, high, rng);
  t.set_requires_grad(true);
  return t;
}

inline Tensor random_values(const Shape& shape, uint64_t seed, float low = -1.0f, float high = 1.0f) {
  Rng rng(seed);
  return Tensor::uniform(shape, low, high, rng);
}

inline Tensor random_ids(const Shape& shape, int32_t upper, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> ids(shape_numel(shape));
  for (auto& id : ids) id = static_cast<int32_t>(rng.below(upper));
  return Tensor::from_vector(ids, shape);
}

inline void check_gradients(const autograd::TensorFn& fn, const std::vector<Tensor>& inputs,
                            autograd::GradcheckOptions options = {}) {
  const autograd::GradcheckResult r = autograd::gradcheck(fn, inputs, options);
  INFO(r.message);
  CHECK(r.ok);
}

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector_f32(), y = b.to_vector_f32();
  REQUIRE(x.size() == y.size());
  double m = 0;
  for (size_t k = 0; k < x.size(); ++k) m = std::max(m, std::fabs(static_cast<double>(x[k]) - y[k]));
  return m;
}

}  // namespace urpe::test
