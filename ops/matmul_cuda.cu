// CUDA GEMM through cuBLAS (maths in matmul.h).
//
// cuBLAS is column-major; our matrices are row-major. A row-major m×n matrix with row stride ld
// is, read column-major, its n×m transpose with the same ld. So the row-major product
// C = op(A)·op(B) is computed as the column-major product Cᵀ = op(B)ᵀ·op(A)ᵀ: call cuBLAS with the
// operands swapped (B first), the same transpose flags, and dimensions (n, m, k). No transpose is
// ever materialised. Batched calls use cublasSgemmStridedBatched; a stride of 0 means every batch
// item shares that matrix (cuBLAS allows it).
// TF32 tensor-core math is used only when the context's tf32 flag is on; otherwise cuBLAS runs
// full float32 (CUBLAS_DEFAULT_MATH), matching the CPU to rounding. bf16 operands go to
// cublasGemmEx / cublasGemmStridedBatchedEx (BF16 inputs, FP32 accumulation and output).
// Cost: 2·m·n·k·batch flops; bytes at least 4·(m·k + k·n + m·n)·batch (less when shared).
//
// cuBLASLt (gemm_lt_cuda, linear's forward with its bias as an epilogue) is ops/matmul_lt.cpp;
// gemm_cuda hands it a GEMM with a bias or a bf16 C.
//
// bias_grad_cuda: ∂b = Σ_rows g for a bf16 g (linear's bf16 output), read as bf16 (2 bytes an
// element, no widened copy) by sum_axis_cuda's own two passes (ops/reduce_cuda.cu), so the result
// is bit for bit that of summing the widened g there; deterministic, no atomics.
// Bytes: 2·rows·n read, 8·chunks·n partials written and read, 4·n written.
#include <algorithm>
#include <limits>

#include "ops/cuda_common.cuh"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace urpe::kernels {

namespace {

// The empty contraction (k = 0): C = beta·C, with beta = 0 writing zeros (never 0·NaN).
__global__ void gemm_scale_output_kernel(float* __restrict__ c, int64_t m, int64_t n,
                                         int64_t ldc, int64_t stride_c, int64_t batch,
                                         float beta) {
  URPE_GRID_STRIDE(idx, batch * m * n) {
    const int64_t item = idx / (m * n), r = (idx / n) % m, col = idx % n;
    float& dst = c[item * stride_c + r * ldc + col];
    dst = beta == 0.0f ? 0.0f : beta * dst;
  }
}

int checked_int(int64_t value, const char* what, const GemmArgs& g) {
  URPE_CHECK(value >= 0 && value <= std::numeric_limits<int>::max(),
             "matmul (cuBLAS): " << what << " = " << value << " exceeds the 32-bit limit (m="
                                 << g.m << ", n=" << g.n << ", k=" << g.k << ", batch=" << g.batch
                                 << ")");
  return static_cast<int>(value);
}

}  // namespace

void bias_grad_cuda(const Device& device, const bf16* g, int64_t rows, int64_t n, float* out) {
  sum_axis_cuda(device, g, 1, rows, n, 1.0f, out);  // sum_axis's two passes, reading the bf16 words
}

void gemm_cuda(const Device& device, const GemmArgs& g) {
  URPE_CHECK(device.is_cuda() && device.context() != nullptr, "gemm_cuda: not a CUDA device");
  if (g.bias != nullptr || g.bias_bf16 != nullptr || g.c_bf16 != nullptr) return gemm_lt_cuda(device, g);  // cuBLASLt's epilogues
  cuda::Context& ctx = *device.context();
  ctx.activate();
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  if (g.k == 0) {
    const int threads = 256;
    gemm_scale_output_kernel<<<grid_for(ctx, g.batch * g.m * g.n, threads), threads, 0,
                               ctx.stream()>>>(g.c, g.m, g.n, g.ldc, g.stride_c, g.batch, g.beta);
    CUDA_CHECK_LAUNCH("gemm_scale_output_kernel");
    return;
  }
  const int m = checked_int(g.m, "m", g), n = checked_int(g.n, "n", g), k = checked_int(g.k, "k", g);
  const int lda = checked_int(g.lda, "lda", g), ldb = checked_int(g.ldb, "ldb", g);
  const int ldc = checked_int(g.ldc, "ldc", g), batch = checked_int(g.batch, "batch", g);
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasHandle_t handle = ctx.cublas();
  CUBLAS_CHECK(cublasSetMathMode(handle, ctx.tf32() ? CUBLAS_TF32_TENSOR_OP_MATH
                                                    : CUBLAS_DEFAULT_MATH));
  const float alpha = g.alpha, beta = g.beta;
  if (g.a_bf16 != nullptr || g.b_bf16 != nullptr) {
    URPE_CHECK(g.a_bf16 != nullptr && g.b_bf16 != nullptr, "gemm_cuda: one bf16 operand and one f32");
    // A, B in CUDA_R_16BF, C in CUDA_R_32F, products summed in FP32 (CUBLAS_COMPUTE_32F); the
    // default algorithm runs on the BF16 tensor cores (the math mode does not apply here).
    if (batch == 1) {
      CUBLAS_CHECK(cublasGemmEx(handle, op_b, op_a, n, m, k, &alpha, g.b_bf16, CUDA_R_16BF, ldb, g.a_bf16,
                                CUDA_R_16BF, lda, &beta, g.c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    } else {
      CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          handle, op_b, op_a, n, m, k, &alpha, g.b_bf16, CUDA_R_16BF, ldb, static_cast<long long>(g.stride_b),
          g.a_bf16, CUDA_R_16BF, lda, static_cast<long long>(g.stride_a), &beta, g.c, CUDA_R_32F, ldc,
          static_cast<long long>(g.stride_c), batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    return;
  }
  if (batch == 1) {
    CUBLAS_CHECK(cublasSgemm(handle, op_b, op_a, n, m, k, &alpha, g.b, ldb, g.a, lda, &beta, g.c,
                             ldc));
  } else {
    CUBLAS_CHECK(cublasSgemmStridedBatched(handle, op_b, op_a, n, m, k, &alpha, g.b, ldb,
                                           static_cast<long long>(g.stride_b), g.a, lda,
                                           static_cast<long long>(g.stride_a), &beta, g.c, ldc,
                                           static_cast<long long>(g.stride_c), batch));
  }
}

}  // namespace urpe::kernels
