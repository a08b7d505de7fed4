// Fused URPE attention that never stores an n×n matrix: the whole of
//
//   O = Drop(softmax(Q·Kᵀ·scale + B[map]) ⊙ C[map]) · V
//
// computed tile by tile (FlashAttention's online softmax, Dao et al. 2022, with URPE's C after
// the softmax and the RPE bias B before it). Forward saves only O and one log-sum-exp per query
// row; backward recomputes the probabilities of each tile from Q, K and the saved log-sum-exp.
// The materialised path (QKᵀ by GEMM, ops/urpe_attention.h on the (Bsz, H, Nq, Nk) scores,
// ops/dropout.h, then A·V) computes the same function; tests/test_urpe_flash_attention.cpp checks
// the two agree on every output and gradient.
//
// Shapes: q (Bsz, H, Nq, dh), k (Bsz, H, Nk, dh), v (Bsz, H, Nk, dv) → O (Bsz, H, Nq, dv).
// Dtypes: q, k, v all f32 or all bf16 (precision=bf16's activations); O, ∂q, ∂k, ∂v have their
// dtype, computed in FP32 and rounded once; the tables, L, ∂B, ∂C are f32
// (docs/cuda.md#mixed-precision).
// The tables, masks and scale come in UrpeAttentionParams, as for the materialised core, and a
// bucket map may be
//   (Nq + Nk − 1,)    a relative map: bucket(i, j) = map[j − i + Nq − 1]. The Toeplitz case
//                     (map[d] = d, or the encoder's j − i + n_max − 1) and T5's buckets are
//                     functions of j − i alone, so they need no n×n map in memory;
//   (Nq, Nk)          shared by the batch;
//   (Bsz, Nq, Nk)     per batch item (Graphormer's distances), read as given.
//
// ---- forward, one query row i of one (b, h) ----
//   z_j = q_i·k_j·scale + B_h[bias_map(i,j)]      (−∞ where masked: causal j > i + offset, or a
//                                                   padded key)
//   Keys come in tiles J_1, J_2, …; the row keeps a running max m, a running sum ℓ and an
//   unnormalised output o:
//     m' = max(m, max_{j∈J} z_j),   α = e^{m − m'}
//     ℓ  ← α·ℓ + Σ_{j∈J} e^{z_j − m'}
//     o  ← α·o + Σ_{j∈J} e^{z_j − m'}·C_h[c_map(i,j)]·κ_ij·v_j
//   with κ_ij the dropout factor keep_ij/(1 − p) (1 without dropout). At the end
//     O_i = o/ℓ,   L_i = m + ln ℓ                  (the log-sum-exp of the row's logits)
//   so P_ij = e^{z_ij − L_i} exactly as softmax_j(z_i), and O_i = Σ_j P_ij·C_ij·κ_ij·v_j. A row
//   with no unmasked key gives O_i = 0 and L_i = −∞ (its P is all zero, as in the materialised
//   core). keep_ij = [philox_uniform(seed, 0, ((b·H + h)·Nq + i)·Nk + j) ≥ p]: the element that
//   ops/dropout.h draws for A[b,h,i,j], so both paths drop the same weights.
//
// ---- backward, dO = ∂L/∂O ----
//   Write A = P ⊙ C, Ã = A ⊙ κ (the dropped weights), so O = Ã·V. Then
//     dV = Ãᵀ·dO
//     dÃ_ij = dO_i·v_j,   G_ij = ∂L/∂A_ij = κ_ij·(dO_i·v_j)
//   and the materialised core's backward, with dP = G ⊙ C and r_i = Σ_j P_ij·dP_ij, gives
//   dZ = P ⊙ (dP − r). Its row term needs no pass over the row:
//     r_i = Σ_j P_ij·C_ij·κ_ij·(dO_i·v_j) = dO_i·(Σ_j Ã_ij·v_j) = dO_i·O_i =: D_i
//   so with D_i computed once per row from the saved O,
//     dZ_ij = P_ij·(C_ij·κ_ij·(dO_i·v_j) − D_i)
//     dS = scale·dZ,   dQ = dS·K,   dK = dSᵀ·Q
//     ∂C_h[k] = Σ_{(b,i,j): c_map = k} P_ij·κ_ij·(dO_i·v_j)      (= Σ G ⊙ P)
//     ∂B_h[k] = Σ_{(b,i,j): bias_map = k} dZ_ij
//   (without dropout κ ≡ 1 and this is dZ = P ⊙ (C ⊙ (dO·Vᵀ) − D)). Every tile (I, J) needs
//   only Q_I, K_J, V_J, dO_I, L_I and D_I: P_IJ = e^{Q_I·K_Jᵀ·scale + B − L_I} is recomputed.
//
// Determinism: no float atomics anywhere. The CPU reference gives each (b, h) to one thread
// (tiles in a fixed order; table partials per (b, h) in double, summed over b in increasing
// order), so results do not depend on the thread count. The CUDA kernels give each output row
// (of O, dQ, dK, dV) to one warp and reduce the table gradients per bucket in a fixed order; with
// the context's TF32 switch on, the tensor-core kernels (urpe_flash_tc.h) take the same inputs and
// sum the table gradients per diagonal in fixed-order partials (docs/cuda.md#tensor-core-tiles).
//
// Memory: O and L (Bsz·H·Nq) are saved; the backward's scratch is a few tiles per thread on the
// CPU (plus table partials of Nq + Nk − 1 doubles per (b, h) for a relative map, K per (b, h)
// for a dense one), and D (Bsz·H·Nq) plus the bucket index of the map on CUDA. Nothing grows
// with Nq·Nk except a dense map the caller already holds.
#pragma once
#include <cstdint>

#include "ops/dropout.h"
#include "ops/urpe_attention.h"
#include "tensor/tensor.h"

namespace urpe {

// Attention dropout on A (training only): p ∈ [0, 1), and the seed of its Philox stream (a value,
// or take_dropout_seed's draw, which CUDA reads from the step anchor: ops/dropout.h).
struct AttentionDropout {
  float p = 0.0f;
  DropoutSeed seed;
};

// q (Bsz, H, Nq, dh), k (Bsz, H, Nk, dh), v (Bsz, H, Nk, dv) → O (Bsz, H, Nq, dv). Gradients
// flow to q, k, v and both tables. Maps: (Nq + Nk − 1,) relative, (Nq, Nk), or (Bsz, Nq, Nk).
Tensor urpe_flash_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                            const UrpeAttentionParams& params, const AttentionDropout& dropout = {});

// The relative map of the Toeplitz ("unique") case: map[d] = d, d ∈ [0, nq + nk − 2], so
// bucket(i, j) = j − i + nq − 1, the values toeplitz_map(nq, nk) holds at (i, j).
Tensor toeplitz_relative_map(int64_t nq, int64_t nk, const Device& device = {});

namespace kernels {
// out: (Bsz, H, Nq, dv); lse: (Bsz, H, Nq), or undefined when nothing is saved for backward.
void urpe_flash_attention_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const UrpeAttentionParams& params,
                                      const AttentionDropout& dropout, Tensor& out, Tensor& lse);
void urpe_flash_attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const UrpeAttentionParams& params,
                                       const AttentionDropout& dropout, Tensor& out, Tensor& lse);
// grad_q/k/v shaped like q/k/v, overwritten; grad_bias_table / grad_c_table shaped like the
// tables, overwritten, or nullptr when not wanted.
void urpe_flash_attention_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& out, const Tensor& lse,
                                       const Tensor& grad_out, const UrpeAttentionParams& params,
                                       const AttentionDropout& dropout, Tensor& grad_q,
                                       Tensor& grad_k, Tensor& grad_v, Tensor* grad_bias_table,
                                       Tensor* grad_c_table);
void urpe_flash_attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& out, const Tensor& lse,
                                        const Tensor& grad_out, const UrpeAttentionParams& params,
                                        const AttentionDropout& dropout, Tensor& grad_q,
                                        Tensor& grad_k, Tensor& grad_v, Tensor* grad_bias_table,
                                        Tensor* grad_c_table);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// E = Bsz·H·Nq·Nk, head dims dh (q, k) and dv (v). Forward: QKᵀ (2·E·dh) and A·V (2·E·dv) plus
// the core's per-element FLOPs (urpe_attention.h); it reads q, k, v, the maps, tables and padding
// and writes O and the log-sum-exp per row (when saved). No (…, Nq, Nk) tensor is moved: that
// is the point of the fused op. Backward recomputes S = QKᵀ (2·E·dh) and forms dV = Aᵀ·dO
// (2·E·dv), dA = dO·Vᵀ (2·E·dv), dQ = dS·K and dK = dSᵀ·Q (2·E·dh each), D = rowsum(dO ⊙ O)
// (2·Bsz·H·Nq·dv) and the core's backward; it reads q, k, v, O, dO and the lse, the maps, the C
// table and the padding, and writes dq, dk, dv and the table gradients.
profile::Cost urpe_flash_attention_forward_cost(const AttentionCostSizes& s, int64_t dh, int64_t dv, bool saves_lse);
profile::Cost urpe_flash_attention_backward_cost(const AttentionCostSizes& s, int64_t dh, int64_t dv, bool grad_bias,
                                                 bool grad_c);

}  // namespace urpe
