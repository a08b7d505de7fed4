// Multi-head self-attention on top of the URPE attention core:
//   q, k, v = x·W_{q,k,v}ᵀ + b;  A = softmax(q·kᵀ/√dh + B) ⊙ C;  out = (Drop(A)·v)·W_oᵀ + b_o
// B (RPE bias) and C (URPE) are per-head tables gathered through bucket maps; both are built once
// by the encoder and shared by all layers, as in the official code.
#pragma once
#include <string>

#include "models/layers.h"
#include "ops/urpe_attention.h"

namespace urpe {

// Encodings that act on q, k or the values instead of through B and C (models/encoder.h); every
// tensor may be undefined (not used).
//   rope:  q, k ← rotary(q), rotary(k) before q·kᵀ (ops/rotary.h), tables (N, dh/2)
//   shaw:  S += q_i·a^K_ij (before the scale, like q·kᵀ) and out_i += Σ_j A_ij·a^V_ij, with
//          a^K, a^V (N, N, dh) shared by the heads (Shaw et al. 2018, eqs. 3–4)
struct PositionExtras {
  Tensor rope_cos, rope_sin;
  Tensor shaw_keys, shaw_values;
};

// How attention is computed; the two give the same function (tests/test_urpe_flash_attention.cpp):
//   materialized: S = q·kᵀ by GEMM, the URPE core on the (B, H, N, N) scores, dropout, A·v;
//                 S, P and A are each B·H·N² floats in memory (bf16 under precision=bf16:
//                 q, k, v, S, P, A and the context, models/attention.cpp);
//   fused:        ops/urpe_flash_attention, tile by tile with an online softmax; saves only the
//                 output and one log-sum-exp per row, so memory grows with N, not N².
enum class AttentionPath { materialized, fused };
AttentionPath parse_attention_path(const std::string& text);  // "materialized" | "fused"
const char* attention_path_name(AttentionPath path);

struct SelfAttention {
  Linear q_proj, k_proj, v_proj, out_proj;
  int64_t heads = 1, head_dim = 1;
  AttentionPath path = AttentionPath::materialized;

  SelfAttention() = default;
  SelfAttention(ParameterSet& params, const std::string& name, int64_t d_model, int64_t heads,
                const InitSpec& init);

  // x: (B, N, d_model). `positional` carries the shared tables, maps and masks (its scale is set
  // x: (B, N, d_model). `positional` carries the shared tables, maps and masks (its scale is set
  // here to 1/√dh); the fused path also takes relative (2N − 1) maps. Returns (B, N, d_model).
  // `weights`, when given, receives A (B, H, N, N) before attention dropout (for analyses:
  // models/hidden_states.h); the fused path stores no A, so such a call, and Shaw's value term
  // (which needs A), run the materialised path: the same function.
  Tensor forward(const Tensor& x, UrpeAttentionParams positional, float attention_dropout,
                 Rng* dropout_rng, bool training, Tensor* weights = nullptr,
                 const PositionExtras* extras = nullptr) const;
};

}  // namespace urpe
