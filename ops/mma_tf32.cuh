// The one door to the tensor cores: TF32 matrix tiles through `mma.sync` m16n8k8 (FP32 in, rounded
// to TF32, FP32 accumulate). On a GPU each function is one inline-PTX instruction; in the CUDA
// simulator (tests/cuda_sim/mma.cpp) the same call is a warp collective that emulates the
// instruction, so every kernel built on this header runs, with racecheck and memcheck, in
// `make test`. No kernel writes `asm("mma…")` anywhere else.
//
// ---- the instruction ----
//   D (16×8) = A (16×8) · B (8×8) + C (16×8),   one warp, every lane taking part
// A and B hold TF32 values in 32-bit registers (to_tf32 below rounds an FP32 value first; the
// instruction ignores the 13 low bits), C and D are FP32. A TF32 value keeps FP32's 8-bit exponent
// and 10 of its 23 mantissa bits: relative rounding error ≤ 2^-11 ≈ 4.9e-4 per input, so a dot
// product of length d has a relative error around 1e-3 of Σ|a·b| (docs/cuda.md#tensor-core-tiles).
//
// ---- the fragments (PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32 / .f32) ----
// Lane ℓ = 4·g + t (g = ℓ / 4 its group, t = ℓ % 4 its place in the group) holds:
//   A: a[0] = A(g, t)    a[1] = A(g+8, t)    a[2] = A(g, t+4)    a[3] = A(g+8, t+4)
//   B: b[0] = B(t, g)    b[1] = B(t+4, g)                          (row = k, column = n)
//   C: c[0] = C(g, 2t)   c[1] = C(g, 2t+1)   c[2] = C(g+8, 2t)   c[3] = C(g+8, 2t+1)
// The helpers a_row … c_col say the same as functions, so kernels index fragments through them.
//
// A C fragment is not an A fragment (lane t holds columns 2t, 2t+1 in C but t, t+4 in A). To feed
// a tile of scores straight back as the A operand of the next product (P·V in attention) the
// kernels relabel the contraction index instead of moving data: within each group of 8, let A's
// column t mean column 2t and column t+4 mean column 2t+1. Then
//   a[0] = c[0], a[1] = c[2], a[2] = c[1], a[3] = c[3]
// and B must be read with the same relabelling, b[0] = B(2t, g), b[1] = B(2t+1, g)
// (kPairedRows in the kernels). A sum over k does not care in which order k comes.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace urpe::kernels::tc {

constexpr int kM = 16, kN = 8, kK = 8;

// Where register `reg` of lane `lane` sits in its matrix (the table above).
__host__ __device__ constexpr int a_row(int lane, int reg) { return lane / 4 + 8 * (reg & 1); }
__host__ __device__ constexpr int a_col(int lane, int reg) { return lane % 4 + 4 * (reg >> 1); }
__host__ __device__ constexpr int b_row(int lane, int reg) { return lane % 4 + 4 * reg; }
__host__ __device__ constexpr int b_col(int lane, int /*reg*/) { return lane / 4; }
__host__ __device__ constexpr int c_row(int lane, int reg) { return lane / 4 + 8 * (reg >> 1); }
__host__ __device__ constexpr int c_col(int lane, int reg) { return 2 * (lane % 4) + (reg & 1); }

// cvt.rna.tf32.f32: x to the nearest TF32 value, ties away from zero.
__device__ __forceinline__ uint32_t to_tf32(float x) {
#if defined(URPE_CUDA_SIM)
  return urpe_sim::round_to_tf32(x);
#else
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
#endif
}

// d = a·b + d on one 16×8×8 tile (every lane of the warp calls it with its fragments).
__device__ __forceinline__ void mma_m16n8k8(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(URPE_CUDA_SIM)
  urpe_sim::mma_m16n8k8_tf32(d, a, b, d);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// A C/D fragment reused as an A fragment under the pairing above: a = (c0, c2, c1, c3), rounded.
__device__ __forceinline__ void accumulator_as_a(uint32_t (&a)[4], const float (&c)[4]) {
  a[0] = to_tf32(c[0]);
  a[1] = to_tf32(c[2]);
  a[2] = to_tf32(c[1]);
  a[3] = to_tf32(c[3]);
}

}  // namespace urpe::kernels::tc
