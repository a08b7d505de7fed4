// CUDA simulator: the runtime API on the CPU, but for memory allocation (device_memory.cpp). One
// simulated device ("cuda:0"). Copies check their direction against the registry of device
// blocks and carry the shadow's written bits (initcheck); all work is synchronous, so events
// measure host time. A stream capture (CUDA graphs) records the launches, copies and memsets
// enqueued on its stream instead of running them, and runs them at each cudaGraphLaunch.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cuda_runtime.h"
#include "sim_state.h"

// A captured node: what runs when the graph runs, and its name (urpe_sim::graph_nodes).
struct CapturedNode {
  std::string name;
  std::function<void()> run;
};
struct CUstream_st {
  unsigned int flags;
  bool capturing = false;
  bool invalidated = false;        // a forbidden call during the capture
  std::vector<CapturedNode> nodes;  // the capture so far
};
struct CUgraph_st {
  std::vector<CapturedNode> nodes;
};
struct CUgraphExec_st {
  std::vector<CapturedNode> nodes;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point time;
  bool recorded = false;
};

namespace urpe_sim {
namespace {

// The simulator runs kernels and API calls on one host thread; the lock keeps the error state
// consistent should a test call the API from several.
std::mutex g_mutex;
int g_current_device = 0;
uint64_t g_explicit_waits = 0, g_pageable_uploads = 0;  // tests read them: urpe_sim_launch.h
std::map<const char*, size_t> g_pinned;  // cudaMallocHost blocks: start → bytes

bool is_pinned(const void* pointer) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const char* p = static_cast<const char*>(pointer);
  auto it = g_pinned.upper_bound(p);
  if (it == g_pinned.begin()) return false;
  --it;
  return p < it->first + it->second;
}
cudaError_t g_last_error = cudaSuccess;
std::string g_last_message;

}  // namespace

cudaError_t record_api_error(cudaError_t error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (error != cudaSuccess && g_last_error == cudaSuccess) {
    g_last_error = error;
    g_last_message.clear();
  }
  return error;
}

void record_launch_error(cudaError_t error, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "cuda_sim: %s\n", message.c_str());
  if (g_last_error == cudaSuccess) {
    g_last_error = error;
    g_last_message = message;
  }
}

uint64_t explicit_wait_count() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_explicit_waits;
}
uint64_t pageable_upload_count() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_pageable_uploads;
}

namespace {
void count_wait(uint64_t& counter) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++counter;
}

// The streams capturing now (global mode: a forbidden call anywhere invalidates all of them).
std::set<cudaStream_t> g_capturing;

// Records `node` into `stream`'s capture when it is capturing; returns whether it did.
bool capture(cudaStream_t stream, CapturedNode node) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (stream == nullptr || !stream->capturing) return false;
  stream->nodes.push_back(std::move(node));
  return true;
}
}  // namespace

bool stream_capturing(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return stream != nullptr && stream->capturing;
}

bool capture_launch(cudaStream_t stream, const char* kernel_name, std::function<void()> launch) {
  return capture(stream, {kernel_name, std::move(launch)});
}

bool capture_forbids(const char* call) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_capturing.empty()) return false;
  for (cudaStream_t s : g_capturing) s->invalidated = true;
  g_last_error = cudaErrorStreamCaptureUnsupported;
  std::fprintf(stderr, "cuda_sim: %s while a stream captures (a graph cannot hold it): the capture is invalidated\n",
               call);
  return true;
}

std::vector<std::string> graph_nodes(cudaGraph_t graph) {
  std::vector<std::string> names;
  if (graph)
    for (const CapturedNode& n : graph->nodes) names.push_back(n.name);
  return names;
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
  if (device != 0) return record_api_error(cudaErrorInvalidDevice);
  g_current_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
  if (device != 0) return record_api_error(cudaErrorInvalidDevice);
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
  properties->sharedMemPerBlockOptin = urpe_sim::kSharedOptinBytes;
  return cudaSuccess;
}

namespace {
std::map<const void*, size_t>& dynamic_shared_limits() {
  static std::map<const void*, size_t> limits;
  return limits;
}
}  // namespace

cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attribute, int value) {
  if (kernel == nullptr || attribute != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      size_t(value) > urpe_sim::kSharedOptinBytes)
    return record_api_error(cudaErrorInvalidValue);
  dynamic_shared_limits()[kernel] = size_t(value);
  return cudaSuccess;
}

namespace urpe_sim {
size_t dynamic_shared_limit(const void* kernel) {
  const auto it = dynamic_shared_limits().find(kernel);
  return it == dynamic_shared_limits().end() ? kDefaultDynamicSharedBytes : it->second;
}
}  // namespace urpe_sim

cudaError_t cudaDeviceSynchronize() {
  if (capture_forbids("cudaDeviceSynchronize")) return cudaErrorStreamCaptureUnsupported;
  count_wait(g_explicit_waits);
  return cudaSuccess;
}

// ---- memory ----

namespace {
cudaError_t copy_now(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (capture_forbids("cudaMemcpy")) return cudaErrorStreamCaptureUnsupported;
  return copy_now(dst, src, bytes, kind);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (capture(stream, {"memcpy", [=] { copy_now(dst, src, bytes, kind); }})) return cudaSuccess;
  return copy_now(dst, src, bytes, kind);
}

namespace {
cudaError_t copy_now(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  {
    const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind != cudaMemcpyDefault && kind != cudaMemcpyHostToHost) {
      const bool dst_ok = dst_device == is_device_range(dst, bytes);
      const bool src_ok = src_device == is_device_range(src, bytes);
      if (!dst_ok || !src_ok) {
        // A GPU would fault, or copy from or to the wrong memory.
        const bool expected_device = !dst_ok ? dst_device : src_device;
        std::fprintf(stderr, "cuda_sim: cudaMemcpy of %zu bytes (kind %d): the %s %s\n", bytes,
                     int(kind), !dst_ok ? "destination" : "source",
                     expected_device ? "is not wholly inside one cudaMalloc block"
                                     : "is device memory where host memory was declared");
        return record_api_error(cudaErrorInvalidValue);
      }
    }
  }
  if (kind == cudaMemcpyHostToDevice && !is_pinned(src)) count_wait(g_pageable_uploads);
  std::memmove(dst, src, bytes);
  if (in_device_region(dst)) {
    if (in_device_region(src)) copy_written_bits(dst, src, bytes);
    else mark_written(dst, bytes);
  }
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaMallocHost(void** pointer, size_t bytes) {
  *pointer = std::malloc(bytes ? bytes : 1);
  if (!*pointer) return record_api_error(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_pinned[static_cast<const char*>(*pointer)] = bytes;
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* pointer) {
  if (!pointer) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_pinned.erase(static_cast<const char*>(pointer)) == 0) return cudaErrorInvalidValue;
  }
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!is_device_range(dst, bytes)) return record_api_error(cudaErrorInvalidValue);
  std::memset(dst, value, bytes);
  mark_written(dst, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  if (capture(stream, {"memset", [=] { cudaMemset(dst, value, bytes); }})) return cudaSuccess;
  return cudaMemset(dst, value, bytes);
}

// ---- streams and events: all work already finished when the call returns ----

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  *stream = new CUstream_st;
  (*stream)->flags = flags;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  if (capture_forbids("cudaStreamSynchronize")) return cudaErrorStreamCaptureUnsupported;
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_explicit_waits;
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
  if (!event) return record_api_error(cudaErrorInvalidResourceHandle);
  event->time = std::chrono::steady_clock::now();
  event->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (capture_forbids("cudaEventSynchronize")) return cudaErrorStreamCaptureUnsupported;
  count_wait(g_explicit_waits);
  return event ? cudaSuccess : record_api_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  return event ? cudaSuccess : record_api_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  if (!start || !stop || !start->recorded || !stop->recorded)
    return record_api_error(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(stop->time - start->time).count();
  return cudaSuccess;
}

// ---- CUDA graphs (cuda_runtime.h) ----

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (stream == nullptr || stream->capturing) {  // the legacy stream cannot capture
    g_last_error = cudaErrorIllegalState;
    return cudaErrorIllegalState;
  }
  stream->capturing = true;
  stream->invalidated = false;
  stream->nodes.clear();
  g_capturing.insert(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *graph = nullptr;
  if (stream == nullptr || !stream->capturing) {
    g_last_error = cudaErrorIllegalState;
    return cudaErrorIllegalState;
  }
  stream->capturing = false;
  g_capturing.erase(stream);
  std::vector<CapturedNode> nodes = std::move(stream->nodes);
  stream->nodes.clear();
  if (stream->invalidated) {
    g_last_error = cudaErrorStreamCaptureInvalidated;
    return cudaErrorStreamCaptureInvalidated;
  }
  *graph = new CUgraph_st{std::move(nodes)};
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *status = stream == nullptr || !stream->capturing ? cudaStreamCaptureStatusNone
            : stream->invalidated                   ? cudaStreamCaptureStatusInvalidated
                                                    : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph) return record_api_error(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec) return record_api_error(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (stream != nullptr && stream->capturing) {  // no graph inside a capture here
      g_last_error = cudaErrorStreamCaptureUnsupported;
      return cudaErrorStreamCaptureUnsupported;
    }
  }
  for (CapturedNode& node : exec->nodes) node.run();
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
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
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
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
