// The arithmetic of an optimizer step, as kernels over all parameters at once (one fused launch
// on CUDA). The Optimizer class in train/ owns the state; these only update tensors in place.
//
// Adam (Kingma & Ba) with bias correction, step t ≥ 1, gradient g:
//   AdamW (decoupled):  θ ← θ − lr·wd·θ;   Adam (L2):  g ← g + wd·θ
//   m ← β1·m + (1 − β1)·g,   v ← β2·v + (1 − β2)·g²
//   θ ← θ − lr · (m / (1 − β1ᵗ)) / (√(v / (1 − β2ᵗ)) + ε)
// Global gradient norm: ‖g‖ = √(Σ_tensors Σ_k g_k²); clipping scales every gradient by
//   min(1, max_norm / (‖g‖ + 1e-6)).
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

struct AdamHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled_weight_decay = true;  // AdamW
  int64_t step = 1;                    // t, counted from 1
};

// One parameter and its state: all f32, same shape, same device.
struct AdamSlot {
  Tensor param, grad, m, v;
};

// The scalars of one Adam step as the kernels read them, computed once on the host: the bias
// corrections 1 − βᵗ in double, rounded to float. On CUDA they are read from device memory, not
// passed as kernel arguments: a CUDA graph replays a launch's arguments as captured, so a replayed
// update would repeat the captured step's lr and corrections; from memory it reads the values the
// host uploaded before the replay (bench/cuda_notes.md, "CUDA graphs").
struct AdamStepScalars {
  float lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2;
  int32_t decoupled;  // AdamW (1) or Adam + L2 (0)
};
constexpr int64_t kAdamScalarFloats = sizeof(AdamStepScalars) / sizeof(float);  // 8
AdamStepScalars adam_step_scalars(const AdamHyper& hyper);

// `step_scalars` (CUDA, optional): an f32 tensor of kAdamScalarFloats elements on the slots'
// device that the caller keeps from step to step (a fixed address, as a captured graph needs).
// The step's scalars are uploaded into it (pinned staging: the host does not wait) and the kernel
// reads them there. Undefined: a temporary device buffer per call. Ignored on the CPU.
void adam_update(const std::vector<AdamSlot>& slots, const AdamHyper& hyper, const Tensor& step_scalars = Tensor());
// adam_update's two halves for a CUDA-graph capture (train/loop/captured_step.h), CUDA only (one
// clear error elsewhere, and in a build without CUDA): the upload of the step's scalars into the
// persistent `step_scalars`, done by the host before each replay, and the update's launch that a
// capture records, reading whatever the buffer holds when it runs.
void upload_adam_step_scalars(const Tensor& step_scalars, const AdamHyper& hyper);
void launch_adam_update(const std::vector<AdamSlot>& slots, const Tensor& step_scalars);
// √(Σ g²) over every defined gradient (accumulated in double on the CPU).
float global_grad_norm(const std::vector<Tensor>& grads);
// Σ g² itself, in double (a sharded optimizer adds the ranks' partial sums before the root).
double grad_sum_of_squares(const std::vector<Tensor>& grads);
// Scales every defined gradient in place by `factor`.
void scale_grads(const std::vector<Tensor>& grads, float factor);
// Clips to max_norm; returns the norm before clipping (read back to the host: on CUDA a wait).
float clip_grad_norm(const std::vector<Tensor>& grads, float max_norm);
// The same clip with the norm and the factor kept where the gradients are: returns the norm
// before clipping as a scalar f32 tensor (shape ()) on their device. On CUDA nothing waits for
// the GPU; read the norm (item()) only where it is printed. Bit for bit clip_grad_norm's result.
Tensor clip_grad_norm_on_device(const std::vector<Tensor>& grads, float max_norm);

namespace kernels {
void adam_update_cpu(const std::vector<AdamSlot>& slots, const AdamHyper& hyper);
void adam_update_cuda(const std::vector<AdamSlot>& slots, const AdamHyper& hyper,
                      const Tensor& step_scalars = Tensor());
// adam_update_cuda's two halves with a persistent step_scalars, for a CUDA-graph capture: the
// upload is what the host does before each replay (outside the graph: a captured copy would read
// its staging block again at every replay); the launch is what a capture records, and reads
// whatever the buffer holds when it runs.
void upload_adam_step_scalars_cuda(const Tensor& step_scalars, const AdamHyper& hyper);
void launch_adam_update_cuda(const std::vector<AdamSlot>& slots, const Tensor& step_scalars);
// Σ g² over all tensors (the CUDA version reduces per-block partials in a fixed order).
double sum_of_squares_cpu(const std::vector<Tensor>& tensors);
double sum_of_squares_cuda(const std::vector<Tensor>& tensors);
// norm: shape (), on the gradients' device.
void clip_grad_norm_cpu(const std::vector<Tensor>& grads, float max_norm, Tensor& norm);
void clip_grad_norm_cuda(const std::vector<Tensor>& grads, float max_norm, Tensor& norm);
void scale_in_place_cpu(const Tensor& x, float factor);
void scale_in_place_cuda(const Tensor& x, float factor);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// Adam over n parameters: reads θ, g, m, v and writes θ, m, v (28 bytes per parameter); FLOPs per
// parameter: m 3, v 4, the update 7 (two bias corrections, √, + ε, ÷, × lr, −), weight decay 2.
inline profile::Cost adam_cost(int64_t n, bool weight_decay) {
  return {(14.0 + (weight_decay ? 2.0 : 0.0)) * double(n), 7 * profile::kElementBytes * double(n)};
}
// Σ g² over n elements: reads them, 2 operations each. Scaling n elements in place: reads and
// writes them, one multiply each.
inline profile::Cost sum_of_squares_cost(int64_t n) { return {2.0 * double(n), profile::kElementBytes * double(n)}; }
inline profile::Cost scale_in_place_cost(int64_t n) { return {double(n), 2 * profile::kElementBytes * double(n)}; }

}  // namespace urpe
