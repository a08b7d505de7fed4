// Activation checkpointing (see checkpoint.h): forward unrecorded, backward replays fn recorded.
#include "autograd/checkpoint.h"

#include "autograd/node.h"

namespace urpe::autograd {

Tensor checkpoint(const char* op, CheckpointFn fn, std::vector<Tensor> inputs) {
  if (!needs_grad(inputs)) return fn(inputs);
  Tensor out;
  {
    NoGrad no_grad;  // fn's intermediates die here instead of living in the graph
    out = fn(inputs);
  }
  // ---- backward: rebuild fn's graph on detached leaves, back-propagate g through it ----
  return record(out, op, inputs, [fn, inputs](const Tensor& g) {
    std::vector<Tensor> leaves;
    leaves.reserve(inputs.size());
    for (const Tensor& in : inputs) {
      Tensor leaf = in.defined() ? in.detach() : Tensor();
      if (leaf.defined() && in.requires_grad()) leaf.set_requires_grad(true);
      leaves.push_back(leaf);
    }
    Tensor replay = fn(leaves);  // recorded: the engine runs backward with gradients enabled
    URPE_CHECK(replay.requires_grad(), "checkpoint: the replay of the forward recorded no graph");
    replay.backward(g);
    std::vector<Tensor> grads;
    grads.reserve(leaves.size());
    for (Tensor& leaf : leaves) {
      // Moved out, so the engine finds it exclusively owned and adopts it without a copy.
      grads.push_back(leaf.defined() ? Tensor(std::move(leaf.impl().grad)) : Tensor());
    }
    return grads;
  });
}

}  // namespace urpe::autograd
