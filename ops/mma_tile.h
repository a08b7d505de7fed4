// One tensor-core tile on its own: D = A·B + C for A (16, 8), B (8, 8), C and D (16, 8), one warp,
// one `mma.sync` m16n8k8 TF32 (ops/mma_tf32.cuh); and the same with BF16, A (16, 16), B (16, 8),
// one m16n8k16 (ops/mma_bf16.cuh). The fused attention is built from this
// instruction; tests/test_cuda_flash_tensor_core.cpp checks it against a plain matrix product on
// the GPU and in the CUDA simulator, and checks that a fragment layout other than the PTX ISA's
// gives a wrong product (so the test would catch a kernel that indexed its fragments wrongly).
// CUDA tensors only: there is no CPU version (the CPU reference of a tile is a loop in the test).
#pragma once
#include "tensor/tensor.h"

namespace urpe::kernels {

// How the probe kernel places matrix elements in its fragments: the PTX ISA's layout (what every
// kernel uses), or a deliberately wrong one for the test.
enum class MmaFragmentLayout {
  ptx,                // ops/mma_tf32.cuh's a_row/a_col, b_row/b_col, c_row/c_col
  a_rows_swapped,     // a[0] ↔ a[1]: A's rows g and g + 8 exchanged
  b_rows_swapped,     // b[0] ↔ b[1]: B's rows t and t + 4 exchanged
  c_columns_swapped,  // c[0] ↔ c[1], c[2] ↔ c[3]: D's columns 2t and 2t + 1 exchanged
  a_halves_swapped,   // BF16 only: the two values of each A register exchanged (columns 2t ↔ 2t + 1)
};

// d = a·b + c on the tensor cores; a (16, 8), b (8, 8), c and d (16, 8), f32 CUDA tensors.
void mma_tf32_tile_cuda(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& d,
                        MmaFragmentLayout layout = MmaFragmentLayout::ptx);

// d = a·b + c with a, b rounded to BF16; a (16, 16), b (16, 8), c and d (16, 8), f32 CUDA tensors.
// For this shape a_rows_swapped exchanges a[0] ↔ a[1] (rows g ↔ g + 8), b_rows_swapped b[0] ↔ b[1]
// (k rows 2t ↔ 2t + 8).
void mma_bf16_tile_cuda(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& d,
                        MmaFragmentLayout layout = MmaFragmentLayout::ptx);

// out[k] = x[k] rounded to BF16 by cvt.rn.bf16x2.f32 (as a float whose low 16 bits are zero).
void round_bf16_cuda(const Tensor& x, Tensor& out);

// out[k] = x[k] rounded to TF32 by cvt.rna.tf32.f32 (as a float whose low 13 bits are zero).
void round_tf32_cuda(const Tensor& x, Tensor& out);

}  // namespace urpe::kernels
