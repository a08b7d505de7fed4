// Finite-difference gradient check: the test every differentiable op must pass.
// For f(x) = Σ fn(inputs) ⊙ W with a fixed random W, compares the autograd gradient of each f32
// input that requires grad with the central difference (f(x + ε e_k) − f(x − ε e_k)) / 2ε,
// element by element: |analytic − numeric| ≤ atol + rtol·|numeric|. CPU tensors only (the CUDA
// ops are checked by parity against the CPU ops instead).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace urpe::autograd {

struct GradcheckOptions {
  float eps = 1e-2f;
  float atol = 1e-2f;
  float rtol = 1e-2f;
  uint64_t seed = 1234;
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // the first mismatch: input, element, analytic and numeric values
  double max_abs_error = 0;
};

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

GradcheckResult gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace urpe::autograd
