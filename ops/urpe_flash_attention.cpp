// Public fused URPE attention: validation of every argument (q, k, v and the dropout rate here;
// the tables, maps and key padding in urpe_attention_checks.h, shared with the materialised
// core), dispatch to urpe_flash_attention_cpu.cpp / _cuda.cu, and autograd for q, k, v and the
// two tables. The maths is in urpe_flash_attention.h.
#include "ops/urpe_flash_attention.h"

#include <cmath>
#include <vector>

#include "autograd/node.h"
#include "ops/bf16_values.h"
#include "ops/cast.h"
#include "ops/dispatch.h"
#include "ops/urpe_attention_checks.h"
#include "ops/urpe_flash_tc.h"

namespace urpe {

namespace {

constexpr const char* kOp = "urpe_flash_attention";

void validate(const Tensor& q, const Tensor& k, const Tensor& v, const UrpeAttentionParams& p,
              const AttentionDropout& dropout) {
  // f32 or bf16, all three the same: bf16 in, bf16 out, FP32 compute (docs/cuda.md#mixed-precision).
  check_value_dtype(kOp, "q", q);
  check_value_dtype(kOp, "k", k);
  check_value_dtype(kOp, "v", v);
  URPE_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(),
             kOp << ": q, k and v must have one dtype (f32 or bf16), got q " << q.describe() << ", k "
                 << k.describe() << ", v " << v.describe());
  URPE_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
             kOp << ": q " << q.describe() << ", k " << k.describe() << " and v " << v.describe()
                 << " must be 4-D: (Bsz, H, Nq, dh), (Bsz, H, Nk, dh), (Bsz, H, Nk, dv)");
  check_same_device(kOp, q, k);
  check_same_device(kOp, q, v);
  const int64_t bsz = q.size(0), heads = q.size(1), nq = q.size(2), nk = k.size(2);
  URPE_CHECK(k.size(0) == bsz && k.size(1) == heads && k.size(3) == q.size(3),
             kOp << ": k " << k.describe() << " must be (Bsz, H, Nk, dh) with Bsz, H and dh of q "
                 << q.describe());
  URPE_CHECK(v.size(0) == bsz && v.size(1) == heads && v.size(2) == nk,
             kOp << ": v " << v.describe() << " must be (Bsz, H, Nk, dv) with Bsz, H and Nk of k "
                 << k.describe());
  URPE_CHECK(std::isfinite(p.scale), kOp << ": scale must be finite, got " << p.scale);
  URPE_CHECK(dropout.p >= 0.0f && dropout.p < 1.0f,
             kOp << ": the attention dropout probability must be in [0, 1), got " << dropout.p);
  check_urpe_attention_tables({kOp, "q", &q, "k", &k, bsz, heads, nq, nk, /*relative_maps=*/true}, p);
}

}  // namespace

// ---- forward and backward ----

Tensor urpe_flash_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                            const UrpeAttentionParams& params, const AttentionDropout& dropout) {
  const profile::OpRange range(kOp, q);
  validate(q, k, v, params, dropout);
  const Device& device = q.device();
  const int64_t bsz = q.size(0), heads = q.size(1), nq = q.size(2), dv = v.size(3);
  const std::vector<Tensor> inputs{q, k, v, params.bias_table, params.c_table};
  const bool saving = autograd::needs_grad(inputs);
  Tensor out = Tensor::empty({bsz, heads, nq, dv}, q.dtype(), device);  // (Bsz, H, Nq, dv), q's dtype
  // The log-sum-exp per row is all the backward needs besides O; inference saves nothing.
  Tensor lse = saving ? Tensor::empty({bsz, heads, nq}, DType::f32, device) : Tensor();
  URPE_PROFILE_COST(urpe_flash_attention_forward_cost(attention_cost_sizes(bsz, heads, nq, k.size(2), params),
                                                      q.size(3), dv, saving));
  URPE_DISPATCH(kOp, device,
                kernels::urpe_flash_attention_forward_cpu(q, k, v, params, dropout, out, lse),
                kernels::urpe_flash_attention_forward_cuda(q, k, v, params, dropout, out, lse));
  if (!saving) return out;

  // Saved without history: O's node lives inside O, so capturing O itself would be a cycle.
  const Tensor saved_q = q.detach(), saved_k = k.detach(), saved_v = v.detach();
  const Tensor saved_out = out.detach();
  return autograd::record(
      out, kOp, inputs,
      [params, dropout, saved_q, saved_k, saved_v, saved_out, lse](const Tensor& grad_out) {
        const Device& d = grad_out.device();
        URPE_CHECK(grad_out.dtype() == saved_out.dtype(),
                   kOp << ": the output's gradient must have its dtype, got " << grad_out.describe() << " for "
                       << saved_out.describe());
        // A gradient has its tensor's dtype: bf16 q, k, v get bf16 ∂q, ∂k, ∂v; the tables' stay f32.
        Tensor grad_q = Tensor::empty(saved_q.shape(), saved_q.dtype(), d);
        Tensor grad_k = Tensor::empty(saved_k.shape(), saved_k.dtype(), d);
        Tensor grad_v = Tensor::empty(saved_v.shape(), saved_v.dtype(), d);
        Tensor grad_bias, grad_c;
        if (params.bias_table.defined() && params.bias_table.requires_grad())
          grad_bias = Tensor::empty(params.bias_table.shape(), DType::f32, d);
        if (params.c_table.defined() && params.c_table.requires_grad())
          grad_c = Tensor::empty(params.c_table.shape(), DType::f32, d);
        Tensor* gb = grad_bias.defined() ? &grad_bias : nullptr;
        Tensor* gc = grad_c.defined() ? &grad_c : nullptr;
        URPE_PROFILE_COST(urpe_flash_attention_backward_cost(
            attention_cost_sizes(saved_q.size(0), saved_q.size(1), saved_q.size(2), saved_k.size(2), params),
            saved_q.size(3), saved_v.size(3), gb != nullptr, gc != nullptr));
        URPE_DISPATCH(kOp, d,
                      kernels::urpe_flash_attention_backward_cpu(
                          saved_q, saved_k, saved_v, saved_out, lse, grad_out, params, dropout,
                          grad_q, grad_k, grad_v, gb, gc),
                      kernels::urpe_flash_attention_backward_cuda(
                          saved_q, saved_k, saved_v, saved_out, lse, grad_out, params, dropout,
                          grad_q, grad_k, grad_v, gb, gc));
        return std::vector<Tensor>{grad_q, grad_k, grad_v, grad_bias, grad_c};
      });
}

// ---- CUDA: bf16 tensors for the kernels that read f32 ----
// The BF16 tiles read bf16 q, k, v as they are; the scalar kernels, the TF32 tiles and a dense
// map's table-gradient walk read f32: they get FP32 copies (widened exactly, one pass each) and
// their f32 O, ∂q, ∂k, ∂v are rounded once into the bf16 outputs. Here and not in the .cu file:
// tensors are made on the host side (the simulator's kernel files take no atomics, and a tensor's
// reference count is one).
#if defined(URPE_WITH_CUDA)
namespace kernels {

namespace {
Tensor widened(const Tensor& t) {
  if (t.dtype() == DType::f32) return t;
  Tensor wide = Tensor::empty(t.shape(), DType::f32, t.device());
  cast_cuda(t, wide);
  return wide;
}
Tensor f32_target(const Tensor& t) {
  return t.dtype() == DType::f32 ? t : Tensor::empty(t.shape(), DType::f32, t.device());
}
void round_into(const Tensor& result, Tensor& t) {
  if (t.dtype() != DType::f32) cast_cuda(result, t);
}
}  // namespace

void urpe_flash_attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const UrpeAttentionParams& params, const AttentionDropout& dropout,
                                       Tensor& out, Tensor& lse) {
  if (q.dtype() == DType::f32 || flash_cuda_reads_bf16(q, k, v, params, nullptr, nullptr))
    return urpe_flash_attention_forward_cuda_native(q, k, v, params, dropout, out, lse);
  Tensor o = f32_target(out);
  urpe_flash_attention_forward_cuda_native(widened(q), widened(k), widened(v), params, dropout, o, lse);
  round_into(o, out);
}

void urpe_flash_attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                        const Tensor& lse, const Tensor& grad_out, const UrpeAttentionParams& params,
                                        const AttentionDropout& dropout, Tensor& grad_q, Tensor& grad_k,
                                        Tensor& grad_v, Tensor* grad_bias_table, Tensor* grad_c_table) {
  if (q.dtype() == DType::f32 || flash_cuda_reads_bf16(q, k, v, params, grad_bias_table, grad_c_table))
    return urpe_flash_attention_backward_cuda_native(q, k, v, out, lse, grad_out, params, dropout, grad_q, grad_k,
                                                     grad_v, grad_bias_table, grad_c_table);
  Tensor gq = f32_target(grad_q), gk = f32_target(grad_k), gv = f32_target(grad_v);
  urpe_flash_attention_backward_cuda_native(widened(q), widened(k), widened(v), widened(out), lse,
                                            widened(grad_out), params, dropout, gq, gk, gv, grad_bias_table,
                                            grad_c_table);
  round_into(gq, grad_q);
  round_into(gk, grad_k);
  round_into(gv, grad_v);
}

}  // namespace kernels
#endif

// ---- cost ----

profile::Cost urpe_flash_attention_forward_cost(const AttentionCostSizes& s, int64_t dh, int64_t dv, bool saves_lse) {
  const double e = s.elements(), rows = double(s.batch) * s.heads * s.nq, keys = double(s.batch) * s.heads * s.nk;
  const double flops = 2.0 * e * double(dh) + 2.0 * e * double(dv) + attention_core_forward_flops(s);
  const double reads = rows * dh + keys * dh + keys * dv + s.map_elements + s.bias_entries + s.c_entries +
                       s.padding_elements;
  const double writes = rows * dv + (saves_lse ? rows : 0.0);
  return {flops, profile::kElementBytes * (reads + writes)};
}

profile::Cost urpe_flash_attention_backward_cost(const AttentionCostSizes& s, int64_t dh, int64_t dv, bool grad_bias,
                                                 bool grad_c) {
  const double e = s.elements(), rows = double(s.batch) * s.heads * s.nq, keys = double(s.batch) * s.heads * s.nk;
  const double flops = 6.0 * e * double(dh) + 4.0 * e * double(dv) + 2.0 * rows * double(dv) +
                       attention_core_backward_flops(s, grad_bias, grad_c);
  const double reads = rows * dh + keys * dh + keys * dv + 2.0 * rows * dv + rows + s.map_elements + s.c_entries +
                       s.padding_elements;
  const double writes = rows * dh + keys * dh + keys * dv + (grad_bias ? s.bias_entries : 0.0) +
                        (grad_c ? s.c_entries : 0.0);
  return {flops, profile::kElementBytes * (reads + writes)};
}

// ---- the Toeplitz relative map ----

Tensor toeplitz_relative_map(int64_t nq, int64_t nk, const Device& device) {
  URPE_CHECK(nq >= 1 && nk >= 1, "toeplitz_relative_map: sizes must be at least 1, got nq = "
                                     << nq << ", nk = " << nk);
  URPE_CHECK(nq + nk - 1 <= INT32_MAX, "toeplitz_relative_map: nq + nk − 1 = " << nq + nk - 1
                                                                               << " buckets do not fit i32");
  std::vector<int32_t> values(static_cast<size_t>(nq + nk - 1));
  for (size_t d = 0; d < values.size(); ++d) values[d] = static_cast<int32_t>(d);
  return Tensor::from_vector(values, {nq + nk - 1}).to(device);
}

}  // namespace urpe
