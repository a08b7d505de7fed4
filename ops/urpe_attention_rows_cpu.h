// The URPE attention core on the CPU, one query row (forward) or one (b, h) slice (backward) at a
// time: the reference kernels of urpe_attention_cpu.cpp are loops over these, and the fused
// self-attention block (urpe_self_attention_cpu.cpp) calls them on each slice while its scores
// are still in the cache. The maths is in urpe_attention.h; the row code in
// urpe_attention_cpu.cpp. Internal to ops/.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/urpe_attention.h"

namespace urpe::kernels::attention_rows {

// Everything a row needs, as raw pointers into the (contiguous) tables, maps and padding.
struct RowContext {
  int64_t bsz = 0, heads = 0, nq = 0, nk = 0;
  float scale = 1.0f;
  const float* bias_table = nullptr;  // (H, Kb) or nullptr
  const int32_t* bias_map = nullptr;  // (Nq, Nk) or (Bsz, Nq, Nk)
  bool bias_map_per_batch = false;
  int64_t bias_buckets = 0;
  const float* c_table = nullptr;     // (H, Kc) or nullptr: C ≡ 1
  const int32_t* c_map = nullptr;     // (Nq, Nk) or (Bsz, Nq, Nk)
  bool c_map_per_batch = false;
  int64_t c_buckets = 0;
  const int32_t* key_padding = nullptr;  // (Bsz, Nk) or nullptr
  bool causal = false;
  int64_t causal_offset = 0;
  bool normalize = true;  // false: AttentionNorm::exp
  // Per map row: 1 when it is a Toeplitz row, map[j] = map[0] + j (the encoder's relative
  // distances), so its table entries are one stretch of the table. Checked once per call.
  std::vector<char> bias_row_contiguous, c_row_contiguous;

  // Row (b, i) of a map: (Nk,).
  const int32_t* map_row(const int32_t* map, bool per_batch, int64_t b, int64_t i) const {
    return map + ((per_batch ? b * nq : 0) + i) * nk;
  }
  bool bias_contiguous(int64_t b, int64_t i) const {
    return bias_row_contiguous[(bias_map_per_batch ? b * nq : 0) + i] != 0;
  }
  bool c_contiguous(int64_t b, int64_t i) const {
    return c_row_contiguous[(c_map_per_batch ? b * nq : 0) + i] != 0;
  }
};

RowContext make_context(int64_t bsz, int64_t heads, int64_t nq, int64_t nk, const UrpeAttentionParams& params);

// One thread's scratch for rows of nk keys.
struct RowScratch {
  explicit RowScratch(int64_t nk);
  std::vector<float> z, e, bias, c;  // logits, exponentials, gathered table rows (forward)
  std::vector<float> dp;             // dP = G·C (backward)
  std::vector<double> gp, dz;        // the ∂C and ∂B terms (backward)
};

// Forward of row (b, h, i): its scores s (nk) → A (nk) and, when p is not null, P (nk).
// logit_bias (nk), when given, is added to the row's logits after the scale and the table bias:
// z = s·scale + B[map] + logit_bias (the fused block's dense bias, Graphormer's).
void forward_row(const RowContext& ctx, int64_t b, int64_t h, int64_t i, const float* s, float* p, float* a,
                 RowScratch& scratch, const float* logit_bias = nullptr);

// The C row of (b, h, i) times P: A = P ⊙ C (P's masked zeros stay 0), the forward's A exactly.
void probs_times_c_row(const RowContext& ctx, int64_t b, int64_t h, int64_t i, const float* p, float* a,
                       RowScratch& scratch);

// Backward of the (b, h) slice: G and P (nq × nk, rows nk apart) → ∂S (same layout). Adds the
// slice's ∂B and ∂C terms to db and dc ((Kb,) and (Kc,) doubles, each null when not wanted), and
// writes dZ = ∂S/scale, the gradient of a logit bias, to dz (same layout) when it is not null.
void backward_slice(const RowContext& ctx, int64_t b, int64_t h, const float* g, const float* p, float* ds,
                    double* db, double* dc, RowScratch& scratch, float* dz = nullptr);

}  // namespace urpe::kernels::attention_rows

namespace urpe::kernels {
// The table gradient (H, K) from per-(b, h) partials (Bsz·H, K) in double: for each (h, k) the
// sum over b in increasing order, whatever order the slices were computed in.
void merge_table_partials(const double* partial, int64_t bsz, int64_t heads, int64_t buckets, Tensor& table_grad);
}  // namespace urpe::kernels
