// Reverse-mode autograd. A differentiable op that runs while gradients are wanted records a Node:
// its inputs and a backward function that maps the gradient of the op's output to one gradient
// per input (saved tensors live inside the function's captures). Tensor::backward() walks the
// nodes in reverse topological order and accumulates `.grad` on leaves that require it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe::autograd {

// grad_output has the op's output shape; returns one tensor per input, undefined where the
// input needs no gradient (the engine never asks for gradients of i32 inputs).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

struct Node {
  std::string op;              // op name: shown in errors and NVTX ranges
  // The op's inputs as graph edges: leaves that require a gradient as themselves (their .grad is
  // accumulated), every other input as a stand-in without data (`without_data`), so the graph
  // keeps an activation alive only where a backward function captured it because it needs it.
  std::vector<Tensor> inputs;
  BackwardFn backward;
  // The model scopes open when the op ran (per-op profiler only, else null): its backward is
  // recorded under the same names (tensor/op_profile.h).
  profile::ScopePath scope;
};

// A stand-in for t without its data: the same shape, dtype, device, requires_grad, producing node
// and name, on an empty storage. What the graph needs of a tensor whose values its backward
// does not read (a residual add's operands, a permute's input).
Tensor without_data(const Tensor& t);

// Is recording on? Off inside a NoGrad scope (evaluation, optimizer steps).
bool grad_enabled();

class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};

// True when recording is on and some input requires a gradient.
bool needs_grad(const std::vector<Tensor>& inputs);

// Attaches a Node to `output` when needs_grad(inputs); returns output either way. Every op's
// public function ends with this call.
Tensor record(Tensor output, const char* op, std::vector<Tensor> inputs, BackwardFn backward);

}  // namespace urpe::autograd
