// CUDA simulator: stands in for <cublasLt.h>, the subset urpe calls (ops/matmul_cuda.cu: linear's
// GEMM with its bias as an epilogue and a bf16 D written directly). The matmul itself is the same
// column-major reference loop as the simulator's cuBLAS (tests/cuda_sim/cublasLt.cpp); what this
// adds is cuBLASLt's descriptors, checked as strictly as the library would and more: an attribute
// urpe does not use, a value outside the subset, a buffer of the wrong size, an algorithm that was
// not returned for this very problem, or a pointer less aligned than the heuristic was told are
// each a loud error (stderr and a pending launch error), so a wrong call cannot pass silently.
// Enum values are CUDA's own.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cublas_v2.h"

enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0,
  CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1,
  CUBLASLT_MATMUL_DESC_TRANSA = 3,      // int32_t (cublasOperation_t): N or T
  CUBLASLT_MATMUL_DESC_TRANSB = 4,      // int32_t
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,    // uint32_t: DEFAULT or BIAS
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,  // const void*: D's rows long, broadcast over its columns
  CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,  // int32_t (cudaDataType_t): CUDA_R_32F (or D's type)
};
enum cublasLtEpilogue_t { CUBLASLT_EPILOGUE_DEFAULT = 1, CUBLASLT_EPILOGUE_BIAS = 4 };
enum cublasLtMatrixLayoutAttribute_t {
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,           // int32_t
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,  // int64_t, in elements
};
enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,  // uint64_t
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,  // uint32_t, a power of two
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

struct cublasLtContext;
struct cublasLtSimMatmulDesc;
struct cublasLtSimMatrixLayout;
struct cublasLtSimMatmulPreference;
using cublasLtHandle_t = cublasLtContext*;
using cublasLtMatmulDesc_t = cublasLtSimMatmulDesc*;
using cublasLtMatrixLayout_t = cublasLtSimMatrixLayout*;
using cublasLtMatmulPreference_t = cublasLtSimMatmulPreference*;

struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle);

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes);

// A column-major rows × cols matrix of `type` with leading dimension ld (≥ rows).
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType_t type, uint64_t rows,
                                          uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t bytes);

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t bytes);

// One algorithm for a supported problem (*returned = 1), or CUBLAS_STATUS_NOT_SUPPORTED with
// *returned = 0 (as cuBLASLt answers a layout it has no kernel for; urpe_sim::set_lt_heuristics
// makes every query answer so, to test the caller's fallback).
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned);

// D = α·op(A)·op(B) + β·C (+ bias broadcast over D's columns), products summed in double as the
// simulator's cuBLAS does, the bias added before D's one rounding (to f32 or bf16).
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                              cublasLtMatrixLayout_t a_layout, const void* b, cublasLtMatrixLayout_t b_layout,
                              const void* beta, const void* c, cublasLtMatrixLayout_t c_layout, void* d,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream);
