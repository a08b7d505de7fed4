// The optimizer of every experiment: Adam with bias correction, or AdamW (decoupled weight decay),
// with optional global gradient-norm clipping. It owns the per-parameter moments m, v and the
// step count; the arithmetic is ops/optimizer_kernels.h (one call over all parameters).
//
// One step with learning rate lr (t = number of steps taken, including this one):
//   if clip_norm > 0:  g ← g · min(1, clip_norm / (‖g‖ + 1e-6)),  ‖g‖ over all parameters
//   AdamW:  θ ← θ − lr·wd·θ             Adam (L2):  g ← g + wd·θ
//   m ← β1·m + (1 − β1)·g               v ← β2·v + (1 − β2)·g²
//   θ ← θ − lr · (m / (1 − β1ᵗ)) / (√(v / (1 − β2ᵗ)) + ε)
// A parameter without a gradient in a step is left alone (its m and v too); t counts steps of
// the optimizer, not of each parameter.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace urpe {

struct AdamConfig {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled_weight_decay = true;  // true: AdamW; false: Adam with L2 added to the gradient
  float clip_norm = 0.0f;              // > 0: clip the global gradient norm to this before a step
};

class Adam {
 public:
  // params: f32 leaves that require grad (on one device); m and v start at zero beside them.
  Adam(std::vector<Tensor> params, AdamConfig config = {});

  // One update of every parameter that has a gradient. Returns the global gradient norm before
  // clipping when clip_norm > 0 (it may be inf/NaN: the gradients are then not scaled, see
  // clip_grad_norm), and nothing otherwise.
  std::optional<float> step(float lr);
  // Drops every parameter's accumulated gradient (the next backward starts from nothing).
  void zero_grad();

  int64_t steps() const { return step_; }
  const std::vector<Tensor>& params() const { return params_; }
  const AdamConfig& config() const { return config_; }

  // The state to checkpoint: "adam.step" (i32, shape (1,)), then "adam.m.<key>" and
  // "adam.v.<key>" per parameter, where <key> is the parameter's name, or "param<k>" (its index)
  // when it has none or the name repeats. The tensors are the live state, not copies.
  std::vector<std::pair<std::string, Tensor>> state() const;
  // Restores a state() from a checkpoint (any device: values are copied onto the parameters'
  // device). Every entry must be present with the right shape; errors name the missing key.
  void load_state(const std::vector<std::pair<std::string, Tensor>>& state);

 private:
  std::vector<Tensor> params_;
  std::vector<Tensor> m_, v_;
  std::vector<std::string> keys_;
  AdamConfig config_;
  int64_t step_ = 0;
};

}  // namespace urpe
