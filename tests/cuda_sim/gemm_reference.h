// CUDA simulator: the reference GEMM loop shared by its cuBLAS (cublas.cpp) and cuBLASLt
// (cublasLt.cpp): column-major, products summed in double, every matrix checked to lie inside
// device memory and, under initcheck, to be written before it is read. Internal to the simulator.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "cublas_v2.h"
#include "sim_state.h"

namespace urpe_sim::gemm_reference {

// Every GEMM call so far, cuBLAS's and cuBLASLt's (cublas.cpp keeps the log: urpe_sim::gemm_calls).
void record_gemm_call(const GemmCall& call);

// A bf16 input element: its 16 bits, the top half of the float it stands for (exact).
struct Bf16 {
  uint16_t bits;
};
inline float value(float x) { return x; }
inline float value(Bf16 x) {
  const uint32_t u = uint32_t(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// A result stored into C: f32 as it is; bf16 rounded to nearest, ties to even (cuBLAS's epilogue
// rounding), every NaN the canonical 0x7FFF. (An overflow carries into the exponent: ±inf.)
inline void store(float& dst, float x) { dst = x; }
inline void store(Bf16& dst, float x) {
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
inline bool inside_device(const T* p, int rows, int cols, int ld) {
  if (rows == 0 || cols == 0) return true;
  const size_t elements = size_t(ld) * size_t(cols - 1) + size_t(rows);
  return urpe_sim::is_device_range(p, elements * sizeof(T));
}

// The first element of the column-major rows×cols matrix at p that nothing has written, as
// "(i, j)", or "" when all are written.
template <typename T>
inline std::string first_unwritten(const T* p, int rows, int cols, int ld) {
  for (int j = 0; j < cols; ++j) {
    const T* column = p + size_t(j) * ld;
    if (urpe_sim::all_written(column, size_t(rows) * sizeof(T))) continue;
    for (int i = 0; i < rows; ++i)
      if (!urpe_sim::all_written(column + i, sizeof(T)))
        return "(" + std::to_string(i) + ", " + std::to_string(j) + ")";
  }
  return "";
}

inline bool initcheck_on() {
  return urpe_sim::access_hooks_available() && urpe_sim::settings().checks.initcheck;
}

inline cublasStatus_t unwritten(const char* call, const char* matrix, const std::string& element, int q) {
  urpe_sim::record_launch_error(
      cudaErrorLaunchFailure, std::string(call) + ": initcheck: element " + element + " of " +
                                  matrix + " (batch " + std::to_string(q) +
                                  ") is read, but nothing has written it");
  return CUBLAS_STATUS_EXECUTION_FAILED;
}

inline cublasStatus_t invalid(const char* call, const char* why) {
  std::fprintf(stderr, "cuda_sim: %s: %s\n", call, why);
  return CUBLAS_STATUS_INVALID_VALUE;
}

// C[q] = α·op(A[q])·op(B[q]) + β·C[q] (+ bias[i] on every element of row i when bias is given:
// cuBLASLt's BIAS epilogue, of C's type, added before C's one rounding), q < batch.
// check_only: the arguments checked (sizes, leading dimensions, every matrix inside device memory),
// nothing read, logged or written; a GEMM enqueued on a capturing stream (capture_gemm below).
template <typename T, typename TC = float, typename TB = float>
cublasStatus_t gemm_batched(const char* call, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
                            int k, const float* alpha, const T* a, int lda, long long stride_a, const T* b,
                            int ldb, long long stride_b, const float* beta, TC* c, int ldc, long long stride_c,
                            int batch, const TB* bias = nullptr, bool lt = false, bool check_only = false) {
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
  if (bias != nullptr && m > 0 && !urpe_sim::is_device_range(bias, size_t(m) * sizeof(TB)))
    return invalid(call, "the bias vector (D's rows long) reaches outside device memory");
  if (check_only) {
    const bool read_ab = *alpha != 0.0f && k > 0;
    for (int q = 0; q < batch && m > 0 && n > 0; ++q) {
      if (read_ab && !inside_device(a + q * stride_a, a_rows, a_cols, lda))
        return invalid(call, "A (with lda and stride) reaches outside device memory");
      if (read_ab && !inside_device(b + q * stride_b, b_rows, b_cols, ldb))
        return invalid(call, "B (with ldb and stride) reaches outside device memory");
      if (!inside_device(c + q * stride_c, m, n, ldc))
        return invalid(call, "C (with ldc and stride) reaches outside device memory");
    }
    return CUBLAS_STATUS_SUCCESS;
  }
  record_gemm_call({m, n, k, batch, lt, bias != nullptr});
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  if (bias != nullptr && initcheck_on() && !urpe_sim::all_written(bias, size_t(m) * sizeof(TB))) {
    std::string element;
    for (int i = 0; i < m && element.empty(); ++i)
      if (!urpe_sim::all_written(bias + i, sizeof(TB))) element = "(" + std::to_string(i) + ")";
    return unwritten(call, "the bias", element, 0);
  }
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
        double scaled = double(*alpha) * sum;
        if (bias != nullptr) scaled += double(value(bias[i]));
        store(out, static_cast<float>(*beta == 0.0f ? scaled : scaled + double(*beta) * value(out)));
      }
    for (int j = 0; j < n; ++j) urpe_sim::mark_written(cq + size_t(j) * ldc, size_t(m) * sizeof(TC));
  }
  return CUBLAS_STATUS_SUCCESS;
}

// gemm_batched on matrices given with their CUDA types, as cuBLAS's GemmEx and cuBLASLt take them:
// A and B both CUDA_R_32F or both CUDA_R_16BF, C CUDA_R_32F or (after bf16 A and B) CUDA_R_16BF;
// bias (or null) has C's type. The caller has checked the combination.
inline cublasStatus_t gemm_typed(const char* call, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
                                 int k, const float* alpha, const void* a, cudaDataType_t ab_type, int lda,
                                 long long stride_a, const void* b, int ldb, long long stride_b, const float* beta,
                                 void* c, cudaDataType_t c_type, int ldc, long long stride_c, int batch,
                                 const void* bias, bool lt, bool check_only) {
  if (c_type == CUDA_R_16BF)
    return gemm_batched(call, op_a, op_b, m, n, k, alpha, static_cast<const Bf16*>(a), lda, stride_a,
                        static_cast<const Bf16*>(b), ldb, stride_b, beta, static_cast<Bf16*>(c), ldc, stride_c,
                        batch, static_cast<const Bf16*>(bias), lt, check_only);
  if (ab_type == CUDA_R_16BF)
    return gemm_batched(call, op_a, op_b, m, n, k, alpha, static_cast<const Bf16*>(a), lda, stride_a,
                        static_cast<const Bf16*>(b), ldb, stride_b, beta, static_cast<float*>(c), ldc, stride_c,
                        batch, static_cast<const float*>(bias), lt, check_only);
  return gemm_batched(call, op_a, op_b, m, n, k, alpha, static_cast<const float*>(a), lda, stride_a,
                      static_cast<const float*>(b), ldb, stride_b, beta, static_cast<float*>(c), ldc, stride_c,
                      batch, static_cast<const float*>(bias), lt, check_only);
}

// A GEMM enqueued on a stream that is capturing (CUDA graphs): `gemm(alpha, beta, check_only)`
// (a gemm_batched call with everything else bound by value) checks its arguments now, as cuBLAS
// returns their errors at the call, and becomes the capture's next node: at each launch of the
// graph it runs (checks, initcheck, the product, the log) with the pointers and descriptors as
// they were at the call. α and β are copied: host scalars, read at the call as cuBLAS's host
// pointer mode reads them. Returns false, touching nothing, when `stream` is not capturing.
template <typename Gemm>
bool capture_gemm(cudaStream_t stream, const char* call, const float* alpha, const float* beta, const Gemm& gemm,
                  cublasStatus_t& status) {
  if (!urpe_sim::stream_capturing(stream)) return false;
  if (!alpha || !beta) {
    status = invalid(call, "alpha or beta is null");
    return true;
  }
  status = gemm(alpha, beta, true);
  if (status != CUBLAS_STATUS_SUCCESS) return true;
  const float alpha_value = *alpha, beta_value = *beta;
  urpe_sim::capture_launch(stream, call, [gemm, call, alpha_value, beta_value] {
    // A failure at a launch (initcheck, a matrix freed since the capture) is a launch error, as a
    // kernel's fault in a graph is on a GPU.
    if (gemm(&alpha_value, &beta_value, false) != CUBLAS_STATUS_SUCCESS)
      urpe_sim::record_launch_error(cudaErrorLaunchFailure, std::string(call) + ": failed in a graph launch");
  });
  return true;
}

}  // namespace urpe_sim::gemm_reference
