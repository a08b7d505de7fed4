// CUDA simulator: the tensor-core instructions that ops/mma_tf32.cuh and ops/mma_bf16.cuh wrap, emulated as warp
// collectives, so the fused attention's tensor-core kernels run (and are checked) without a GPU.
//
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, D = A·B + C with A 16×8, B 8×8, C and D
// 16×8, spread over the 32 lanes as the PTX ISA's "Matrix Fragments for mma.m16n8k8" section
// draws them (.tf32 A and B, .f32 C and D), with groupID g = lane / 4 and t = lane % 4:
//   A: a0 (g, t)    a1 (g + 8, t)    a2 (g, t + 4)    a3 (g + 8, t + 4)      (row, column)
//   B: b0 (t, g)    b1 (t + 4, g)                                              (k, n)
//   C: c0 (g, 2t)   c1 (g, 2t + 1)   c2 (g + 8, 2t)   c3 (g + 8, 2t + 1)
// The layout is written here a second time on purpose, independently of the wrapper's helpers:
// the simulator plays the hardware, and tests/test_cuda_flash_tensor_core.cpp checks the
// wrapper's idea of the layout against it (and against the real instruction on a GPU).
//
// Numbers: the instruction reads only the TF32 bits of A and B (sign, exponent, 10 mantissa
// bits: the low 13 bits of each register are ignored here; kernels round with cvt.rna first) and
// accumulates in FP32. The product of two TF32 values is exact in FP32, so each step below
// rounds once; the hardware's order of the eight additions is not documented, ours is k = 0..7
// after C. Results can differ from a GPU's in the last bits of the FP32 sums, which is inside
// every tolerance that TF32 inputs call for (docs/cuda.md).
#include <cstring>

#include "cuda_runtime.h"

namespace urpe_sim {

namespace {

float tf32_value(uint32_t bits) {
  bits &= 0xffffe000u;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// A BF16 value (the high 16 bits of an FP32 one) as a float.
float bf16_value(uint32_t half) {
  const uint32_t bits = (half & 0xffffu) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace

uint32_t round_to_tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u)  // inf stays; NaN stays a (quiet) NaN
    return (bits & 0x007fffffu) ? (bits | 0x00400000u) & 0xffffe000u : bits;
  // Half of the last kept bit added to the magnitude, then the 13 low bits dropped: to nearest,
  // ties away from zero (a carry into the exponent rounds up to the next binade, or to inf).
  return (bits + 0x1000u) & 0xffffe000u;
}

void mma_m16n8k8_tf32(float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  const uint32_t offer[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  uint32_t all[32 * 6];
  gather_words(0xffffffffu, offer, 6, all);
  float A[16][8], B[8][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const uint32_t* w = all + lane * 6;
    A[g][t] = tf32_value(w[0]);
    A[g + 8][t] = tf32_value(w[1]);
    A[g][t + 4] = tf32_value(w[2]);
    A[g + 8][t + 4] = tf32_value(w[3]);
    B[t][g] = tf32_value(w[4]);
    B[t + 4][g] = tf32_value(w[5]);
  }
  const int lane = current_lane(), g = lane / 4, t = lane % 4;
  float out[4];
  for (int r = 0; r < 4; ++r) {
    const int row = g + 8 * (r / 2), col = 2 * t + r % 2;
    float acc = c[r];
    for (int k = 0; k < 8; ++k) acc += A[row][k] * B[k][col];
    out[r] = acc;
  }
  std::memcpy(d, out, sizeof out);  // d may be c
}

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"): each register holds two BF16 values, the lower-indexed
// one in its low 16 bits; with g = lane / 4, t = lane % 4 (row, column):
//   A: a0 (g, 2t | 2t + 1)   a1 (g + 8, 2t | 2t + 1)   a2 (g, 2t + 8 | 2t + 9)   a3 (g + 8, 2t + 8 | 2t + 9)
//   B: b0 (2t | 2t + 1, g)   b1 (2t + 8 | 2t + 9, g)                                          (k, n)
//   C, D: as m16n8k8 above.
// Written again here, independently of ops/mma_bf16.cuh's helpers (the simulator plays the
// hardware). The product of two BF16 values is exact in FP32; the sixteen additions go in the order
// C, k = 0..15 (the hardware's order is not documented: the last bits of a sum may differ on a GPU).
void mma_m16n8k16_bf16(float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  const uint32_t offer[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  uint32_t all[32 * 6];
  gather_words(0xffffffffu, offer, 6, all);
  float A[16][16], B[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const uint32_t* w = all + lane * 6;
    for (int half = 0; half < 2; ++half) {
      const int shift = 16 * half;
      A[g][2 * t + half] = bf16_value(w[0] >> shift);
      A[g + 8][2 * t + half] = bf16_value(w[1] >> shift);
      A[g][2 * t + 8 + half] = bf16_value(w[2] >> shift);
      A[g + 8][2 * t + 8 + half] = bf16_value(w[3] >> shift);
      B[2 * t + half][g] = bf16_value(w[4] >> shift);
      B[2 * t + 8 + half][g] = bf16_value(w[5] >> shift);
    }
  }
  const int lane = current_lane(), g = lane / 4, t = lane % 4;
  float out[4];
  for (int r = 0; r < 4; ++r) {
    const int row = g + 8 * (r / 2), col = 2 * t + r % 2;
    float acc = c[r];
    for (int k = 0; k < 16; ++k) acc += A[row][k] * B[k][col];
    out[r] = acc;
  }
  std::memcpy(d, out, sizeof out);  // d may be c
}

}  // namespace urpe_sim
