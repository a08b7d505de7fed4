// The optimizer of every experiment: Adam with bias correction, or AdamW (decoupled weight decay),
// with optional global gradient-norm clipping. It owns the per-parameter moments m, v and the
// step count; the arithmetic is ops/optimizer_kernels.h (one call over all parameters).
//
// One step with learning rate lr (t = number of steps taken, including this one):
//   if clip_norm > 0:  g ← g · min(1, clip_norm / (‖g‖ + 1e-6)),  ‖g‖ over all parameters
//   AdamW:  θ ← θ − lr·wd·θ             Adam (L2):  g ← g + wd·θ
//           (with decay_biases_and_norms = false, wd = 0 for every 1-D parameter: the biases and
//           the LayerNorm gains and biases, which BERT's optimizer excludes from weight decay)
//   m ← β1·m + (1 − β1)·g               v ← β2·v + (1 − β2)·g²
//   θ ← θ − lr · (m / (1 − β1ᵗ)) / (√(v / (1 − β2ᵗ)) + ε)
// A parameter without a gradient in a step is left alone (its m and v too); t counts steps of
// the optimizer, not of each parameter.
//
// Sharded (ZeRO-1, config shard_optimizer = true; train/optim/optimizer_sharded.cpp): with K ranks, each
// rank keeps m and v for its contiguous 1/K of the flat parameter vector only
// (dist::optimizer_shard), receives only that range of the averaged gradient (a reduce-scatter
// instead of the all-reduce), updates that range, and the ranks all-gather the parameters. The
// update is element-wise, so every parameter gets the same values as unsharded: the global norm
// for clipping is the sum of the ranks' partial sums of squares.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/optimizer_kernels.h"  // AdamHyper
#include "tensor/tensor.h"
#include "base/dist/data_parallel.h"

namespace urpe {

struct AdamConfig {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled_weight_decay = true;  // true: AdamW; false: Adam with L2 added to the gradient
  bool decay_biases_and_norms = true;  // false: no weight decay on 1-D parameters (BERT's exclusion)
  float clip_norm = 0.0f;              // > 0: clip the global gradient norm to this before a step
};

class Adam {
 public:
  // params: f32 leaves that require grad (on one device); m and v start at zero beside them.
  Adam(std::vector<Tensor> params, AdamConfig config = {});
  // Sharded over `shard_over`'s ranks (ZeRO-1, above); every rank constructs it with the same
  // parameters. One rank is allowed (it keeps everything, as unsharded). With `device` (NCCL,
  // parameters on a GPU) the gradients and parameters are exchanged on the GPU.
  Adam(std::vector<Tensor> params, AdamConfig config, dist::Communicator& shard_over,
       dist::DeviceCollectives* device = nullptr);

  // One update of every parameter that has a gradient. Returns the global gradient norm before
  // clipping when clip_norm > 0 (it may be inf/NaN: the gradients are then not scaled, see
  // clip_grad_norm), and nothing otherwise: a scalar f32 tensor on the parameters' device
  // (clip_grad_norm_on_device), so that a CUDA step does not wait for the GPU to return it.
  std::optional<Tensor> step(float lr);
  // Sharded only: the step of a data-parallel run on every rank, in place of
  // dist::average_gradients + step(lr): the reduce-scatter of the gradients (this rank's loss is
  // a mean over `weight` targets), the update of this rank's range, the all-gather of the
  // parameters. Returns the global loss and stop flag.
  dist::StepSync step_sharded(float lr, double local_loss, double weight, bool stop_requested);
  bool sharded() const { return comm_ != nullptr; }
  // Floats of m and v this rank holds: 2 × the parameters, or 2 × its range when sharded.
  int64_t moment_elements() const;
  // Drops every parameter's accumulated gradient (the next backward starts from nothing).
  void zero_grad();

  // CUDA graphs (train/loop/captured_step.h): step(lr) in two halves, the same update bit for
  // bit. prepare_captured_step (host, before each launch of a captured step, outside the graph)
  // uploads the scalars of step t + 1 into the buffers and counts the step; record_captured_step
  // is what the capture records: the clip and the update's launch, which read the gradients and
  // the buffers when the graph runs. cancel_captured_step uncounts a prepared step whose capture
  // failed. Unsharded, on CUDA only.
  void prepare_captured_step(float lr);
  void record_captured_step();
  void cancel_captured_step();

  int64_t steps() const { return step_; }
  const std::vector<Tensor>& params() const { return params_; }
  const AdamConfig& config() const { return config_; }

  // The state to checkpoint: "adam.step" (i32, shape (1,)), then "adam.m.<key>" and
  // "adam.v.<key>" per parameter, where <key> is the parameter's name, or "param<k>" (its index)
  // when it has none or the name repeats. The tensors are the live state, not copies. Sharded:
  // the full moments, gathered from every rank (a collective: every rank must call it), so the
  // checkpoint is the same file as an unsharded run's.
  std::vector<std::pair<std::string, Tensor>> state() const;
  // The names of state()'s entries (no collective).
  std::vector<std::string> state_keys() const;
  // Restores a state() from a checkpoint (any device: values are copied onto the parameters'
  // device). Every entry must be present with the right shape; errors name the missing key.
  // Sharded: each rank keeps its range of the full moments.
  void load_state(const std::vector<std::pair<std::string, Tensor>>& state);

 private:
  // Sharded: the pieces of this rank's range, one per parameter it overlaps.
  struct Piece {
    size_t param;          // index into params_
    int64_t offset = 0;    // first element within the parameter
    int64_t length = 0;
    int64_t at = 0;        // first element within this rank's range
  };
  void check_config() const;
  AdamHyper next_step_hyper(float lr) const;
  // The slots of the parameters that have a gradient now, their decay flags and gradients.
  void gather_slots(std::vector<AdamSlot>& slots, std::vector<bool>& decayed, std::vector<Tensor>& grads) const;
  bool two_decay_groups(float weight_decay) const { return !(config_.decay_biases_and_norms || weight_decay == 0.0f); }
  // Whether weight decay applies to `param` (config decay_biases_and_norms, or 2-D and up).
  bool decays(const Tensor& param) const;
  // adam_update of `slots`, with wd = 0 for the slots whose `decayed_slots` entry is false.
  void update_in_decay_groups(const std::vector<AdamSlot>& slots, const std::vector<bool>& decayed_slots,
                              const AdamHyper& hyper) const;
  std::vector<std::pair<std::string, Tensor>> sharded_state() const;
  void check_state(const std::vector<std::pair<std::string, Tensor>>& state) const;
  void load_sharded_state(const std::vector<std::pair<std::string, Tensor>>& state);

  std::vector<Tensor> params_;
  // Unsharded: per parameter. Sharded: per piece, each (length,).
  std::vector<Tensor> m_, v_;
  dist::Communicator* comm_ = nullptr;
  dist::DeviceCollectives* device_ = nullptr;
  std::vector<Piece> pieces_;
  int64_t total_ = 0;  // elements of all parameters
  AdamConfig config_;
  int64_t step_ = 0;
  // CUDA: each decay group's step scalars in device memory (adam_update's step_scalars); CPU: none.
  Tensor step_scalars_[2];
};

}  // namespace urpe
