// The two numbers of each benchmarked kernel (METHOD.md): the fewest bytes it must move through
// device memory — every input read once, every output written once, f32 and i32 both 4 bytes —
// and, for GEMMs, the floating-point operations. `urpe bench kernels --device cuda` divides these
// by the measured time; tests/test_bench_traffic.cpp pins the formulas.
//
// Notation: E = B·H·N² attention elements, R rows, D features, K = 2N − 1 Toeplitz buckets.
#pragma once
#include <cstdint>

namespace urpe::bench::traffic {

constexpr double kF = 4.0;  // bytes per f32 or i32 element

// ---- URPE attention core (ops/urpe_attention.h) ----
// Forward reads S, writes P (saved) and A: 12·E. With Toeplitz B and C it also reads the one
// (N, N) map both tables index through, and the two (H, K) tables.
inline double urpe_forward_bytes(int64_t b, int64_t h, int64_t n, bool toeplitz) {
  const double e = double(b) * h * n * n, tables = double(h) * (2 * n - 1);
  return kF * 3 * e + (toeplitz ? kF * (double(n) * n + 2 * tables) : 0.0);
}
// Backward reads G and P, writes ∂S: 12·E. With Toeplitz B and C it also reads the map and the C
// table (dP = G·C; B is not needed once P is saved) and writes ∂B and ∂C.
inline double urpe_backward_bytes(int64_t b, int64_t h, int64_t n, bool toeplitz) {
  const double e = double(b) * h * n * n, tables = double(h) * (2 * n - 1);
  return kF * 3 * e + (toeplitz ? kF * (double(n) * n + 3 * tables) : 0.0);
}

// ---- row-wise ops over (R, D) ----
// softmax: forward reads x, writes y; backward reads y and ∂y, writes ∂x.
inline double softmax_forward_bytes(int64_t rows, int64_t d) { return kF * 2 * double(rows) * d; }
inline double softmax_backward_bytes(int64_t rows, int64_t d) { return kF * 3 * double(rows) * d; }
// layer norm: forward reads x, γ, β, writes y, μ, r; backward reads x, ∂y, γ, μ, r, writes ∂x,
// ∂γ, ∂β.
inline double layer_norm_forward_bytes(int64_t rows, int64_t d) {
  return kF * (2 * double(rows) * d + 2.0 * d + 2.0 * rows);
}
inline double layer_norm_backward_bytes(int64_t rows, int64_t d) {
  return kF * (3 * double(rows) * d + 3.0 * d + 2.0 * rows);
}
// cross entropy over (R, C) logits: forward reads logits and targets, writes lse and the loss;
// backward reads logits, targets, lse and the upstream scalar, writes ∂logits.
inline double cross_entropy_forward_bytes(int64_t rows, int64_t classes) {
  return kF * (double(rows) * classes + 2.0 * rows + 1);
}
inline double cross_entropy_backward_bytes(int64_t rows, int64_t classes) {
  return kF * (2 * double(rows) * classes + 2.0 * rows + 1);
}

// ---- pointwise ----
// GELU: forward reads x, writes y; backward reads x and ∂y, writes ∂x.
inline double gelu_forward_bytes(int64_t n) { return kF * 2 * double(n); }
inline double gelu_backward_bytes(int64_t n) { return kF * 3 * double(n); }
// Adam: reads θ, g, m, v and writes θ, m, v: 28 bytes per parameter.
inline double adam_bytes(int64_t params) { return kF * 7 * double(params); }

// ---- GEMM ----
// C = op(A)·op(B), batch items of m×k by k×n: 2·m·n·k multiply-adds counted as two flops.
inline double gemm_flops(int64_t batch, int64_t m, int64_t n, int64_t k) {
  return 2.0 * double(batch) * m * n * k;
}

}  // namespace urpe::bench::traffic
