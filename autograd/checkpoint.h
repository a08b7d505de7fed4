// Recompute instead of store (activation checkpointing). `checkpoint(op, fn, inputs)` runs fn
// without recording, so none of fn's intermediate tensors are kept for backward; only `inputs`
// are (the node holds them). Backward runs fn again, this time recorded, on detached copies of
// the inputs and back-propagates the output gradient through that fresh graph.
//
// Why: the FFN's hidden activation is the largest tensor a training step keeps (d_ff = 4·d wide).
// Kept, it costs twice: GELU saves its input h and fc2 saves GELU's output y = gelu(h). With
// checkpoint(gelu → fc2) only h is kept and y is rebuilt in backward from h (one elementwise
// pass), half of that memory for a few percent of one GEMM's time.
//
// Exactness: backward calls the same ops, with the same inputs, in the same order as the
// unrecorded graph would have, so every gradient is bit-identical to running fn recorded. fn must
// be deterministic (dropout inside it takes its seed from outside, so the replay draws the same
// mask) and must not read state that changes between forward and backward.
#pragma once
#include <functional>
#include <vector>

#include "tensor/tensor.h"

namespace urpe::autograd {

using CheckpointFn = std::function<Tensor(const std::vector<Tensor>& inputs)>;

// fn(inputs), with a single node named `op` in the graph in place of fn's own nodes. Without
// gradients (NoGrad, or no input requires one) this is just fn(inputs). Parameters fn uses must
// be among `inputs`: gradients reach only tensors passed there.
Tensor checkpoint(const char* op, CheckpointFn fn, std::vector<Tensor> inputs);

}  // namespace urpe::autograd
