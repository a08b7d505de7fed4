// e^z the way the tensor-core attention kernels need it: one special-function-unit instruction.
// Why: `expf` (no --use_fast_math) is about nine instructions a call (a range reduction in FFMAs
// around MUFU.EX2), and the fused attention evaluates it once per score cell in the forward and
// again in each backward kernel. bench/sass_mix.sh counted it, with the branch that skipped −∞
// cells, as half of the forward's instructions per tile (issue 35; bench/cuda_notes.md, sixth pass).
// FlashAttention-2 computes the same weights as 2^(z·log2 e − m·log2 e): one FFMA and one MUFU.EX2.
//
//   exp2_approx(x) = 2^x by `ex2.approx.ftz.f32` (PTX ISA "ex2"): within 2 ulp of 2^x (the bound
//   CUDA's math library states for exp2f, which is this instruction plus subnormal handling);
//   subnormal inputs read as 0 and subnormal results are flushed to +0; 2^−∞ = +0 exactly.
//
// In the CUDA simulator the same call is the host's correctly rounded exp2f with the same flush,
// so the simulator's bits may differ from a GPU's in the last place; the kernels' parity bounds
// (TF32 / BF16, docs/cuda.md#tensor-core-tiles) are thousands of times wider.
#pragma once
#include <cuda_runtime.h>

#include <cmath>

namespace urpe::kernels::tc {

constexpr float kLog2e = 1.4426950408889634f;  // log2 e: e^z = 2^(z·log2 e)

__device__ __forceinline__ float exp2_approx(float x) {
#if defined(URPE_CUDA_SIM)
  const float r = std::exp2(std::fpclassify(x) == FP_SUBNORMAL ? 0.0f : x);
  return std::fpclassify(r) == FP_SUBNORMAL ? 0.0f : r;
#else
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#endif
}

// A row's offset in base 2 for e^(z − m) = exp2_approx(fmaf(z, kLog2e, −offset)), m the row's
// running max (forward) or its log-sum-exp L (backward): m·log2 e, and +∞ for m = −∞ (a row with
// no unmasked key), so that every cell of such a row weighs exactly 0 (fmaf(z, ·, −∞) = −∞ for any
// z < +∞) with no branch and no NaN from −∞ − (−∞).
__device__ __forceinline__ float base2_offset(float m) { return m == -INFINITY ? INFINITY : m * kLog2e; }

}  // namespace urpe::kernels::tc
