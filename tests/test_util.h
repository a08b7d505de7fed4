// Shared helpers for the doctest suites: seeded random inputs (never zeros) and a gradcheck
// assertion that prints the first mismatching element.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>  // mkdtemp
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "autograd/gradcheck.h"
#include "autograd/node.h"
#include "doctest/doctest.h"
#include "tensor/tensor.h"

namespace urpe::test {

// A fresh directory /tmp/urpe_test_NAME_XXXXXX, removed with everything in it (path empty when
// mkdtemp failed: callers REQUIRE it).
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& name) {
    std::string pattern = "/tmp/urpe_test_" + name + "_XXXXXX";
    if (::mkdtemp(pattern.data())) path = pattern;
  }
  ~TempDir() {
    if (!path.empty()) std::filesystem::remove_all(path);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

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

#if defined(_OPENMP)
// Runs `run` with 1 and then with 3 OpenMP threads (restoring the setting) and checks that every
// result vector is the same, bit for bit: fixed-order reductions and vector loops must not make
// results depend on how the work is split between threads.
inline void check_same_bits_with_1_and_3_threads(
    const std::function<std::vector<std::vector<float>>()>& run) {
  const int previous = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<std::vector<float>> one = run();
  omp_set_num_threads(3);
  const std::vector<std::vector<float>> three = run();
  omp_set_num_threads(previous);
  REQUIRE(one.size() == three.size());
  for (size_t k = 0; k < one.size(); ++k) {
    CAPTURE(k);
    CHECK(one[k] == three[k]);
  }
}
#endif

// CPU-against-device closeness, element by element: NaN where the reference is NaN, the same
// infinity where it is infinite, else finite and within atol + rtol·|ref|. `bad` counts the
// elements that fail, `first` is the first of them (−1: none), `worst` the largest finite |diff|.
// One verdict for the parity suite's check_close and the op table's compare.
struct Closeness {
  int64_t bad = 0, first = -1;
  double worst = 0;
};
inline Closeness closeness(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol) {
  Closeness c;
  for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
    const double ref = want[k], val = got[k];
    bool ok;
    if (std::isnan(ref)) ok = std::isnan(val);
    else if (std::isinf(ref)) ok = val == ref;
    else ok = std::isfinite(val) && std::fabs(val - ref) <= atol + rtol * std::fabs(ref);
    if (!ok) {
      if (c.first < 0) c.first = static_cast<int64_t>(k);
      ++c.bad;
    }
    if (std::isfinite(ref) && std::isfinite(val)) c.worst = std::max(c.worst, std::fabs(val - ref));
  }
  return c;
}

}  // namespace urpe::test
