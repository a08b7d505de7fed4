// A training step captured once as a CUDA graph and replayed every step after (cuda_graph = on;
// docs/cuda.md#cuda-graphs). Why: a steady step is hundreds of small launches whose host-side
// cost (dispatch, autograd, allocation) can leave the GPU idle between kernels; a graph launches
// them all in one call. The loop (train/loop/training_loop.cpp) hands every step to CapturedSteps
// when the switch is on:
//
//   steps 1 … kEagerSteps   eager, on the static inputs: the caching allocator caches what the step
//                           allocates, the model builds its cached maps, the table cache fills;
//   step kEagerSteps + 1    captured (the stream records instead of running; every allocation
//                           from the graph's private pool, tensor/cuda_context.h), then launched;
//   every later step        the host part only, then one launch.
//
// The host part of every step, outside the graph: the batch drawn on the host
// (TrainingTask::draw_batch) and copied into the static input buffers (fixed addresses, pinned
// staging, no wait); the dropout mark of the step (done by the loop before) and, for a replay, the
// dropout stream advanced by the captured step's draws; Adam's step scalars uploaded
// (Adam::prepare_captured_step). After the launch the loss is read: the step's one host wait.
// A capture that fails (an op that reads the device, uploads or allocates beyond the cache)
// is said once on stderr and the run goes on eagerly with the same numbers.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/cuda_backend.h"
#include "tensor/device.h"
#include "tensor/tensor.h"
#include "train/loop/training_loop.h"

namespace urpe {

class Adam;

class CapturedSteps {
 public:
  static constexpr int kEagerSteps = 2;  // eager warm-up steps before the capture
  CapturedSteps(TrainingTask& task, Adam& optimizer, const Device& device);
  ~CapturedSteps();
  CapturedSteps(const CapturedSteps&) = delete;
  CapturedSteps& operator=(const CapturedSteps&) = delete;

  struct Result {
    double loss = 0, units = 0;
  };
  // One optimizer step with learning rate lr: the batch of `step`, forward, backward, clip, Adam.
  // The gradients must have been dropped (zero_grad) and the dropout step marked before.
  Result run(int64_t step, float lr, TrainingProgress& progress);

  bool replaying() const { return graph_ != nullptr; }
  bool fell_back() const { return fell_back_; }
  const std::string& failure() const { return failure_; }  // why the capture failed (empty: it did not)
  size_t pool_bytes() const;                               // the graph pool's class bytes (0 before)

 private:
  void copy_batch(const std::vector<Tensor>& host);
  Result eager(float lr, TrainingProgress& progress);
  Result capture(float lr, TrainingProgress& progress);
  Result replay(float lr, TrainingProgress& progress);

  TrainingTask& task_;
  Adam& optimizer_;
  Device device_;
  std::vector<Tensor> inputs_;  // the static input buffers on the device
  int eager_steps_ = 0;
  cuda::CapturedGraphPtr graph_;
  Tensor loss_;                  // the captured step's loss (in the pool: each replay writes it)
  double units_ = 0;
  uint64_t dropout_draws_ = 0;   // offsets of the dropout stream one step takes
  cuda::AllocationDemand demand_;  // blocks per size class the last warm-up step needed
  bool fell_back_ = false;
  std::string failure_;
};

}  // namespace urpe
