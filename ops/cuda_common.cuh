// Shared pieces of the CUDA kernels in ops/: finding the context of a tensor, grid-stride loops,
// and deterministic warp / block reductions (a fixed shuffle tree: the same inputs always add up
// in the same order, so results never depend on scheduling).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tensor/cuda_context.h"
#include "tensor/tensor.h"

// URPE_SHARED(type, name, dims) declares a shared-memory array, `__shared__ type name dims`,
// e.g. URPE_SHARED(float, tile, [32][129]). The CUDA simulator (tests/cuda_sim) defines it
// instead to place the array where its racecheck, memcheck and initcheck see every access; it
// refuses a plain __shared__, so every shared array of the kernels is checked there.
#ifndef URPE_SHARED
#define URPE_SHARED(type, name, dims) __shared__ type name dims
#endif

namespace urpe::kernels {

// The context of a CUDA tensor, made current for this host thread.
inline cuda::Context& context_of(const Tensor& t) {
  URPE_CHECK(t.device().is_cuda() && t.device().context() != nullptr,
             "CUDA kernel called with " << t.describe());
  cuda::Context& context = *t.device().context();
  context.activate();
  return context;
}

// for (int64_t k = global thread index; k < n; k += total threads)
#define URPE_GRID_STRIDE(k, n)                                                    \
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < (n);     \
       k += int64_t(gridDim.x) * blockDim.x)

constexpr int kWarp = 32;

// for (int64_t r = global warp index; r < n; r += total warps): one warp per row
#define URPE_WARP_STRIDE(r, n)                                                                  \
  for (int64_t r = blockIdx.x * int64_t(blockDim.x / kWarp) + threadIdx.x / kWarp; r < (n);     \
       r += int64_t(gridDim.x) * (blockDim.x / kWarp))

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;  // every lane holds the total
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// total. `shared` holds 32 values of T. Contains __syncthreads: call from all threads.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int warps = blockDim.x / kWarp;
  v = warp_sum(v);
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = lane < warps ? shared[lane] : T(0);
  total = warp_sum(total);
  return total;
}

}  // namespace urpe::kernels
