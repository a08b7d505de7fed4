// CUDA simulator: the state its pieces share. The runtime (runtime.cpp) keeps the pending launch
// error; device memory (device_memory.cpp) the registry of allocations and a shadow byte per word;
// the scheduler (scheduler.cpp) the thread that runs now; the checks (shared_memory.cpp,
// access_hooks.cpp) read them on every access and stop a thread that breaks a rule.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cuda_runtime.h"
#include "urpe_sim_checks.h"

namespace urpe_sim {

// ---- runtime.cpp ----

// Remembers the first error since the last cudaGetLastError() and prints it to stderr (a GPU
// would report it asynchronously; here it is known at once).
void record_launch_error(cudaError_t error, const std::string& message);
// Remembers `error` as the pending one (when none is) and returns it, as a failing API call does.
cudaError_t record_api_error(cudaError_t error);
// A call a stream capture cannot hold (a host wait, an allocation) while one is active: invalidates
// every capture, records cudaErrorStreamCaptureUnsupported and returns true (runtime.cpp).
bool capture_forbids(const char* call);

// Dynamic shared memory per block: what a launch may ask for without cudaFuncSetAttribute, and
// the most any kernel may be allowed (sm_90's opt-in limit, cudaDeviceProp::sharedMemPerBlockOptin).
constexpr size_t kDefaultDynamicSharedBytes = size_t(48) << 10;
constexpr size_t kSharedOptinBytes = 232448;
// The kernel's dynamic shared-memory limit (cudaFuncSetAttribute, else the default).
size_t dynamic_shared_limit(const void* kernel);

// ---- device_memory.cpp ----

// What the simulated device pretends to have: allocations beyond it fail with
// cudaErrorMemoryAllocation, which lets tests reach the out-of-memory path.
constexpr size_t kDeviceBytes = size_t(4) << 30;

// True when [pointer, pointer + bytes) lies inside one block from cudaMalloc.
bool is_device_range(const void* pointer, size_t bytes);

// Device memory is one reserved range of the address space; a shadow byte per 4-byte word says
// whether the word belongs to a live allocation and whether anything has written it.
constexpr uint8_t kAddressable = 1;
constexpr uint8_t kWritten = 2;
constexpr uint8_t kLogged = 4;  // saved in the undo log of the current schedule's run
struct DeviceRegion {
  char* base = nullptr;
  size_t bytes = 0;
  uint8_t* shadow = nullptr;  // shadow[(p − base) / 4]
};
extern DeviceRegion g_device;

inline bool in_device_region(const void* p) {
  return size_t(static_cast<const char*>(p) - g_device.base) < g_device.bytes;
}

// What a host-side stand-in (cuBLAS, CUB, NCCL) or a copy writes; and whether [p, p + bytes) has
// been written, for the stand-ins' own reads.
void mark_written(const void* p, size_t bytes);
bool all_written(const void* p, size_t bytes);
// A device-to-device copy copies the written bits too (a kernel reading the copy of an unwritten
// word is still reading an unwritten word).
void copy_written_bits(void* dst, const void* src, size_t bytes);

// "12 bytes past the end of a 256-byte allocation", "in freed or never-allocated memory".
std::string describe_device_address(const void* p);
// The first byte of the live allocation whose span (guard pages included) holds p, or null.
const char* allocation_of(const void* p);
// The current launch's pointer arguments (argument index, value), as check_kernel_pointer saw them.
extern std::vector<std::pair<int, const void*>> g_launch_pointers;

// Undo log for running one launch under several schedules: while recording, the first write of
// each word saves its old value and shadow byte.
void log_word(size_t word);
bool recording();
struct RunWrites;  // opaque: the words one run wrote and their final values
void start_recording();
// Ends the run: returns what it wrote (word, final bits) and, with restore, puts the old values
// and shadow bytes back so the next schedule starts from the same memory.
RunWrites* finish_recording(bool restore);
// Empty when the two runs wrote the same words with the same bits; else the first difference.
std::string compare_runs(const RunWrites& first, const char* first_name, const RunWrites& second,
                         const char* second_name);
void free_run(RunWrites* run);

// ---- scheduler.cpp ----

// The simulated thread running now (null outside a kernel), as the checks see it.
struct ThreadInfo {
  int linear = 0;     // index in the block (x fastest)
  uint3 index{};
  uint64_t sync = 0;  // warp collectives (shuffles, votes, __syncwarp) this thread has passed
};
struct AccessContext {
  ThreadInfo* thread = nullptr;
  uint32_t epoch = 0;         // changes at every block start and every __syncthreads() release
  uint32_t block_serial = 0;  // changes at every block start
  bool switch_at_access = false;
  Checks checks;
  LaunchRecord* record = nullptr;
  bool banks = false;  // the bank model counts this run's shared accesses (banks.cpp)
};
extern AccessContext g_access;

// A check that finds a broken rule records the failure for the launch, returns, and then (from a
// frame that owns no objects: the thread's stack is abandoned, never unwound) stops the thread
// for good, so that the access never happens; the scheduler then abandons the block.
void record_failure(const std::string& failure);
[[noreturn]] void stop_thread();
// Lets the scheduler run another thread (schedules with switch_at_access).
void switch_thread();
// "thread (3,0,0)" and, for racecheck, "thread (3,0,0) of warp 0".
std::string describe_thread(const ThreadInfo& t);
std::string describe_linear_thread(int linear);

// ---- shared_memory.cpp ----

// A block starts: no arrays placed, `dynamic_bytes` of dynamic shared memory (the launch's), and
// `threads` threads with no asynchronous copies.
void begin_block_shared_memory(size_t dynamic_bytes, int threads);
void shared_access(char* p, size_t bytes, bool write);
// Every thread of the block has ended: a copy (cp_async) still not waited for is a failure.
void end_block_async_copies();
extern char* g_shared_base;
extern size_t g_shared_bytes;
inline bool in_shared_arena(const void* p) {
  return size_t(static_cast<const char*>(p) - g_shared_base) < g_shared_bytes;
}

// ---- banks.cpp (the bank model; called only while g_access.banks) ----

// A block starts with `threads` threads and no open requests.
void bank_begin_block(int threads);
// One lane's shared access at program counter `pc` (async: a cp.async issued).
void bank_access(const char* p, size_t bytes, bool write, const void* pc, bool async);
// Every open request is complete (a __syncthreads() released, or the block ended): count them.
void bank_flush();
// The launch ended: its counts go to `kernel`'s, and are printed with URPE_SIM_BANKS=launch.
void bank_end_launch(const std::string& kernel);
// URPE_SIM_BANKS=exit: every kernel's report to stderr (an exit handler).
void print_bank_report_at_exit();

// ---- settings.cpp ----

LaunchRecord& launch_record(const std::string& kernel);

}  // namespace urpe_sim
