// The CUDA simulator's own tests (CTest: test_cuda_sim_self). Before its verdict on urpe's kernels
// counts for anything, the simulator must (1) run correct CUDA code correctly: indices of 3-D
// grids, warp shuffles and votes, shared memory with barriers, cuBLAS column-major GEMMs, CUB's
// sort; and (2) catch the kernel bugs it promises to catch: a barrier or a full-mask shuffle that
// some threads never reach, a bad launch configuration, a host pointer passed to a kernel, a GEMM
// whose leading dimension or extent is wrong or that reads unwritten memory. The checks of
// shared and device accesses (racecheck, memcheck, initcheck) and the schedules have their own
// file, test_checks.cu. Written in CUDA and built through the same launch rewrite as the
// project's .cu.
#include <cublas_v2.h>
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "tests/cuda_sim/device_copies.h"

namespace {

// ---- kernels that are correct ----

// out[linear thread id] = a code of (block, thread) in a 3-D grid of 3-D blocks.
__global__ void index_kernel(int* out) {
  const int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  out[block * blockDim.x * blockDim.y * blockDim.z + thread] = block * 10000 + thread;
}

// out[block] = Σ in over the block: warp shuffles, then one partial per warp in shared memory.
__global__ void block_sum_kernel(const float* in, float* out) {
  URPE_SHARED(float, partial, [32]);
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += partial[w];
    out[blockIdx.x] = total;
  }
}

// 8-byte values through a shuffle, and the two votes.
__global__ void shuffle_and_vote_kernel(double* shuffled, int* all, int* any) {
  const int lane = threadIdx.x;
  shuffled[lane] = __shfl_xor_sync(0xffffffffu, lane * 1.5, 5);
  all[lane] = __all_sync(0xffffffffu, lane < 40);
  any[lane] = __any_sync(0xffffffffu, lane == 31);
}

// Indexed shuffles: a broadcast from lane 7, and a rotation within 8-lane segments.
__global__ void indexed_shuffle_kernel(float* broadcast, float* rotated) {
  const int lane = threadIdx.x;
  broadcast[lane] = __shfl_sync(0xffffffffu, lane * 2.0f, 7);
  rotated[lane] = __shfl_sync(0xffffffffu, float(lane), lane + 1, 8);
}

__global__ void write_ones_kernel(float* out, int n) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x)
    out[k] = 1.0f;
}

// ---- kernels with the bugs the simulator must catch ----

// Threads beyond n leave before the barrier the others wait at.
__global__ void early_exit_barrier_kernel(float* out, int n) {
  if (int(threadIdx.x) >= n) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

// A full-mask shuffle, whether or not the block fills the warp.
__global__ void full_mask_shuffle_kernel(float* out) {
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, float(threadIdx.x), 1);
}

// Only the even lanes shuffle, with a mask that names all 32.
__global__ void divergent_shuffle_kernel(float* out) {
  if (threadIdx.x % 2 == 0) out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 2);
}

}  // namespace

// ---- correct code runs correctly ----

TEST_CASE("cuda_sim: every thread of a 3-D grid of 3-D blocks runs once, with its own indices") {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  const int total = 3 * 2 * 2 * 4 * 3 * 2;
  int* out = to_device(std::vector<int>(total, -1));
  index_kernel<<<grid, block>>>(out);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const std::vector<int> got = to_host(out, total);
  for (int b = 0; b < 12; ++b)
    for (int t = 0; t < 24; ++t) CHECK(got[b * 24 + t] == b * 10000 + t);
  cudaFree(out);
}

TEST_CASE("cuda_sim: shuffles, shared memory and barriers give the block sums") {
  const int blocks = 5, threads = 256;
  std::vector<float> in(blocks * threads);
  for (size_t k = 0; k < in.size(); ++k) in[k] = float(k % 97) * 0.25f;
  float* d_in = to_device(in);
  float* d_out = to_device(std::vector<float>(blocks, 0.0f));
  block_sum_kernel<<<blocks, threads>>>(d_in, d_out);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const std::vector<float> got = to_host(d_out, blocks);
  for (int b = 0; b < blocks; ++b) {
    double want = 0;
    for (int t = 0; t < threads; ++t) want += in[b * threads + t];
    CHECK(got[b] == doctest::Approx(want).epsilon(1e-6));
  }
  cudaFree(d_in);
  cudaFree(d_out);
}

TEST_CASE("cuda_sim: 8-byte shuffles and warp votes") {
  double* shuffled = to_device(std::vector<double>(32, 0.0));
  int* all = to_device(std::vector<int>(32, -1));
  int* any = to_device(std::vector<int>(32, -1));
  shuffle_and_vote_kernel<<<1, 32>>>(shuffled, all, any);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const std::vector<double> s = to_host(shuffled, 32);
  const std::vector<int> a = to_host(all, 32), y = to_host(any, 32);
  for (int lane = 0; lane < 32; ++lane) {
    CHECK(s[lane] == (lane ^ 5) * 1.5);
    CHECK(a[lane] == 1);
    CHECK(y[lane] == 1);
  }
}

TEST_CASE("cuda_sim: indexed shuffles broadcast and rotate within segments") {
  float* broadcast = to_device(std::vector<float>(32, -1.0f));
  float* rotated = to_device(std::vector<float>(32, -1.0f));
  indexed_shuffle_kernel<<<1, 32>>>(broadcast, rotated);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const std::vector<float> b = to_host(broadcast, 32), r = to_host(rotated, 32);
  for (int lane = 0; lane < 32; ++lane) {
    CHECK(b[lane] == 14.0f);
    CHECK(r[lane] == float(lane / 8 * 8 + (lane + 1) % 8));
  }
  cudaFree(broadcast);
  cudaFree(rotated);
}

TEST_CASE("cuda_sim: fresh device memory reads as NaN, so unwritten outputs cannot pass") {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, 100 * sizeof(float)) == cudaSuccess);
  for (float v : to_host(static_cast<float*>(p), 100)) CHECK(std::isnan(v));
  cudaFree(p);
}

TEST_CASE("cuda_sim: cuBLAS GEMMs are column-major, transposed on request, batched, and skip C "
          "when beta is 0") {
  // Row-major A (m×k) and B (k×n) are column-major Aᵀ and Bᵀ: C = A·B row-major is computed as
  // Cᵀ = Bᵀ·Aᵀ, the usual call. Then the same with A stored transposed (CUBLAS_OP_T).
  const int m = 5, n = 7, k = 3, batch = 2;
  std::vector<float> a(batch * m * k), b(batch * k * n), at(batch * k * m);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 11) - 4.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 7) * 0.5f - 1.0f;
  for (int q = 0; q < batch; ++q)
    for (int i = 0; i < m; ++i)
      for (int p = 0; p < k; ++p) at[q * k * m + p * m + i] = a[q * m * k + i * k + p];
  float* d_a = to_device(a);
  float* d_at = to_device(at);
  float* d_b = to_device(b);
  float* d_c = to_device(std::vector<float>(batch * m * n, NAN));
  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f;
  for (bool transposed : {false, true}) {
    INFO("A stored transposed: " << transposed);
    const cublasStatus_t status =
        transposed ? cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_T, n, m, k, &one, d_b,
                                               n, k * n, d_at, m, k * m, &zero, d_c, n, m * n,
                                               batch)
                   : cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, d_b,
                                               n, k * n, d_a, k, m * k, &zero, d_c, n, m * n,
                                               batch);
    REQUIRE(status == CUBLAS_STATUS_SUCCESS);
    const std::vector<float> c = to_host(d_c, batch * m * n);
    for (int q = 0; q < batch; ++q)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double want = 0;
          for (int p = 0; p < k; ++p) want += a[q * m * k + i * k + p] * b[q * k * n + p * n + j];
          CHECK(c[q * m * n + i * n + j] == doctest::Approx(want));
        }
  }
  cublasDestroy(handle);
  for (float* p : {d_a, d_at, d_b, d_c}) cudaFree(p);
}

TEST_CASE("cuda_sim: cublasGemmEx with a bf16 C rounds each sum once, to nearest even, and reads C "
          "when beta is 1") {
  // C (2×1) = A (2×1)·B (1×1) + β·C, all bf16 bits: A = (1, 1 + 2⁻⁷), B = 1, C = 2⁻⁸ twice. With
  // β = 1 the sums are 1 + 2⁻⁸ (halfway between 1 and 1 + 2⁻⁷: ties to the even 1) and
  // 1 + 3·2⁻⁸ (halfway between 1 + 2⁻⁷ and 1 + 2⁻⁶: ties to the even 1 + 2⁻⁶).
  uint16_t* d_a = to_device(std::vector<uint16_t>{0x3F80, 0x3F81});
  uint16_t* d_b = to_device(std::vector<uint16_t>{0x3F80});
  uint16_t* d_c = to_device(std::vector<uint16_t>{0x3B80, 0x3B80});
  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f;
  REQUIRE(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 1, &one, d_a, CUDA_R_16BF, 2, d_b, CUDA_R_16BF, 1,
                       &one, d_c, CUDA_R_16BF, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  CHECK(to_host(d_c, 2) == std::vector<uint16_t>{0x3F80, 0x3F82});
  REQUIRE(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 1, &one, d_a, CUDA_R_16BF, 2, d_b, CUDA_R_16BF, 1,
                       &zero, d_c, CUDA_R_16BF, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  CHECK(to_host(d_c, 2) == std::vector<uint16_t>{0x3F80, 0x3F81});
  // f32 operands with a bf16 C is not a combination cuBLAS (or urpe) has.
  float* d_f = to_device(std::vector<float>{1.0f, 2.0f});
  CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 1, &one, d_f, CUDA_R_32F, 2, d_f, CUDA_R_32F, 1, &zero,
                     d_c, CUDA_R_16BF, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED);
  cublasDestroy(handle);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_c);
  cudaFree(d_f);
}

TEST_CASE("cuda_sim: CUB's SortPairs sorts stably by the requested key bits") {
  const std::vector<uint32_t> keys = {5, 1, 4, 1, 0, 5, 2, 1};
  std::vector<int32_t> positions(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) positions[i] = int32_t(i);
  uint32_t* keys_in = to_device(keys);
  uint32_t* keys_out = to_device(std::vector<uint32_t>(keys.size(), 0));
  int32_t* values_in = to_device(positions);
  int32_t* values_out = to_device(std::vector<int32_t>(keys.size(), -1));
  size_t temp_bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, keys_out, values_in,
                                          values_out, int(keys.size()), 0, 3) == cudaSuccess);
  void* temp = nullptr;
  REQUIRE(cudaMalloc(&temp, temp_bytes) == cudaSuccess);
  REQUIRE(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in,
                                          values_out, int(keys.size()), 0, 3) == cudaSuccess);
  CHECK(to_host(keys_out, keys.size()) == std::vector<uint32_t>{0, 1, 1, 1, 2, 4, 5, 5});
  CHECK(to_host(values_out, keys.size()) == std::vector<int32_t>{4, 1, 3, 7, 6, 2, 0, 5});
}

// ---- bugs are caught ----

TEST_CASE("cuda_sim: a barrier or a full-mask shuffle that some threads never reach is a launch "
          "failure naming the kernel") {
  float* out = to_device(std::vector<float>(64, 0.0f));
  early_exit_barrier_kernel<<<1, 64>>>(out, 40);
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  CHECK(std::string(cudaGetErrorString(cudaErrorLaunchFailure)).find("early_exit_barrier_kernel") !=
        std::string::npos);
  cudaGetLastError();

  full_mask_shuffle_kernel<<<1, 32>>>(out);  // a full warp: fine
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(to_host(out, 2) == std::vector<float>{1.0f, 0.0f});
  full_mask_shuffle_kernel<<<1, 48>>>(out);  // the second warp has 16 lanes
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  divergent_shuffle_kernel<<<1, 32>>>(out);
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  // The error is reported once, as cudaGetLastError does.
  CHECK(cudaGetLastError() == cudaSuccess);
  cudaFree(out);
}

TEST_CASE("cuda_sim: bad launch configurations and host pointers are launch errors") {
  float* out = to_device(std::vector<float>(8, 0.0f));
  write_ones_kernel<<<1, 1025>>>(out, 8);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  write_ones_kernel<<<0, 32>>>(out, 8);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  std::vector<float> host(8, 0.0f);
  write_ones_kernel<<<1, 32>>>(host.data(), 8);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevicePointer);
  CHECK(host == std::vector<float>(8, 0.0f));  // the kernel never ran
  write_ones_kernel<<<2, 32>>>(out, 8);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(to_host(out, 8) == std::vector<float>(8, 1.0f));
  cudaFree(out);
}

TEST_CASE("cuda_sim: copies in the wrong direction and GEMMs with wrong leading dimensions or "
          "extents are refused") {
  float* d = to_device(std::vector<float>(16, 1.0f));
  std::vector<float> host(16, 0.0f);
  CHECK(cudaMemcpy(d, host.data(), 64, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(host.data(), d, 128, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  cudaGetLastError();

  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f;
  // 4×4 = 16 floats each: fine; lda 3 < 4 rows: invalid; 5×4 reaches past the 16 floats.
  CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, d, 4, d, 4, &zero, d, 4) ==
        CUBLAS_STATUS_SUCCESS);
  CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, d, 3, d, 4, &zero, d, 4) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 5, 4, 4, &one, d, 5, d, 4, &zero, d, 5) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, 2, 4, d, 2,
                                  4, &zero, d, 2, 4, 5) == CUBLAS_STATUS_INVALID_VALUE);
  cublasDestroy(handle);
  cudaFree(d);
}
