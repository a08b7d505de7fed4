// The URPE attention core (Luo et al., NeurIPS 2022): attention probabilities with a relative
// positional bias B before the softmax and a learnable Toeplitz (or bucketed) matrix C after it.
//
//   Z[b,h,i,j] = S[b,h,i,j]·scale + B_h[bias_map(i,j)]          (−∞ where masked)
//   P = softmax_j(Z)                                             (a fully masked row gives P = 0)
//   A[b,h,i,j] = P[b,h,i,j] · C_h[c_map(i,j)]                    (0 where masked)
//
// With C ≡ 1 this is ordinary RPE attention and every row of A sums to 1; with a learned C the row
// sums are free, which is what makes URPE Transformers universal approximators (Theorem 3).
// Masks: causal (key j is masked when j > i + causal_offset, the offset being the memory length in
// Transformer-XL) and key padding (key_padding[b, j] ≠ 0).
//
// Backward (G = ∂L/∂A), over unmasked (i, j) only:
//   ∂C_h[k] = Σ_{b,i,j: c_map=k} G·P            dP = G·C
//   dZ = P·(dP − Σ_j P·dP)                       ∂S = scale·dZ
//   ∂B_h[k] = Σ_{b,i,j: bias_map=k} dZ
// The table reductions run in a fixed order (no float atomics), so runs are bit-reproducible.
// Forward saves P (only when a backward can run: with gradients off it writes A alone); memory
// traffic per call: read S (+ maps, tables), write A and P.
//
// norm = AttentionNorm::exp drops the softmax's denominator (an experiment, `urpe theory
// denominator`; docs/urpe_attention.md#the-denominator-variant):
//   E = exp(Z) (0 where masked, no max subtraction, so it overflows to +inf for Z > 88.7),
//   A = E ⊙ C,   and backward   ∂C_h[k] = Σ G·E,   dZ = E·(G·C),   ∂S = scale·dZ,   ∂B_h[k] = Σ dZ.
// E takes P's place as the saved tensor. Rows of A then sum to anything even with C ≡ 1, which is
// another way out of Theorem 2, paid for with unbounded activations.
#pragma once
#include <cstdint>
#include <string>

#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

// What turns the logits Z into weights: softmax (the paper, the default) or exp without the
// denominator.
enum class AttentionNorm { softmax, exp };
AttentionNorm parse_attention_norm(const std::string& text);  // softmax|exp; the error names both
const char* attention_norm_name(AttentionNorm norm);

struct UrpeAttentionParams {
  float scale = 1.0f;
  Tensor bias_table;   // f32 (H, Kb), or undefined: no bias
  Tensor bias_map;     // i32 (Nq, Nk) or (Bsz, Nq, Nk), values in [0, Kb)
  Tensor c_table;      // f32 (H, Kc), or undefined: C ≡ 1 (plain softmax)
  Tensor c_map;        // i32 (Nq, Nk) or (Bsz, Nq, Nk), values in [0, Kc)
  Tensor key_padding;  // i32 (Bsz, Nk), nonzero = padded key; or undefined
  bool causal = false;
  int64_t causal_offset = 0;
  AttentionNorm norm = AttentionNorm::softmax;
};

// scores: (Bsz, H, Nq, Nk) → A: (Bsz, H, Nq, Nk). Gradients flow to scores, bias_table, c_table.
// scores f32 or bf16 (precision=bf16): A, the saved P and ∂S have the scores' dtype; a bf16 core
// computes in FP32 (the softmax sum in double, as for f32) and rounds P, A, ∂S once on store;
// the tables, their gradients (double sums) and the maps are unchanged.
Tensor urpe_attention(const Tensor& scores, const UrpeAttentionParams& params);

// The "unique" relative-position map of the synthetic tasks: map[i, j] = (j − i) + (nq − 1),
// values in [0, nq + nk − 2]; for nq = nk = n that is 2n − 1 buckets and C is Toeplitz.
Tensor toeplitz_map(int64_t nq, int64_t nk, const Device& device = {});

namespace kernels {
// probs (saved for backward: P, or E for AttentionNorm::exp; may be undefined when no backward will
// run: only out is written) and out: (Bsz, H, Nq, Nk).
void urpe_attention_forward_cpu(const Tensor& scores, const UrpeAttentionParams& params,
                                Tensor& probs, Tensor& out);
void urpe_attention_forward_cuda(const Tensor& scores, const UrpeAttentionParams& params,
                                 Tensor& probs, Tensor& out);
// grad_scores: (Bsz, H, Nq, Nk); grad_bias_table / grad_c_table: shaped like the tables,
// overwritten; nullptr when not wanted.
void urpe_attention_backward_cpu(const Tensor& grad_out, const Tensor& probs,
                                 const UrpeAttentionParams& params, Tensor& grad_scores,
                                 Tensor* grad_bias_table, Tensor* grad_c_table);
void urpe_attention_backward_cuda(const Tensor& grad_out, const Tensor& probs,
                                  const UrpeAttentionParams& params, Tensor& grad_scores,
                                  Tensor* grad_bias_table, Tensor* grad_c_table);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// E = Bsz·H·Nq·Nk attention elements, masked ones included. Besides the (…, Nq, Nk) tensors an
// op reads each distinct bucket map once (i32), the tables (H·K each) and the key padding.
struct AttentionCostSizes {
  int64_t batch = 0, heads = 0, nq = 0, nk = 0;
  double map_elements = 0;              // entries of the distinct maps (one map shared by B and C counts once)
  double bias_entries = 0, c_entries = 0;  // H·K of each table; 0 without it
  double padding_elements = 0;          // Bsz·Nk, or 0
  AttentionNorm norm = AttentionNorm::softmax;
  double elements() const { return double(batch) * heads * nq * nk; }
};
AttentionCostSizes attention_cost_sizes(int64_t batch, int64_t heads, int64_t nq, int64_t nk,
                                        const UrpeAttentionParams& params);
// FLOPs per element of the core. Forward: ·scale 1, + B 1 (with a bias table), softmax 5 (exp
// without the denominator: 1), · C 1 (with a C table). Backward: dP = G·C 1 (with C), the softmax
// backward 4 (exp: dZ = E·dP, 1), ·scale 1, ∂C's G·P summed 2 and ∂B's sum 1 (when wanted).
double attention_core_forward_flops(const AttentionCostSizes& s);
double attention_core_backward_flops(const AttentionCostSizes& s, bool grad_bias, bool grad_c);
// Forward reads S and writes A, and P when it saves it (a backward can run): 12·E bytes then.
// Backward reads G and P, writes ∂S (12·E); it reads the C table (dP = G·C; B is not needed once P
// is saved) and writes ∂B and ∂C. `bytes`: the size of an S, P, A, G, ∂S element (2 for bf16:
// 6·E each way); maps, tables and padding stay 4.
profile::Cost urpe_attention_forward_cost(const AttentionCostSizes& s, bool saves_probs,
                                          double bytes = profile::kElementBytes);
profile::Cost urpe_attention_backward_cost(const AttentionCostSizes& s, bool grad_bias, bool grad_c,
                                           double bytes = profile::kElementBytes);

}  // namespace urpe
