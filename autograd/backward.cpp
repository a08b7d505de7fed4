// The backward pass: topological order over recorded nodes, then one sweep from the output,
// summing the gradients that reach each tensor from all its uses.
#include <unordered_map>
#include <unordered_set>

#include "autograd/node.h"
#include "tensor/cuda_backend.h"
#include "tensor/nvtx_range.h"

namespace urpe {

namespace autograd {

static thread_local bool g_grad_enabled = true;  // per thread, like a stack of NoGrad scopes

bool grad_enabled() { return g_grad_enabled; }
NoGrad::NoGrad() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGrad::~NoGrad() { g_grad_enabled = previous_; }

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor without_data(const Tensor& t) {
  if (!t.defined()) return t;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(0, t.device());  // no bytes: nothing allocated
  impl->shape = t.shape();
  impl->dtype = t.dtype();
  impl->requires_grad = t.requires_grad();
  impl->grad_fn = t.grad_fn();
  impl->name = t.name();
  return Tensor(std::move(impl));
}

Tensor record(Tensor output, const char* op, std::vector<Tensor> inputs, BackwardFn backward) {
  if (!needs_grad(inputs)) return output;
  // Only a leaf that requires a gradient is kept whole (its .grad lives on it). Any other input
  // is an edge to its node (or to nothing): its data stays alive only if `backward` captured it.
  for (Tensor& in : inputs)
    if (in.defined() && !(in.requires_grad() && !in.grad_fn())) in = without_data(in);
  auto node = std::make_shared<Node>();
  node->op = op;
  node->inputs = std::move(inputs);
  node->backward = std::move(backward);
  node->scope = profile::current_scope_path();
  output.impl().grad_fn = std::move(node);
  output.impl().requires_grad = true;
  return output;
}

// total += g (same dtype, f32 or bf16, same shape and device); `total` may be undefined (first contribution).
// g is taken by value: when the caller hands over the only reference to g and to its storage
// (no view, no saved tensor, no other gradient shares it), the first contribution adopts g's
// buffer instead of copying it. Otherwise it is copied, since later contributions are added
// in place and must not write into memory something else still reads.
static void accumulate(std::shared_ptr<TensorImpl>& total, Tensor g, const Tensor& like,
                       const std::string& op) {
  URPE_CHECK(g.shape() == like.shape(), "backward of '" << op << "' returned a gradient "
                                            << shape_str(g.shape()) << " for an input "
                                            << like.describe());
  // A gradient has its tensor's dtype (bf16 for a bf16 activation, as in PyTorch).
  URPE_CHECK(g.dtype() == like.dtype(), "backward of '" << op << "' returned a "
                                            << dtype_name(g.dtype()) << " gradient for an input "
                                            << like.describe());
  if (!total) {
    const bool exclusive = g.impl_ptr().use_count() == 1 && g.impl().storage.use_count() == 1;
    if (exclusive) {  // a fresh impl: g's own autograd state (if any) is not carried over
      auto owned = std::make_shared<TensorImpl>();
      owned->storage = std::move(g.impl().storage);
      owned->shape = g.shape();
      owned->dtype = g.dtype();
      total = std::move(owned);
    } else {
      total = g.clone().impl_ptr();
    }
    return;
  }
  Tensor t(total);
  const profile::OpRange range("accumulate_grad", t.device());
  // total += g: one add per element; reads both, writes total.
  URPE_PROFILE_COST((profile::Cost{double(t.numel()), 3.0 * double(dtype_size(t.dtype())) * double(t.numel())}));
  if (t.dtype() == DType::bf16) {  // widened, summed in FP32, rounded once (RNE)
    if (t.device().is_cpu()) {
      bf16* dst = t.data<bf16>();
      const bf16* src = g.data<bf16>();
      for (int64_t k = 0; k < t.numel(); ++k) dst[k] = to_bf16(to_float(dst[k]) + to_float(src[k]));
    } else {
      cuda::accumulate_bf16(t.device().context(), t.data<bf16>(), g.data<bf16>(), static_cast<size_t>(t.numel()));
    }
    return;
  }
  if (t.device().is_cpu()) {
    float* dst = t.f32();
    const float* src = g.f32();
    const int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t k = 0; k < n; ++k) dst[k] += src[k];
  } else {
    cuda::accumulate_f32(t.device().context(), t.f32(), g.f32(), static_cast<size_t>(t.numel()));
  }
}

}  // namespace autograd

void Tensor::backward(const Tensor& gradient) const {
  using autograd::Node;
  URPE_CHECK(requires_grad(), "backward: " << describe() << " does not require a gradient "
                                           "(no input of the computation requires one)");
  Tensor seed = gradient;
  if (!seed.defined()) {
    URPE_CHECK(numel() == 1, "backward: " << describe()
                                          << " is not a scalar; pass the output gradient");
    seed = Tensor::ones(shape(), device());
  }
  check_same_shape("backward", *this, seed);
  URPE_CHECK(seed.dtype() == dtype(), "backward: the gradient " << seed.describe() << " of " << describe()
                                                                << " must have its dtype");
  if (!grad_fn()) {  // a leaf: its gradient is the seed itself
    autograd::accumulate(impl().grad, seed, *this, "backward");
    return;
  }

  // Topological order by iterative depth-first search (deep graphs must not overflow the stack).
  std::vector<Node*> order;
  std::unordered_set<Node*> visited;
  std::vector<std::pair<Node*, size_t>> stack{{grad_fn().get(), 0}};
  visited.insert(grad_fn().get());
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const Tensor& in = node->inputs[next++];
      if (in.defined() && in.grad_fn() && visited.insert(in.grad_fn().get()).second)
        stack.push_back({in.grad_fn().get(), 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }

  // Per-op profiler: everything below is the backward phase, each node under its forward scopes.
  const profile::PhaseRange phase(profile::Phase::backward);
  struct LeaveScopes {
    ~LeaveScopes() {
      if (profile::Recorder* recorder = profile::active()) recorder->enter_scopes(nullptr);
    }
  } leave_scopes;
  std::unordered_map<Node*, std::shared_ptr<TensorImpl>> grads;  // gradient of each node's output
  grads[grad_fn().get()] = seed.clone().impl_ptr();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    auto found = grads.find(node);
    if (found == grads.end()) continue;  // no gradient reached this node
    std::vector<Tensor> input_grads;
    {
      // Free as we go; grad_out's scope ends before accumulation, so a gradient that is a view
      // of it (reshape's backward) is then its only owner and can be adopted without a copy.
      const Tensor grad_out(std::move(found->second));
      grads.erase(found);
      if (profile::Recorder* recorder = profile::active()) recorder->enter_scopes(node->scope);
      const std::string name = node->op + " backward";
      const NvtxRange range(grad_out.device(), name);
      const profile::OpRange op_range(name, grad_out.device());
      input_grads = node->backward(grad_out);
    }
    URPE_CHECK(input_grads.size() == node->inputs.size(),
               "backward of '" << node->op << "' returned " << input_grads.size()
                               << " gradients for " << node->inputs.size() << " inputs");
    for (size_t k = 0; k < input_grads.size(); ++k) {
      const Tensor& in = node->inputs[k];
      Tensor& g = input_grads[k];
      if (!in.defined() || !in.requires_grad() || !g.defined()) continue;
      if (in.grad_fn()) autograd::accumulate(grads[in.grad_fn().get()], std::move(g), in, node->op);
      else autograd::accumulate(in.impl().grad, std::move(g), in, node->op);
    }
  }
}

}  // namespace urpe
