// How much of each attention logit is position and how much context (`urpe analyze`).
// Block l of the (post-LN) encoder reads layer l − 1's states x_{c,t} (models/hidden_states.h),
// which the position/context decomposition splits as x_{c,t} = (μ + pos_t) + cvec_{c,t},
// cvec = ctx_c + resid_{c,t}. The query and key projections are affine, so
//
//   q_{c,s} = W_Q x_{c,s} + b_Q = qp_s + qc_{c,s},  qp_s = W_Q (μ + pos_s) + b_Q,  qc_{c,s} = W_Q cvec_{c,s}
//
// (the bias goes with the positional part: it is the same in every context), and likewise k. Each
// head's logits (scaled by 1/√dh, the scale the attention applies before adding B) split exactly:
//
//   S_{c,s,t} = qp_s·kp_t + qp_s·kc_{c,t} + qc_{c,s}·kp_t + qc_{c,s}·kc_{c,t}
//             =  pos·pos  +   pos·ctx    +   ctx·pos    +    ctx·ctx
//
// Reported per head: each term's share Σ_{c,s,t} term² / Σ_terms Σ_{c,s,t} term² (the terms are
// not orthogonal, so this says how large each is, not how the variance of S splits; pos·ctx and
// ctx·pos average to zero over contexts, as Σ_c cvec_{c,t} = 0); how often the pos·pos row maximum
// falls on the diagonal (a head that, by position alone, looks at its own position); the same
// shares after removing each term's mean over keys t from every row (s, c): the softmax ignores a
// constant added to a row, and pos·pos holds such constants (the mean μ and the biases: e.g.
// (W_Q μ + b_Q)·(W_K μ + b_K) is the same everywhere), so the centred shares say what the
// softmax can see; and the
// identity's error max|Σ terms − S| / max|S|, with S computed directly from x. The relative bias B
// (RPE, URPE, ALiBi) is a fifth, purely positional term outside this split; for URPE heads the
// pictures show it with P = softmax(S + B), C, A = P ⊙ C and A·1.
// Encoders whose logits are q·k (pe none, ape, sinusoidal, rpe, alibi, urpe and their +urpe
// forms); not RoPE (rotated q and k), Shaw (an extra q·a term) or Transformer-XL (relative
// attention with its own position terms).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "app/analysis/analysis_model.h"
#include "app/analysis/position_context.h"
#include "base/plot/charts.h"

namespace urpe {

// An affine map y = W x + b, W (out × in) row-major, in double.
struct Affine {
  int64_t out = 0, in = 0;
  std::vector<double> w, b;
};

constexpr int kLogitTerms = 4;  // pos·pos, pos·ctx, ctx·pos, ctx·ctx
extern const char* const kLogitTermNames[kLogitTerms];

struct AttentionSplit {
  int64_t block = 0;  // 1..L: reads layer block − 1
  int64_t heads = 0, positions = 0, contexts = 0;
  std::vector<std::array<double, kLogitTerms>> shares;          // per head
  std::vector<std::array<double, kLogitTerms>> centred_shares;  // per head, rows centred over t
  std::vector<double> diagonal;                         // per head: fraction of rows s with argmax_t pos·pos = s
  double identity_error = 0;                            // max|Σ terms − S| / max|S|
  // Context 0's four terms and their sum S, per head (T × T row-major each), for the pictures.
  std::vector<std::array<std::vector<double>, kLogitTerms>> example;
  std::vector<std::vector<double>> example_logits;
  // URPE heads (models with C), context 0: B, P = softmax(S + B), C, A = P ⊙ C (T × T each) and
  // the largest |A − the model's own A| (a check of the whole chain); empty otherwise.
  std::vector<std::vector<double>> bias, softmax, c, attention;
  double attention_error = 0;
};

// The split of one block from its input states and their decomposition (dec: μ, pos; cvec is
// recomputed as x − μ − pos). `heads` divides q.out.
AttentionSplit split_attention_logits(const HiddenCube& x, const Decomposition& dec, const Affine& q, const Affine& k,
                                      int64_t heads, int64_t block);

// Whether `model` (an encoder) has logits q·k that the split applies to; `why` says why not.
bool attention_split_applies(const AnalysisModel& model, std::string& why);
// W_Q, b_Q (query = true) or W_K, b_K of block `block` (1-based).
Affine attention_projection(const AnalysisModel& model, int64_t block, bool query);
// Fills split.bias … attention for a model with C; `model_attention` is the model's A for context
// 0 of this block (H × T × T).
void add_urpe_pictures(const AnalysisModel& model, const std::vector<float>& model_attention, AttentionSplit& split);

// The pictures' parts, for tests: the attention-term panels of one block (each term's centred
// share in its title, colours up to the 99th percentile of |value|), that picture with its
// caption, and the A·1 charts (one per block with C, on one y scale).
std::vector<plot::HeatmapSpec> attention_term_panels(const AttentionSplit& split);
plot::Canvas render_attention_terms(const std::string& run, const AttentionSplit& split);
std::vector<plot::LineChartSpec> rowsum_charts(const std::vector<AttentionSplit>& blocks);

// plots/attention_terms_<run>_block<l>.png: per head the four terms and S for context 0, each row
// centred over the keys (a shared colour scale), with a caption;
// plots/urpe_heads_<run>_block<l>.png: B, P, C, A per head, plots/urpe_rowsums_<run>.png: A·1,
// a chart per block side by side.
std::vector<std::string> draw_attention_plots(const std::string& plot_dir, const std::string& run,
                                              const std::vector<AttentionSplit>& blocks);

}  // namespace urpe
