// Public optimizer kernels: validation of the parameter/state lists and dispatch to
// optimizer_kernels_cpu.cpp / _cuda.cu. No autograd: an update is not part of any graph.
#include "ops/optimizer_kernels.h"

#include <cmath>

#include "ops/dispatch.h"

namespace urpe {

namespace {

// The device every defined tensor of the list lives on (the CPU for an empty list).
Device common_device(const char* op, const std::vector<Tensor>& tensors) {
  const Tensor* first = nullptr;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = tensors[k];
    if (!t.defined()) continue;
    URPE_CHECK(t.dtype() == DType::f32,
               op << ": gradient " << k << " " << t.describe() << " must be f32");
    if (!first) first = &t;
    URPE_CHECK(t.device() == first->device(), op << ": gradients on different devices: "
                                                 << first->describe() << " and " << t.describe());
  }
  return first ? first->device() : Device::cpu();
}

// Elements of every defined tensor in the list (the parameters of a slot list).
int64_t total_elements(const std::vector<Tensor>& tensors) {
  int64_t n = 0;
  for (const Tensor& t : tensors)
    if (t.defined()) n += t.numel();
  return n;
}
int64_t total_elements(const std::vector<AdamSlot>& slots) {
  int64_t n = 0;
  for (const AdamSlot& s : slots) n += s.param.numel();
  return n;
}

}  // namespace

AdamStepScalars adam_step_scalars(const AdamHyper& hyper) {
  const double t = static_cast<double>(hyper.step);
  AdamStepScalars s{};
  s.lr = hyper.lr;
  s.beta1 = hyper.beta1;
  s.beta2 = hyper.beta2;
  s.eps = hyper.eps;
  s.weight_decay = hyper.weight_decay;
  s.bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(hyper.beta1), t));
  s.bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(hyper.beta2), t));
  s.decoupled = hyper.decoupled_weight_decay ? 1 : 0;
  return s;
}

void adam_update(const std::vector<AdamSlot>& slots, const AdamHyper& hyper, const Tensor& step_scalars) {
  constexpr const char* op = "adam_update";
  const profile::OpRange range(op, slots.empty() ? Tensor() : slots[0].param);
  URPE_CHECK(hyper.step >= 1, op << ": step must be counted from 1, got " << hyper.step);
  URPE_CHECK(std::isfinite(hyper.lr) && hyper.lr >= 0, op << ": lr must be finite and ≥ 0, got " << hyper.lr);
  URPE_CHECK(hyper.beta1 >= 0 && hyper.beta1 < 1 && hyper.beta2 >= 0 && hyper.beta2 < 1,
             op << ": betas must lie in [0, 1), got (" << hyper.beta1 << ", " << hyper.beta2 << ")");
  URPE_CHECK(hyper.eps > 0, op << ": eps must be > 0, got " << hyper.eps);
  URPE_CHECK(hyper.weight_decay >= 0, op << ": weight_decay must be ≥ 0, got " << hyper.weight_decay);
  if (slots.empty()) return;
  for (size_t k = 0; k < slots.size(); ++k) {
    const AdamSlot& s = slots[k];
    check_dtype(op, "param", s.param, DType::f32);
    check_dtype(op, "grad", s.grad, DType::f32);
    check_dtype(op, "m", s.m, DType::f32);
    check_dtype(op, "v", s.v, DType::f32);
    for (const Tensor* t : {&s.grad, &s.m, &s.v}) {
      URPE_CHECK(t->shape() == s.param.shape() && t->device() == s.param.device(),
                 op << ": slot " << k << ": " << t->describe() << " does not match its parameter "
                    << s.param.describe() << " (same shape and device expected)");
    }
    check_same_device(op, slots[0].param, s.param);
  }
  const Device& device = slots[0].param.device();
  if (step_scalars.defined() && device.is_cuda())
    URPE_CHECK(step_scalars.dtype() == DType::f32 && step_scalars.numel() == kAdamScalarFloats &&
                   step_scalars.device() == device,
               op << ": step_scalars must be " << kAdamScalarFloats << " f32 on the parameters' device "
                  << slots[0].param.device().name() << ", got " << step_scalars.describe());
  URPE_PROFILE_COST(adam_cost(total_elements(slots), hyper.weight_decay > 0));
  URPE_DISPATCH(op, device, kernels::adam_update_cpu(slots, hyper),
                kernels::adam_update_cuda(slots, hyper, step_scalars));
}

void upload_adam_step_scalars(const Tensor& step_scalars, const AdamHyper& hyper) {
  URPE_CHECK(step_scalars.defined() && step_scalars.device().is_cuda(),
             "adam: a captured step's scalars live on a CUDA device (cuda_graph = on needs CUDA)");
  URPE_DISPATCH("adam_step_scalars", step_scalars.device(), (void)0,
                kernels::upload_adam_step_scalars_cuda(step_scalars, hyper));
}

void launch_adam_update(const std::vector<AdamSlot>& slots, const Tensor& step_scalars) {
  URPE_CHECK(step_scalars.defined() && step_scalars.device().is_cuda(),
             "adam: a captured step's update runs on a CUDA device (cuda_graph = on needs CUDA)");
  URPE_DISPATCH("adam_update", step_scalars.device(), (void)0, kernels::launch_adam_update_cuda(slots, step_scalars));
}

double grad_sum_of_squares(const std::vector<Tensor>& grads) {
  const Device device = common_device("global_grad_norm", grads);
  const profile::OpRange range("global_grad_norm", device);
  URPE_PROFILE_COST(sum_of_squares_cost(total_elements(grads)));
  double total = 0;
  URPE_DISPATCH("global_grad_norm", device, total = kernels::sum_of_squares_cpu(grads),
                total = kernels::sum_of_squares_cuda(grads));
  return total;
}

float global_grad_norm(const std::vector<Tensor>& grads) {
  return static_cast<float>(std::sqrt(grad_sum_of_squares(grads)));
}

void scale_grads(const std::vector<Tensor>& grads, float factor) {
  const Device device = common_device("scale_grads", grads);
  const profile::OpRange range("scale_grads", device);
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    URPE_PROFILE_COST(scale_in_place_cost(g.numel()));
    URPE_DISPATCH("scale_grads", device, kernels::scale_in_place_cpu(g, factor),
                  kernels::scale_in_place_cuda(g, factor));
  }
}

// A non-finite norm (an inf or NaN gradient) is returned as it is and the gradients are left
// unscaled: scaling by max_norm/∞ = 0 would hide the problem, so the caller sees it and decides.
float clip_grad_norm(const std::vector<Tensor>& grads, float max_norm) {
  URPE_CHECK(max_norm > 0 && std::isfinite(max_norm),
             "clip_grad_norm: max_norm must be finite and > 0, got " << max_norm);
  const float norm = global_grad_norm(grads);
  if (!std::isfinite(norm)) return norm;
  const double factor = static_cast<double>(max_norm) / (static_cast<double>(norm) + 1e-6);
  if (factor < 1.0) scale_grads(grads, static_cast<float>(factor));
  return norm;
}

Tensor clip_grad_norm_on_device(const std::vector<Tensor>& grads, float max_norm) {
  constexpr const char* op = "clip_grad_norm";
  URPE_CHECK(max_norm > 0 && std::isfinite(max_norm),
             op << ": max_norm must be finite and > 0, got " << max_norm);
  const Device device = common_device(op, grads);
  const profile::OpRange range(op, device);
  Tensor norm = Tensor::empty({}, DType::f32, device);
  const int64_t n = total_elements(grads);
  URPE_PROFILE_COST(sum_of_squares_cost(n) + scale_in_place_cost(n));
  URPE_DISPATCH(op, device, kernels::clip_grad_norm_cpu(grads, max_norm, norm),
                kernels::clip_grad_norm_cuda(grads, max_norm, norm));
  return norm;
}

}  // namespace urpe
