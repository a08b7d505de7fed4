// The BF16 door to the tensor cores, beside ops/mma_tf32.cuh: `mma.sync` m16n8k16 with BF16 inputs
// and FP32 accumulation. On a GPU each function is one inline-PTX instruction; in the CUDA
// simulator (tests/cuda_sim/mma.cpp) the product is a warp collective that emulates the instruction
// and the rounding is the simulator's <cuda_bf16.h>, so kernels built on this header run with
// racecheck and memcheck in `make test`. No kernel writes `asm("mma…bf16…")` anywhere else.
//
// ---- the instruction ----
//   D (16×8) = A (16×16) · B (16×8) + C (16×8),   one warp, every lane taking part
// A and B hold two BF16 values per 32-bit register (pack_bf16 rounds two FP32 values to nearest,
// ties to even, the lower-indexed element in the low 16 bits), C and D are FP32. BF16 keeps FP32's
// 8-bit exponent and 7 of its 23 mantissa bits: relative rounding error ≤ 2^-9 ≈ 2.0e-3 per input
// (TF32's is 2^-11), and the product of two BF16 values is exact in FP32.
//
// ---- the fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type",
// .bf16 A/B, .f32 C/D) ----
// Lane ℓ = 4·g + t (g = ℓ / 4, t = ℓ % 4) holds, as (low half, high half) of each register:
//   A: a[0] = A(g, 2t), A(g, 2t+1)      a[1] = A(g+8, 2t), A(g+8, 2t+1)
//      a[2] = A(g, 2t+8), A(g, 2t+9)    a[3] = A(g+8, 2t+8), A(g+8, 2t+9)
//   B: b[0] = B(2t, g), B(2t+1, g)      b[1] = B(2t+8, g), B(2t+9, g)      (row = k, column = n)
//   C: c[0] = C(g, 2t)   c[1] = C(g, 2t+1)   c[2] = C(g+8, 2t)   c[3] = C(g+8, 2t+1)  (as m16n8k8)
// Unlike TF32's k8 shape, two C fragments side by side ARE an A fragment, with no relabelling:
// the accumulators of key blocks 2κ and 2κ + 1 (keys 16κ + 2t, +1 and 16κ + 8 + 2t, +1) are A's
// columns 2t, 2t+1 and 2t+8, 2t+9 of k-step κ (accumulators_as_a_bf16), and B is read in its
// natural row order.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#if defined(URPE_CUDA_SIM)
#include <cuda_bf16.h>
#endif

namespace urpe::kernels::tc {

constexpr int kK16 = 16;  // the BF16 shape's k

// Where half `half` (0: low 16 bits, 1: high) of register `reg` of lane `lane` sits (the table above).
__host__ __device__ constexpr int a16_row(int lane, int reg, int /*half*/) { return lane / 4 + 8 * (reg & 1); }
__host__ __device__ constexpr int a16_col(int lane, int reg, int half) { return 2 * (lane % 4) + half + 8 * (reg >> 1); }
__host__ __device__ constexpr int b16_row(int lane, int reg, int half) { return 2 * (lane % 4) + half + 8 * reg; }
__host__ __device__ constexpr int b16_col(int lane, int /*reg*/, int /*half*/) { return lane / 4; }

// cvt.rn.bf16x2.f32: lo and hi rounded to BF16 (to nearest, ties to even), lo in the low 16 bits.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
#if defined(URPE_CUDA_SIM)
  return uint32_t(__float2bfloat16_rn(lo).__x) | (uint32_t(__float2bfloat16_rn(hi).__x) << 16);
#else
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));  // first source → high half
  return r;
#endif
}

// d = a·b + d on one 16×8×16 tile (every lane of the warp calls it with its fragments).
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(URPE_CUDA_SIM)
  urpe_sim::mma_m16n8k16_bf16(d, a, b, d);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// The C/D fragments of two neighbouring 8-column blocks (columns 16κ…16κ+7 in lo, 16κ+8…16κ+15
// in hi) as the A fragment of k-step κ, rounded: a = ((lo0, lo1), (lo2, lo3), (hi0, hi1), (hi2, hi3)).
__device__ __forceinline__ void accumulators_as_a_bf16(uint32_t (&a)[4], const float (&lo)[4], const float (&hi)[4]) {
  a[0] = pack_bf16(lo[0], lo[1]);
  a[1] = pack_bf16(lo[2], lo[3]);
  a[2] = pack_bf16(hi[0], hi[1]);
  a[3] = pack_bf16(hi[2], hi[3]);
}

}  // namespace urpe::kernels::tc
