// CUDA simulator: the cuBLASLt subset urpe calls (include/cublasLt.h), over the reference GEMM
// loop its cuBLAS uses (gemm_reference.h: products summed in double, the bias added before D's one
// rounding, matrices checked against device memory and initcheck).
//   D = α·op(A)·op(B) + β·C (+ bias[i] on row i of D with CUBLASLT_EPILOGUE_BIAS), column-major.
// The subset, everything else a loud error (stderr, a pending launch error that the next launch
// check raises, and CUBLAS_STATUS_INVALID_VALUE / NOT_SUPPORTED): compute CUBLAS_COMPUTE_32F (or
// _FAST_TF32 with f32 A and B; TF32 changes nothing here, as for cuBLAS's math mode), scale
// CUDA_R_32F; A and B both CUDA_R_32F or both CUDA_R_16BF; C and D of one type, CUDA_R_32F (or
// CUDA_R_16BF after bf16 A and B), C the same matrix as D; epilogue DEFAULT or BIAS with a bias of
// D's type (cuBLASLt's rule; an H100's heuristic answered CUBLAS_STATUS_INVALID_VALUE to an f32 bias
// beside a bf16 D, 2026-11-27, so asking for one here is loud); op N or T; strided batches. The heuristic returns one algorithm that carries a fingerprint
// of the problem it was asked for and the alignments it was promised: cublasLtMatmul refuses it
// for another problem, and refuses a pointer less aligned than promised, as the library would
// (silently, on a GPU) run a kernel that assumed them. A matmul on a stream that is capturing
// (CUDA graphs) is checked at the call and runs at each launch of the graph.
#include "cublasLt.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "gemm_reference.h"

using namespace urpe_sim::gemm_reference;

struct cublasLtContext {
  int unused = 0;
};
struct cublasLtSimMatmulDesc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int32_t bias_type = -1;  // -1: D's type (cuBLASLt's default)
};
struct cublasLtSimMatrixLayout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct cublasLtSimMatmulPreference {
  uint64_t workspace = 0;
  uint32_t alignment[4] = {256, 256, 256, 256};  // A, B, C, D: cuBLASLt's defaults
};

namespace {

bool g_heuristics_available = true;

// A call outside the simulated subset or against the API's rules: reported on stderr and left
// pending as a launch failure (its message the simulator's words, as for cuBLAS's initcheck), so
// that even a caller that treats the status as "fall back" fails its next check.
cublasStatus_t loud(const char* call, const std::string& why, cublasStatus_t status = CUBLAS_STATUS_INVALID_VALUE) {
  urpe_sim::record_launch_error(cudaErrorLaunchFailure, std::string("cuBLASLt ") + call + ": " + why);
  return status;
}

template <typename T>
cublasStatus_t read_attribute(const char* call, const void* buf, size_t bytes, T* out) {
  if (buf == nullptr || bytes != sizeof(T))
    return loud(call, "attribute buffer of " + std::to_string(bytes) + " bytes, expected " + std::to_string(sizeof(T)));
  std::memcpy(out, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

bool is_operation(int32_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T; }

// The problem a heuristic answer is for: m, n, k and the descriptors' fields (never the pointers).
struct Problem {
  int64_t m = 0, n = 0, k = 0, batch = 0;
  std::string why_not;  // empty when the subset covers it
};

// Checks the descriptors against each other and the subset; m × n is D, k the contraction.
Problem check_problem(const cublasLtSimMatmulDesc& desc, const cublasLtSimMatrixLayout& a,
                      const cublasLtSimMatrixLayout& b, const cublasLtSimMatrixLayout& c,
                      const cublasLtSimMatrixLayout& d) {
  Problem p;
  const bool ta = desc.trans_a == CUBLAS_OP_T, tb = desc.trans_b == CUBLAS_OP_T;
  p.m = int64_t(d.rows);
  p.n = int64_t(d.cols);
  p.k = int64_t(ta ? a.rows : a.cols);
  p.batch = d.batch;
  if (desc.scale != CUDA_R_32F) p.why_not = "scale type other than CUDA_R_32F";
  else if (desc.compute != CUBLAS_COMPUTE_32F && desc.compute != CUBLAS_COMPUTE_32F_FAST_TF32)
    p.why_not = "compute type other than CUBLAS_COMPUTE_32F(_FAST_TF32)";
  else if (a.type != b.type || (a.type != CUDA_R_32F && a.type != CUDA_R_16BF))
    p.why_not = "A and B must be both CUDA_R_32F or both CUDA_R_16BF";
  else if (desc.compute == CUBLAS_COMPUTE_32F_FAST_TF32 && a.type != CUDA_R_32F)
    p.why_not = "CUBLAS_COMPUTE_32F_FAST_TF32 with bf16 A and B";
  else if (c.type != d.type || (d.type != CUDA_R_32F && !(d.type == CUDA_R_16BF && a.type == CUDA_R_16BF)))
    p.why_not = "C and D must share one type: CUDA_R_32F, or CUDA_R_16BF after bf16 A and B";
  else if (c.rows != d.rows || c.cols != d.cols || c.ld != d.ld || c.batch != d.batch || c.stride != d.stride)
    p.why_not = "C's layout differs from D's (the simulator runs C = D only)";
  else if (desc.epilogue != CUBLASLT_EPILOGUE_DEFAULT && desc.epilogue != CUBLASLT_EPILOGUE_BIAS)
    p.why_not = "epilogue other than DEFAULT or BIAS";
  else if (desc.epilogue == CUBLASLT_EPILOGUE_BIAS && desc.bias_type != -1 && desc.bias_type != d.type)
    p.why_not = "a bias of another type than D's (cuBLASLt's heuristic refuses it: CUBLAS_STATUS_INVALID_VALUE)";
  else if ((ta ? a.cols : a.rows) != d.rows || (tb ? b.rows : b.cols) != d.cols || (tb ? b.cols : b.rows) != uint64_t(p.k))
    p.why_not = "the layouts of A, B and D do not make one product (op(A): m×k, op(B): k×n, D: m×n)";
  else if (a.batch != d.batch || b.batch != d.batch)
    p.why_not = "batch counts of A, B and D differ";
  else if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX || a.ld > INT32_MAX || b.ld > INT32_MAX || d.ld > INT32_MAX)
    p.why_not = "a size past the simulator's 32-bit loop";
  return p;
}

// FNV-1a over the fields a heuristic answer depends on, and the promised alignments.
uint64_t fingerprint(const cublasLtSimMatmulDesc& desc, const cublasLtSimMatrixLayout* layouts[4],
                     const uint32_t alignment[4]) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t bytes) {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ c[i]) * 1099511628211ull;
  };
  const int64_t fields[] = {desc.compute, desc.scale, desc.trans_a, desc.trans_b, desc.epilogue, desc.bias_type};
  mix(fields, sizeof(fields));
  for (int i = 0; i < 4; ++i) {
    const cublasLtSimMatrixLayout& l = *layouts[i];
    const int64_t values[] = {l.type, int64_t(l.rows), int64_t(l.cols), l.ld, l.batch, l.stride};
    mix(values, sizeof(values));
  }
  mix(alignment, 4 * sizeof(uint32_t));
  return h;
}

}  // namespace

namespace urpe_sim {
void set_lt_heuristics(bool available) { g_heuristics_available = available; }
}  // namespace urpe_sim

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasLtContext{};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *desc = new cublasLtSimMatmulDesc{compute, scale};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes) {
  const char* call = "cublasLtMatmulDescSetAttribute";
  if (desc == nullptr) return loud(call, "null descriptor");
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
      int32_t op = 0;
      if ((s = read_attribute(call, buf, bytes, &op)) != CUBLAS_STATUS_SUCCESS) return s;
      if (!is_operation(op)) return loud(call, "transpose other than CUBLAS_OP_N / CUBLAS_OP_T");
      (attr == CUBLASLT_MATMUL_DESC_TRANSA ? desc->trans_a : desc->trans_b) = op;
      return s;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE: {
      uint32_t epilogue = 0;
      if ((s = read_attribute(call, buf, bytes, &epilogue)) != CUBLAS_STATUS_SUCCESS) return s;
      if (epilogue != CUBLASLT_EPILOGUE_DEFAULT && epilogue != CUBLASLT_EPILOGUE_BIAS)
        return loud(call, "epilogue " + std::to_string(epilogue) + " is not simulated (DEFAULT or BIAS only)",
                    CUBLAS_STATUS_NOT_SUPPORTED);
      desc->epilogue = epilogue;
      return s;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return read_attribute(call, buf, bytes, &desc->bias);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: {
      int32_t type = 0;
      if ((s = read_attribute(call, buf, bytes, &type)) != CUBLAS_STATUS_SUCCESS) return s;
      if (type != CUDA_R_32F && type != CUDA_R_16BF)
        return loud(call, "bias type other than CUDA_R_32F or CUDA_R_16BF is not simulated", CUBLAS_STATUS_NOT_SUPPORTED);
      desc->bias_type = type;
      return s;
    }
    default:
      return loud(call, "attribute " + std::to_string(int(attr)) + " is not simulated", CUBLAS_STATUS_NOT_SUPPORTED);
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType_t type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  const char* call = "cublasLtMatrixLayoutCreate";
  if (layout == nullptr) return loud(call, "null layout");
  if (type != CUDA_R_32F && type != CUDA_R_16BF) return loud(call, "type other than CUDA_R_32F / CUDA_R_16BF", CUBLAS_STATUS_NOT_SUPPORTED);
  if (ld < int64_t(std::max<uint64_t>(1, rows))) return loud(call, "ld smaller than the rows (column-major)");
  *layout = new cublasLtSimMatrixLayout{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t bytes) {
  const char* call = "cublasLtMatrixLayoutSetAttribute";
  if (layout == nullptr) return loud(call, "null layout");
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      if ((s = read_attribute(call, buf, bytes, &layout->batch)) != CUBLAS_STATUS_SUCCESS) return s;
      return layout->batch >= 1 ? s : loud(call, "batch count below 1");
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      return read_attribute(call, buf, bytes, &layout->stride);
    default:
      return loud(call, "attribute " + std::to_string(int(attr)) + " is not simulated", CUBLAS_STATUS_NOT_SUPPORTED);
  }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = new cublasLtSimMatmulPreference{};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t bytes) {
  const char* call = "cublasLtMatmulPreferenceSetAttribute";
  if (pref == nullptr) return loud(call, "null preference");
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      return read_attribute(call, buf, bytes, &pref->workspace);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: {
      uint32_t alignment = 0;
      if ((s = read_attribute(call, buf, bytes, &alignment)) != CUBLAS_STATUS_SUCCESS) return s;
      if (alignment == 0 || (alignment & (alignment - 1)) != 0) return loud(call, "alignment not a power of two");
      pref->alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] = alignment;
      return s;
    }
    default:
      return loud(call, "attribute " + std::to_string(int(attr)) + " is not simulated", CUBLAS_STATUS_NOT_SUPPORTED);
  }
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned) {
  const char* call = "cublasLtMatmulAlgoGetHeuristic";
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!desc || !a || !b || !c || !d || !pref || requested < 1 || !results || !returned)
    return loud(call, "a null descriptor, result array or count, or requested < 1");
  *returned = 0;
  const Problem p = check_problem(*desc, *a, *b, *c, *d);
  if (!p.why_not.empty()) return loud(call, p.why_not, CUBLAS_STATUS_NOT_SUPPORTED);
  if (!g_heuristics_available) return CUBLAS_STATUS_NOT_SUPPORTED;  // urpe_sim::set_lt_heuristics(false)
  const cublasLtSimMatrixLayout* layouts[4] = {a, b, c, d};
  std::memset(&results[0], 0, sizeof(results[0]));
  results[0].algo.data[0] = fingerprint(*desc, layouts, pref->alignment);
  for (int i = 0; i < 4; ++i) results[0].algo.data[1 + i] = pref->alignment[i];
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                              cublasLtMatrixLayout_t a_layout, const void* b, cublasLtMatrixLayout_t b_layout,
                              const void* beta, const void* c, cublasLtMatrixLayout_t c_layout, void* d,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  const char* call = "cublasLtMatmul";
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!desc || !a_layout || !b_layout || !c_layout || !d_layout) return loud(call, "a null descriptor");
  if (!alpha || !beta) return loud(call, "alpha or beta is null");
  if (!algo) return loud(call, "no algorithm (urpe always passes the heuristic's)");
  const Problem p = check_problem(*desc, *a_layout, *b_layout, *c_layout, *d_layout);
  if (!p.why_not.empty()) return loud(call, p.why_not, CUBLAS_STATUS_NOT_SUPPORTED);
  const cublasLtSimMatrixLayout* layouts[4] = {a_layout, b_layout, c_layout, d_layout};
  uint32_t alignment[4];
  for (int i = 0; i < 4; ++i) alignment[i] = static_cast<uint32_t>(algo->data[1 + i]);
  if (fingerprint(*desc, layouts, alignment) != algo->data[0])
    return loud(call, "the algorithm was not returned by the heuristic for this problem");
  const void* pointers[4] = {a, b, c, d};
  for (int i = 0; i < 4; ++i)
    if (reinterpret_cast<uintptr_t>(pointers[i]) % alignment[i] != 0)
      return loud(call, std::string("matrix ") + "ABCD"[i] + " is less aligned than the " + std::to_string(alignment[i]) +
                            " bytes the heuristic was told");
  if (c != d) return loud(call, "C and D are different matrices (the simulator runs C = D only)");
  if (workspace_bytes > 0 && !urpe_sim::is_device_range(workspace, workspace_bytes))
    return loud(call, "the workspace is not device memory of the size given");
  const bool bias_epilogue = desc->epilogue == CUBLASLT_EPILOGUE_BIAS;
  if (bias_epilogue && desc->bias == nullptr) return loud(call, "the BIAS epilogue without a bias pointer");
  const void* bias = bias_epilogue ? desc->bias : nullptr;  // of D's type (the heuristic saw to it)
  const cublasOperation_t op_a = desc->trans_a == CUBLAS_OP_T ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = desc->trans_b == CUBLAS_OP_T ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = int(p.m), n = int(p.n), k = int(p.k), batch = int(p.batch);
  const int lda = int(a_layout->ld), ldb = int(b_layout->ld), ldd = int(d_layout->ld);
  const long long stride_a = a_layout->stride, stride_b = b_layout->stride, stride_d = d_layout->stride;
  const cudaDataType_t a_type = a_layout->type, d_type = d_layout->type;
  auto gemm = [=](const float* al, const float* be, bool check_only) {
    return gemm_typed(call, op_a, op_b, m, n, k, al, a, a_type, lda, stride_a, b, ldb, stride_b, be, d, d_type, ldd,
                      stride_d, batch, bias, true, check_only);
  };
  const float* fa = static_cast<const float*>(alpha);
  const float* fb = static_cast<const float*>(beta);
  // On a capturing stream: checked now, run at each launch of the graph, with the descriptors'
  // values (bias pointer, layouts) as they are now (capture_gemm, gemm_reference.h).
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  if (!capture_gemm(stream, call, fa, fb, gemm, s)) s = gemm(fa, fb, false);
  // An argument error is the caller's bug here (the heuristic accepted the problem): loud.
  if (s == CUBLAS_STATUS_INVALID_VALUE) urpe_sim::record_launch_error(cudaErrorLaunchFailure, "cuBLASLt cublasLtMatmul: invalid arguments");
  return s;
}
