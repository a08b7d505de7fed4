// CPU kernels of the fused self-attention block (urpe_self_attention.h): one GEMM for the packed
// projections, then every (b, h) slice on one thread — its scores, the URPE core's rows
// (urpe_attention_rows_cpu.h, the reference core's own code) and its A·V — with the heads read
// and written in place through the GEMMs' row strides, then (backward) the projections' GEMMs.
// Memory traffic per call, beyond the GEMMs' operands: forward writes [Q|K|V] and P; backward
// reads P and writes ∂[Q|K|V] once; the N×N scores, A, ∂A and ∂S of a slice stay in per-thread
// scratch (3·N² floats a thread, from the host allocator's cache).
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/urpe_attention_rows_cpu.h"
#include "ops/urpe_self_attention.h"

namespace urpe::kernels {

namespace {

using attention_rows::RowContext;
using attention_rows::RowScratch;

int max_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

int thread_index() {
#if defined(_OPENMP)
  return omp_get_thread_num();
#else
  return 0;
#endif
}

// C (m × n, row stride ldc) = op(A)·op(B) + beta·C, one product (single-threaded inside the
// slices' parallel region).
void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
             int64_t ldb, float* c, int64_t ldc, float beta = 0.0f) {
  GemmArgs g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a;
  g.lda = lda;
  g.b = b;
  g.ldb = ldb;
  g.c = c;
  g.ldc = ldc;
  g.beta = beta;
  gemm_cpu(g);
}

// The sizes every kernel derives from the packed [Q|K|V]: rows = B·N, D = H·dh.
struct Sizes {
  int64_t batch, heads, rows, n, d, d3, dh;
  Sizes(const Tensor& x, const Tensor& wcat, int64_t batch_, int64_t heads_)
      : batch(batch_), heads(heads_), rows(x.size(0)), n(x.size(0) / batch_), d(x.size(1)), d3(wcat.size(0)),
        dh(wcat.size(0) / 3 / heads_) {}
  int64_t full() const { return d3 / 3; }  // D
};

}  // namespace

// ---- forward ----

void urpe_self_attention_forward_cpu(const Tensor& x, const Tensor& wcat, const Tensor& bcat, int64_t batch,
                                     int64_t heads, const UrpeAttentionParams& params, const Tensor& logit_bias,
                                     Tensor& qkv, Tensor& probs, Tensor& context) {
  const Sizes z(x, wcat, batch, heads);
  const int64_t n = z.n, D = z.full(), d3 = z.d3, dh = z.dh;
  // [Q|K|V] = x·Wcatᵀ + bcat: the bias in every row, then the GEMM accumulates onto it (as linear).
  broadcast_axis_cpu(bcat, 1, z.rows, d3, 1.0f, qkv);
  product(false, true, z.rows, d3, z.d, x.f32(), z.d, wcat.f32(), z.d, qkv.f32(), d3, 1.0f);

  const RowContext ctx = attention_rows::make_context(batch, heads, n, n, params);
  const float* packed = qkv.f32();                       // (B·N, 3D): row r = [q_r | k_r | v_r]
  float* p_all = probs.defined() ? probs.f32() : nullptr;  // (B, H, N, N)
  float* out = context.f32();                            // (B·N, D)
  const float* l_all = logit_bias.defined() ? logit_bias.f32() : nullptr;  // (B, H, N, N)
  const Tensor scratch = Tensor::empty({max_threads(), 2 * n * n});  // per thread: S and A
#pragma omp parallel
  {
    RowScratch rows(n);
    float* s = scratch.f32() + thread_index() * 2 * n * n;  // (N, N)
    float* a = s + n * n;                                   // (N, N)
#pragma omp for schedule(dynamic)
    for (int64_t slice = 0; slice < batch * heads; ++slice) {
      const int64_t b = slice / heads, h = slice % heads;
      const float* q = packed + b * n * d3 + h * dh;  // (N, dh), rows 3D apart
      const float* k = q + D;
      const float* v = q + 2 * D;
      product(false, true, n, n, dh, q, d3, k, d3, s, n);  // S = Q·Kᵀ
      float* p = p_all ? p_all + slice * n * n : nullptr;
      const float* l = l_all ? l_all + slice * n * n : nullptr;
      for (int64_t i = 0; i < n; ++i)
        attention_rows::forward_row(ctx, b, h, i, s + i * n, p ? p + i * n : nullptr, a + i * n, rows,
                                    l ? l + i * n : nullptr);
      product(false, false, n, dh, n, a, n, v, d3, out + b * n * D + h * dh, D);  // context[b, :, h] = A·V
    }
  }
}

// ---- backward ----

void urpe_self_attention_backward_cpu(const Tensor& x, const Tensor& wcat, const Tensor& qkv, const Tensor& probs,
                                      const Tensor& grad_context, int64_t batch, int64_t heads,
                                      const UrpeAttentionParams& params, Tensor& grad_x, Tensor& grad_wcat,
                                      Tensor& grad_bcat, Tensor* grad_bias_table, Tensor* grad_c_table,
                                      Tensor* grad_logit_bias) {
  const Sizes z(x, wcat, batch, heads);
  const int64_t n = z.n, D = z.full(), d3 = z.d3, dh = z.dh, slices = batch * heads;
  const RowContext ctx = attention_rows::make_context(batch, heads, n, n, params);
  const bool want_bias = grad_bias_table != nullptr && ctx.bias_table != nullptr;
  const bool want_c = grad_c_table != nullptr && ctx.c_table != nullptr;
  const int64_t kb = want_bias ? ctx.bias_buckets : 0, kc = want_c ? ctx.c_buckets : 0;
  std::vector<double> bias_partial(static_cast<size_t>(slices * kb), 0.0);  // (B·H, Kb)
  std::vector<double> c_partial(static_cast<size_t>(slices * kc), 0.0);     // (B·H, Kc)

  Tensor grad_qkv = Tensor::empty({z.rows, d3});  // ∂[Q|K|V]: every element written below
  const float* packed = qkv.f32();
  const float* g_all = grad_context.f32();  // (B·N, D)
  float* gp_all = grad_qkv.f32();
  const float* p_all = probs.f32();         // (B, H, N, N)
  float* gl_all = grad_logit_bias ? grad_logit_bias->f32() : nullptr;  // (B, H, N, N): dZ
  const Tensor scratch = Tensor::empty({max_threads(), 3 * n * n});  // per thread: A, ∂A, ∂S
#pragma omp parallel
  {
    RowScratch rows(n);
    float* a = scratch.f32() + thread_index() * 3 * n * n;
    float* da = a + n * n;
    float* ds = da + n * n;
#pragma omp for schedule(dynamic)
    for (int64_t slice = 0; slice < slices; ++slice) {
      const int64_t b = slice / heads, h = slice % heads;
      const float* q = packed + b * n * d3 + h * dh;  // (N, dh), rows 3D apart
      const float* k = q + D;
      const float* v = q + 2 * D;
      const float* g = g_all + b * n * D + h * dh;  // (N, dh), rows D apart
      float* gq = gp_all + b * n * d3 + h * dh;     // (N, dh), rows 3D apart
      float* gk = gq + D;
      float* gv = gq + 2 * D;
      const float* p = p_all + slice * n * n;
      for (int64_t i = 0; i < n; ++i) attention_rows::probs_times_c_row(ctx, b, h, i, p + i * n, a + i * n, rows);
      product(false, true, n, n, dh, g, D, v, d3, da, n);   // ∂A = G·Vᵀ
      product(true, false, n, dh, n, a, n, g, D, gv, d3);   // ∂V = Aᵀ·G
      attention_rows::backward_slice(ctx, b, h, da, p, ds, want_bias ? bias_partial.data() + slice * kb : nullptr,
                                     want_c ? c_partial.data() + slice * kc : nullptr, rows,
                                     gl_all ? gl_all + slice * n * n : nullptr);
      product(false, false, n, dh, n, ds, n, k, d3, gq, d3);  // ∂Q = ∂S·K
      product(true, false, n, dh, n, ds, n, q, d3, gk, d3);   // ∂K = ∂Sᵀ·Q
    }
  }
  if (want_bias) merge_table_partials(bias_partial.data(), batch, heads, kb, *grad_bias_table);
  if (want_c) merge_table_partials(c_partial.data(), batch, heads, kc, *grad_c_table);

  // The projections: ∂x = ∂[Q|K|V]·Wcat, ∂Wcat = ∂[Q|K|V]ᵀ·x, ∂bcat = Σ_rows ∂[Q|K|V].
  product(false, false, z.rows, z.d, d3, gp_all, d3, wcat.f32(), z.d, grad_x.f32(), z.d);
  product(true, false, d3, z.d, z.rows, gp_all, d3, x.f32(), z.d, grad_wcat.f32(), z.d);
  sum_axis_cpu(grad_qkv, 1, z.rows, d3, 1.0f, grad_bcat);
}

}  // namespace urpe::kernels
