// CPU reference of the URPE attention core: one query row (b, h, i) at a time, written to be
// read next to the maths in urpe_attention.h. The CUDA kernel is checked against this file. The
// row and slice functions (urpe_attention_rows_cpu.h) are also what the fused self-attention
// block runs on each (b, h) slice.
//
// Forward, per row: z_j = s_j·scale + B_h[bias_map(i,j)] over unmasked keys, m = max_j z_j,
//   P_j = e^{z_j − m} / Σ_k e^{z_k − m} (each e ≤ 1 in float, from ops/fast_math_cpu.h, their
//   sum in double),
//   A_j = P_j·C_h[c_map(i,j)].
//   Masked keys get P = A = 0; a row with no unmasked key (or whose logits are all −∞) is all 0.
// Backward, per row: dP_j = G_j·C_j, r = Σ_j P_j·dP_j (double), dZ_j = P_j·(dP_j − r),
//   ∂S_j = scale·dZ_j, ∂C_h[c_map] += G_j·P_j, ∂B_h[bias_map] += dZ_j; masked keys give 0.
// AttentionNorm::exp (no denominator): E_j = e^{z_j} (no max subtraction: it overflows to +inf
//   by design), A_j = E_j·C_j, saved E in P's place; backward as above with r = 0.
// Table gradients: each (b, h) slice accumulates a private double table, then the slices are
// summed per head in increasing b. The order never depends on the thread count, so two runs
// give bit-identical gradients.
// Memory traffic: forward reads S and writes P and A (12 bytes per element, plus the maps and
// key padding); backward reads G and P and writes ∂S (12 bytes per element, plus the maps).
// bf16 S, P, A, G, ∂S (precision=bf16): each row (forward) or slice (backward) is widened into
// float scratch, the same row code runs in FP32, and P, A, ∂S are rounded once as they are
// stored (6 bytes per element each way); backward reads the rounded P, as the GPU does. The table
// gradients stay double sums rounded to f32.
#include <algorithm>
#include <limits>
#include <vector>

#include "ops/bf16_values.h"
#include "ops/fast_math_cpu.h"
#include "ops/urpe_attention.h"
#include "ops/urpe_attention_rows_cpu.h"

namespace urpe::kernels {

namespace attention_rows {

namespace {

// For each row of a map (Nq or Bsz·Nq rows of Nk buckets): 1 when it is a Toeplitz row,
// map[j] = map[0] + j, as the URPE encoder's relative distances are. Checked once per call.
std::vector<char> contiguous_rows(const int32_t* map, int64_t rows, int64_t nk) {
  std::vector<char> contiguous(static_cast<size_t>(rows));
  for (int64_t row = 0; row < rows; ++row) {
    const int32_t* m = map + row * nk;
    int32_t mismatch = 0;
    for (int64_t j = 0; j < nk; ++j) mismatch |= m[j] - m[0] - static_cast<int32_t>(j);
    contiguous[row] = mismatch == 0;
  }
  return contiguous;
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// x[j] = 0 for the masked keys of a row: j ≥ end (causal) and padded[j] ≠ 0 (when given).
template <typename T>
void zero_masked(T* x, int64_t end, int64_t nk, const int32_t* padded) {
  std::fill(x + end, x + nk, T(0));
  if (padded != nullptr)
    for (int64_t j = 0; j < end; ++j)
      if (padded[j] != 0) x[j] = T(0);
}

// The row of table[map[j]], j < nk: a pointer into the table itself for a contiguous row, else
// gathered into scratch. The loops that read it then load plainly (GCC does not vectorise the
// indexed load table[map[j]], and a gather would cost more than the copy on the AMD machines).
const float* table_row(const float* table, const int32_t* map, bool contiguous, int64_t nk, float* scratch) {
  if (nk == 0) return scratch;
  if (contiguous) return table + map[0];
  for (int64_t j = 0; j < nk; ++j) scratch[j] = table[map[j]];
  return scratch;
}

// table[map[j]] += terms[j] for j < nk, in increasing j. A contiguous row (distinct buckets)
// is a vector add into one stretch of the table; any other map (Graphormer's distances, T5
// buckets) scatters one by one. Either way each bucket receives its terms in the same order.
void scatter_add(const int32_t* map, bool contiguous, const double* terms, int64_t nk, double* table) {
  if (nk == 0) return;
  if (contiguous) {
    double* stretch = table + map[0];
    for (int64_t j = 0; j < nk; ++j) stretch[j] += terms[j];
  } else {
    for (int64_t j = 0; j < nk; ++j) table[map[j]] += terms[j];
  }
}

}  // namespace

RowContext make_context(int64_t bsz, int64_t heads, int64_t nq, int64_t nk, const UrpeAttentionParams& p) {
  RowContext c;
  c.bsz = bsz;
  c.heads = heads;
  c.nq = nq;
  c.nk = nk;
  c.scale = p.scale;
  if (p.bias_table.defined()) {
    c.bias_table = p.bias_table.f32();
    c.bias_map = p.bias_map.i32();
    c.bias_map_per_batch = p.bias_map.dim() == 3;
    c.bias_buckets = p.bias_table.size(1);
    c.bias_row_contiguous = contiguous_rows(c.bias_map, (c.bias_map_per_batch ? c.bsz : 1) * c.nq, c.nk);
  }
  if (p.c_table.defined()) {
    c.c_table = p.c_table.f32();
    c.c_map = p.c_map.i32();
    c.c_map_per_batch = p.c_map.dim() == 3;
    c.c_buckets = p.c_table.size(1);
    c.c_row_contiguous = contiguous_rows(c.c_map, (c.c_map_per_batch ? c.bsz : 1) * c.nq, c.nk);
  }
  if (p.key_padding.defined()) c.key_padding = p.key_padding.i32();
  c.causal = p.causal;
  c.causal_offset = p.causal_offset;
  c.normalize = p.norm == AttentionNorm::softmax;
  return c;
}

RowScratch::RowScratch(int64_t nk)
    : z(static_cast<size_t>(nk)), e(static_cast<size_t>(nk)), bias(static_cast<size_t>(nk)),
      c(static_cast<size_t>(nk)), dp(static_cast<size_t>(nk)), gp(static_cast<size_t>(nk)),
      dz(static_cast<size_t>(nk)) {}

// ---- forward ----

void forward_row(const RowContext& ctx, int64_t b, int64_t h, int64_t i, const float* s_row, float* p_row,
                 float* a_row, RowScratch& scratch, const float* logit_bias) {
  const int64_t nk = ctx.nk;
  const int32_t* bmap = ctx.bias_table ? ctx.map_row(ctx.bias_map, ctx.bias_map_per_batch, b, i) : nullptr;
  const int32_t* cmap = ctx.c_table ? ctx.map_row(ctx.c_map, ctx.c_map_per_batch, b, i) : nullptr;
  const float* bias_h = ctx.bias_table ? ctx.bias_table + h * ctx.bias_buckets : nullptr;
  const float* c_h = ctx.c_table ? ctx.c_table + h * ctx.c_buckets : nullptr;

  // Logits, then the masks as −∞ (a causal row ends at key i + offset; padded keys anywhere).
  // Each loop is simple enough to vectorise.
  float* zr = scratch.z.data();
  float* er = scratch.e.data();
  const float* bias_r = bias_h ? table_row(bias_h, bmap, ctx.bias_contiguous(b, i), nk, scratch.bias.data()) : nullptr;
  const float* c_r = c_h ? table_row(c_h, cmap, ctx.c_contiguous(b, i), nk, scratch.c.data()) : nullptr;
  if (bias_r != nullptr) {
    for (int64_t j = 0; j < nk; ++j) zr[j] = s_row[j] * ctx.scale + bias_r[j];
  } else {
    for (int64_t j = 0; j < nk; ++j) zr[j] = s_row[j] * ctx.scale;
  }
  if (logit_bias != nullptr)
    for (int64_t j = 0; j < nk; ++j) zr[j] += logit_bias[j];
  if (ctx.causal) {
    for (int64_t j = std::max<int64_t>(0, i + ctx.causal_offset + 1); j < nk; ++j) zr[j] = kNegInf;
  }
  if (ctx.key_padding != nullptr) {
    const int32_t* padded = ctx.key_padding + b * nk;
    for (int64_t j = 0; j < nk; ++j) zr[j] = padded[j] != 0 ? kNegInf : zr[j];
  }
  if (!ctx.normalize) {  // E = e^Z, A = E·C: no maximum, no denominator (e^−∞ = 0 where masked)
    for (int64_t j = 0; j < nk; ++j) er[j] = fast::exp_fast(zr[j]);
    for (int64_t j = 0; j < nk; ++j) a_row[j] = c_r != nullptr ? er[j] * c_r[j] : er[j];
    if (p_row) std::copy(er, er + nk, p_row);
    return;
  }
  float m = kNegInf;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < nk; ++j) m = zr[j] > m ? zr[j] : m;  // (std::max does not vectorise)
  if (m == kNegInf) {  // nothing to attend to: P = A = 0 (not NaN)
    if (p_row) std::fill(p_row, p_row + nk, 0.0f);
    std::fill(a_row, a_row + nk, 0.0f);
    return;
  }
  // Max-subtracted softmax; exp(−∞) = 0 for masked keys. Each e ≤ 1 after the max
  // subtraction, so float is exact enough; fast::exp_fast vectorises (libm's expf does not).
  // The sum is double, in a fixed order for a given build (the SIMD lanes' partial sums).
  for (int64_t j = 0; j < nk; ++j) er[j] = fast::exp_fast(zr[j] - m);
  double total = 0;
#pragma omp simd reduction(+ : total)
  for (int64_t j = 0; j < nk; ++j) total += er[j];
  const float inv_total = static_cast<float>(1.0 / total);
  if (c_r != nullptr) {
    for (int64_t j = 0; j < nk; ++j) a_row[j] = er[j] * inv_total * c_r[j];  // 0 where masked
    if (p_row)
      for (int64_t j = 0; j < nk; ++j) p_row[j] = er[j] * inv_total;
  } else {
    for (int64_t j = 0; j < nk; ++j) a_row[j] = er[j] * inv_total;
    if (p_row) std::copy(a_row, a_row + nk, p_row);
  }
}

void probs_times_c_row(const RowContext& ctx, int64_t b, int64_t h, int64_t i, const float* p_row, float* a_row,
                       RowScratch& scratch) {
  const int64_t nk = ctx.nk;
  if (ctx.c_table == nullptr) {
    std::copy(p_row, p_row + nk, a_row);
    return;
  }
  const int32_t* cmap = ctx.map_row(ctx.c_map, ctx.c_map_per_batch, b, i);
  const float* c_r = table_row(ctx.c_table + h * ctx.c_buckets, cmap, ctx.c_contiguous(b, i), nk, scratch.c.data());
  // (e·(1/Σ))·c as forward_row computes A, with P = e·(1/Σ): the same rounding, so the same A
  for (int64_t j = 0; j < nk; ++j) a_row[j] = p_row[j] * c_r[j];
}

// ---- backward ----

void backward_slice(const RowContext& ctx, int64_t b, int64_t h, const float* g_slice, const float* p_slice,
                    float* ds_slice, double* db, double* dc, RowScratch& scratch, float* dz_slice) {
  const int64_t nq = ctx.nq, nk = ctx.nk;
  const float* c_h = ctx.c_table ? ctx.c_table + h * ctx.c_buckets : nullptr;
  const int32_t* padded = ctx.key_padding ? ctx.key_padding + b * nk : nullptr;
  for (int64_t i = 0; i < nq; ++i) {
    const float* g = g_slice + i * nk;
    const float* p = p_slice + i * nk;
    float* ds = ds_slice + i * nk;
    const int32_t* bmap = ctx.bias_table ? ctx.map_row(ctx.bias_map, ctx.bias_map_per_batch, b, i) : nullptr;
    const int32_t* cmap = ctx.c_table ? ctx.map_row(ctx.c_map, ctx.c_map_per_batch, b, i) : nullptr;
    // Keys j ≥ end are causally masked; padded keys are zeroed after each loop. The loops
    // themselves have no condition, so they vectorise.
    const int64_t end = ctx.causal ? std::clamp<int64_t>(i + ctx.causal_offset + 1, 0, nk) : nk;
    float* dpr = scratch.dp.data();
    double* gpr = scratch.gp.data();
    double* dzr = scratch.dz.data();

    // dP = G·C and r = Σ_j P·dP over unmasked keys (r = 0 without the denominator), r in
    // double, summed in the SIMD lanes' fixed order.
    if (c_h != nullptr) {
      const float* c_r = table_row(c_h, cmap, ctx.c_contiguous(b, i), nk, scratch.c.data());
      for (int64_t j = 0; j < end; ++j) dpr[j] = g[j] * c_r[j];
    } else {
      std::copy(g, g + end, dpr);
    }
    zero_masked(dpr, end, nk, padded);
    double r = 0;
    if (ctx.normalize) {
#pragma omp simd reduction(+ : r)
      for (int64_t j = 0; j < nk; ++j) r += static_cast<double>(p[j]) * dpr[j];
    }
    // dZ = P·(dP − r); ∂S = scale·dZ.
    for (int64_t j = 0; j < end; ++j) dzr[j] = static_cast<double>(p[j]) * (dpr[j] - r);
    zero_masked(dzr, end, nk, padded);
    for (int64_t j = 0; j < nk; ++j) ds[j] = static_cast<float>(ctx.scale * dzr[j]);
    if (dz_slice != nullptr)
      for (int64_t j = 0; j < nk; ++j) dz_slice[i * nk + j] = static_cast<float>(dzr[j]);
    // ∂C gathers G·P and ∂B gathers dZ by bucket (a masked key adds 0).
    if (dc) {
      for (int64_t j = 0; j < end; ++j) gpr[j] = static_cast<double>(g[j]) * p[j];
      zero_masked(gpr, end, nk, padded);
      scatter_add(cmap, ctx.c_contiguous(b, i), gpr, nk, dc);
    }
    if (db) scatter_add(bmap, ctx.bias_contiguous(b, i), dzr, nk, db);
  }
}

}  // namespace attention_rows

using attention_rows::RowContext;
using attention_rows::RowScratch;

// ---- forward ----

namespace {

void widen(const bf16* src, int64_t n, float* dst) {
  for (int64_t k = 0; k < n; ++k) dst[k] = to_float(src[k]);
}
void round_into(const float* src, int64_t n, bf16* dst) {
  for (int64_t k = 0; k < n; ++k) dst[k] = to_bf16(src[k]);
}

// bf16 S → P, A: each row widened, the f32 row code, P and A rounded.
void urpe_attention_forward_bf16_cpu(const RowContext& ctx, const Tensor& scores, Tensor& probs, Tensor& out) {
  const bf16* s = scores.data<bf16>();                                     // (Bsz, H, Nq, Nk)
  bf16* p_all = probs.defined() ? probs.data<bf16>() : nullptr;            // (Bsz, H, Nq, Nk)
  bf16* a_all = out.data<bf16>();                                          // (Bsz, H, Nq, Nk)
  const int64_t rows = ctx.bsz * ctx.heads * ctx.nq, nk = ctx.nk;
#pragma omp parallel
  {
    RowScratch scratch(nk);
    std::vector<float> s_row(static_cast<size_t>(nk)), p_row(static_cast<size_t>(nk)), a_row(static_cast<size_t>(nk));
#pragma omp for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t i = row % ctx.nq, h = (row / ctx.nq) % ctx.heads, b = row / (ctx.nq * ctx.heads);
      widen(s + row * nk, nk, s_row.data());
      attention_rows::forward_row(ctx, b, h, i, s_row.data(), p_all ? p_row.data() : nullptr, a_row.data(), scratch);
      round_into(a_row.data(), nk, a_all + row * nk);
      if (p_all) round_into(p_row.data(), nk, p_all + row * nk);
    }
  }
}

}  // namespace

void urpe_attention_forward_cpu(const Tensor& scores, const UrpeAttentionParams& params,
                                Tensor& probs, Tensor& out) {
  const RowContext ctx =
      attention_rows::make_context(scores.size(0), scores.size(1), scores.size(2), scores.size(3), params);
  if (scores.dtype() == DType::bf16) return urpe_attention_forward_bf16_cpu(ctx, scores, probs, out);
  const float* s = scores.f32();  // (Bsz, H, Nq, Nk)
  float* p_all = probs.defined() ? probs.f32() : nullptr;  // (Bsz, H, Nq, Nk); none when not saved
  float* a_all = out.f32();       // (Bsz, H, Nq, Nk)
  const int64_t rows = ctx.bsz * ctx.heads * ctx.nq, nk = ctx.nk;

#pragma omp parallel
  {
    RowScratch scratch(nk);
#pragma omp for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t i = row % ctx.nq, h = (row / ctx.nq) % ctx.heads, b = row / (ctx.nq * ctx.heads);
      attention_rows::forward_row(ctx, b, h, i, s + row * nk, p_all ? p_all + row * nk : nullptr, a_all + row * nk,
                                  scratch);
    }
  }
}

// ---- backward ----

void urpe_attention_backward_cpu(const Tensor& grad_out, const Tensor& probs,
                                 const UrpeAttentionParams& params, Tensor& grad_scores,
                                 Tensor* grad_bias_table, Tensor* grad_c_table) {
  const RowContext ctx =
      attention_rows::make_context(probs.size(0), probs.size(1), probs.size(2), probs.size(3), params);
  const bool bf = probs.dtype() == DType::bf16;  // then G, P, ∂S are all bf16
  const float* g_all = bf ? nullptr : grad_out.f32();  // (Bsz, H, Nq, Nk)
  const float* p_all = bf ? nullptr : probs.f32();     // (Bsz, H, Nq, Nk)
  float* ds_all = bf ? nullptr : grad_scores.f32();    // (Bsz, H, Nq, Nk)
  const int64_t nq = ctx.nq, nk = ctx.nk, slices = ctx.bsz * ctx.heads;
  const bool want_bias = grad_bias_table != nullptr && ctx.bias_table != nullptr;
  const bool want_c = grad_c_table != nullptr && ctx.c_table != nullptr;
  const int64_t kb = want_bias ? ctx.bias_buckets : 0, kc = want_c ? ctx.c_buckets : 0;

  // Per-(b, h) partial tables: (Bsz·H, Kb) and (Bsz·H, Kc), in double.
  std::vector<double> bias_partial(static_cast<size_t>(slices * kb), 0.0);
  std::vector<double> c_partial(static_cast<size_t>(slices * kc), 0.0);

#pragma omp parallel
  {
    RowScratch scratch(nk);
    // bf16: the slice's G and P widened, its ∂S in FP32 before rounding (nq × nk each).
    std::vector<float> g_f(bf ? static_cast<size_t>(nq * nk) : 0), p_f(g_f.size()), ds_f(g_f.size());
#pragma omp for schedule(static)
    for (int64_t slice = 0; slice < slices; ++slice) {
      const int64_t b = slice / ctx.heads, h = slice % ctx.heads, offset = slice * nq * nk;
      if (bf) {
        widen(grad_out.data<bf16>() + offset, nq * nk, g_f.data());
        widen(probs.data<bf16>() + offset, nq * nk, p_f.data());
      }
      attention_rows::backward_slice(ctx, b, h, bf ? g_f.data() : g_all + offset, bf ? p_f.data() : p_all + offset,
                                     bf ? ds_f.data() : ds_all + offset,
                                     want_bias ? bias_partial.data() + slice * kb : nullptr,
                                     want_c ? c_partial.data() + slice * kc : nullptr, scratch);
      if (bf) round_into(ds_f.data(), nq * nk, grad_scores.data<bf16>() + offset);
    }
  }

  // Merge the partials per head, b in increasing order: a fixed order, whatever the threads did.
  if (want_bias) merge_table_partials(bias_partial.data(), ctx.bsz, ctx.heads, kb, *grad_bias_table);
  if (want_c) merge_table_partials(c_partial.data(), ctx.bsz, ctx.heads, kc, *grad_c_table);
}

void merge_table_partials(const double* partial, int64_t bsz, int64_t heads, int64_t buckets, Tensor& table_grad) {
  float* out = table_grad.f32();  // (H, K)
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t k = 0; k < buckets; ++k) {
      double total = 0;
      for (int64_t b = 0; b < bsz; ++b) total += partial[(b * heads + h) * buckets + k];
      out[h * buckets + k] = static_cast<float>(total);
    }
  }
}

}  // namespace urpe::kernels
