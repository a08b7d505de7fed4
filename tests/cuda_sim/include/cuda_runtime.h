// CUDA simulator: this header stands in for <cuda_runtime.h> when the project's .cu files are
// compiled by the host compiler for tests/cuda_sim (the `test_cuda_sim_parity` suite). It gives
// device code its vocabulary (qualifiers, built-in indices, vector types, warp intrinsics, maths)
// and declares the subset of the runtime API that urpe calls; tests/cuda_sim/*.cpp implement it on
// the CPU. It exists so that a machine without a GPU (CI) still runs every kernel's logic:
// indexing, grid-stride loops, barriers, warp shuffles, which elements are written, cuBLAS
// argument conventions. It says nothing about speed, and it is not a backend of the `urpe` binary.
#pragma once
#include <math.h>  // maths functions in the global namespace, as device code calls them

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// ---- device-code qualifiers ----
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
// Shared memory is declared with URPE_SHARED(type, name, dims) (below), which the simulator
// places in a checked arena: a plain __shared__ would escape the checks, so it does not compile.
#define __shared__ urpe_sim_declare_shared_arrays_with_URPE_SHARED

// ---- vector types and built-in indices ----
struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
      : x(x_), y(y_), z(z_) {}
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned int x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline uint2 make_uint2(unsigned int x, unsigned int y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

// Set by the scheduler before it resumes a simulated thread.
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;
constexpr int warpSize = 32;

// ---- device maths that the host library lacks ----
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return fminf(fmaxf(x, 0.0f), 1.0f); }
template <typename T>
inline T __ldg(const T* p) { return *p; }
inline float __uint_as_float(unsigned int u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
inline unsigned int __float_as_uint(float x) {
  unsigned int u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
// CUDA's global integer min/max overloads.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }

// ---- runtime API types ----
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorIllegalState = 401,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
struct CUstream_st;
struct CUevent_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
constexpr unsigned int cudaStreamDefault = 0;
constexpr unsigned int cudaStreamNonBlocking = 1;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int multiProcessorCount;
  int l2CacheSize;
  int warpSize;
  int maxThreadsPerBlock;
  int major;
  int minor;
  size_t sharedMemPerBlockOptin;  // the opt-in shared memory a block may have (urpe_sim::kSharedOptinBytes)
};

// ---- runtime API (tests/cuda_sim/runtime.cpp) ----
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device);
// A kernel's launch attributes: only the dynamic shared-memory limit. A launch asking for more than
// 48 KiB of dynamic shared memory fails unless this raised the kernel's limit to at least that
// (as on a GPU), and no kernel's limit goes above the device's opt-in maximum.
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};
cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attribute, int value);
template <typename... P>
cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attribute, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attribute, value);
}
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMalloc(void** pointer, size_t bytes);
cudaError_t cudaFree(void* pointer);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
// Page-locked host memory: ordinary host memory here, remembered so that a copy from it is not
// counted as a pageable upload (urpe_sim::pageable_upload_count).
cudaError_t cudaMallocHost(void** pointer, size_t bytes);
cudaError_t cudaFreeHost(void* pointer);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* dst, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);  // all work is done when a call returns: cudaSuccess
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop);
// ---- CUDA graphs by stream capture ----
// Between cudaStreamBeginCapture and cudaStreamEndCapture nothing enqueued on the stream runs:
// kernel launches (urpe_sim_launch.h), cudaMemcpyAsync and cudaMemsetAsync on it become the
// graph's nodes, in order, with their arguments as given (a copy from host memory reads that
// memory when the graph runs, as on a GPU). A call that would make the host wait or allocate
// (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, cudaMemcpy, cudaMalloc,
// cudaFree) while any stream captures fails with cudaErrorStreamCaptureUnsupported and
// invalidates the capture (global mode, CUDA's default): its cudaStreamEndCapture fails with
// cudaErrorStreamCaptureInvalidated. cudaGraphLaunch runs the nodes in order at once.
// cuBLAS and cuBLASLt GEMMs on a capturing stream (the handle's, or cublasLtMatmul's) are nodes
// too: their arguments are checked at the call, α and β read then (host scalars), and the product
// runs at each launch (cublas.cpp, cublasLt.cpp).
struct CUgraph_st;
struct CUgraphExec_st;
using cudaGraph_t = CUgraph_st*;
using cudaGraphExec_t = CUgraphExec_st*;
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
namespace urpe_sim {
// The nodes of a graph (kernel launches by kernel name, "memcpy", "memset"), in order.
std::vector<std::string> graph_nodes(cudaGraph_t graph);
}  // namespace urpe_sim

cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);

// ---- warp collectives and the block barrier (tests/cuda_sim/scheduler.cpp) ----
namespace urpe_sim {
// Each lane offers 8 bytes; returns the bytes offered by lane (own lane ^ lane_mask).
uint64_t shuffle_xor(unsigned mask, uint64_t bits, int lane_mask, int width);
// Each lane offers 8 bytes; returns the bytes offered by lane `source` of this lane's
// width-sized segment.
uint64_t shuffle_index(unsigned mask, uint64_t bits, int source, int width);
int vote_all(unsigned mask, int predicate);
int vote_any(unsigned mask, int predicate);
// Each lane offers `count` (≤ 8) 32-bit words; all[lane·count + w] gets word w of every lane in
// the mask. The building block of the tensor-core emulation below.
void gather_words(unsigned mask, const uint32_t* words, int count, uint32_t* all);
// The calling thread's lane (threadIdx linearised, mod 32).
int current_lane();

// ---- tensor-core instructions (tests/cuda_sim/mma.cpp), reached only through ops/mma_tf32.cuh
// and ops/mma_bf16.cuh ----
// cvt.rna.tf32.f32: x rounded to TF32 (10 mantissa bits, to nearest, ties away from zero), as
// the bits of a float whose low 13 bits are zero.
uint32_t round_to_tf32(float x);
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 as a warp collective: every lane of the warp
// must call it (full mask); each offers its A (16×8) and B (8×8) fragments in the PTX ISA's
// layout and gets its four elements of D = A·B + C, with FP32 accumulation.
void mma_m16n8k8_tf32(float* d, const uint32_t* a, const uint32_t* b, const float* c);
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, the same way: A (16×16) and B (16×8) as
// pairs of BF16 values per register (low half the lower-indexed element), FP32 C and D.
void mma_m16n8k16_bf16(float* d, const uint32_t* a, const uint32_t* b, const float* c);

// ---- asynchronous copies global → shared (tests/cuda_sim/shared_memory.cpp), reached only
// through ops/cp_async.cuh ----
// cp.async.{ca,cg}.shared.global [dst], [src], bytes, src_bytes: the wrapper has read the source's
// first src_bytes (its reads checked as the thread's own); `words` holds them, zeros after. The
// copy is checked as a write of the thread now (memcheck, racecheck) but lands in shared memory
// only when the thread's cp_async_wait retires its group: until then, any access to the
// destination words is reported (racecheck), and a kernel that reads them without waiting
// reads stale bytes. A thread that ends with copies not waited for is a launch failure.
void cp_async(void* dst, const uint32_t* words, int bytes, int src_bytes);
// cp.async.commit_group: the thread's copies since its last commit become one group.
void cp_async_commit();
// cp.async.wait_group n: every committed group of the thread but the newest n lands.
void cp_async_wait(int n);
}  // namespace urpe_sim

void __syncthreads();

// ---- shared memory (tests/cuda_sim/shared_memory.cpp) ----
namespace urpe_sim {
// One URPE_SHARED declaration: what the checks' messages name, and where the array lives in the
// current block (placed at the first thread's arrival, once per block).
struct SharedSite {
  const char* name;
  const char* file;
  int line;
  size_t element_bytes;
  size_t elements;
  size_t row_elements;  // 2-D arrays: elements per row (0 for 1-D)
  uint32_t block_serial;
  size_t offset;
};
void* shared_array(SharedSite& site, size_t align);
// An array at byte `offset` of the block's dynamic shared memory (the launch's third argument):
// placed in the arena like a static one, checked to lie inside the launch's dynamic bytes and to
// overlap no other dynamic array of the block.
void* dynamic_shared_array(SharedSite& site, size_t align, size_t offset);
void sync_warp(unsigned mask);
// Called first by every kernel body (tests/cuda_sim/rewrite_launches.cmake adds the call): the
// kernel's own name, for a launch written through a function pointer.
void name_kernel(const char* name);
}  // namespace urpe_sim

// URPE_SHARED(float, tile, [32][129]) declares `float tile[32][129]` in shared memory: plain
// `__shared__` under nvcc (ops/cuda_common.cuh), an array of the block's checked arena here.
#define URPE_SHARED(type, name, dims)                                                          \
  using urpe_shared_type_##name = type dims;                                                   \
  static_assert(std::rank<urpe_shared_type_##name>::value <= 2,                               \
                "URPE_SHARED: the simulator names elements of 1-D and 2-D arrays");            \
  static ::urpe_sim::SharedSite urpe_shared_site_##name = {                                    \
      #name, __FILE__, __LINE__, sizeof(type),                                                 \
      sizeof(urpe_shared_type_##name) / sizeof(type),                                          \
      std::extent<urpe_shared_type_##name, 1>::value, 0, 0};                                   \
  urpe_shared_type_##name& name = *static_cast<urpe_shared_type_##name*>(                      \
      ::urpe_sim::shared_array(urpe_shared_site_##name, alignof(type)))

// URPE_DYNAMIC_SHARED(float4, stage, [64][16], offset) declares `float4 stage[64][16]` at byte
// `offset` of the block's dynamic shared memory (`extern __shared__` under nvcc, ops/cp_async.cuh).
#define URPE_DYNAMIC_SHARED(type, name, dims, offset)                                          \
  using urpe_shared_type_##name = type dims;                                                   \
  static_assert(std::rank<urpe_shared_type_##name>::value <= 2,                               \
                "URPE_DYNAMIC_SHARED: the simulator names elements of 1-D and 2-D arrays");    \
  static ::urpe_sim::SharedSite urpe_shared_site_##name = {                                    \
      #name, __FILE__, __LINE__, sizeof(type),                                                 \
      sizeof(urpe_shared_type_##name) / sizeof(type),                                          \
      std::extent<urpe_shared_type_##name, 1>::value, 0, 0};                                   \
  urpe_shared_type_##name& name = *static_cast<urpe_shared_type_##name*>(                      \
      ::urpe_sim::dynamic_shared_array(urpe_shared_site_##name, alignof(type), (offset)))

// Orders the shared-memory accesses of the warp's lanes before it against those after it (the
// simulator waits for every lane that has not exited, whatever the mask).
inline void __syncwarp(unsigned mask = 0xffffffffu) { urpe_sim::sync_warp(mask); }

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = warpSize) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable<T>::value,
                "__shfl_xor_sync: the simulator exchanges at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = urpe_sim::shuffle_xor(mask, bits, lane_mask, width);
  T result;
  std::memcpy(&result, &bits, sizeof(T));
  return result;
}
// The value of lane `source_lane` (of this lane's width-sized segment): a broadcast when every
// lane names the same source.
template <typename T>
T __shfl_sync(unsigned mask, T value, int source_lane, int width = warpSize) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable<T>::value,
                "__shfl_sync: the simulator exchanges at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = urpe_sim::shuffle_index(mask, bits, source_lane, width);
  T result;
  std::memcpy(&result, &bits, sizeof(T));
  return result;
}
inline int __all_sync(unsigned mask, int predicate) { return urpe_sim::vote_all(mask, predicate); }
inline int __any_sync(unsigned mask, int predicate) { return urpe_sim::vote_any(mask, predicate); }

#include "urpe_sim_launch.h"
