// The two numbers of each benchmarked kernel (METHOD.md): the fewest bytes it must move through
// device memory — every input read once, every output written once, f32 and i32 both 4 bytes —
// and, for GEMMs, the floating-point operations. `urpe bench kernels --device cuda` divides these
// by the measured time; tests/test_bench_traffic.cpp pins the formulas.
//
// The formulas themselves live next to each op (ops/*.h, "cost"), where the per-op profiler
// (`urpe profile`) reads them too; these are the bench's names for them at its sizes.
//
// Notation: E = B·H·N² attention elements, R rows, D features, K = 2N − 1 Toeplitz buckets.
#pragma once
#include <cstdint>

#include "ops/activation.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/optimizer_kernels.h"
#include "ops/softmax.h"
#include "ops/urpe_attention.h"

namespace urpe::bench::traffic {

// ---- URPE attention core (ops/urpe_attention.h) ----
// With Toeplitz B and C: the one (N, N) map both tables index through and the two (H, K) tables.
inline AttentionCostSizes urpe_sizes(int64_t b, int64_t h, int64_t n, bool toeplitz) {
  AttentionCostSizes s;
  s.batch = b;
  s.heads = h;
  s.nq = s.nk = n;
  if (toeplitz) {
    s.map_elements = double(n) * n;
    s.bias_entries = s.c_entries = double(h) * (2 * n - 1);
  }
  return s;
}
// Forward reads S, writes P (saved) and A: 12·E, plus the map and both tables.
inline double urpe_forward_bytes(int64_t b, int64_t h, int64_t n, bool toeplitz) {
  return urpe_attention_forward_cost(urpe_sizes(b, h, n, toeplitz), true).bytes;
}
// Backward reads G and P, writes ∂S: 12·E, plus the map, the C table, ∂B and ∂C.
inline double urpe_backward_bytes(int64_t b, int64_t h, int64_t n, bool toeplitz) {
  return urpe_attention_backward_cost(urpe_sizes(b, h, n, toeplitz), toeplitz, toeplitz).bytes;
}

// ---- row-wise ops over (R, D) ----
inline double softmax_forward_bytes(int64_t rows, int64_t d) { return softmax_forward_cost(rows, d).bytes; }
inline double softmax_backward_bytes(int64_t rows, int64_t d) { return softmax_backward_cost(rows, d).bytes; }
inline double layer_norm_forward_bytes(int64_t rows, int64_t d) { return layer_norm_forward_cost(rows, d).bytes; }
inline double layer_norm_backward_bytes(int64_t rows, int64_t d) { return layer_norm_backward_cost(rows, d).bytes; }
inline double cross_entropy_forward_bytes(int64_t rows, int64_t classes) {
  return cross_entropy_forward_cost(rows, classes).bytes;
}
inline double cross_entropy_backward_bytes(int64_t rows, int64_t classes) {
  return cross_entropy_backward_cost(rows, classes).bytes;
}

// ---- pointwise ----
inline double gelu_forward_bytes(int64_t n) { return activation_forward_cost(kernels::Activation::gelu, n).bytes; }
inline double gelu_backward_bytes(int64_t n) { return activation_backward_cost(kernels::Activation::gelu, n).bytes; }
// Adam: reads θ, g, m, v and writes θ, m, v: 28 bytes per parameter.
inline double adam_bytes(int64_t params) { return adam_cost(params, false).bytes; }

// ---- GEMM ----
// C = op(A)·op(B), batch items of m×k by k×n: 2·m·n·k multiply-adds counted as two flops.
inline double gemm_flops(int64_t batch, int64_t m, int64_t n, int64_t k) {
  kernels::GemmArgs g;
  g.batch = batch;
  g.m = m;
  g.n = n;
  g.k = k;
  return gemm_cost(g).flops;
}

}  // namespace urpe::bench::traffic
