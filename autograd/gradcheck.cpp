// Central finite differences in double-accumulated sums over a float32 function.
#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/node.h"

namespace urpe::autograd {

static double weighted_sum(const Tensor& out, const std::vector<float>& weights) {
  const std::vector<float> v = out.to_vector_f32();
  double total = 0;
  for (size_t k = 0; k < v.size(); ++k) total += static_cast<double>(v[k]) * weights[k];
  return total;
}

GradcheckResult gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  GradcheckResult result;
  for (const Tensor& t : inputs) {
    URPE_CHECK(t.device().is_cpu(), "gradcheck: inputs must be on the cpu, got " << t.describe());
    if (t.requires_grad()) t.impl().grad.reset();
  }
  Tensor out = fn(inputs);
  URPE_CHECK(out.requires_grad(), "gradcheck: the function's output does not require a gradient");
  Rng rng(options.seed);
  const Tensor weights_t = Tensor::uniform(out.shape(), -1.0f, 1.0f, rng);
  const std::vector<float> weights = weights_t.to_vector_f32();
  out.backward(weights_t);

  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.requires_grad()) continue;
    const Tensor analytic_t = x.grad();
    const std::vector<float> analytic =
        analytic_t.defined() ? analytic_t.to_vector_f32() : std::vector<float>(x.numel(), 0.0f);
    float* data = x.f32();
    for (int64_t k = 0; k < x.numel(); ++k) {
      const float saved = data[k];
      double plus, minus;
      {
        NoGrad no_grad;
        data[k] = saved + options.eps;
        plus = weighted_sum(fn(inputs), weights);
        data[k] = saved - options.eps;
        minus = weighted_sum(fn(inputs), weights);
      }
      data[k] = saved;
      const double numeric = (plus - minus) / (2.0 * options.eps);
      const double error = std::fabs(analytic[k] - numeric);
      result.max_abs_error = std::max(result.max_abs_error, error);
      if (result.ok && !(error <= options.atol + options.rtol * std::fabs(numeric))) {
        std::ostringstream msg;
        msg << "input " << i << " (" << x.describe() << ") element " << k << ": analytic "
            << analytic[k] << " vs numeric " << numeric;
        result.ok = false;
        result.message = msg.str();
      }
    }
  }
  return result;
}

}  // namespace urpe::autograd
