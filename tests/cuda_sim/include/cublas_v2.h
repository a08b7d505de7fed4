// CUDA simulator: stands in for <cublas_v2.h> (see cuda_runtime.h here). The GEMMs are plain
// column-major reference loops accumulated in double (tests/cuda_sim/cublas.cpp) that check their
// arguments the way cuBLAS does, and also that every matrix lies inside device memory.
#pragma once
#include "cuda_runtime.h"

enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
  CUBLAS_STATUS_LICENSE_ERROR = 16,
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };
// The mixed-precision GEMMs' types (cublasGemmEx): the values urpe passes, as CUDA numbers them.
enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };
struct cublasContext;
using cublasHandle_t = cublasContext*;

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
// Recorded on the handle (urpe_sim::cublas_workspace): the reference loops need no workspace.
// As cuBLAS: the pointer must be 256-byte aligned device memory of `bytes`, else INVALID_VALUE.
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes);
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b,
                           int m, int n, int k, const float* alpha, const float* a, int lda,
                           const float* b, int ldb, const float* beta, float* c, int ldc);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t op_a,
                                         cublasOperation_t op_b, int m, int n, int k,
                                         const float* alpha, const float* a, int lda,
                                         long long stride_a, const float* b, int ldb,
                                         long long stride_b, const float* beta, float* c, int ldc,
                                         long long stride_c, int batch_count);
// A and B of `a_type`/`b_type` (CUDA_R_32F or CUDA_R_16BF, the same), C of CUDA_R_32F (or
// CUDA_R_16BF after bf16 A and B, rounded to nearest even), products summed in double (as the
// float GEMMs here); any other combination is CUBLAS_STATUS_NOT_SUPPORTED.
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m,
                            int n, int k, const void* alpha, const void* a, cudaDataType_t a_type, int lda,
                            const void* b, cudaDataType_t b_type, int ldb, const void* beta, void* c,
                            cudaDataType_t c_type, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t op_a,
                                          cublasOperation_t op_b, int m, int n, int k, const void* alpha,
                                          const void* a, cudaDataType_t a_type, int lda, long long stride_a,
                                          const void* b, cudaDataType_t b_type, int ldb, long long stride_b,
                                          const void* beta, void* c, cudaDataType_t c_type, int ldc,
                                          long long stride_c, int batch_count, cublasComputeType_t compute,
                                          cublasGemmAlgo_t algo);
