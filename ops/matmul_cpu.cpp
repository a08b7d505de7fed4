// CPU GEMM: OpenBLAS cblas_sgemm when the build found it, otherwise a cache-blocked loop nest
// (i-k-j order, 64×64×256 tiles) that is slow but correct on any machine. bf16 operands are
// widened to f32 first (exact), so the bf16 product is the f32 product of the rounded inputs.
#include <algorithm>
#include <vector>

#include "ops/matmul.h"

#if defined(URPE_WITH_OPENBLAS)
#include <cblas.h>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace urpe::kernels {

#if !defined(URPE_WITH_OPENBLAS)
// One batch item: C = alpha·op(A)·op(B) + beta·C, all row-major.
static void gemm_blocked(const GemmArgs& g, const float* a, const float* b, float* c) {
  auto at = [&](int64_t i, int64_t p) { return g.trans_a ? a[p * g.lda + i] : a[i * g.lda + p]; };
  auto bt = [&](int64_t p, int64_t j) { return g.trans_b ? b[j * g.ldb + p] : b[p * g.ldb + j]; };
  constexpr int64_t TI = 64, TJ = 256, TP = 64;
#pragma omp parallel for if (g.m * g.n * g.k > 262144)
  for (int64_t i0 = 0; i0 < g.m; i0 += TI) {
    std::vector<float> acc(TJ);
    std::vector<float> bpanel(TP * TJ);
    for (int64_t j0 = 0; j0 < g.n; j0 += TJ) {
      const int64_t j1 = std::min(g.n, j0 + TJ);
      for (int64_t i = i0; i < std::min(g.m, i0 + TI); ++i) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t p0 = 0; p0 < g.k; p0 += TP) {
          const int64_t p1 = std::min(g.k, p0 + TP);
          for (int64_t p = p0; p < p1; ++p) {
            const float aip = at(i, p);
            for (int64_t j = j0; j < j1; ++j) acc[j - j0] += aip * bt(p, j);
          }
        }
        for (int64_t j = j0; j < j1; ++j) {
          float& dst = c[i * g.ldc + j];
          dst = g.alpha * acc[j - j0] + (g.beta == 0.0f ? 0.0f : g.beta * dst);
        }
      }
    }
  }
}
#endif

// One batch item: C = alpha·op(A)·op(B) + beta·C.
static void gemm_one(const GemmArgs& g, const float* a, const float* b, float* c) {
  if (g.k == 0) {  // empty contraction: C = beta·C
    for (int64_t r = 0; r < g.m; ++r)
      for (int64_t j = 0; j < g.n; ++j) c[r * g.ldc + j] *= g.beta;
    return;
  }
#if defined(URPE_WITH_OPENBLAS)
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
              g.trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(g.m),
              static_cast<int>(g.n), static_cast<int>(g.k), g.alpha, a, static_cast<int>(g.lda),
              b, static_cast<int>(g.ldb), g.beta, c, static_cast<int>(g.ldc));
#else
  gemm_blocked(g, a, b, c);
#endif
}

// Batched products (attention's (N × dh)·(dh × N) per batch and head) are split across threads
// by batch item, each item one single-threaded GEMM (the OpenMP build of OpenBLAS runs one thread
// inside a parallel region): each item is computed by the same code on its own, so the result does
// not depend on the thread count (which OpenBLAS's own threading inside an item would break:
// OneBlasThread below), and for small items threading inside a GEMM costs more than it gains.

// ---- one large GEMM over the threads ----
// OpenBLAS threads a GEMM by cutting its output into one block per thread. urpe cuts it itself
// into fixed parts, each a single-threaded OpenBLAS call inside one parallel region, the parts
// handed out dynamically (a thread that lost its core to another process holds up no one):
//   rows   C[r0:r1] = op(A)[r0:r1]·op(B): parts of kRowPart rows, each a whole GEMM; no element
//          is computed differently from the unsplit product;
//   depth  a small output over a long contraction, the weight gradients ∂W = gᵀ·x (128 × 128
//          over K = 4096 rows): C = β·C + Σ_p op(A)[:, Kp]·op(B)[Kp, :], the parts' products in
//          buffers of their own, summed in part order.
// The parts depend on the shape alone, never on the thread count (one thread runs them in turn),
// so neither does the result. Every other product runs as one single-threaded OpenBLAS call
// (OneBlasThread): OpenBLAS's own threading cuts the output by the thread count, and with its
// Haswell/Zen kernels an element's bits depend on which block holds it (the edge kernels sum in
// another order). Measured 2026-11-28 on a 2-core EPYC without AVX-512: linear_cross_entropy's
// gradients differed between 1, 2 and 3 threads (test_op_table); the AVX-512 kernels had hidden it.
// So the row split starts at 2^20 multiply-adds with parts of at least 64 rows, which keeps the
// mid-size products on every core.
// Measured on 2 cores (AVX-512 kernels) at the bench step's shapes: the row split 3 to 8% more
// GFLOP/s than OpenBLAS's own threading, the depth split up to 2× for the 128 × 128 weight
// gradients, where OpenBLAS splits the small output and packs the long operands once per thread.
#if defined(URPE_WITH_OPENBLAS)
constexpr int64_t kSplitFlops = int64_t(1) << 20;  // m·n·k below this: one single-threaded call
constexpr int64_t kDepthFlops = int64_t(1) << 24;  // … and below this no depth split
constexpr int64_t kRowPart = 512;                  // rows of C per part of a row split, at most
constexpr int64_t kMinRowPart = 64;                // … and at least
constexpr int64_t kDepthPart = 1024;               // contraction length per part of a depth split

enum class Split { none, rows, depth };

static Split split_of(const GemmArgs& g) {
  if (g.batch != 1 || g.m * g.n * g.k < kSplitFlops) return Split::none;
  if (g.m * g.n * g.k >= kDepthFlops && g.k >= 2 * kDepthPart && g.k >= 8 * std::max(g.m, g.n)) return Split::depth;
  if (g.m >= 2 * kMinRowPart) return Split::rows;
  return Split::none;
}

// Rows per part of a row split: about an eighth of m in multiples of 16, within [64, 512] (the
// shape alone decides).
static int64_t row_part(int64_t m) {
  const int64_t eighth = (m + 7) / 8;
  return std::min(kRowPart, std::max(kMinRowPart, (eighth + 15) / 16 * 16));
}

static void gemm_rows(const GemmArgs& g, const RowsFn* before) {
  const int64_t rows = row_part(g.m), parts = (g.m + rows - 1) / rows;
#pragma omp parallel for schedule(dynamic)
  for (int64_t p = 0; p < parts; ++p) {
    GemmArgs part = g;
    const int64_t r0 = p * rows;
    part.m = std::min(g.m, r0 + rows) - r0;
    part.a = g.trans_a ? g.a + r0 : g.a + r0 * g.lda;  // op(A) rows: stored columns when transposed
    part.c = g.c + r0 * g.ldc;
    if (before) (*before)(r0, r0 + part.m);
    gemm_one(part, part.a, part.b, part.c);
  }
}

static void gemm_depth(const GemmArgs& g) {
  const int64_t parts = g.k / kDepthPart;  // ≥ 2; the last part takes the remainder
  const int64_t mn = g.m * g.n;
  // Parts 1.. write here (part 0 accumulates into C); from the host allocator's cache.
  const Tensor buffer = Tensor::empty({(parts - 1) * mn});
  float* partial = buffer.f32();
#pragma omp parallel
  {
#pragma omp for schedule(dynamic)
    for (int64_t p = 0; p < parts; ++p) {
      GemmArgs part = g;
      const int64_t k0 = p * kDepthPart;
      part.k = (p + 1 == parts ? g.k : k0 + kDepthPart) - k0;
      part.a = g.trans_a ? g.a + k0 * g.lda : g.a + k0;  // op(A) columns k0..: stored rows when transposed
      part.b = g.trans_b ? g.b + k0 : g.b + k0 * g.ldb;  // op(B) rows k0..
      if (p > 0) {
        part.beta = 0.0f;
        part.c = partial + (p - 1) * mn;
        part.ldc = g.n;
      }
      gemm_one(part, part.a, part.b, part.c);
    }
    // C += Σ_{p ≥ 1} partial_p, row by row, the parts in order.
#pragma omp for schedule(static)
    for (int64_t r = 0; r < g.m; ++r) {
      float* c = g.c + r * g.ldc;
      for (int64_t p = 1; p < parts; ++p) {
        const float* part = partial + (p - 1) * mn + r * g.n;
        for (int64_t j = 0; j < g.n; ++j) c[j] += part[j];
      }
    }
  }
}

// One OpenBLAS thread for the calls in its scope: OpenBLAS's OpenMP build threads a call by the
// caller's omp_get_max_threads(), a per-thread setting (the nthreads-var ICV), so setting it to 1
// here and back after touches no other thread. Inside a parallel region OpenBLAS runs one thread
// anyway.
struct OneBlasThread {
#if defined(_OPENMP)
  int previous = omp_get_max_threads();
  OneBlasThread() { omp_set_num_threads(1); }
  ~OneBlasThread() { omp_set_num_threads(previous); }
#endif
};
#endif

// A large GEMM must be called outside any parallel region, even an inactive one (`if` false):
// inside one, OpenBLAS's own threads form a nested team, and libgomp starts fresh threads for
// every nested team instead of reusing its pool (measured: ~1,700 threads created and joined in
// 45 training steps, a quarter of the step's samples on short-lived threads).
// ---- bf16 operands: widened to f32 (exactly), then the f32 product ----
// The elements one operand's GEMMs read: batch items `stride` apart, `rows` stored rows `ld` apart.
static int64_t operand_extent(int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t batch) {
  if (rows == 0 || cols == 0 || batch == 0) return 0;
  return stride * (batch - 1) + ld * (rows - 1) + cols;
}

static Tensor widened(const bf16* p, int64_t n) {
  Tensor out = Tensor::empty({n});
  float* dst = out.f32();
#pragma omp parallel for schedule(static) if (n > 32768)
  for (int64_t k = 0; k < n; ++k) dst[k] = to_float(p[k]);
  return out;
}

// The f32 arguments over widened copies of the bf16 operands (kept alive by `keep`).
static GemmArgs widen_operands(const GemmArgs& g, Tensor keep[2]) {
  URPE_CHECK(g.a_bf16 != nullptr && g.b_bf16 != nullptr, "gemm_cpu: one bf16 operand and one f32");
  const int64_t k = g.m == 0 || g.n == 0 ? 0 : g.k;
  keep[0] = widened(g.a_bf16, operand_extent(g.trans_a ? k : g.m, g.trans_a ? g.m : k, g.lda, g.stride_a, g.batch));
  keep[1] = widened(g.b_bf16, operand_extent(g.trans_b ? g.n : k, g.trans_b ? k : g.n, g.ldb, g.stride_b, g.batch));
  GemmArgs f = g;
  f.a = keep[0].f32();
  f.b = keep[1].f32();
  f.a_bf16 = f.b_bf16 = nullptr;
  return f;
}

// cuBLASLt's epilogues (a bias, a bf16 C) are CUDA's: the CPU's linear adds its bias through the
// row hook below and rounds a bf16 output in a pass of its own.
static void check_no_epilogue(const GemmArgs& g) {
  URPE_CHECK(g.bias == nullptr && g.bias_bf16 == nullptr && g.c_bf16 == nullptr,
             "gemm_cpu: a bias epilogue or a bf16 C is cuBLASLt's (CUDA only); the CPU GEMM writes an f32 C");
}

void gemm_cpu(const GemmArgs& g) {
  check_no_epilogue(g);
  if (g.m == 0 || g.n == 0) return;
  if (g.a_bf16 != nullptr || g.b_bf16 != nullptr) {
    Tensor keep[2];
    return gemm_cpu(widen_operands(g, keep));
  }
  const bool split_batch = g.batch > 1;  // large items too: one OpenBLAS thread each (OneBlasThread's why)
  if (split_batch) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < g.batch; ++i)
      gemm_one(g, g.a + i * g.stride_a, g.b + i * g.stride_b, g.c + i * g.stride_c);
    return;
  }
#if defined(URPE_WITH_OPENBLAS)
  switch (split_of(g)) {
    case Split::rows: return gemm_rows(g, nullptr);
    case Split::depth: return gemm_depth(g);
    case Split::none: break;
  }
  const OneBlasThread one_thread;
#endif
  for (int64_t i = 0; i < g.batch; ++i)
    gemm_one(g, g.a + i * g.stride_a, g.b + i * g.stride_b, g.c + i * g.stride_c);
}

void gemm_cpu(const GemmArgs& g, const RowsFn& before) {
  URPE_CHECK(g.batch == 1, "gemm_cpu: row hooks need a single product, got a batch of " << g.batch);
  check_no_epilogue(g);
  if (g.a_bf16 != nullptr || g.b_bf16 != nullptr) {
    Tensor keep[2];
    return gemm_cpu(widen_operands(g, keep), before);
  }
#if defined(URPE_WITH_OPENBLAS)
  if (split_of(g) == Split::rows) return gemm_rows(g, &before);
#endif
  constexpr int64_t kBlock = 64;  // rows per call of `before` around an unsplit product
  const int64_t blocks = (g.m + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (g.m * g.n > 32768)
  for (int64_t b = 0; b < blocks; ++b) before(b * kBlock, std::min(g.m, (b + 1) * kBlock));
  gemm_cpu(g);
}

}  // namespace urpe::kernels
