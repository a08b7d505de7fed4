// Transformer-XL (Dai et al. 2019) for word-level language modelling, as in the official PyTorch
// code (docs/transformer_xl.md), plus its URPE variant (docs/transformer_xl.md#urpe-variant): the
// paper's WikiText-103 experiment.
//
// One segment, tokens w (qlen, B), memory m_l (mlen, B, d) per layer, klen = mlen + qlen:
//   h_0 = Drop(E[w]·√d)
//   R[k] = [sin(pos_k·f), cos(pos_k·f)], pos_k = min(klen − 1 − k, clamp_len), f_m = 10000^(−2m/d);
//   R = Drop(R) once per forward
//   per layer l, with c = [m_l; h_l] (klen rows) and the query rows h_l:
//     q, k, v = split(c·W_qkvᵀ) (q: last qlen rows),  r = R·W_rᵀ          (bias-free, H heads × dh)
//     AC[i,j] = (q_i + u)·k_j,   BD[i,j] = (q_i + v)·r[row of distance δ = mlen + i − j]
//     A = softmax((AC + BD)/√dh, causal: key j visible iff j ≤ mlen + i) ⊙ C   (C ≡ 1 baseline)
//     h' = LN(h_l + Drop(Drop_att(A)·v·W_oᵀ));  h_{l+1} = LN(h' + Drop(W2·Drop(ReLU(W1 h' + b1)) + b2))
//   logits = Drop(h_L)·Eᵀ + b_out (tied embedding), or the adaptive softmax
//   (docs/transformer_xl.md#adaptive-softmax)
//   new memory m_l ← last mem_len rows of [m_l; h_l] for l = 0..L (detached: no gradient crosses
//   segments)
// u, v are shared by all layers (official PyTorch code). URPE: C[h,i,j] = c_h[min(δ, clamp)] for
// visible keys, one table (H, max_klen) shared by all layers and initialised to ones, so a fresh
// URPE model computes exactly what the baseline computes.
//
// ALiBi variant (Press et al. 2022; docs/transformer_xl.md#alibi-variant): the BD term, the only
// one that reads R, is replaced by a fixed bias, and AC keeps its content bias u:
//     A = softmax((q_i + u)·k_j/√dh − m_h·min(δ, clamp_len), causal) (⊙ C with URPE)
// with m_h ALiBi's geometric slopes (models/encoder.h: alibi_slopes) and δ = mlen + i − j the
// same distance BD and C use, so memory keys are penalised by their true distance. No R, no r_net,
// no r_r_bias (v): ALiBi has no learned position parameter.
//
// BD is computed with the relative-shift op (ops/relative_shift.h) on BDraw = (q + v)·rᵀ, as the
// official code does; the causal mask, the optional same_length mask, the softmax and C are the
// URPE attention core (ops/urpe_attention.h) with causal_offset = mlen.
//
// Layout: the public API is time-major like the official code (tokens (qlen, B), hidden states
// and logits (qlen, B, ...)); inside, activations are batch-major (B, len, d), which is what the
// attention core's (B, H, Nq, Nk) scores need, and so is the memory (B, mlen, d).
#pragma once
#include <string>
#include <vector>

#include "models/hidden_states.h"
#include "models/layers.h"
#include "models/token_model.h"
#include "ops/urpe_attention.h"

namespace urpe {

struct TransformerXLConfig {
  int64_t vocab = 10000;       // token ids in [0, vocab)
  int64_t layers = 16;
  int64_t d_model = 410;       // even (the sinusoid table has d/2 sines and d/2 cosines)
  int64_t heads = 10;
  int64_t d_head = 41;
  int64_t d_inner = 2100;
  float dropout = 0.1f;
  float dropatt = 0.0f;
  int64_t tgt_len = 150;       // training segment length (sizes the URPE table by default)
  int64_t mem_len = 150;       // memory kept per layer; 0 = no recurrence
  int64_t clamp_len = -1;      // > 0: relative distances above it use the row of clamp_len
  bool same_length = false;    // every query sees exactly mem_len keys (needs mem_len > 0)
  std::vector<int64_t> cutoffs;  // adaptive softmax cluster starts, increasing in (0, vocab);
                                 // empty: one full softmax
  bool urpe = false;           // add the shared Toeplitz table C
  bool alibi = false;          // ALiBi's fixed bias −m_h·δ instead of the BD term
  int64_t max_klen = 0;        // length of the C table; 0 = tgt_len + mem_len. Distances beyond
                               // the table (longer evaluation memory) use its last entry
  float init_std = 0.02f;      // N(0, std) weights; LayerNorm gains N(1, std)
  DType linear_dtype = DType::f32;  // the linear layers' GEMMs (and the output layer's): bf16 under precision=bf16,
                                    // which also stores the attention's and the FFN's activations in bf16
                                    // (docs/cuda.md#mixed-precision)
};

// Per-layer memory: empty (first segment, or mem_len = 0), or layers + 1 detached tensors
// (B, mlen, d) with the same mlen, as returned by forward().
using TxlMemory = std::vector<Tensor>;

struct TxlHidden {
  Tensor hidden;    // (qlen, B, d): the last layer's output after dropout
  TxlMemory mems;   // the memory for the next segment
};

struct TxlStep {
  Tensor loss;      // shape (): mean NLL over the qlen × B targets of the segment
  TxlMemory mems;   // the memory for the next segment
};

class TransformerXL final : public TokenModel {
 public:
  TransformerXL(const TransformerXLConfig& config, uint64_t seed, const Device& device = {});

  // tokens, targets: i32 (qlen, B). Dropout seeds come from `dropout_rng` when training (may be
  // null when not training or when every dropout probability is 0).
  TxlStep forward(const Tensor& tokens, const Tensor& targets, const TxlMemory& mems,
                  bool training, Rng* dropout_rng) const;
  // `states`, when given, is cleared and receives every block's input and output for this segment,
  // batch-major (models/hidden_states.h).
  TxlHidden forward_hidden(const Tensor& tokens, const TxlMemory& mems, bool training,
                           Rng* dropout_rng, HiddenStates* states = nullptr) const;
  // hidden (qlen, B, d) → logits (qlen, B, vocab); full softmax models only.
  Tensor logits(const Tensor& hidden) const;
  // hidden (qlen, B, d), targets i32 (qlen, B) → shape (): mean NLL (full or adaptive softmax).
  Tensor loss(const Tensor& hidden, const Tensor& targets) const;

  // Evaluation may use other memory settings than training (docs/transformer_xl.md#evaluation-protocol:
  // mem_len 640,
  // clamp_len 400, same_length): these change no parameter.
  void set_memory_options(int64_t mem_len, int64_t clamp_len, bool same_length);

  const TransformerXLConfig& config() const { return config_; }
  const ParameterSet& parameters() const override { return params_; }
  Tensor c_table() const override { return c_table_; }  // (H, max_klen), undefined for the baseline
  // TokenModel (models/token_model.h): forward_tokens is forward_hidden of the time-major ids,
  // without memory, in evaluation mode; it returns the last block's output (T, B, d).
  int64_t width() const override { return config_.d_model; }
  int64_t blocks() const override { return config_.layers; }
  int64_t vocab() const override { return config_.vocab; }
  Tensor forward_tokens(const Tensor& batch_major_ids, HiddenStates* states) const override;
  const Device& device() const { return device_; }

 private:
  struct Layer {
    Linear qkv, r_proj, out_proj;  // bias-free: (3·H·dh, d), (H·dh, d) (not with ALiBi), (d, H·dh)
    LayerNorm attention_norm;
    FeedForward ffn;               // ReLU, with biases
    LayerNorm ffn_norm;
  };

  // c = [memory; h] (B, klen, d), h (B, qlen, d), R (klen, d) (undefined with ALiBi) → attention
  // block output (B, qlen, d). `weights`, when given, receives A (B, H, qlen, klen) before dropatt.
  Tensor attention(const Layer& layer, const Tensor& h, const Tensor& memory, const Tensor& pos,
                   const UrpeAttentionParams& core, bool training, Rng* rng,
                   Tensor* weights = nullptr) const;
  Tensor positional_table(int64_t klen) const;  // (klen, d), before dropout
  UrpeAttentionParams attention_core(int64_t qlen, int64_t mlen) const;
  // A segment's constants for (qlen, mlen): the positional table and the core's maps and bias
  // table, built and uploaded on first use and kept for the last kSegmentConstants lengths. A
  // run's segments have one or two lengths, so a steady step builds nothing on the host, and the
  // attention op's range check of a map, cached by storage (ops/urpe_attention_checks.cpp), reads
  // each map back once per run instead of once per step.
  struct SegmentConstants {
    int64_t qlen = 0, mlen = 0;
    Tensor pos;                // positional_table(qlen + mlen), undefined with ALiBi
    UrpeAttentionParams core;  // attention_core(qlen, mlen) without c_table (a parameter)
  };
  static constexpr size_t kSegmentConstants = 4;
  const SegmentConstants& segment_constants(int64_t qlen, int64_t mlen) const;
  Tensor adaptive_loss(const Tensor& hidden, const Tensor& targets) const;

  TransformerXLConfig config_;
  Device device_;
  ParameterSet params_;
  Tensor embedding_;        // (vocab, d), also the output matrix (tied)
  Tensor out_bias_;         // (vocab,)
  Tensor cluster_weight_;   // (clusters, d), adaptive softmax only
  Tensor cluster_bias_;     // (clusters,)
  Tensor u_, v_;            // (H, dh) each: r_w_bias and r_r_bias (v: not with ALiBi)
  Tensor c_table_;          // (H, max_klen), URPE only
  std::vector<Layer> layers_;
  mutable std::vector<SegmentConstants> segment_constants_;  // most recent last
};

}  // namespace urpe
