// Matrix products: the only ops that reach BLAS (OpenBLAS sgemm on the CPU, cuBLAS on CUDA).
//
// Forward: C = op(A)·op(B), op = identity or transpose (no copy: the GEMM reads the layout).
//   A: (..., M, K), or (..., K, M) with transpose_a
//   B: (..., K, N), or (..., N, K) with transpose_b; B may also be 2-D and shared by every batch
//   C: (..., M, N)
// Backward (g = ∂L/∂C): ∂op(A) = g·op(B)ᵀ, ∂op(B) = op(A)ᵀ·g, summed over the batch when B is
// shared; each is again one GEMM with the right transpose flags.
//
// BF16 (mixed precision, docs/cuda.md#mixed-precision): A and B may both be bf16 (never one of
// each). The product is accumulated in FP32 and C is **f32**: every op that reads a GEMM's output
// (bias, activations, layer norm, softmax, the residual adds) is FP32 for now, so a bf16 C would
// be rounded only to be widened again by the next op; PyTorch's autocast returns bf16 because its
// neighbours read bf16, and a bf16 output is the change to make when the activations go bf16.
// The CPU widens the bf16 operands to f32 (exactly) and runs the f32 GEMM: that is the reference,
// the exact products of the rounded inputs summed in FP32 (cuBLAS's CUBLAS_COMPUTE_32F sums the
// same products in FP32, in another order). Backward with bf16 operands: g is rounded to bf16
// (the tensor cores take both operands in one type, as autocast's backward GEMMs do), each
// gradient GEMM accumulates in FP32, and ∂A, ∂B are rounded to bf16: a gradient has its tensor's
// dtype, and the cast that made the bf16 operand widens it back to f32 for the FP32 master.
#pragma once
#include <cstdint>
#include <functional>

#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

// out = bf16 (bf16 operands only: precision=bf16's attention, Q·Kᵀ and A·V, whose consumers read
// bf16): C is the FP32 sum rounded once (on CUDA written in bf16 by cuBLASLt where it has a plan
// for the layout, else, and on the CPU, a pass over an FP32 C), and its bf16 gradient goes into
// the backward GEMMs as it is.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false,
              DType out = DType::f32);
// y = x·Wᵀ + bias. x: (..., in), weight: (out, in), bias: (out,) or undefined; y f32.
// multiply_in = bf16 (precision=bf16's linear layers, autocast's convention): an f32 x or weight is
// rounded to bf16 inside the op (the cast's rounding, no cast node), the GEMMs multiply in BF16
// and sum in FP32, and each gradient comes back in its input's dtype: for an f32 x or weight that
// is the FP32 GEMM output itself, never rounded to bf16 and widened again (two passes fewer than
// linear(cast(x), cast(W), b), and one rounding less; cast(∂x, bf16) is the cast path's ∂x).
// multiply_in = f32 (the default): x and weight multiply in their own dtype (both f32, or both bf16).
// out = bf16 (with multiply_in = bf16: where the consumer reads bf16, precision=bf16's policy,
// docs/cuda.md#mixed-precision): y is the FP32 sum plus bias rounded once to bf16, and its
// gradient arrives in bf16, which the backward GEMMs take as it is (no rounding of g in the op),
// and which CUDA sums for ∂b as it is (the CPU widens it first).
// On CUDA the forward is one cublasLtMatmul where cuBLASLt has a plan for the layout: the bias its
// epilogue (β = 0), a bf16 y written directly; else the CPU's scheme (bias rows, β = 1, a rounding
// pass) on cuBLAS (ops/matmul_cuda.cu, docs/cuda.md#mixed-precision).
// x_rounded (multiply_in = bf16, f32 x): bf16(x) made once by the caller for several linears that
// read the same x (the attention's q, k, v projections): their GEMMs read it and their backwards
// keep it instead of a bf16 copy each; ∂x is still the FP32 sum, handed to x.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, DType multiply_in = DType::f32,
              DType out = DType::f32, const Tensor& x_rounded = Tensor());

namespace kernels {
// Row-major strided-batched GEMM: C[i] = alpha·op(A[i])·op(B[i]) + beta·C[i] for i < batch.
// op(A) is m×k, op(B) is k×n, C is m×n; lda/ldb/ldc are row strides of the stored matrices;
// stride_a/b/c are the distances between batch items (0 = the same matrix for every item).
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  const float* a = nullptr; int64_t lda = 0, stride_a = 0;
  const float* b = nullptr; int64_t ldb = 0, stride_b = 0;
  // bf16 operands instead of a and b (both or neither): FP32 accumulation, C stays f32.
  const bf16* a_bf16 = nullptr;
  const bf16* b_bf16 = nullptr;
  float* c = nullptr;       int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
  // CUDA only (cuBLASLt: gemm_lt_cuda; gemm_cpu refuses them). c_bf16 instead of c: C written in
  // bf16 (bf16 operands), the FP32 result rounded once as it is stored. bias: the epilogue
  // C = α·op(A)·op(B) + β·C + 1·biasᵀ, bias[j] (n long) added to column j of every row in FP32,
  // before C's rounding; linear runs it with β = 0. The bias has C's type (cuBLASLt's rule: its
  // heuristic refused an f32 bias beside a bf16 D on an H100, CUBLAS_STATUS_INVALID_VALUE):
  // bias with an f32 c, bias_bf16 with a c_bf16.
  bf16* c_bf16 = nullptr;
  const float* bias = nullptr;
  const bf16* bias_bf16 = nullptr;
};
void gemm_cpu(const GemmArgs& args);
// The same product (batch 1) with `before(r0, r1)` run on rows [r0, r1) of C just before they are
// computed, by the thread that computes them, while they are in its cache: linear writes its
// bias there for the GEMM (β = 1) to accumulate onto. Rows come in blocks of the GEMM's row parts
// (ops/matmul_cpu.cpp), or of 64 rows around an unsplit product.
using RowsFn = std::function<void(int64_t r0, int64_t r1)>;
void gemm_cpu(const GemmArgs& args, const RowsFn& before);
// cuBLAS, or cuBLASLt when args has a bias or a bf16 C (gemm_lt_cuda).
void gemm_cuda(const Device& device, const GemmArgs& args);
// cuBLASLt (ops/matmul_cuda.cu): can this device run `args` as one cublasLtMatmul (its bias
// epilogue, a bf16 C)? Decided once per layout (sizes, strides, types, TF32 switch, pointer
// alignments) by cuBLASLt's heuristic and remembered with the context; false where cuBLASLt is
// missing (said once on stderr), switched off (cuda::Context::set_lt_epilogues), has no algorithm
// for the layout (said once per layout), or there is no product (m, n, k or batch 0). The caller
// then runs its cuBLAS path.
bool gemm_lt_available(const Device& device, const GemmArgs& args);
void gemm_lt_cuda(const Device& device, const GemmArgs& args);
// ∂b[i] = Σ_r g[r, i] for a bf16 g: (rows, n) → out: (n,) f32, read as bf16 and summed in double,
// in two passes (per-chunk partials, then the chunks in order): no widened copy, no atomics.
void bias_grad_cuda(const Device& device, const bf16* g, int64_t rows, int64_t n, float* out);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// One GEMM: 2·m·n·k FLOPs per batch item (a multiply-add is two), exactly. Bytes: A, B and C once
// each (an operand with stride 0 is one matrix shared by every item, read once; 2 bytes an element
// when bf16), plus C read again when it accumulates (beta ≠ 0); a bias epilogue reads its n floats
// once (its adds are not counted: m·n beside 2·m·n·k).
inline profile::Cost gemm_cost(const kernels::GemmArgs& g) {
  const double items = double(g.batch);
  const double a = double(g.m) * g.k * (g.stride_a == 0 ? 1.0 : items);
  const double b = double(g.k) * g.n * (g.stride_b == 0 ? 1.0 : items);
  const double c = double(g.m) * g.n * items * (g.beta != 0.0f ? 2.0 : 1.0);
  const double operand_bytes = g.a_bf16 != nullptr ? 2.0 : profile::kElementBytes;
  const double c_bytes = g.c_bf16 != nullptr ? 2.0 : profile::kElementBytes;
  const double bias = g.bias != nullptr ? profile::kElementBytes * double(g.n) : 0.0;
  return {2.0 * items * double(g.m) * double(g.n) * double(g.k), operand_bytes * (a + b) + c_bytes * c + bias};
}
// ∂b from a bf16 g (kernels::bias_grad_cuda): one add per element, 2 bytes an element read, the
// n floats written.
inline profile::Cost bias_grad_bf16_cost(int64_t rows, int64_t n) {
  return {double(rows) * double(n), 2.0 * double(rows) * double(n) + profile::kElementBytes * double(n)};
}
// The math `g`'s products run in on `device`, which bounds its FLOPs in a profile's roofline: FP32
// on the CPU (bf16 operands are widened there), BF16 for bf16 operands on CUDA, TF32 for f32
// operands when the context's TF32 switch is on (precision=tf32 and bf16), else FP32.
profile::GemmMath gemm_math(const Device& device, const kernels::GemmArgs& g);

}  // namespace urpe
