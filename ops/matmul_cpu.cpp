// CPU GEMM: OpenBLAS cblas_sgemm when the build found it, otherwise a cache-blocked loop nest
// (i-k-j order, 64×64×256 tiles) that is slow but correct on any machine.
#include <algorithm>
#include <vector>

#include "ops/matmul.h"

#if defined(URPE_WITH_OPENBLAS)
#include <cblas.h>
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

// Batched products of small matrices (attention's (N × dh)·(dh × N) per batch and head) are
// split across threads by batch item, each item one single-threaded GEMM (the OpenMP build of
// OpenBLAS runs one thread inside a parallel region): threading inside a GEMM this small costs
// more in start-up and synchronisation than it gains. Large items keep the GEMM's own threads.
// Either way each item is computed by the same code on its own, so the result does not depend
// on the thread count.
constexpr int64_t kSmallGemmFlops = int64_t(1) << 22;  // m·n·k below this counts as small

// A large GEMM must be called outside any parallel region, even an inactive one (`if` false):
// inside one, OpenBLAS's own threads form a nested team, and libgomp starts fresh threads for
// every nested team instead of reusing its pool (measured: ~1,700 threads created and joined in
// 45 training steps, a quarter of the step's samples on short-lived threads).
void gemm_cpu(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  const bool split_batch = g.batch > 1 && g.m * g.n * g.k < kSmallGemmFlops;
  if (split_batch) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < g.batch; ++i)
      gemm_one(g, g.a + i * g.stride_a, g.b + i * g.stride_b, g.c + i * g.stride_c);
    return;
  }
  for (int64_t i = 0; i < g.batch; ++i)
    gemm_one(g, g.a + i * g.stride_a, g.b + i * g.stride_b, g.c + i * g.stride_c);
}

}  // namespace urpe::kernels
