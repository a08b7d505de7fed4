// CPU reference of the fused URPE attention (maths in urpe_flash_attention.h): tiles of
// kQueryTile queries × kKeyTile keys, the two products of each tile by the BLAS GEMM
// (ops/matmul.h gemm_cpu; one thread per GEMM inside the parallel loops), everything between
// them (bias, masks, online softmax, C, dropout) in loops over one row of the tile.
//
// Forward: one task per (b, h, query tile), tasks independent, so O and L do not depend on the
//   thread count. Per key tile: S = Q_I·K_Jᵀ; per row z = S·scale + B, the masks as −∞, the
//   running max m, α = e^{m_old − m}, ℓ ← α·ℓ + Σ e^{z − m} (double), W = e^{z − m}·C·κ in place
//   of S; O_I ← α·O_I + W·V_J. Keys past the causal limit of the tile's last row are never
//   visited (they are masked for every row of the tile).
// Backward: one task per (b, h), so dQ, dK, dV and the per-(b, h) table partials are each
//   written by one thread in one order. Per (query tile, key tile): S = Q_I·K_Jᵀ and
//   Ĝ = dO_I·V_Jᵀ by GEMM; per cell P = e^{z − L_i}, G = κ·Ĝ, Ã = P·C·κ, dZ = P·(G·C − D_i) (in
//   double, like the materialised core), dS = scale·dZ; then dV_J += Ãᵀ·dO_I, dQ_I += dS·K_J,
//   dK_J += dSᵀ·Q_I by GEMM. ∂C and ∂B add G·P and dZ into a double partial per (b, h): per
//   diagonal j − i for a relative map (a contiguous run per row), per bucket for a dense one.
//   The partials are summed per head in increasing b (and, for a relative map, folded into
//   buckets in increasing diagonal order) after the parallel loop: a fixed order.
// Memory: a few Bq×Bk tiles per thread; no n×n buffer (unless the caller's map is dense).
// bf16 q, k, v (precision=bf16): widened exactly into f32 copies (and O, dO in backward), the f32
//   code below runs unchanged, and O, dQ, dK, dV are rounded once, to nearest even, into their
//   bf16 tensors: "bf16 in, bf16 out, FP32 compute" (docs/cuda.md#mixed-precision), the reference
//   the BF16 tiles are checked against. L, ∂B and ∂C stay f32. The copies are O(n·d).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cast.h"
#include "ops/fast_math_cpu.h"
#include "ops/matmul.h"
#include "ops/urpe_flash_attention.h"
#include "tensor/philox.h"

namespace urpe::kernels {

namespace {

constexpr int64_t kQueryTile = 64;
constexpr int64_t kKeyTile = 128;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

enum class MapKind { none, relative, shared, per_batch };

// One table with its map, as the loops read it. A relative map is expanded once per call into
// the per-head diagonal values table_h[map[d]], (H, Nq + Nk − 1): a row of a tile then reads a
// contiguous run of them.
struct TableMap {
  MapKind kind = MapKind::none;
  const float* table = nullptr;  // (H, K)
  int64_t buckets = 0;
  const int32_t* map = nullptr;  // (Nq + Nk − 1), (Nq, Nk) or (Bsz, Nq, Nk)
  std::vector<float> diagonal;   // relative maps: (H, Nq + Nk − 1)
};

struct Geometry {
  int64_t bsz = 0, heads = 0, nq = 0, nk = 0, dh = 0, dv = 0;
  float scale = 1.0f;
  TableMap bias, c;
  const int32_t* key_padding = nullptr;  // (Bsz, Nk) or null
  bool causal = false;
  int64_t causal_offset = 0;
  float drop_p = 0.0f;
  float keep_scale = 1.0f;  // 1/(1 − p), as ops/dropout computes it
  uint64_t seed = 0;

  int64_t diagonals() const { return nq + nk - 1; }
  // Keys [0, key_limit(i)) can be unmasked for query i; later ones are causally masked.
  int64_t key_limit(int64_t i) const {
    return causal ? std::clamp<int64_t>(i + causal_offset + 1, 0, nk) : nk;
  }
};

TableMap table_map_of(const Tensor& table, const Tensor& map, int64_t heads, int64_t nq,
                      int64_t nk) {
  TableMap t;
  if (!table.defined()) return t;
  t.table = table.f32();
  t.buckets = table.size(1);
  t.map = map.i32();
  t.kind = map.dim() == 1 ? MapKind::relative : map.dim() == 2 ? MapKind::shared : MapKind::per_batch;
  if (t.kind == MapKind::relative) {
    const int64_t diagonals = nq + nk - 1;
    t.diagonal.resize(static_cast<size_t>(heads * diagonals));
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t d = 0; d < diagonals; ++d)
        t.diagonal[h * diagonals + d] = t.table[h * t.buckets + t.map[d]];
  }
  return t;
}

Geometry geometry_of(const Tensor& q, const Tensor& k, const Tensor& v,
                     const UrpeAttentionParams& p, const AttentionDropout& dropout) {
  Geometry g;
  g.bsz = q.size(0);
  g.heads = q.size(1);
  g.nq = q.size(2);
  g.nk = k.size(2);
  g.dh = q.size(3);
  g.dv = v.size(3);
  g.scale = p.scale;
  g.bias = table_map_of(p.bias_table, p.bias_map, g.heads, g.nq, g.nk);
  g.c = table_map_of(p.c_table, p.c_map, g.heads, g.nq, g.nk);
  g.key_padding = p.key_padding.defined() ? p.key_padding.i32() : nullptr;
  g.causal = p.causal;
  g.causal_offset = p.causal_offset;
  g.drop_p = dropout.p;
  g.keep_scale = 1.0f / (1.0f - dropout.p);
  g.seed = dropout.seed.value;
  return g;
}

// Values of table t at (b, h, i, j0 … j0 + count − 1): a pointer into the diagonal values for
// a relative map, a gather into `scratch` for a dense one, nullptr without a table.
const float* row_values(const TableMap& t, const Geometry& g, int64_t b, int64_t h, int64_t i,
                        int64_t j0, int64_t count, float* scratch) {
  switch (t.kind) {
    case MapKind::none: return nullptr;
    case MapKind::relative: return t.diagonal.data() + h * g.diagonals() + (j0 - i + g.nq - 1);
    default: {
      const int32_t* map_row =
          t.map + ((t.kind == MapKind::per_batch ? b * g.nq : 0) + i) * g.nk + j0;
      const float* table_h = t.table + h * t.buckets;
      for (int64_t jj = 0; jj < count; ++jj) scratch[jj] = table_h[map_row[jj]];
      return scratch;
    }
  }
}

// keep[jj] = κ for A[b,h,i,j0 + jj]: 1/(1 − p) or 0 from element ((b·H + h)·Nq + i)·Nk + j of
// the Philox stream, exactly as ops/dropout draws it for the materialised A (one Philox block
// serves four consecutive elements here instead of being recomputed for each).
void fill_keep(const Geometry& g, int64_t bh, int64_t i, int64_t j0, int64_t count, float* keep) {
  const uint64_t first = static_cast<uint64_t>((bh * g.nq + i) * g.nk + j0);
  uint64_t block_index = ~uint64_t(0);
  PhiloxBlock block{};
  for (int64_t jj = 0; jj < count; ++jj) {
    const uint64_t element = first + static_cast<uint64_t>(jj);
    if ((element >> 2) != block_index) {
      block_index = element >> 2;
      block = philox4x32(g.seed, block_index);
    }
    const float u = static_cast<float>(block.x[element & 3] >> 8) * (1.0f / 16777216.0f);
    keep[jj] = u >= g.drop_p ? g.keep_scale : 0.0f;
  }
}

// Row-major C (m×n, ldc) = alpha·op(A)·op(B) + beta·C, one matrix.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  GemmArgs args;
  args.trans_a = trans_a;
  args.trans_b = trans_b;
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = a;
  args.lda = lda;
  args.b = b;
  args.ldb = ldb;
  args.c = c;
  args.ldc = ldc;
  args.beta = beta;
  gemm_cpu(args);
}

// z[jj] = s[jj]·scale + bias[jj] for jj < count, then −∞ from the causal limit on and at padded
// keys. Returns the row maximum. Loops kept simple enough to vectorise.
float logits_row(const Geometry& g, int64_t b, int64_t i, int64_t j0, int64_t count,
                 const float* bias, float* z) {
  if (bias != nullptr) {
    for (int64_t jj = 0; jj < count; ++jj) z[jj] = z[jj] * g.scale + bias[jj];
  } else {
    for (int64_t jj = 0; jj < count; ++jj) z[jj] = z[jj] * g.scale;
  }
  const int64_t live_end = std::clamp<int64_t>(g.key_limit(i) - j0, 0, count);
  for (int64_t jj = live_end; jj < count; ++jj) z[jj] = kNegInf;
  if (g.key_padding != nullptr) {
    const int32_t* padded = g.key_padding + b * g.nk + j0;
    for (int64_t jj = 0; jj < count; ++jj) z[jj] = padded[jj] != 0 ? kNegInf : z[jj];
  }
  float m = kNegInf;
#pragma omp simd reduction(max : m)
  for (int64_t jj = 0; jj < count; ++jj) m = z[jj] > m ? z[jj] : m;
  return m;
}

// ---- forward ----

void forward_f32(const Tensor& q, const Tensor& k, const Tensor& v, const UrpeAttentionParams& params,
                 const AttentionDropout& dropout, Tensor& out, Tensor& lse) {
  const Geometry g = geometry_of(q, k, v, params, dropout);
  const float* q_all = q.f32();  // (Bsz, H, Nq, dh)
  const float* k_all = k.f32();  // (Bsz, H, Nk, dh)
  const float* v_all = v.f32();  // (Bsz, H, Nk, dv)
  float* o_all = out.f32();      // (Bsz, H, Nq, dv)
  float* lse_all = lse.defined() ? lse.f32() : nullptr;  // (Bsz, H, Nq)
  const int64_t query_tiles = (g.nq + kQueryTile - 1) / kQueryTile;
  const int64_t tasks = g.bsz * g.heads * query_tiles;
  const int64_t dh = g.dh, dv = g.dv;

#pragma omp parallel
  {
    std::vector<float> s(static_cast<size_t>(kQueryTile * kKeyTile));  // S, then W, of a tile
    std::vector<float> bias_scratch(kKeyTile), c_scratch(kKeyTile), keep(kKeyTile);
    std::vector<float> m(kQueryTile);
    std::vector<double> l(kQueryTile);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t bh = task / query_tiles, i0 = (task % query_tiles) * kQueryTile;
      const int64_t b = bh / g.heads, h = bh % g.heads;
      const int64_t rows = std::min(kQueryTile, g.nq - i0);
      const float* q_tile = q_all + (bh * g.nq + i0) * dh;
      float* o_tile = o_all + (bh * g.nq + i0) * dv;
      std::fill(o_tile, o_tile + rows * dv, 0.0f);
      std::fill(m.begin(), m.end(), kNegInf);
      std::fill(l.begin(), l.end(), 0.0);
      const int64_t key_end = g.key_limit(i0 + rows - 1);  // masked for every row beyond

      for (int64_t j0 = 0; j0 < key_end; j0 += kKeyTile) {
        const int64_t cols = std::min(kKeyTile, key_end - j0);
        // S = Q_I·K_Jᵀ: (rows × dh)·(dh × cols), row stride kKeyTile.
        gemm(false, true, rows, cols, dh, q_tile, dh, k_all + (bh * g.nk + j0) * dh, dh, 0.0f,
             s.data(), kKeyTile);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          float* z = s.data() + r * kKeyTile;
          const float* bias = row_values(g.bias, g, b, h, i, j0, cols, bias_scratch.data());
          const float m_new = std::max(m[r], logits_row(g, b, i, j0, cols, bias, z));
          if (m_new == kNegInf) {  // nothing unmasked yet in this row: no weight, O stays 0
            std::fill(z, z + cols, 0.0f);
            continue;
          }
          const float alpha = m[r] == m_new ? 1.0f : fast::exp_fast(m[r] - m_new);  // 0 from −∞
          for (int64_t jj = 0; jj < cols; ++jj) z[jj] = fast::exp_fast(z[jj] - m_new);
          double total = 0;
#pragma omp simd reduction(+ : total)
          for (int64_t jj = 0; jj < cols; ++jj) total += z[jj];
          l[r] = l[r] * alpha + total;
          m[r] = m_new;
          const float* c = row_values(g.c, g, b, h, i, j0, cols, c_scratch.data());
          if (c != nullptr)
            for (int64_t jj = 0; jj < cols; ++jj) z[jj] *= c[jj];
          if (g.drop_p > 0.0f) {
            fill_keep(g, bh, i, j0, cols, keep.data());
            for (int64_t jj = 0; jj < cols; ++jj) z[jj] *= keep[jj];
          }
          if (alpha != 1.0f) {
            float* o_row = o_tile + r * dv;
            for (int64_t d = 0; d < dv; ++d) o_row[d] *= alpha;
          }
        }
        // O_I += W·V_J: (rows × cols)·(cols × dv).
        gemm(false, false, rows, dv, cols, s.data(), kKeyTile, v_all + (bh * g.nk + j0) * dv, dv,
             1.0f, o_tile, dv);
      }
      for (int64_t r = 0; r < rows; ++r) {
        float* o_row = o_tile + r * dv;
        const bool empty = l[r] == 0.0;  // no unmasked key: O = 0, L = −∞
        const float inv = empty ? 0.0f : static_cast<float>(1.0 / l[r]);
        for (int64_t d = 0; d < dv; ++d) o_row[d] *= inv;
        if (lse_all != nullptr)
          lse_all[bh * g.nq + i0 + r] =
              empty ? kNegInf : static_cast<float>(static_cast<double>(m[r]) + std::log(l[r]));
      }
    }
  }
}

// ---- backward ----

void backward_f32(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                  const Tensor& grad_out, const UrpeAttentionParams& params, const AttentionDropout& dropout,
                  Tensor& grad_q, Tensor& grad_k, Tensor& grad_v, Tensor* grad_bias_table, Tensor* grad_c_table) {
  const Geometry g = geometry_of(q, k, v, params, dropout);
  const float* q_all = q.f32();          // (Bsz, H, Nq, dh)
  const float* k_all = k.f32();          // (Bsz, H, Nk, dh)
  const float* v_all = v.f32();          // (Bsz, H, Nk, dv)
  const float* o_all = out.f32();        // (Bsz, H, Nq, dv)
  const float* lse_all = lse.f32();      // (Bsz, H, Nq)
  const float* go_all = grad_out.f32();  // (Bsz, H, Nq, dv)
  float* dq_all = grad_q.f32();
  float* dk_all = grad_k.f32();
  float* dv_all = grad_v.f32();
  const int64_t dh = g.dh, dv = g.dv, slices = g.bsz * g.heads;
  const bool want_bias = grad_bias_table != nullptr && g.bias.kind != MapKind::none;
  const bool want_c = grad_c_table != nullptr && g.c.kind != MapKind::none;
  // Partial width per (b, h): one slot per diagonal for a relative map, per bucket otherwise.
  auto width = [&](const TableMap& t, bool wanted) -> int64_t {
    if (!wanted) return 0;
    return t.kind == MapKind::relative ? g.diagonals() : t.buckets;
  };
  const int64_t bias_width = width(g.bias, want_bias), c_width = width(g.c, want_c);
  std::vector<double> bias_partial(static_cast<size_t>(slices * bias_width), 0.0);
  std::vector<double> c_partial(static_cast<size_t>(slices * c_width), 0.0);

#pragma omp parallel
  {
    const size_t tile = static_cast<size_t>(kQueryTile * kKeyTile);
    std::vector<float> s(tile), g_hat(tile), a_drop(tile), ds(tile);
    std::vector<float> bias_scratch(kKeyTile), c_scratch(kKeyTile), keep(kKeyTile);
    const std::vector<float> ones(kKeyTile, 1.0f);
    std::vector<double> d_row(kQueryTile), dz_row(kKeyTile);
#pragma omp for schedule(dynamic, 1)
    for (int64_t bh = 0; bh < slices; ++bh) {
      const int64_t b = bh / g.heads, h = bh % g.heads;
      double* db = want_bias ? bias_partial.data() + bh * bias_width : nullptr;
      double* dc = want_c ? c_partial.data() + bh * c_width : nullptr;
      float* dk_slice = dk_all + bh * g.nk * dh;
      float* dv_slice = dv_all + bh * g.nk * dv;
      std::fill(dk_slice, dk_slice + g.nk * dh, 0.0f);
      std::fill(dv_slice, dv_slice + g.nk * dv, 0.0f);
      const float* k_slice = k_all + bh * g.nk * dh;
      const float* v_slice = v_all + bh * g.nk * dv;

      for (int64_t i0 = 0; i0 < g.nq; i0 += kQueryTile) {
        const int64_t rows = std::min(kQueryTile, g.nq - i0);
        const float* q_tile = q_all + (bh * g.nq + i0) * dh;
        const float* o_tile = o_all + (bh * g.nq + i0) * dv;
        const float* go_tile = go_all + (bh * g.nq + i0) * dv;
        const float* lse_tile = lse_all + bh * g.nq + i0;
        float* dq_tile = dq_all + (bh * g.nq + i0) * dh;
        std::fill(dq_tile, dq_tile + rows * dh, 0.0f);
        // D_i = dO_i·O_i (= Σ_j P·dP, the softmax backward's row term).
        for (int64_t r = 0; r < rows; ++r) {
          double dot = 0;
          for (int64_t d = 0; d < dv; ++d)
            dot += static_cast<double>(go_tile[r * dv + d]) * o_tile[r * dv + d];
          d_row[r] = dot;
        }
        const int64_t key_end = g.key_limit(i0 + rows - 1);

        for (int64_t j0 = 0; j0 < key_end; j0 += kKeyTile) {
          const int64_t cols = std::min(kKeyTile, key_end - j0);
          gemm(false, true, rows, cols, dh, q_tile, dh, k_slice + j0 * dh, dh, 0.0f, s.data(),
               kKeyTile);  // S = Q_I·K_Jᵀ
          gemm(false, true, rows, cols, dv, go_tile, dv, v_slice + j0 * dv, dv, 0.0f,
               g_hat.data(), kKeyTile);  // Ĝ = dO_I·V_Jᵀ
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t i = i0 + r;
            float* z = s.data() + r * kKeyTile;
            const float* gh = g_hat.data() + r * kKeyTile;  // Ĝ = dO_i·v_j
            float* ad = a_drop.data() + r * kKeyTile;
            float* dsr = ds.data() + r * kKeyTile;
            const float row_lse = lse_tile[r];
            if (row_lse == kNegInf) {  // a fully masked row: P = 0, nothing flows
              std::fill(ad, ad + cols, 0.0f);
              std::fill(dsr, dsr + cols, 0.0f);
              continue;
            }
            const float* bias = row_values(g.bias, g, b, h, i, j0, cols, bias_scratch.data());
            logits_row(g, b, i, j0, cols, bias, z);
            for (int64_t jj = 0; jj < cols; ++jj) z[jj] = fast::exp_fast(z[jj] - row_lse);  // P
            // C and κ of the row (ones where there is no table or no dropout), so the loops
            // below have no branches and vectorise.
            const float* c = row_values(g.c, g, b, h, i, j0, cols, c_scratch.data());
            if (c == nullptr) c = ones.data();
            const float* kappa = ones.data();
            if (g.drop_p > 0.0f) {
              fill_keep(g, bh, i, j0, cols, keep.data());
              kappa = keep.data();
            }
            const float* p = z;
            float* gk = g_hat.data() + r * kKeyTile;  // Ĝ, then G = κ·Ĝ in place
            for (int64_t jj = 0; jj < cols; ++jj) gk[jj] = gh[jj] * kappa[jj];
            for (int64_t jj = 0; jj < cols; ++jj) ad[jj] = p[jj] * c[jj] * kappa[jj];  // Ã
            // dZ = P·(G·C − D_i) in double (G·C − D_i cancels when C ≈ 1), dS = scale·dZ.
            const double d_i = d_row[r];
            for (int64_t jj = 0; jj < cols; ++jj) {
              const double dz = static_cast<double>(p[jj]) * (static_cast<double>(gk[jj]) * c[jj] - d_i);
              dz_row[jj] = dz;
              dsr[jj] = static_cast<float>(g.scale * dz);
            }
            // Table partials: a contiguous run of diagonals for a relative map, a scatter by
            // bucket for a dense one.
            const int64_t diag0 = j0 - i + g.nq - 1;
            if (db != nullptr) {
              if (g.bias.kind == MapKind::relative) {
                double* run = db + diag0;
                for (int64_t jj = 0; jj < cols; ++jj) run[jj] += dz_row[jj];
              } else {
                const int32_t* map = g.bias.map +
                    ((g.bias.kind == MapKind::per_batch ? b * g.nq : 0) + i) * g.nk + j0;
                for (int64_t jj = 0; jj < cols; ++jj) db[map[jj]] += dz_row[jj];
              }
            }
            if (dc != nullptr) {  // ∂C gathers G·P
              if (g.c.kind == MapKind::relative) {
                double* run = dc + diag0;
                for (int64_t jj = 0; jj < cols; ++jj) run[jj] += static_cast<double>(gk[jj]) * p[jj];
              } else {
                const int32_t* map = g.c.map +
                    ((g.c.kind == MapKind::per_batch ? b * g.nq : 0) + i) * g.nk + j0;
                for (int64_t jj = 0; jj < cols; ++jj) dc[map[jj]] += static_cast<double>(gk[jj]) * p[jj];
              }
            }
          }
          // dV_J += Ãᵀ·dO_I, dQ_I += dS·K_J, dK_J += dSᵀ·Q_I.
          gemm(true, false, cols, dv, rows, a_drop.data(), kKeyTile, go_tile, dv, 1.0f,
               dv_slice + j0 * dv, dv);
          gemm(false, false, rows, dh, cols, ds.data(), kKeyTile, k_slice + j0 * dh, dh, 1.0f,
               dq_tile, dh);
          gemm(true, false, cols, dh, rows, ds.data(), kKeyTile, q_tile, dh, 1.0f,
               dk_slice + j0 * dh, dh);
        }
      }
    }
  }

  // Per head: add the (b, h) partials in increasing b; a relative map's diagonals then go to
  // their buckets in increasing diagonal order. A fixed order, whatever the threads did.
  auto merge = [&](const std::vector<double>& partial, int64_t partial_width, const TableMap& t,
                   Tensor& table_grad) {
    float* out_table = table_grad.f32();  // (H, K)
    std::vector<double> bucket_sum(static_cast<size_t>(t.buckets));
    for (int64_t h = 0; h < g.heads; ++h) {
      std::fill(bucket_sum.begin(), bucket_sum.end(), 0.0);
      for (int64_t slot = 0; slot < partial_width; ++slot) {
        double total = 0;
        for (int64_t b = 0; b < g.bsz; ++b) total += partial[(b * g.heads + h) * partial_width + slot];
        bucket_sum[t.kind == MapKind::relative ? t.map[slot] : slot] += total;
      }
      for (int64_t key = 0; key < t.buckets; ++key)
        out_table[h * t.buckets + key] = static_cast<float>(bucket_sum[key]);
    }
  };
  if (want_bias) merge(bias_partial, bias_width, g.bias, *grad_bias_table);
  if (want_c) merge(c_partial, c_width, g.c, *grad_c_table);
}

// ---- bf16 tensors: widened in, rounded out ----

Tensor widened(const Tensor& t) {
  if (t.dtype() == DType::f32) return t;
  Tensor wide = Tensor::empty(t.shape(), DType::f32, t.device());
  cast_cpu(t, wide);
  return wide;
}

// An f32 tensor for a result that belongs in `t`: t itself, or a scratch copy when t is bf16.
Tensor f32_target(const Tensor& t) {
  return t.dtype() == DType::f32 ? t : Tensor::empty(t.shape(), DType::f32, t.device());
}
void round_into(const Tensor& result, Tensor& t) {
  if (t.dtype() != DType::f32) cast_cpu(result, t);
}

}  // namespace

void urpe_flash_attention_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const UrpeAttentionParams& params,
                                      const AttentionDropout& dropout, Tensor& out, Tensor& lse) {
  if (q.dtype() == DType::f32) return forward_f32(q, k, v, params, dropout, out, lse);
  Tensor o = f32_target(out);
  forward_f32(widened(q), widened(k), widened(v), params, dropout, o, lse);
  round_into(o, out);
}

void urpe_flash_attention_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& out, const Tensor& lse,
                                       const Tensor& grad_out, const UrpeAttentionParams& params,
                                       const AttentionDropout& dropout, Tensor& grad_q,
                                       Tensor& grad_k, Tensor& grad_v, Tensor* grad_bias_table,
                                       Tensor* grad_c_table) {
  if (q.dtype() == DType::f32)
    return backward_f32(q, k, v, out, lse, grad_out, params, dropout, grad_q, grad_k, grad_v, grad_bias_table,
                        grad_c_table);
  Tensor gq = f32_target(grad_q), gk = f32_target(grad_k), gv = f32_target(grad_v);
  backward_f32(widened(q), widened(k), widened(v), widened(out), lse, widened(grad_out), params, dropout, gq, gk, gv,
               grad_bias_table, grad_c_table);
  round_into(gq, grad_q);
  round_into(gk, grad_k);
  round_into(gv, grad_v);
}

}  // namespace urpe::kernels
