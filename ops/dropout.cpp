// Public dropout: validation, dispatch, autograd. Kernels: dropout_cpu.cpp / dropout_cuda.cu.
// Nothing is saved for backward but (p, seed): the mask is a pure function of (seed, k). On CUDA
// the backward resolves the seed as the forward did (the step's anchor, or the value).
#include "ops/dropout.h"

#include "autograd/node.h"
#include "ops/bf16_values.h"
#include "ops/dispatch.h"

namespace urpe {

DropoutSeed take_dropout_seed(Rng& rng) {
  DropoutSeed s;
  s.from_stream = true;
  s.stream_seed = rng.seed();
  s.offset = rng.offset();
  s.value = rng.next_seed();
  return s;
}

void mark_dropout_step(const Rng& rng, const Device& device) {
  URPE_DISPATCH("mark_dropout_step", device, (void)0, kernels::mark_dropout_step_cuda(device, rng.seed(), rng.offset()));
}

Tensor dropout(const Tensor& x, float p, const DropoutSeed& seed, bool training) {
  check_value_dtype("dropout", "x", x);
  // Checked even when not training, so a bad rate fails on the first call, not the first step.
  URPE_CHECK(p >= 0.0f && p < 1.0f,
             "dropout: the drop probability p must be in [0, 1), got " << p << " (for " << x.describe() << ")");
  if (!training || p == 0.0f) return x;  // no op runs (and none is profiled)
  const profile::OpRange range("dropout", x);

  // ---- forward: y_k = x_k·keep_k/(1 − p) ----
  const DType dtype = x.dtype();
  const double bytes = double(dtype_size(dtype));
  Tensor y = Tensor::empty(x.shape(), dtype, x.device());
  URPE_PROFILE_COST(dropout_cost(x.numel(), bytes));
  URPE_DISPATCH("dropout", x.device(), kernels::dropout_apply_cpu(x, p, seed.value, y),
                kernels::dropout_apply_cuda(x, p, seed, y));
  // ---- backward: ∂x_k = g_k·keep_k/(1 − p), the same mask regenerated from the seed ----
  return autograd::record(y, "dropout", {x}, [p, seed, dtype, bytes](const Tensor& g) {
    Tensor gx = Tensor::empty(g.shape(), dtype, g.device());
    URPE_PROFILE_COST(dropout_cost(g.numel(), bytes));
    URPE_DISPATCH("dropout", g.device(), kernels::dropout_apply_cpu(g, p, seed.value, gx),
                  kernels::dropout_apply_cuda(g, p, seed, gx));
    return std::vector<Tensor>{gx};
  });
}

}  // namespace urpe
