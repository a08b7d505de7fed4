// CUDA simulator: the runtime API on the CPU. One simulated device ("cuda:0") whose memory is
// host memory with a guard page after every block (an access past the end faults at once), filled
// with 0xFF bytes (NaN as float) when allocated so that reading memory nobody wrote shows up as
// NaN in the parity checks. Copies check their direction against the registry of device blocks,
// and all work is synchronous, so events measure host time.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "cuda_runtime.h"
#include "sim_state.h"

struct CUstream_st {
  unsigned int flags;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point time;
  bool recorded = false;
};

namespace urpe_sim {
namespace {

// What the simulated device pretends to have: allocations beyond it fail with
// cudaErrorMemoryAllocation, which lets tests reach the out-of-memory path.
constexpr size_t kDeviceBytes = size_t(4) << 30;

struct Block {
  void* mapping;
  size_t mapping_bytes;
  size_t bytes;
};

std::mutex g_mutex;
std::map<const char*, Block> g_blocks;  // keyed by the first byte of the user's range
size_t g_in_use = 0;
int g_current_device = 0;
cudaError_t g_last_error = cudaSuccess;
std::string g_last_message;

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

// Callers hold g_mutex where they touch the registry; the simulator runs kernels and API calls
// on one host thread, so the error state needs no lock of its own here.
cudaError_t set_error(cudaError_t error) {
  if (error != cudaSuccess && g_last_error == cudaSuccess) {
    g_last_error = error;
    g_last_message.clear();
  }
  return error;
}

bool is_device_range_locked(const void* pointer, size_t bytes) {
  const char* p = static_cast<const char*>(pointer);
  auto it = g_blocks.upper_bound(p);
  if (it == g_blocks.begin()) return false;
  --it;
  const char* begin = it->first;
  return p >= begin && p + bytes <= begin + it->second.bytes;
}


}  // namespace

void record_launch_error(cudaError_t error, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "cuda_sim: %s\n", message.c_str());
  if (g_last_error == cudaSuccess) {
    g_last_error = error;
    g_last_message = message;
  }
}

bool is_device_range(const void* pointer, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return is_device_range_locked(pointer, bytes == 0 ? 1 : bytes);
}

bool check_kernel_pointer(const LaunchConfig& config, int argument, const void* pointer) {
  if (pointer == nullptr || is_device_range(pointer, 1)) return true;
  record_launch_error(cudaErrorInvalidDevicePointer,
                      std::string(config.kernel_name) + ": argument " + std::to_string(argument) +
                          " is a pointer that is not device memory (a host pointer?)");
  return false;
}

}  // namespace urpe_sim

using namespace urpe_sim;

// ---- device ----

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = g_current_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  g_current_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  *properties = cudaDeviceProp{};
  std::snprintf(properties->name, sizeof(properties->name), "urpe CUDA simulator (CPU)");
  properties->totalGlobalMem = kDeviceBytes;
  // One "multiprocessor" keeps grids small (grid_for caps them at 32 blocks per SM), so the
  // grid-stride loops of the kernels really loop in the tests.
  properties->multiProcessorCount = 1;
  properties->l2CacheSize = 1 << 20;
  properties->warpSize = 32;
  properties->maxThreadsPerBlock = 1024;
  properties->major = 9;
  properties->minor = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

// ---- memory ----

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  *pointer = nullptr;
  if (bytes == 0) return cudaSuccess;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (bytes > kDeviceBytes - g_in_use) return set_error(cudaErrorMemoryAllocation);
  const size_t page = page_size();
  const size_t rounded = (bytes + 255) / 256 * 256;  // cudaMalloc's 256-byte alignment
  const size_t data_pages = (rounded + page - 1) / page;
  const size_t mapping_bytes = (data_pages + 1) * page;
  void* mapping = mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return set_error(cudaErrorMemoryAllocation);
  char* guard = static_cast<char*>(mapping) + data_pages * page;
  mprotect(guard, page, PROT_NONE);
  char* user = guard - rounded;  // the block ends where the guard page begins
  std::memset(user, 0xFF, rounded);
  g_blocks[user] = Block{mapping, mapping_bytes, bytes};
  g_in_use += bytes;
  *pointer = user;
  return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
  if (!pointer) return cudaSuccess;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_blocks.find(static_cast<const char*>(pointer));
  if (it == g_blocks.end()) return set_error(cudaErrorInvalidDevicePointer);
  munmap(it->second.mapping, it->second.mapping_bytes);
  g_in_use -= it->second.bytes;
  g_blocks.erase(it);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *free_bytes = kDeviceBytes - g_in_use;
  *total_bytes = kDeviceBytes;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind != cudaMemcpyDefault && kind != cudaMemcpyHostToHost) {
      const bool dst_ok = dst_device == is_device_range_locked(dst, bytes);
      const bool src_ok = src_device == is_device_range_locked(src, bytes);
      if (!dst_ok || !src_ok) {
        // A GPU would fault, or copy from or to the wrong memory.
        const bool expected_device = !dst_ok ? dst_device : src_device;
        std::fprintf(stderr, "cuda_sim: cudaMemcpy of %zu bytes (kind %d): the %s %s\n", bytes,
                     int(kind), !dst_ok ? "destination" : "source",
                     expected_device ? "is not wholly inside one cudaMalloc block"
                                     : "is device memory where host memory was declared");
        return set_error(cudaErrorInvalidValue);
      }
    }
  }
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!is_device_range(dst, bytes)) return set_error(cudaErrorInvalidValue);
  std::memset(dst, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t) {
  return cudaMemset(dst, value, bytes);
}

// ---- streams and events: all work already finished when the call returns ----

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  *stream = new CUstream_st{flags};
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_last_error == cudaErrorLaunchFailure ? cudaErrorLaunchFailure : cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st{};
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  if (!event) return set_error(cudaErrorInvalidResourceHandle);
  event->time = std::chrono::steady_clock::now();
  event->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return event ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  if (!start || !stop || !start->recorded || !stop->recorded)
    return set_error(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(stop->time - start->time).count();
  return cudaSuccess;
}

// ---- errors ----

cudaError_t cudaGetLastError() {
  std::lock_guard<std::mutex> lock(g_mutex);
  const cudaError_t error = g_last_error;
  g_last_error = cudaSuccess;
  return error;
}
cudaError_t cudaPeekAtLastError() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_last_error;
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  // The simulator's own words for the last launch failure, which name the kernel and threads.
  if (error == cudaErrorLaunchFailure || error == cudaErrorInvalidConfiguration ||
      error == cudaErrorInvalidDevicePointer) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_last_message.empty()) return g_last_message.c_str();
  }
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    default: return cudaGetErrorName(error);
  }
}
