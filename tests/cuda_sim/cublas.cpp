// CUDA simulator: the cuBLAS GEMMs urpe calls (float, and bf16 inputs through cublasGemmEx, with
// an f32 C, or a bf16 C for the bench's BF16-output rows), as column-major reference loops.
//   C = α·op(A)·op(B) + β·C,  op(A): m×k, op(B): k×n, C: m×n, all column-major with leading
//   dimensions lda, ldb, ldc; element (i, j) of a matrix X is X[i + j·ldx].
// Arguments are checked as cuBLAS checks them (CUBLAS_STATUS_INVALID_VALUE), and every matrix
// (every batch of it) must lie inside one block of device memory: a wrong leading dimension or
// stride in urpe's wrappers shows up here instead of as a silent read of a neighbour's memory.
// As in cuBLAS, C is not read when β = 0 (it may hold NaN), and the TF32 mode changes nothing here.
// With initcheck on, an element of A, B (or C when β ≠ 0) that nothing has written is a launch
// failure, as compute-sanitizer's initcheck reports cuBLAS's kernels; C counts as written after.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "cublas_v2.h"
#include "sim_state.h"

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
void record_gemm_call(int m, int n, int k, int batch) { gemm_log().push_back({m, n, k, batch}); }

// A bf16 input element: its 16 bits, the top half of the float it stands for (exact).
struct Bf16 {
  uint16_t bits;
};
float value(float x) { return x; }
float value(Bf16 x) {
  const uint32_t u = uint32_t(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// A result stored into C: f32 as it is; bf16 rounded to nearest, ties to even (cuBLAS's epilogue
// rounding), every NaN the canonical 0x7FFF. (An overflow carries into the exponent: ±inf.)
void store(float& dst, float x) { dst = x; }
void store(Bf16& dst, float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    dst.bits = 0x7FFF;
    return;
  }
  dst.bits = static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// Does the column-major rows×cols matrix at p with leading dimension ld lie in device memory?
template <typename T>
bool inside_device(const T* p, int rows, int cols, int ld) {
  if (rows == 0 || cols == 0) return true;
  const size_t elements = size_t(ld) * size_t(cols - 1) + size_t(rows);
  return urpe_sim::is_device_range(p, elements * sizeof(T));
}

// The first element of the column-major rows×cols matrix at p that nothing has written, as
// "(i, j)", or "" when all are written.
template <typename T>
std::string first_unwritten(const T* p, int rows, int cols, int ld) {
  for (int j = 0; j < cols; ++j) {
    const T* column = p + size_t(j) * ld;
    if (urpe_sim::all_written(column, size_t(rows) * sizeof(T))) continue;
    for (int i = 0; i < rows; ++i)
      if (!urpe_sim::all_written(column + i, sizeof(T)))
        return "(" + std::to_string(i) + ", " + std::to_string(j) + ")";
  }
  return "";
}

bool initcheck_on() {
  return urpe_sim::access_hooks_available() && urpe_sim::settings().checks.initcheck;
}

cublasStatus_t unwritten(const char* call, const char* matrix, const std::string& element, int q) {
  urpe_sim::record_launch_error(
      cudaErrorLaunchFailure, std::string(call) + ": initcheck: element " + element + " of " +
                                  matrix + " (batch " + std::to_string(q) +
                                  ") is read, but nothing has written it");
  return CUBLAS_STATUS_EXECUTION_FAILED;
}

cublasStatus_t invalid(const char* call, const char* why) {
  std::fprintf(stderr, "cuda_sim: %s: %s\n", call, why);
  return CUBLAS_STATUS_INVALID_VALUE;
}

template <typename T, typename TC = float>
cublasStatus_t gemm_batched(const char* call, cublasHandle_t handle, cublasOperation_t op_a,
                            cublasOperation_t op_b, int m, int n, int k, const float* alpha,
                            const T* a, int lda, long long stride_a, const T* b, int ldb,
                            long long stride_b, const float* beta, TC* c, int ldc,
                            long long stride_c, int batch) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if ((op_a != CUBLAS_OP_N && op_a != CUBLAS_OP_T) || (op_b != CUBLAS_OP_N && op_b != CUBLAS_OP_T))
    return invalid(call, "unsupported operation");
  if (m < 0 || n < 0 || k < 0 || batch < 0) return invalid(call, "negative size");
  const bool ta = op_a == CUBLAS_OP_T, tb = op_b == CUBLAS_OP_T;
  const int a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int b_rows = tb ? n : k, b_cols = tb ? k : n;
  if (lda < std::max(1, a_rows)) return invalid(call, "lda smaller than the rows of A");
  if (ldb < std::max(1, b_rows)) return invalid(call, "ldb smaller than the rows of B");
  if (ldc < std::max(1, m)) return invalid(call, "ldc smaller than the rows of C");
  if (!alpha || !beta) return invalid(call, "alpha or beta is null");
  record_gemm_call(m, n, k, batch);
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const bool read_ab = *alpha != 0.0f && k > 0;
  for (int q = 0; q < batch; ++q) {
    const T* aq = a + q * stride_a;
    const T* bq = b + q * stride_b;
    TC* cq = c + q * stride_c;
    if (read_ab && !inside_device(aq, a_rows, a_cols, lda))
      return invalid(call, "A (with lda and stride) reaches outside device memory");
    if (read_ab && !inside_device(bq, b_rows, b_cols, ldb))
      return invalid(call, "B (with ldb and stride) reaches outside device memory");
    if (!inside_device(cq, m, n, ldc))
      return invalid(call, "C (with ldc and stride) reaches outside device memory");
    if (initcheck_on()) {
      std::string element;
      if (read_ab && !(element = first_unwritten(aq, a_rows, a_cols, lda)).empty())
        return unwritten(call, "A", element, q);
      if (read_ab && !(element = first_unwritten(bq, b_rows, b_cols, ldb)).empty())
        return unwritten(call, "B", element, q);
      if (*beta != 0.0f && !(element = first_unwritten(cq, m, n, ldc)).empty())
        return unwritten(call, "C", element, q);
    }
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double sum = 0.0;
        if (read_ab)
          for (int p = 0; p < k; ++p) {
            const float av = value(ta ? aq[p + size_t(i) * lda] : aq[i + size_t(p) * lda]);
            const float bv = value(tb ? bq[j + size_t(p) * ldb] : bq[p + size_t(j) * ldb]);
            sum += double(av) * double(bv);
          }
        TC& out = cq[i + size_t(j) * ldc];
        const double scaled = double(*alpha) * sum;
        store(out, static_cast<float>(*beta == 0.0f ? scaled : scaled + double(*beta) * value(out)));
      }
    for (int j = 0; j < n; ++j) urpe_sim::mark_written(cq + size_t(j) * ldc, size_t(m) * sizeof(TC));
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

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

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b,
                           int m, int n, int k, const float* alpha, const float* a, int lda,
                           const float* b, int ldb, const float* beta, float* c, int ldc) {
  return gemm_batched("cublasSgemm", handle, op_a, op_b, m, n, k, alpha, a, lda, 0, b, ldb, 0,
                      beta, c, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t op_a,
                                         cublasOperation_t op_b, int m, int n, int k,
                                         const float* alpha, const float* a, int lda,
                                         long long stride_a, const float* b, int ldb,
                                         long long stride_b, const float* beta, float* c, int ldc,
                                         long long stride_c, int batch_count) {
  return gemm_batched("cublasSgemmStridedBatched", handle, op_a, op_b, m, n, k, alpha, a, lda,
                      stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch_count);
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
  float* fc = static_cast<float*>(c);
  if (c_type == CUDA_R_16BF)
    return gemm_batched(call, handle, op_a, op_b, m, n, k, fa, static_cast<const Bf16*>(a), lda, stride_a,
                        static_cast<const Bf16*>(b), ldb, stride_b, fb, static_cast<Bf16*>(c), ldc, stride_c,
                        batch);
  if (a_type == CUDA_R_16BF)
    return gemm_batched(call, handle, op_a, op_b, m, n, k, fa, static_cast<const Bf16*>(a), lda, stride_a,
                        static_cast<const Bf16*>(b), ldb, stride_b, fb, fc, ldc, stride_c, batch);
  return gemm_batched(call, handle, op_a, op_b, m, n, k, fa, static_cast<const float*>(a), lda, stride_a,
                      static_cast<const float*>(b), ldb, stride_b, fb, fc, ldc, stride_c, batch);
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
