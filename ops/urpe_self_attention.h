// The encoder's self-attention block up to the output projection, as one op on packed weights:
//
//   [Q | K | V] = x·[Wq; Wk; Wv]ᵀ + [bq; bk; bv]          one GEMM, x: (B, N, d) → (B·N, 3·D)
//   per batch item b and head h (D = H·dh, head h = columns h·dh … of Q, K and V):
//     A_bh = softmax(Q_bh·K_bhᵀ·scale + B_h[map] + L_bh) ⊙ C_h[map]   (the URPE core, urpe_attention.h)
//     context[b, :, h·dh …] = A_bh·V_bh                   → context (B, N, D), heads side by side
//
// L is an optional dense logit bias (B, H, N, N), Graphormer's spatial and edge encodings; its
// gradient is the core's dZ. It computes exactly what the composition of the separate ops computes (linear for q, k and v,
// the head split by permute, matmul for the scores, urpe_attention, matmul with V, the merge by
// permute: urpe_self_attention_reference below, which stays the readable definition and is what
// runs on CUDA), with less traffic on the CPU:
//   - one GEMM of N = 3·D columns for the three projections instead of three of D (the input x
//     is packed by OpenBLAS once instead of three times, forward and for ∂W);
//   - the heads are read and written where the projections put them (row stride 3·D) by the
//     per-head GEMMs: no permute copies of q, k, v or the context, forward or backward;
//   - each (b, h) slice goes scores → core → A·V while its N×N scores are in the cache; only P
//     is kept for the backward (the scores and A are per-thread scratch; A = P ⊙ C is recomputed).
// Backward (G = ∂L/∂context; per slice, then the projections):
//   A = P ⊙ C,  ∂A = G_bh·V_bhᵀ,  ∂V_bh = Aᵀ·G_bh,  ∂S from the core's backward (and its ∂B, ∂C
//   terms), ∂Q_bh = ∂S·K_bh,  ∂K_bh = ∂Sᵀ·Q_bh   — all into one ∂[Q | K | V] (B·N, 3·D), then
//   ∂x = ∂[Q|K|V]·[Wq; Wk; Wv],  ∂[Wq; Wk; Wv] = ∂[Q|K|V]ᵀ·x,  ∂[bq; bk; bv] = Σ_rows ∂[Q|K|V].
// The table gradients are reduced per (b, h) in double and merged in b order, as the core's are,
// so results do not depend on the thread count.
//
// Used by models/attention.cpp for the materialised path when nothing else needs the heads apart
// (no RoPE, no Shaw terms, no attention dropout, no weights returned), and by models/graphormer.cpp
// (with its dense bias as L) when there is no attention dropout.
#pragma once
#include <cstdint>

#include "ops/urpe_attention.h"
#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

struct SelfAttentionWeights {
  Tensor wq, wk, wv;  // (D, d) each
  Tensor bq, bk, bv;  // (D,) each
};

// x (B, N, d) → context (B, N, D). positional: the core's scale, tables, (N, N) or (B, N, N) maps,
// masks and norm; logit_bias: (B, H, N, N) or undefined. Gradients flow to x, the six weights, both
// tables and the logit bias.
Tensor urpe_self_attention(const Tensor& x, const SelfAttentionWeights& w, int64_t heads,
                           const UrpeAttentionParams& positional, const Tensor& logit_bias = Tensor());
// The same function composed from the separate ops: the reference the fused op is checked against.
Tensor urpe_self_attention_reference(const Tensor& x, const SelfAttentionWeights& w, int64_t heads,
                                     const UrpeAttentionParams& positional, const Tensor& logit_bias = Tensor());

namespace kernels {
// x: (B·N, d); wcat: (3D, d); bcat: (3D,); logit_bias: (B, H, N, N) or undefined → qkv:
// (B·N, 3D), probs: (B, H, N, N) (P, or E for the exp norm; undefined when no backward will run),
// context: (B·N, D).
void urpe_self_attention_forward_cpu(const Tensor& x, const Tensor& wcat, const Tensor& bcat, int64_t batch,
                                     int64_t heads, const UrpeAttentionParams& params, const Tensor& logit_bias,
                                     Tensor& qkv, Tensor& probs, Tensor& context);
// grad_context: (B·N, D) → grad_x (B·N, d), grad_wcat (3D, d), grad_bcat (3D,), and the table and
// logit-bias gradients (overwritten; nullptr when not wanted).
void urpe_self_attention_backward_cpu(const Tensor& x, const Tensor& wcat, const Tensor& qkv, const Tensor& probs,
                                      const Tensor& grad_context, int64_t batch, int64_t heads,
                                      const UrpeAttentionParams& params, Tensor& grad_x, Tensor& grad_wcat,
                                      Tensor& grad_bcat, Tensor* grad_bias_table, Tensor* grad_c_table,
                                      Tensor* grad_logit_bias);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// rows = B·N, E = B·H·N·N. Forward: the projection 2·rows·3D·d, the scores and A·V 2·E·dh each,
// the core's per-element FLOPs (+1 with a logit bias); it reads x, the weights and biases (and L),
// writes [Q|K|V], P (when saved) and the context (the scores and A stay in the cache). Backward:
// ∂x and ∂W 2·rows·3D·d each, ∂b rows·3D, A = P ⊙ C 1 per element, ∂A, ∂V, ∂Q, ∂K 2·E·dh each,
// the core's backward; it reads x, the weights, [Q|K|V], P and G, writes and reads ∂[Q|K|V]
// once, writes ∂x, ∂W, ∂b (and ∂L).
profile::Cost urpe_self_attention_forward_cost(int64_t rows, int64_t d, int64_t dh, const AttentionCostSizes& s,
                                               bool saves_probs, bool logit_bias);
profile::Cost urpe_self_attention_backward_cost(int64_t rows, int64_t d, int64_t dh, const AttentionCostSizes& s,
                                                bool grad_bias, bool grad_c, bool grad_logit_bias);

}  // namespace urpe
