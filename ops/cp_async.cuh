// The one door to asynchronous copies from global to shared memory (sm_80+ `cp.async`), and the
// dynamic shared memory that a kernel staging more than 48 KiB needs. Why: a software pipeline
// (FlashAttention-2's double buffering) issues the next tile's global loads before computing on
// the current one, so that their latency hides behind the compute instead of stalling every warp
// of the block at each tile; `cp.async` writes shared memory without passing through registers,
// so the loads cost no registers while they are in flight.
// On a GPU each function is one inline-PTX instruction; in the CUDA simulator (tests/cuda_sim,
// shared_memory.cpp) the copy is queued and lands only when the thread's wait retires its group,
// so a kernel that reads the destination before waiting reads stale bytes, and racecheck reports
// any access to a destination still in flight. No kernel writes `asm("cp.async…")` anywhere else.
//
// ---- the instructions (PTX ISA, "Data Movement and Conversion Instructions: cp.async") ----
//   cp.async.cg.shared.global [dst], [src], 16, src_bytes;   16 bytes, L2 only (streamed tiles)
//   cp.async.ca.shared.global [dst], [src], 4, src_bytes;    4 bytes, cached in L1 (small maps)
//   cp.async.ca.shared.global [dst], [src], 8, src_bytes;    8 bytes (one double: the backward's D)
// copy src_bytes bytes and fill the rest of the destination with zeros (src_bytes = 0: zeros,
// nothing read). dst and src are aligned to the copy's size. The copies a thread issued since its
// last `commit` form one group (cp.async.commit_group); `wait<n>` (cp.async.wait_group n) returns
// when at most the n newest groups of the thread are still pending. A copy is visible to the
// issuing thread after its wait, and to the other threads of the block only after a barrier
// that follows the wait.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

// URPE_DYNAMIC_SHARED(type, name, dims, offset) declares `type name dims` at byte `offset` of the
// block's dynamic shared memory (the launch's third argument; above 48 KiB only after
// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)). The CUDA
// simulator defines it to place the array where its checks see it, and checks that it lies
// inside the launch's dynamic bytes and overlaps no other.
#ifndef URPE_DYNAMIC_SHARED
#define URPE_DYNAMIC_SHARED(type, name, dims, offset)                                                 \
  extern __shared__ __align__(16) unsigned char urpe_dynamic_shared_##name[];                         \
  using urpe_shared_type_##name = type dims;                                                          \
  urpe_shared_type_##name& name = *reinterpret_cast<urpe_shared_type_##name*>(urpe_dynamic_shared_##name + (offset))
#endif

namespace urpe::kernels::async {

#if !defined(URPE_CUDA_SIM)
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
#endif

// 16 bytes global → shared (dst, src 16-byte aligned): src's first src_bytes (0 or 16), zeros after.
__device__ __forceinline__ void copy16(void* dst, const void* src, int src_bytes) {
#if defined(URPE_CUDA_SIM)
  uint32_t words[4] = {0, 0, 0, 0};
  const uint32_t* from = static_cast<const uint32_t*>(src);
  for (int w = 0; w < src_bytes / 4; ++w) words[w] = from[w];  // the thread's own (checked) reads
  urpe_sim::cp_async(dst, words, 16, src_bytes);
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(src_bytes)
               : "memory");
#endif
}

// 4 bytes global → shared (both 4-byte aligned): src's word when src_bytes = 4, zero when 0.
__device__ __forceinline__ void copy4(void* dst, const void* src, int src_bytes) {
#if defined(URPE_CUDA_SIM)
  uint32_t words[1] = {src_bytes == 4 ? *static_cast<const uint32_t*>(src) : 0u};
  urpe_sim::cp_async(dst, words, 4, src_bytes);
#else
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(src_bytes)
               : "memory");
#endif
}

// 8 bytes global → shared (both 8-byte aligned): src's 8 bytes when src_bytes = 8, zeros when 0.
__device__ __forceinline__ void copy8(void* dst, const void* src, int src_bytes) {
#if defined(URPE_CUDA_SIM)
  uint32_t words[2] = {0u, 0u};
  if (src_bytes == 8) words[0] = static_cast<const uint32_t*>(src)[0], words[1] = static_cast<const uint32_t*>(src)[1];
  urpe_sim::cp_async(dst, words, 8, src_bytes);
#else
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(src_bytes)
               : "memory");
#endif
}

// The thread's copies since its last commit become one group.
__device__ __forceinline__ void commit() {
#if defined(URPE_CUDA_SIM)
  urpe_sim::cp_async_commit();
#else
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most the kPending newest groups of the thread are in flight (its older copies landed).
template <int kPending>
__device__ __forceinline__ void wait() {
#if defined(URPE_CUDA_SIM)
  urpe_sim::cp_async_wait(kPending);
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

}  // namespace urpe::kernels::async
