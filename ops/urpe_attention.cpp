// Public URPE attention core: validation of every argument (the scores here; the tables, maps and
// key padding in urpe_attention_checks.h, shared with the fused op), dispatch to
// urpe_attention_cpu.cpp / urpe_attention_cuda.cu, and autograd for scores and the two tables.
// The maths is in urpe_attention.h.
#include "ops/urpe_attention.h"

#include <cmath>
#include <vector>

#include "autograd/node.h"
#include "ops/bf16_values.h"
#include "ops/dispatch.h"
#include "ops/urpe_attention_checks.h"

namespace urpe {

namespace {

constexpr const char* kOp = "urpe_attention";

void validate(const Tensor& scores, const UrpeAttentionParams& p) {
  check_value_dtype(kOp, "scores", scores);
  URPE_CHECK(scores.dim() == 4, kOp << ": scores " << scores.describe()
                                    << " must be 4-D (Bsz, H, Nq, Nk)");
  URPE_CHECK(std::isfinite(p.scale), kOp << ": scale must be finite, got " << p.scale);
  check_urpe_attention_tables({kOp, "the scores", &scores, nullptr, nullptr, scores.size(0), scores.size(1),
                               scores.size(2), scores.size(3)},
                              p);
}

}  // namespace

// ---- forward and backward ----

Tensor urpe_attention(const Tensor& scores, const UrpeAttentionParams& params) {
  const profile::OpRange range(kOp, scores);
  validate(scores, params);
  // P is kept only for a backward; with gradients off (NoGrad, or nothing requires one) the
  // kernels write A alone, so inference holds one (Bsz, H, Nq, Nk) tensor here, not two.
  const bool saving = autograd::needs_grad({scores, params.bias_table, params.c_table});
  // P and A in the scores' dtype: bf16 under precision=bf16, where P is the largest tensor a
  // training step keeps (Bsz·H·N² elements per layer).
  const DType dtype = scores.dtype();
  Tensor probs = saving ? Tensor::empty(scores.shape(), dtype, scores.device())  // (Bsz, H, Nq, Nk)
                        : Tensor();
  Tensor out = Tensor::empty(scores.shape(), dtype, scores.device());    // (Bsz, H, Nq, Nk)
  const double bytes = double(dtype_size(dtype));
  URPE_PROFILE_COST(urpe_attention_forward_cost(
      attention_cost_sizes(scores.size(0), scores.size(1), scores.size(2), scores.size(3), params), saving, bytes));
  URPE_DISPATCH(kOp, scores.device(),
                kernels::urpe_attention_forward_cpu(scores, params, probs, out),
                kernels::urpe_attention_forward_cuda(scores, params, probs, out));

  // The node's inputs are the three differentiable tensors (undefined tables are skipped by the
  // engine); the maps, masks and P are captured for the backward.
  return autograd::record(
      out, kOp, {scores, params.bias_table, params.c_table},
      [params, probs, bytes](const Tensor& grad_out) {
        Tensor grad_scores = Tensor::empty(probs.shape(), probs.dtype(), probs.device());
        Tensor grad_bias, grad_c;
        if (params.bias_table.defined() && params.bias_table.requires_grad())
          grad_bias = Tensor::empty(params.bias_table.shape(), DType::f32, probs.device());
        if (params.c_table.defined() && params.c_table.requires_grad())
          grad_c = Tensor::empty(params.c_table.shape(), DType::f32, probs.device());
        Tensor* gb = grad_bias.defined() ? &grad_bias : nullptr;
        Tensor* gc = grad_c.defined() ? &grad_c : nullptr;
        URPE_PROFILE_COST(urpe_attention_backward_cost(
            attention_cost_sizes(probs.size(0), probs.size(1), probs.size(2), probs.size(3), params), gb != nullptr,
            gc != nullptr, bytes));
        URPE_DISPATCH(kOp, grad_out.device(),
                      kernels::urpe_attention_backward_cpu(grad_out, probs, params, grad_scores, gb, gc),
                      kernels::urpe_attention_backward_cuda(grad_out, probs, params, grad_scores, gb, gc));
        return std::vector<Tensor>{grad_scores, grad_bias, grad_c};
      });
}

// ---- cost ----

AttentionCostSizes attention_cost_sizes(int64_t batch, int64_t heads, int64_t nq, int64_t nk,
                                        const UrpeAttentionParams& params) {
  AttentionCostSizes s;
  s.batch = batch;
  s.heads = heads;
  s.nq = nq;
  s.nk = nk;
  s.norm = params.norm;
  const bool bias = params.bias_table.defined(), c = params.c_table.defined();
  if (bias) {
    s.bias_entries = double(params.bias_table.numel());
    s.map_elements += double(params.bias_map.numel());
  }
  if (c) {
    s.c_entries = double(params.c_table.numel());
    if (!(bias && params.c_map.same_as(params.bias_map))) s.map_elements += double(params.c_map.numel());
  }
  if (params.key_padding.defined()) s.padding_elements = double(params.key_padding.numel());
  return s;
}

double attention_core_forward_flops(const AttentionCostSizes& s) {
  const double per = 1.0 + (s.bias_entries > 0 ? 1 : 0) + (s.norm == AttentionNorm::exp ? 1 : 5) +
                     (s.c_entries > 0 ? 1 : 0);
  return per * s.elements();
}

double attention_core_backward_flops(const AttentionCostSizes& s, bool grad_bias, bool grad_c) {
  const double per = (s.c_entries > 0 ? 1 : 0) + (s.norm == AttentionNorm::exp ? 1 : 4) + 1.0 +
                     (grad_c ? 2 : 0) + (grad_bias ? 1 : 0);
  return per * s.elements();
}

profile::Cost urpe_attention_forward_cost(const AttentionCostSizes& s, bool saves_probs, double bytes) {
  const double tensors = (saves_probs ? 3.0 : 2.0) * s.elements();
  return {attention_core_forward_flops(s),
          bytes * tensors + profile::kElementBytes * (s.map_elements + s.bias_entries + s.c_entries + s.padding_elements)};
}

profile::Cost urpe_attention_backward_cost(const AttentionCostSizes& s, bool grad_bias, bool grad_c, double bytes) {
  const double tables = s.c_entries + (grad_bias ? s.bias_entries : 0.0) + (grad_c ? s.c_entries : 0.0);
  return {attention_core_backward_flops(s, grad_bias, grad_c),
          bytes * 3.0 * s.elements() + profile::kElementBytes * (s.map_elements + tables + s.padding_elements)};
}

// ---- the normalisation ----

AttentionNorm parse_attention_norm(const std::string& text) {
  if (text == "softmax") return AttentionNorm::softmax;
  if (text == "exp") return AttentionNorm::exp;
  URPE_FAIL("attention_norm '" << text << "': expected softmax or exp");
}

const char* attention_norm_name(AttentionNorm norm) {
  return norm == AttentionNorm::exp ? "exp" : "softmax";
}

// ---- the "unique" Toeplitz map ----

Tensor toeplitz_map(int64_t nq, int64_t nk, const Device& device) {
  URPE_CHECK(nq >= 1 && nk >= 1, "toeplitz_map: sizes must be at least 1, got nq = " << nq
                                                                                    << ", nk = " << nk);
  URPE_CHECK(nq + nk - 1 <= INT32_MAX, "toeplitz_map: nq + nk − 1 = " << nq + nk - 1
                                                                      << " buckets do not fit i32");
  std::vector<int32_t> values(static_cast<size_t>(nq * nk));  // (nq, nk)
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t j = 0; j < nk; ++j) values[i * nk + j] = static_cast<int32_t>(j - i + nq - 1);
  return Tensor::from_vector(values, {nq, nk}).to(device);
}

}  // namespace urpe
