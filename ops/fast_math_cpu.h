// Branch-free float e^x, erfc(x) and the normal CDF Φ(x) for the CPU kernels' hot loops.
//
// Why: libm's expf/erfcf are opaque calls, so a loop that calls them runs one element at a time;
// in the CPU training step GELU's erfcf and the attention softmax's expf were ~31% of the time
// (perf, bench/results/cpu_step_2026-11-21.md). These versions are plain float arithmetic and
// integer bit operations, written to be inlined into loops that GCC 12 vectorises (SSE2 with the
// portable build, AVX2/AVX-512 with the default -march=native; no -ffast-math; checked with
// -fopt-info-vec). The build passes -ffp-contract=off, so there is no FMA contraction and the
// vector and scalar code paths round identically: results do not depend on the thread count, on
// where a chunk's vector loop ends, or on the vector width.
//
// The maths.
//   exp: Cody-Waite range reduction x = n·ln2 + r, n = round(x/ln2), ln2 split into a 9-bit high
//     part (n·ln2_hi is exact for |n| < 2^15) and a low part; e^r = 1 + r + r²·P(r), P of degree 4
//     fitted for this file (least squares with Lawson reweighting, in double, on the relative
//     error over |r| ≤ 0.44; the fit's own error is 1.6e-8), then scaled by 2^n as 2^⌊n/2⌋·2^(n−⌊n/2⌋) so that results
//     down to the subnormal range and up to FLT_MAX come out right. exp_of_sum(hi, lo) adds a small
//     correction lo (|lo| ≤ 0.09) to the reduced argument, which is how e^{−u²} keeps its accuracy:
//     u² is split as u_hi² (exact: u_hi keeps 12 significant bits) + u_lo·(u + u_hi).
//   erfc: for t = |u| ≥ 0, erfc(t) = e^{−t²}·F(q)/(1 + 2t) with q = (t − 2)/(t + 2) ∈ [−1, 0.68]
//     for t ∈ [0, 10.5], F = (1 + 2t)·e^{t²}·erfc(t) (smooth, 1 at t = 0, → 2/√π as t → ∞), F a
//     degree-9 polynomial in q fitted the same way (relative error 1.5e-8 in double over
//     t ∈ [0, 10.5]; erfc(t) < FLT_TRUE_MIN/2 beyond t ≈ 10.06). erfc(−t) = 2 − erfc(t). There
//     is no 1 − erf(t) anywhere, so the negative tail keeps its relative accuracy.
//   Φ(x) = ½·erfc(−x/√2) is written with x itself: e^{−x²/2} from the exact split of x, and F at
//     t = |x|/√2 (|d ln F/d ln t| < 1, so rounding t costs at most its own 6e-8). Going
//     through erfc(−x/√2) would round x/√2 first and lose up to 2t²·2^−24 (4e-6 at x = −8).
//     For |x| > 13 (Φ(−|x|) < FLT_MIN), Φ(−|x|) and e^{−x²/2} are flushed to 0.
//
// Measured errors, against double std::exp / std::erfc of the same float input, checking every
// float in the range (tests/test_cpu_kernels.cpp with URPE_FAST_MATH_STRIDE=1; by default it
// checks every 997th float and asserts the bounds in brackets):
//   exp_fast,  x ∈ [−104, 89], 2.24e9 floats: max relative error 9.1e-8 [1.5e-7]
//              where e^x is a normal float; subnormal results within 1.1e-45 (< 1 subnormal ulp);
//              e^x > FLT_MAX gives +inf; exp(−inf) = 0, exp(+inf) = +inf, NaN stays NaN.
//   erfc_fast, x ∈ [−10, 10], 2.19e9 floats: max relative error 3.8e-7 [5e-7] where erfc(x) ≥
//              FLT_MIN (x ≤ 9.1); below, within 2.0e-45 absolute (1.4 subnormal ulp).
//   GELU (ops/activation_cpu.cpp, through the kernels), x ∈ [−13, 13], 2.19e9 floats: x·Φ(x)
//              max relative error 4.1e-7 [6e-7] where Φ(x) and x·Φ(x) are normal floats; the slope
//              Φ(x) + x·φ(x) within 4.2e-7 [6e-7] of Φ(x) + |x|·φ(x) (its scale: the slope itself
//              crosses zero at x ≈ −0.75, where no relative bound can hold).
// (float's unit roundoff is 6e-8.) Far inside the 1e-4 golden tolerance and the 1e-5 relative
// CUDA-parity tolerance.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace urpe::kernels::fast {

inline uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Selects and clamps are integer arithmetic on the bit patterns, not comparisons: GCC (without
// -ffinite-math-only) compiles `a < b ? a : b` as a branch, threads the clamped constant through
// the rest of the loop body, and then refuses to if-convert the duplicated float operations (they
// "could trap"), so the loop stays scalar. Masks made with shifts leave it nothing to branch on.

// All ones when i < 0, else 0.
inline int32_t negative_mask(int32_t i) { return i >> 31; }

// min of two ints whose difference fits in an int32.
inline int32_t min_int(int32_t a, int32_t b) { return a + ((b - a) & negative_mask(b - a)); }

// (sign bit of x set) ? a : b
inline float select_if_negative(float x, float a, float b) {
  const uint32_t mask = static_cast<uint32_t>(negative_mask(static_cast<int32_t>(bits_of(x))));
  return float_of((bits_of(a) & mask) | (bits_of(b) & ~mask));
}

// min(a, limit) for a ≥ 0 (or +NaN, which gives limit) and limit > 0: non-negative floats are
// ordered like their bit patterns.
inline float min_nonnegative(float a, float limit) {
  return float_of(static_cast<uint32_t>(
      min_int(static_cast<int32_t>(bits_of(a)), static_cast<int32_t>(bits_of(limit)))));
}

// x clamped to [lo, hi] for lo < 0 < hi and any x, ±inf included (NaN gives lo or hi): the
// magnitude is clamped to |lo| or hi according to the sign.
inline float clamp_any(float x, float lo, float hi) {
  const int32_t i = static_cast<int32_t>(bits_of(x));
  const int32_t sign_mask = negative_mask(i);
  const int32_t limit_hi = static_cast<int32_t>(bits_of(hi)), limit_lo = static_cast<int32_t>(bits_of(-lo));
  const int32_t limit = limit_hi ^ ((limit_hi ^ limit_lo) & sign_mask);
  const int32_t magnitude = min_int(i & 0x7FFFFFFF, limit);  // both in [0, 2^31): no overflow
  return float_of(static_cast<uint32_t>((i & static_cast<int32_t>(0x80000000u)) | magnitude));
}

// x is NaN ? x : y
inline float keep_nan(float x, float y) {
  const uint32_t mask = static_cast<uint32_t>(
      negative_mask(0x7F800000 - static_cast<int32_t>(bits_of(x) & 0x7FFFFFFFu)));
  return float_of((bits_of(x) & mask) | (bits_of(y) & ~mask));
}

// e^{hi + lo} = 2^n·e^r: returns e^r and sets n. Needs |hi| < 2^22·ln2 (for n) and |lo| ≤ 0.09.
inline float exp_reduced(float hi, float lo, int32_t& n_int) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;              // 355/512: 9 significant bits
  constexpr float kLn2Lo = -2.12194440054690583e-4f;  // ln2 − kLn2Hi
  constexpr float kShifter = 12582912.0f;             // 1.5·2^23: adding it rounds to an integer
  const float shifted = hi * kLog2e + kShifter;
  const float n = shifted - kShifter;                                   // round(hi/ln2)
  n_int = static_cast<int32_t>(bits_of(shifted) - bits_of(kShifter));
  const float r = ((hi - n * kLn2Hi) - n * kLn2Lo) + lo;               // |r| ≤ 0.44
  // e^r = 1 + r + r²·P(r)
  float p = 1.37703260e-3f;
  p = p * r + 8.39025620e-3f;
  p = p * r + 4.16711047e-2f;
  p = p * r + 1.66662902e-1f;
  p = p * r + 4.99999732e-1f;
  return 1.0f + (r + r * r * p);
}

// e^{hi + lo} for any hi and a small correction |lo| ≤ 0.09 (0 for plain e^hi).
inline float exp_of_sum(float hi, float lo) {
  // Beyond [−110, 89] the result is 0 or +inf anyway; the clamp keeps n in range.
  int32_t n_int;
  const float e_r = exp_reduced(clamp_any(hi, -110.0f, 89.0f), lo, n_int);
  // 2^n in two halves: n ∈ [−159, 128], each half's biased exponent stays in [47, 191].
  const int32_t n_half = n_int >> 1;
  const float scale_a = float_of(static_cast<uint32_t>(n_half + 127) << 23);
  const float scale_b = float_of(static_cast<uint32_t>(n_int - n_half + 127) << 23);
  return keep_nan(hi, e_r * scale_a * scale_b);
}

inline float exp_fast(float x) { return exp_of_sum(x, 0.0f); }

// Σ_c e^{z_c − m} over a row of n values: the exponentials in float, a block of 256 at a time so
// that their loop vectorises, the sum in double and in order. The softmax denominator of
// cross_entropy and linear_cross_entropy (ops/loss_cpu.cpp, ops/linear_cross_entropy_cpu.cpp).
inline double sum_exp_shifted(const float* z, int64_t n, float m) {
  constexpr int64_t kBlock = 256;
  double total = 0;
  float e[kBlock];
  for (int64_t c0 = 0; c0 < n; c0 += kBlock) {
    const int64_t len = n - c0 < kBlock ? n - c0 : kBlock;
    for (int64_t c = 0; c < len; ++c) e[c] = exp_fast(z[c0 + c] - m);
    for (int64_t c = 0; c < len; ++c) total += e[c];
  }
  return total;
}

// e^{−a²·k} for a ≥ 0 (or NaN) and k ∈ {1, ½}: a² split into an exact part and a correction.
inline float exp_neg_scaled_square(float a, float k) {
  const float a_hi = float_of(bits_of(a) & 0xFFFFF000u);  // 12 significant bits: a_hi² is exact
  const float a_lo = a - a_hi;
  return exp_of_sum(-(a_hi * a_hi) * k, -(a_lo * (a + a_hi)) * k);
}

// F(q) = (1 + 2t)·e^{t²}·erfc(t), q = (t − 2)/(t + 2), for t ∈ [0, 10.5].
inline float erfc_scaled_poly(float t) {
  const float q = (t - 2.0f) / (t + 2.0f);
  float f = -3.96106538e-4f;
  f = f * q - 1.22234039e-3f;
  f = f * q + 1.31257100e-3f;
  f = f * q + 8.62535648e-3f;
  f = f * q - 8.06088839e-3f;
  f = f * q - 5.42026199e-2f;
  f = f * q + 1.64055660e-1f;
  f = f * q - 1.66031569e-1f;
  f = f * q - 9.27639976e-2f;
  f = f * q + 1.27697837e+0f;
  return f;
}

// erfc(x), relative accuracy in both tails.
inline float erfc_fast(float x) {
  const float t = min_nonnegative(std::fabs(x), 10.5f);  // erfc(10.5) underflows to 0; keeps q fitted
  const float tail = exp_neg_scaled_square(t, 1.0f) * erfc_scaled_poly(t) / (1.0f + 2.0f * t);
  return keep_nan(x, select_if_negative(x, 2.0f - tail, tail));
}

// Φ(x), the standard normal CDF, and g = e^{−x²/2} (= √(2π)·φ(x)) together, for GELU. The
// same maths as erfc_fast with a cheaper exp: for |x| ≤ 13 the exponent −x²/2 lies in
// [−84.5, 0], so one power-of-two scale suffices and no clamp or NaN select is needed. Beyond,
// g < 2.2e-37 and Φ(−|x|) < FLT_MIN are flushed to 0 (and Φ(|x|) = 1). A NaN x gives finite
// Φ and g: GELU's x·Φ(x) and Φ(x) + x·φ(x) still come out NaN through the factor x.
inline void normal_cdf_and_density(float x, float& cdf, float& g) {
  constexpr float kInvSqrt2 = 0.70710678118654752440f;
  constexpr float kLimit = 13.0f;
  const float abs_x = std::fabs(x);
  const float a = min_nonnegative(abs_x, kLimit);
  const float a_hi = float_of(bits_of(a) & 0xFFFFF000u);  // 12 significant bits: a_hi² is exact
  const float a_lo = a - a_hi;
  int32_t n_int;
  const float e_r = exp_reduced(-0.5f * (a_hi * a_hi), -0.5f * (a_lo * (a + a_hi)), n_int);
  const uint32_t inside = ~static_cast<uint32_t>(  // all ones when |x| ≤ kLimit
      negative_mask(static_cast<int32_t>(bits_of(kLimit)) - static_cast<int32_t>(bits_of(abs_x))));
  g = float_of(bits_of(e_r * float_of(static_cast<uint32_t>(n_int + 127) << 23)) & inside);
  const float t = a * kInvSqrt2;  // ≤ 9.2
  const float lower_tail = 0.5f * g * erfc_scaled_poly(t) / (1.0f + 2.0f * t);  // Φ(−|x|)
  cdf = select_if_negative(x, lower_tail, 1.0f - lower_tail);
}

}  // namespace urpe::kernels::fast
