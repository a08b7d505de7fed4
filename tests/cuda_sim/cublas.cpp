// CUDA simulator: the cuBLAS GEMMs urpe calls (float, and bf16 inputs through cublasGemmEx, with
// an f32 C, or a bf16 C for the bench's BF16-output rows), as column-major reference loops.
//   C = α·op(A)·op(B) + β·C,  op(A): m×k, op(B): k×n, C: m×n, all column-major with leading
//   dimensions lda, ldb, ldc; element (i, j) of a matrix X is X[i + j·ldx].
// Arguments are checked as cuBLAS checks them (CUBLAS_STATUS_INVALID_VALUE), and every matrix
// (every batch of it) must lie inside one block of device memory: a wrong leading dimension or
// stride in urpe's wrappers shows up here instead of as a silent read of a neighbour's memory.
// As in cuBLAS, C is not read when β = 0 (it may hold NaN), and the TF32 mode changes nothing here.
// A GEMM on a stream that is capturing (CUDA graphs) is checked at the call and recorded as a node
// of the graph, run at each of its launches (capture_gemm, gemm_reference.h).
// With initcheck on, an element of A, B (or C when β ≠ 0) that nothing has written is a launch
// failure, as compute-sanitizer's initcheck reports cuBLAS's kernels; C counts as written after.
// The loop itself is gemm_reference.h, shared with the cuBLASLt stand-in (cublasLt.cpp).
#include <cstdio>
#include <vector>

#include "cublas_v2.h"
#include "gemm_reference.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  void* workspace = nullptr;  // cublasSetWorkspace's, recorded only
  size_t workspace_bytes = 0;
};

namespace {

std::vector<urpe_sim::GemmCall>& gemm_log() {
  static std::vector<urpe_sim::GemmCall> calls;
  return calls;
}

}  // namespace

namespace urpe_sim::gemm_reference {
void record_gemm_call(const GemmCall& call) { gemm_log().push_back(call); }
}  // namespace urpe_sim::gemm_reference

using namespace urpe_sim::gemm_reference;

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new cublasContext{};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes > 0 && (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 256 != 0 ||
                    !urpe_sim::is_device_range(workspace, bytes)))
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}
size_t urpe_sim::cublas_workspace_bytes(const cublasContext* handle) { return handle ? handle->workspace_bytes : 0; }

// Runs `gemm(alpha, beta, check_only)` now, or records it into the capture of the handle's stream
// (capture_gemm, gemm_reference.h).
template <typename Gemm>
static cublasStatus_t run_or_capture(cublasHandle_t handle, const char* call, const float* alpha, const float* beta,
                                     const Gemm& gemm) {
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  if (capture_gemm(handle->stream, call, alpha, beta, gemm, status)) return status;
  return gemm(alpha, beta, false);
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b,
                           int m, int n, int k, const float* alpha, const float* a, int lda,
                           const float* b, int ldb, const float* beta, float* c, int ldc) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  return run_or_capture(handle, "cublasSgemm", alpha, beta, [=](const float* al, const float* be, bool check_only) {
    return gemm_batched("cublasSgemm", op_a, op_b, m, n, k, al, a, lda, 0, b, ldb, 0, be, c, ldc, 0, 1,
                        static_cast<const float*>(nullptr), false, check_only);
  });
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t op_a,
                                         cublasOperation_t op_b, int m, int n, int k,
                                         const float* alpha, const float* a, int lda,
                                         long long stride_a, const float* b, int ldb,
                                         long long stride_b, const float* beta, float* c, int ldc,
                                         long long stride_c, int batch_count) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  const char* call = "cublasSgemmStridedBatched";
  return run_or_capture(handle, call, alpha, beta, [=](const float* al, const float* be, bool check_only) {
    return gemm_batched(call, op_a, op_b, m, n, k, al, a, lda, stride_a, b, ldb, stride_b, be, c, ldc, stride_c,
                        batch_count, static_cast<const float*>(nullptr), false, check_only);
  });
}

// cublasGemmEx's types as urpe uses them: A and B both CUDA_R_32F or both CUDA_R_16BF, C
// CUDA_R_32F (or CUDA_R_16BF with bf16 A and B: `urpe bench peaks`' BF16-output rows), FP32
// compute. cuBLAS rejects other mixes too (or urpe does not call them).
static cublasStatus_t gemm_ex(const char* call, cublasHandle_t handle, cublasOperation_t op_a,
                              cublasOperation_t op_b, int m, int n, int k, const void* alpha, const void* a,
                              cudaDataType_t a_type, int lda, long long stride_a, const void* b,
                              cudaDataType_t b_type, int ldb, long long stride_b, const void* beta, void* c,
                              cudaDataType_t c_type, int ldc, long long stride_c, int batch,
                              cublasComputeType_t compute) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (a_type != b_type || compute != CUBLAS_COMPUTE_32F || (a_type != CUDA_R_32F && a_type != CUDA_R_16BF) ||
      (c_type != CUDA_R_32F && !(c_type == CUDA_R_16BF && a_type == CUDA_R_16BF))) {
    std::fprintf(stderr, "cuda_sim: %s: type combination not simulated\n", call);
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  const float* fa = static_cast<const float*>(alpha);
  const float* fb = static_cast<const float*>(beta);
  return run_or_capture(handle, call, fa, fb, [=](const float* al, const float* be, bool check_only) {
    return gemm_typed(call, op_a, op_b, m, n, k, al, a, a_type, lda, stride_a, b, ldb, stride_b, be, c, c_type, ldc,
                      stride_c, batch, nullptr, false, check_only);
  });
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m,
                            int n, int k, const void* alpha, const void* a, cudaDataType_t a_type, int lda,
                            const void* b, cudaDataType_t b_type, int ldb, const void* beta, void* c,
                            cudaDataType_t c_type, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t) {
  return gemm_ex("cublasGemmEx", handle, op_a, op_b, m, n, k, alpha, a, a_type, lda, 0, b, b_type, ldb, 0,
                 beta, c, c_type, ldc, 0, 1, compute);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t op_a,
                                          cublasOperation_t op_b, int m, int n, int k, const void* alpha,
                                          const void* a, cudaDataType_t a_type, int lda, long long stride_a,
                                          const void* b, cudaDataType_t b_type, int ldb, long long stride_b,
                                          const void* beta, void* c, cudaDataType_t c_type, int ldc,
                                          long long stride_c, int batch_count, cublasComputeType_t compute,
                                          cublasGemmAlgo_t) {
  return gemm_ex("cublasGemmStridedBatchedEx", handle, op_a, op_b, m, n, k, alpha, a, a_type, lda, stride_a,
                 b, b_type, ldb, stride_b, beta, c, c_type, ldc, stride_c, batch_count, compute);
}

namespace urpe_sim {
std::vector<GemmCall> gemm_calls() { return gemm_log(); }
}  // namespace urpe_sim
