// Public fused self-attention block (the maths in urpe_self_attention.h): validation, the
// reference composition (what runs on CUDA, and what the CPU kernels are checked against), and
// autograd for x, the six projection weights and the two tables.
#include "ops/urpe_self_attention.h"

#include <algorithm>
#include <cmath>

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "ops/urpe_attention_checks.h"

namespace urpe {

namespace {

constexpr const char* kOp = "urpe_self_attention";

void validate(const Tensor& x, const SelfAttentionWeights& w, int64_t heads, const UrpeAttentionParams& p,
              const Tensor& logit_bias) {
  check_dtype(kOp, "x", x, DType::f32);
  URPE_CHECK(x.dim() == 3, kOp << ": x " << x.describe() << " must be 3-D (B, N, d)");
  const int64_t d = x.size(2);
  URPE_CHECK(heads > 0, kOp << ": heads must be positive, got " << heads);
  const char* names[] = {"wq", "wk", "wv", "bq", "bk", "bv"};
  const Tensor* tensors[] = {&w.wq, &w.wk, &w.wv, &w.bq, &w.bk, &w.bv};
  URPE_CHECK(w.wq.defined() && w.wq.dim() == 2, kOp << ": wq must be a (D, d) matrix");
  const int64_t D = w.wq.size(0);
  URPE_CHECK(D % heads == 0, kOp << ": heads (" << heads << ") must divide the projection width D = " << D);
  for (int t = 0; t < 6; ++t) {
    URPE_CHECK(tensors[t]->defined(), kOp << ": " << names[t] << " is missing (the fused block needs all six)");
    check_dtype(kOp, names[t], *tensors[t], DType::f32);
    check_same_device(kOp, x, *tensors[t]);
    const Shape expected = t < 3 ? Shape{D, d} : Shape{D};
    URPE_CHECK(tensors[t]->shape() == expected, kOp << ": " << names[t] << " " << tensors[t]->describe()
                                                    << " must have shape " << shape_str(expected)
                                                    << " for x " << x.describe() << " and wq " << w.wq.describe());
  }
  URPE_CHECK(std::isfinite(p.scale), kOp << ": scale must be finite, got " << p.scale);
  if (logit_bias.defined()) {
    check_dtype(kOp, "logit_bias", logit_bias, DType::f32);
    check_same_device(kOp, x, logit_bias);
    const Shape expected{x.size(0), heads, x.size(1), x.size(1)};
    URPE_CHECK(logit_bias.shape() == expected, kOp << ": logit_bias " << logit_bias.describe() << " must have shape "
                                                   << shape_str(expected) << " (B, H, N, N) for x " << x.describe());
  }
  check_urpe_attention_tables({kOp, "x", &x, nullptr, nullptr, x.size(0), heads, x.size(1), x.size(1)}, p);
}

// [a; b; c] along rows, on the CPU: (3·rows, cols), or (3·n,) for vectors.
Tensor stack_rows(const Tensor& a, const Tensor& b, const Tensor& c) {
  Shape shape = a.shape();
  shape[0] *= 3;
  Tensor out = Tensor::empty(shape, DType::f32, a.device());
  float* dst = out.f32();
  for (const Tensor* t : {&a, &b, &c}) dst = std::copy(t->f32(), t->f32() + t->numel(), dst);
  return out;
}

// Part `which` (0, 1, 2) of a stacked (3·rows, …) tensor as its own tensor shaped like `like`.
Tensor unstack_rows(const Tensor& stacked, int which, const Tensor& like) {
  Tensor out = Tensor::empty(like.shape(), DType::f32, stacked.device());
  const float* src = stacked.f32() + which * like.numel();
  std::copy(src, src + like.numel(), out.f32());
  return out;
}

}  // namespace

Tensor urpe_self_attention_reference(const Tensor& x, const SelfAttentionWeights& w, int64_t heads,
                                     const UrpeAttentionParams& positional, const Tensor& logit_bias) {
  const int64_t batch = x.size(0), n = x.size(1), D = w.wq.size(0), dh = D / heads;
  auto split_heads = [&](const Tensor& t) {  // (B, N, D) → (B, H, N, dh)
    return permute(reshape(t, {batch, n, heads, dh}), {0, 2, 1, 3});
  };
  const Tensor q = split_heads(linear(x, w.wq, w.bq));
  const Tensor k = split_heads(linear(x, w.wk, w.bk));
  const Tensor v = split_heads(linear(x, w.wv, w.bv));
  Tensor scores = matmul(q, k, false, true);  // (B, H, N, N)
  UrpeAttentionParams core = positional;
  if (logit_bias.defined()) {  // z = S·scale + L (+ B[map] in the core, scale 1)
    scores = add(scale(scores, positional.scale), logit_bias);
    core.scale = 1.0f;
  }
  const Tensor attention = urpe_attention(scores, core);  // (B, H, N, N)
  return reshape(permute(matmul(attention, v), {0, 2, 1, 3}), {batch, n, D});
}

Tensor urpe_self_attention(const Tensor& x, const SelfAttentionWeights& w, int64_t heads,
                           const UrpeAttentionParams& positional, const Tensor& logit_bias) {
  const profile::OpRange range(kOp, x);
  validate(x, w, heads, positional, logit_bias);
  if (x.device().is_cuda()) return urpe_self_attention_reference(x, w, heads, positional, logit_bias);
  const int64_t batch = x.size(0), n = x.size(1), d = x.size(2), D = w.wq.size(0), rows = batch * n;
  const Tensor wcat = stack_rows(w.wq, w.wk, w.wv);  // (3D, d)
  const Tensor bcat = stack_rows(w.bq, w.bk, w.bv);  // (3D,)
  const bool saving = autograd::needs_grad({x, w.wq, w.wk, w.wv, w.bq, w.bk, w.bv, positional.bias_table,
                                            positional.c_table, logit_bias});
  Tensor qkv = Tensor::empty({rows, 3 * D});                                       // [Q|K|V]
  Tensor probs = saving ? Tensor::empty({batch, heads, n, n}) : Tensor();          // P
  Tensor context = Tensor::empty({batch, n, D});
  const Tensor x2 = x.view({rows, d});
  const AttentionCostSizes sizes = attention_cost_sizes(batch, heads, n, n, positional);
  URPE_PROFILE_COST(urpe_self_attention_forward_cost(rows, d, D / heads, sizes, saving, logit_bias.defined()));
  kernels::urpe_self_attention_forward_cpu(x2, wcat, bcat, batch, heads, positional, logit_bias, qkv, probs, context);

  return autograd::record(
      context, kOp, {x, w.wq, w.wk, w.wv, w.bq, w.bk, w.bv, positional.bias_table, positional.c_table, logit_bias},
      [x2, x_shape = x.shape(), w, wcat, qkv, probs, positional, logit_bias, batch, heads, sizes](const Tensor& g) {
        const int64_t rows = x2.size(0), d = x2.size(1), D = w.wq.size(0);
        Tensor gx = Tensor::empty(x_shape), gwcat = Tensor::empty(wcat.shape()), gbcat = Tensor::empty({3 * D});
        Tensor grad_bias, grad_c;
        if (positional.bias_table.defined() && positional.bias_table.requires_grad())
          grad_bias = Tensor::empty(positional.bias_table.shape());
        if (positional.c_table.defined() && positional.c_table.requires_grad())
          grad_c = Tensor::empty(positional.c_table.shape());
        Tensor grad_logit;
        if (logit_bias.defined() && logit_bias.requires_grad()) grad_logit = Tensor::empty(logit_bias.shape());
        URPE_PROFILE_COST(urpe_self_attention_backward_cost(rows, d, D / heads, sizes, grad_bias.defined(),
                                                            grad_c.defined(), grad_logit.defined()));
        Tensor gx2 = gx.view({rows, d});
        kernels::urpe_self_attention_backward_cpu(x2, wcat, qkv, probs, g.view({rows, D}), batch, heads, positional,
                                                  gx2, gwcat, gbcat, grad_bias.defined() ? &grad_bias : nullptr,
                                                  grad_c.defined() ? &grad_c : nullptr,
                                                  grad_logit.defined() ? &grad_logit : nullptr);
        std::vector<Tensor> grads{gx};
        for (int part = 0; part < 3; ++part) {
          const Tensor& weight = part == 0 ? w.wq : part == 1 ? w.wk : w.wv;
          grads.push_back(weight.requires_grad() ? unstack_rows(gwcat, part, weight) : Tensor());
        }
        for (int part = 0; part < 3; ++part) {
          const Tensor& bias = part == 0 ? w.bq : part == 1 ? w.bk : w.bv;
          grads.push_back(bias.requires_grad() ? unstack_rows(gbcat, part, bias) : Tensor());
        }
        grads.push_back(grad_bias);
        grads.push_back(grad_c);
        grads.push_back(grad_logit);
        return grads;
      });
}

// ---- cost ----

profile::Cost urpe_self_attention_forward_cost(int64_t rows, int64_t d, int64_t dh, const AttentionCostSizes& s,
                                               bool saves_probs, bool logit_bias) {
  const double D = double(s.heads) * dh, e = s.elements();
  const double flops = 2.0 * rows * 3 * D * d + 2.0 * 2 * e * dh + attention_core_forward_flops(s) +
                       (logit_bias ? e : 0.0);
  const double elements = double(rows) * d + 3 * D * d + 3 * D  // x, weights, biases
                          + double(rows) * 3 * D                // [Q|K|V]
                          + (saves_probs ? e : 0.0)             // P
                          + double(rows) * D                    // context
                          + (logit_bias ? e : 0.0)              // L
                          + s.map_elements + s.bias_entries + s.c_entries + s.padding_elements;
  return {flops, profile::kElementBytes * elements};
}

profile::Cost urpe_self_attention_backward_cost(int64_t rows, int64_t d, int64_t dh, const AttentionCostSizes& s,
                                                bool grad_bias, bool grad_c, bool grad_logit_bias) {
  const double D = double(s.heads) * dh, e = s.elements();
  const double flops = 2.0 * 2 * rows * 3 * D * d + double(rows) * 3 * D  // ∂x, ∂W, ∂b
                       + e + 4 * 2.0 * e * dh                              // A = P ⊙ C, ∂A, ∂V, ∂Q, ∂K
                       + attention_core_backward_flops(s, grad_bias, grad_c);
  const double elements = double(rows) * d + 3 * D * d                   // x, weights
                          + double(rows) * 3 * D + e + double(rows) * D   // [Q|K|V], P, G
                          + 2.0 * rows * 3 * D                            // ∂[Q|K|V] written, read
                          + double(rows) * d + 3 * D * d + 3 * D           // ∂x, ∂W, ∂b
                          + (grad_logit_bias ? e : 0.0)                   // ∂L
                          + s.map_elements + s.c_entries + (grad_bias ? s.bias_entries : 0.0) +
                          (grad_c ? s.c_entries : 0.0) + s.padding_elements;
  return {flops, profile::kElementBytes * elements};
}

}  // namespace urpe
