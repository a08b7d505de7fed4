// The captured training step (train/loop/captured_step.h): eager warm-up, one capture, replays.
#include "train/loop/captured_step.h"

#include <cstdio>

#include "tensor/cuda_backend.h"
#include "tensor/error.h"
#include "train/optim/optimizer.h"

namespace urpe {

CapturedSteps::CapturedSteps(TrainingTask& task, Adam& optimizer, const Device& device)
    : task_(task), optimizer_(optimizer), device_(device) {
  URPE_CHECK(device_.is_cuda(), "cuda_graph = on: a CUDA graph needs device = cuda, got " << device_.name());
}

CapturedSteps::~CapturedSteps() = default;

size_t CapturedSteps::pool_bytes() const { return graph_ ? cuda::graph_pool_bytes(*graph_) : 0; }

// The step's batch into the static buffers: the same addresses every step (a graph replays its
// pointers), allocated at the first step, written by stream-ordered uploads from pinned staging.
void CapturedSteps::copy_batch(const std::vector<Tensor>& host) {
  if (inputs_.empty())
    for (const Tensor& t : host) inputs_.push_back(Tensor::empty(t.shape(), t.dtype(), device_));
  URPE_CHECK(host.size() == inputs_.size(), "cuda_graph = on: the step's batch has " << host.size()
                                                << " tensors, the captured step " << inputs_.size());
  for (size_t k = 0; k < host.size(); ++k) {
    URPE_CHECK(host[k].shape() == inputs_[k].shape() && host[k].dtype() == inputs_[k].dtype(),
               "cuda_graph = on: batch tensor " << k << " is " << host[k].describe() << ", the captured step's "
                                                << inputs_[k].describe() << " (a graph replays one shape)");
    inputs_[k].copy_from(host[k]);
  }
}

CapturedSteps::Result CapturedSteps::run(int64_t step, float lr, TrainingProgress& progress) {
  copy_batch(task_.draw_batch(step, progress));
  if (graph_) return replay(lr, progress);
  if (fell_back_ || eager_steps_ < kEagerSteps) {
    // The last warm-up step counts the blocks the step needs: the graph's pool gets them before
    // the capture, which may not call cudaMalloc.
    const bool count = !fell_back_ && ++eager_steps_ == kEagerSteps;
    if (count) cuda::begin_allocation_demand(device_.context());
    const Result r = eager(lr, progress);
    if (count) demand_ = cuda::end_allocation_demand(device_.context());
    return r;
  }
  return capture(lr, progress);
}

// The step as the loop runs it without the switch, on the static inputs: the loss is read after
// the update is queued.
CapturedSteps::Result CapturedSteps::eager(float lr, TrainingProgress& progress) {
  const StepOutput out = task_.step_on(inputs_, progress);
  out.loss.backward();
  optimizer_.step(lr);
  return {out.loss.item(), out.units};
}

CapturedSteps::Result CapturedSteps::capture(float lr, TrainingProgress& progress) {
  const Rng dropout_before = progress.dropout_rng;
  optimizer_.prepare_captured_step(lr);  // outside the graph, before it
  cuda::Context* context = device_.context();
  try {
    cuda::begin_capture(context, demand_);
    const StepOutput out = task_.step_on(inputs_, progress);
    out.loss.backward();
    optimizer_.record_captured_step();
    graph_ = cuda::end_capture(context);
    loss_ = out.loss.detach();  // its block is the pool's: every replay writes the loss there
    units_ = out.units;
  } catch (const Error& e) {
    // Nothing captured has run: put back what the host counted and run this step eagerly.
    cuda::abort_capture(context);
    graph_.reset();
    optimizer_.cancel_captured_step();
    optimizer_.zero_grad();  // the capture's gradients were never computed
    progress.dropout_rng = dropout_before;
    fell_back_ = true;
    failure_ = e.what();
    std::fprintf(stderr, "cuda_graph: the training step could not be captured; every step runs eagerly: %s\n",
                 e.what());
    return eager(lr, progress);
  }
  dropout_draws_ = progress.dropout_rng.offset() - dropout_before.offset();
  cuda::launch_graph(*graph_);
  return {loss_.item(), units_};
}

// The host's part of a replayed step, then one launch and the loss read.
CapturedSteps::Result CapturedSteps::replay(float lr, TrainingProgress& progress) {
  optimizer_.prepare_captured_step(lr);
  // The captured dropouts read their seeds from the mark the loop uploaded for this step, at
  // their captured deltas: the stream moves past them as the eager step would have.
  progress.dropout_rng = Rng(progress.dropout_rng.seed(), progress.dropout_rng.offset() + dropout_draws_);
  cuda::launch_graph(*graph_);
  return {loss_.item(), units_};
}

}  // namespace urpe
