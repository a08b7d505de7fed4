// The CUDA simulator's checks (part of CTest's test_cuda_sim_self): for each hazard class a
// deliberately broken kernel that the checked simulator reports, naming the kernel, the array
// (shared array or allocation), the index and the threads, and that an unchecked run (one forward
// schedule, URPE_SIM_CHECKS=none) would have passed silently; beside each, the fixed kernel passes
// under every schedule. Then the schedules themselves: their orders, and a result that depends
// on the order or on the interleaving caught by running a launch under two of them.
// The checks need the access hooks: in the AddressSanitizer build those cases report themselves
// skipped.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "ops/cp_async.cuh"
#include "tensor/bf16.h"
#include "tests/cuda_sim/device_copies.h"
#include "urpe_sim_checks.h"

using urpe_sim::Checks;
using urpe_sim::Order;
using urpe_sim::Schedule;

namespace {

const bool kNoHooks = !urpe_sim::access_hooks_available();
#if defined(__SANITIZE_ADDRESS__)
const bool kAsan = true;
#else
const bool kAsan = false;
#endif

// ---- helpers ----

// Sets the simulator's schedules and checks for one test, and puts the previous ones back.
struct ScopedSettings {
  urpe_sim::Settings saved = urpe_sim::settings();
  ScopedSettings(std::vector<Schedule> schedules, Checks checks) {
    urpe_sim::Settings s;
    s.schedules = std::move(schedules);
    s.checks = checks;
    urpe_sim::set_settings(s);
  }
  ~ScopedSettings() { urpe_sim::set_settings(saved); }
};

const Schedule kForward{Order::Forward};
const Schedule kReverse{Order::Reverse};
const Schedule kForwardSwitch{Order::Forward, 0, true};
const Schedule kRandomSwitch{Order::Random, 11, true};
const Checks kAll{true, true, true};
const Checks kNone{false, false, false};
const Checks kRacecheck{true, false, false};
const Checks kMemcheck{false, true, false};
const Checks kInitcheck{false, false, true};

// Every schedule, each launch compared between them: what the fixed kernels must pass.
std::vector<Schedule> every_schedule() {
  return {kForward, kReverse, kForwardSwitch, kRandomSwitch};
}

// The launch error since the last call ("" for none), with the simulator's message.
std::string launch_error() {
  const cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? "" : cudaGetErrorString(error);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- kernels: each broken one beside its fix ----

// out[block] = Σ in over the block: one partial per warp in shared memory, then thread 0 adds
// them. Without the barrier thread 0 reads partials other warps may not have written yet.
__global__ void block_total_kernel(const float* in, float* out, int with_barrier) {
  URPE_SHARED(float, partial, [32]);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (lane == 0) partial[warp] = v;
  if (with_barrier) __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += partial[w];
    out[blockIdx.x] = total;
  }
}

// Each thread reads the slot one warp ahead, then overwrites its own: without the second barrier
// a warp may overwrite slots that the warp before it has not read yet (write-after-read).
__global__ void shift_by_a_warp_kernel(float* out, int with_barrier) {
  URPE_SHARED(float, tile, [128]);
  const unsigned t = threadIdx.x, n = blockDim.x;
  tile[t] = float(t);
  __syncthreads();
  const float ahead = tile[(t + 32) % n];
  if (with_barrier) __syncthreads();
  tile[t] = ahead;
  __syncthreads();
  out[t] = tile[t];
}

// Lane 0 of every warp records its warp: without a barrier between, the writes of two warps to
// the one word are unordered (write-after-write).
__global__ void last_warp_kernel(int* out, int with_barrier) {
  URPE_SHARED(int, owner, [1]);
  const unsigned warp = threadIdx.x / 32;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) {
    if (warp == w && threadIdx.x % 32 == 0) owner[0] = int(w);
    if (with_barrier) __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = owner[0];
}

// out[t] = in[t − shift] through a shared tile of blockDim.x elements; shift = 1 writes one
// element past its end (the classic off-by-one), shift = −1 one before its start.
__global__ void shifted_tile_kernel(const float* in, float* out, int shift) {
  URPE_SHARED(float, tile, [64]);
  const int t = int(threadIdx.x);
  tile[t + (shift > 0 ? 1 : shift < 0 ? -1 : 0)] = in[t];
  __syncthreads();
  if (t > 0 && t < 63) out[t] = tile[t];
}

// out[k] = in[first + k] for k < n (first < 0 reads before the start of `in`).
__global__ void copy_kernel(const float* in, float* out, int n, int first) {
  for (int k = threadIdx.x; k < n; k += blockDim.x) out[k] = in[first + k];
}

// Reads a shared array that only the first `written` lanes have written.
__global__ void partly_written_tile_kernel(float* out, int written) {
  URPE_SHARED(float, tile, [32]);
  if (int(threadIdx.x) < written) tile[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x];
}

// out[lane] = the next lane's value, exchanged through shared memory. Lanes of one warp need a
// __syncwarp() (mode 1) or a warp collective (mode 2) between the write and the read: without
// (mode 0) lane 0 may read lane 1's slot before lane 1 writes it.
__global__ void rotate_lanes_kernel(float* out, int mode) {
  URPE_SHARED(float, lanes, [32]);
  const int lane = int(threadIdx.x);
  lanes[lane] = float(lane) * 2.0f;
  if (mode == 1) __syncwarp();
  if (mode == 2) (void)__shfl_sync(0xffffffffu, 0, 0);
  out[lane] = lanes[(lane + 1) % 32];
}

// Every thread adds 1 to out[0] without an atomic: a lost update, unless threads never switch
// between the read and the write.
__global__ void count_threads_kernel(float* out) { out[0] += 1.0f; }

// Every thread writes its index to out[0]: the result is whichever thread ran last.
__global__ void last_writer_kernel(float* out) { out[0] = float(threadIdx.x); }

// order[k] = the k-th thread to pass through (a race on purpose: it records the schedule).
__global__ void record_order_kernel(int* order, int* counter) {
  const int k = counter[0];
  counter[0] = k + 1;
  order[k] = int(threadIdx.x);
}

// Two shared arrays of 32 KiB each: past the 48 KiB a block may declare statically.
__global__ void too_much_shared_kernel(float* out) {
  URPE_SHARED(float, first, [8192]);
  URPE_SHARED(float, second, [8192]);
  first[threadIdx.x] = 1.0f;
  second[threadIdx.x] = 2.0f;
  out[threadIdx.x] = first[threadIdx.x] + second[threadIdx.x];
}

// out = in (32 × 4 floats) through a dynamic shared tile that cp.async fills, 16 bytes a thread;
// each thread then reads its neighbour's 16 bytes. mode 0: wait, then a barrier (the fix);
// 1: the barrier but no wait (the read finds the copy in flight; it lands only at the wait after
// the read); 2: the wait but no barrier (the neighbour's copy is not ordered before the read);
// 3: no wait at all (the thread ends with its copy pending).
__global__ void async_copy_kernel(const float* in, float* out, int mode) {
  namespace async = urpe::kernels::async;
  URPE_DYNAMIC_SHARED(float4, tile, [32], 0);
  const int t = int(threadIdx.x);
  async::copy16(&tile[t], in + 4 * t, 16);
  async::commit();
  if (mode == 0 || mode == 2) async::wait<0>();
  if (mode != 2) __syncthreads();
  const float4 x = tile[(t + 1) % 32];
  if (mode == 1) async::wait<0>();
  out[4 * t] = x.x, out[4 * t + 1] = x.y, out[4 * t + 2] = x.z, out[4 * t + 3] = x.w;
}

// Fills `words` ints of dynamic shared memory at byte `offset` (one per thread) and copies them out.
__global__ void dynamic_tile_kernel(int* out, int offset) {
  URPE_DYNAMIC_SHARED(int, head, [16], 0);
  URPE_DYNAMIC_SHARED(int, words, [16384], offset);
  const int t = int(threadIdx.x);
  if (t < 16) head[t] = t;
  words[t] = 2 * t;
  __syncthreads();
  out[t] = words[t] + (t < 16 ? head[t] : 0);
}

}  // namespace

// ---- asynchronous copies and dynamic shared memory ----

TEST_CASE("cp.async: a copy lands at the wait, so a read before it is stale, and racecheck names "
          "the copy in flight" * doctest::skip(kNoHooks)) {
  std::vector<float> in(128);
  for (size_t k = 0; k < in.size(); ++k) in[k] = float(k) * 0.5f + 1.0f;
  float* d_in = to_device(in);
  float* d_out = to_device(std::vector<float>(128, 0.0f));
  auto want = [&](int t, int e) { return in[size_t(4 * ((t + 1) % 32) + e)]; };
  {
    ScopedSettings unchecked({kForward}, kNone);
    async_copy_kernel<<<1, 32, 32 * 16>>>(d_in, d_out, 1);
    CHECK(launch_error() == "");
    const std::vector<float> got = to_host(d_out, 128);
    // The arena's fresh 0xFF bytes: thread t's copy lands at its wait, after its read of t + 1
    // (thread 31 reads tile[0], which thread 0's wait has landed by then).
    for (size_t k = 0; k < 124; ++k) CHECK(std::isnan(got[k]));
    async_copy_kernel<<<1, 32, 32 * 16>>>(d_in, d_out, 3);
    const std::string message = launch_error();
    CHECK(contains(message, "cp.async: thread (0,0,0) ended with 1 asynchronous copies to shared memory never waited for"));
  }
  {
    ScopedSettings checked({kForward}, kRacecheck);
    async_copy_kernel<<<1, 32, 32 * 16>>>(d_in, d_out, 1);
    const std::string message = launch_error();
    INFO(message);
    CHECK(contains(message, "async_copy_kernel in block (0,0,0)"));
    CHECK(contains(message, "racecheck: thread (0,0,0) reads shared 'tile'[1]"));
    CHECK(contains(message, "while thread (1,0,0)'s cp.async copy into it is in flight"));
  }
  {
    ScopedSettings checked({kReverse}, kRacecheck);
    async_copy_kernel<<<1, 32, 32 * 16>>>(d_in, d_out, 2);
    const std::string message = launch_error();
    INFO(message);
    CHECK(contains(message, "racecheck: read-after-write hazard on shared 'tile'"));
  }
  ScopedSettings fixed(every_schedule(), kAll);
  async_copy_kernel<<<1, 32, 32 * 16>>>(d_in, d_out, 0);
  CHECK(launch_error() == "");
  const std::vector<float> got = to_host(d_out, 128);
  for (int t = 0; t < 32; ++t)
    for (int e = 0; e < 4; ++e) CHECK(got[size_t(4 * t + e)] == want(t, e));
  cudaFree(d_in);
  cudaFree(d_out);
}

TEST_CASE("dynamic shared memory: arrays inside the launch's bytes; above 48 KiB only after "
          "cudaFuncSetAttribute") {
  int* out = to_device(std::vector<int>(64, 0));
  dynamic_tile_kernel<<<1, 64, 64 + 16384 * 4>>>(out, 64);  // 65600 bytes: no attribute yet
  std::string message = launch_error();
  INFO(message);
  CHECK(contains(message, "dynamic_tile_kernel: launched with 65600 bytes of dynamic shared memory, above 48 KiB"));
  REQUIRE(cudaFuncSetAttribute(dynamic_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 65600) == cudaSuccess);
  dynamic_tile_kernel<<<1, 64, 64 + 16384 * 4>>>(out, 64);
  CHECK(launch_error() == "");
  const std::vector<int> got = to_host(out, 64);
  for (int t = 0; t < 64; ++t) CHECK(got[size_t(t)] == 2 * t + (t < 16 ? t : 0));
  dynamic_tile_kernel<<<1, 64, 64 + 16384 * 4 - 4>>>(out, 64);  // one int short
  message = launch_error();
  CHECK(contains(message, "dynamic shared 'words'"));
  CHECK(contains(message, "at bytes [64, 65600) lies outside the launch's 65596 bytes of dynamic shared memory"));
  dynamic_tile_kernel<<<1, 64, 64 + 16384 * 4>>>(out, 32);  // over 'head'
  message = launch_error();
  CHECK(contains(message, "at bytes [32, 65568) overlaps dynamic shared 'head' at [0, 64)"));
  cudaDeviceProp properties{};
  REQUIRE(cudaGetDeviceProperties(&properties, 0) == cudaSuccess);
  const int optin = int(properties.sharedMemPerBlockOptin);
  CHECK(optin == 232448);
  CHECK(cudaFuncSetAttribute(dynamic_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin + 1) ==
        cudaErrorInvalidValue);
  (void)cudaGetLastError();
  cudaFree(out);
}

// ---- racecheck ----

TEST_CASE("racecheck: a missing __syncthreads() is a read-after-write hazard naming the kernel, "
          "array, index and threads" * doctest::skip(kNoHooks)) {
  const int blocks = 2, threads = 128;
  std::vector<float> in(blocks * threads);
  for (size_t k = 0; k < in.size(); ++k) in[k] = float(k % 7);
  float* d_in = to_device(in);
  float* d_out = to_device(std::vector<float>(blocks, 0.0f));
  {
    ScopedSettings unchecked({kForward}, kNone);
    block_total_kernel<<<blocks, threads>>>(d_in, d_out, 0);
    CHECK(launch_error() == "");  // passes silently
  }
  {
    // Reverse: warps 3, 2, 1 write their partials before thread 0 reads them.
    ScopedSettings checked({kReverse}, kRacecheck);
    block_total_kernel<<<blocks, threads>>>(d_in, d_out, 0);
    const std::string message = launch_error();
    INFO(message);
    CHECK(contains(message, "block_total_kernel in block (0,0,0)"));
    CHECK(contains(message, "racecheck: read-after-write hazard on shared 'partial'[1]"));
    CHECK(contains(message, "test_checks.cu:"));
    CHECK(contains(message, "thread (0,0,0) of warp 0 reads what was written by thread (32,0,0) "
                            "of warp 1, with no __syncthreads() between them"));
  }
  {
    // Forward: thread 0 reads partial[1] before warp 1 writes it; the write is then the hazard.
    ScopedSettings checked({kForward}, kRacecheck);
    block_total_kernel<<<blocks, threads>>>(d_in, d_out, 0);
    const std::string message = launch_error();
    INFO(message);
    CHECK(contains(message, "write-after-read hazard on shared 'partial'[1]"));
    CHECK(contains(message, "thread (32,0,0) of warp 1 writes what was read by thread (0,0,0)"));
  }
  ScopedSettings fixed(every_schedule(), kAll);
  block_total_kernel<<<blocks, threads>>>(d_in, d_out, 1);
  CHECK(launch_error() == "");
  const std::vector<float> got = to_host(d_out, blocks);
  for (int b = 0; b < blocks; ++b) {
    float want = 0;
    for (int t = 0; t < threads; ++t) want += in[b * threads + t];
    CHECK(got[b] == want);
  }
  cudaFree(d_in);
  cudaFree(d_out);
}

TEST_CASE("racecheck: a write-after-read and a write-after-write between warps" *
          doctest::skip(kNoHooks)) {
  float* out = to_device(std::vector<float>(128, 0.0f));
  int* owner = to_device(std::vector<int>(1, -1));
  {
    ScopedSettings unchecked({kForward}, kNone);
    shift_by_a_warp_kernel<<<1, 128>>>(out, 0);
    last_warp_kernel<<<1, 96>>>(owner, 0);
    CHECK(launch_error() == "");
  }
  ScopedSettings checked({kForward}, kAll);
  shift_by_a_warp_kernel<<<1, 128>>>(out, 0);
  std::string message = launch_error();
  INFO(message);
  CHECK(contains(message, "shift_by_a_warp_kernel in block (0,0,0)"));
  CHECK(contains(message, "write-after-read hazard on shared 'tile'[32]"));
  CHECK(contains(message, "thread (32,0,0) of warp 1 writes what was read by thread (0,0,0) of "
                          "warp 0, with no __syncthreads() between them"));
  last_warp_kernel<<<1, 96>>>(owner, 0);
  message = launch_error();
  CHECK(contains(message, "last_warp_kernel in block (0,0,0)"));
  CHECK(contains(message, "write-after-write hazard on shared 'owner'[0]"));
  CHECK(contains(message, "thread (32,0,0) of warp 1 overwrites what was written by thread "
                          "(0,0,0) of warp 0"));

  ScopedSettings fixed(every_schedule(), kAll);
  shift_by_a_warp_kernel<<<1, 128>>>(out, 1);
  last_warp_kernel<<<1, 96>>>(owner, 1);
  CHECK(launch_error() == "");
  const std::vector<float> shifted = to_host(out, 128);
  for (int t = 0; t < 128; ++t) CHECK(shifted[t] == float((t + 32) % 128));
  CHECK(to_host(owner, 1)[0] == 2);
  cudaFree(out);
  cudaFree(owner);
}

TEST_CASE("racecheck at warp scope: lanes exchanging through shared memory need __syncwarp() or "
          "a warp collective" * doctest::skip(kNoHooks)) {
  float* out = to_device(std::vector<float>(32, 0.0f));
  {
    ScopedSettings unchecked({kForward}, kNone);
    rotate_lanes_kernel<<<1, 32>>>(out, 0);
    CHECK(launch_error() == "");
  }
  {
    ScopedSettings checked({kForward}, kRacecheck);
    rotate_lanes_kernel<<<1, 32>>>(out, 0);
    const std::string message = launch_error();
    INFO(message);
    CHECK(contains(message, "rotate_lanes_kernel in block (0,0,0)"));
    CHECK(contains(message, "write-after-read hazard on shared 'lanes'[1]"));
    CHECK(contains(message, "thread (1,0,0) of warp 0 writes what was read by thread (0,0,0) of "
                            "warp 0, with no __syncwarp() or warp collective between them"));
  }
  {
    ScopedSettings checked({kReverse}, kRacecheck);  // lane 31 writes, lane 30 then reads it
    rotate_lanes_kernel<<<1, 32>>>(out, 0);
    const std::string message = launch_error();
    INFO(message);
    CHECK(contains(message, "read-after-write hazard on shared 'lanes'[31]"));
    CHECK(contains(message, "thread (30,0,0) of warp 0 reads what was written by thread (31,0,0)"));
  }
  ScopedSettings fixed(every_schedule(), kAll);
  for (int mode : {1, 2}) {
    INFO("mode " << mode);
    rotate_lanes_kernel<<<1, 32>>>(out, mode);
    CHECK(launch_error() == "");
    const std::vector<float> got = to_host(out, 32);
    for (int lane = 0; lane < 32; ++lane) CHECK(got[lane] == float((lane + 1) % 32) * 2.0f);
  }
  cudaFree(out);
}

// ---- memcheck ----

TEST_CASE("memcheck: an off-by-one shared index names the array, the index and the thread" *
          doctest::skip(kNoHooks)) {
  float* in = to_device(std::vector<float>(64, 3.0f));
  float* out = to_device(std::vector<float>(64, 0.0f));
  {
    ScopedSettings unchecked({kForward}, kNone);
    shifted_tile_kernel<<<1, 64>>>(in, out, 1);  // writes a red zone: nothing notices
    shifted_tile_kernel<<<1, 64>>>(in, out, -1);
    CHECK(launch_error() == "");
  }
  ScopedSettings checked({kForward}, kMemcheck);
  shifted_tile_kernel<<<1, 64>>>(in, out, 1);
  std::string message = launch_error();
  INFO(message);
  CHECK(contains(message, "shifted_tile_kernel in block (0,0,0)"));
  CHECK(contains(message, "memcheck: thread (63,0,0) writes 4 bytes of shared memory outside "
                          "every array: index 64 of shared 'tile', which has 64 elements"));
  shifted_tile_kernel<<<1, 64>>>(in, out, -1);
  message = launch_error();
  CHECK(contains(message, "memcheck: thread (0,0,0) writes 4 bytes of shared memory outside every "
                          "array: index -1 of shared 'tile'"));
  ScopedSettings fixed(every_schedule(), kAll);
  shifted_tile_kernel<<<1, 64>>>(in, out, 0);
  CHECK(launch_error() == "");
  CHECK(to_host(out, 64)[5] == 3.0f);
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("memcheck: device accesses just past the end or before the start of an allocation" *
          doctest::skip(kNoHooks)) {
  // 60 floats = 240 bytes: the 16 bytes up to cudaMalloc's 256-byte granule are no guard page.
  float* in = to_device(std::vector<float>(60, 1.0f));
  float* out = to_device(std::vector<float>(61, 0.0f));
  {
    ScopedSettings unchecked({kForward}, kNone);
    copy_kernel<<<1, 32>>>(in, out, 61, 0);
    CHECK(launch_error() == "");
  }
  ScopedSettings checked({kForward}, kMemcheck);
  copy_kernel<<<1, 32>>>(in, out, 61, 0);
  const std::string message = launch_error();
  INFO(message);
  CHECK(contains(message, "copy_kernel in block (0,0,0)"));
  CHECK(contains(message, "memcheck: thread (28,0,0) reads 4 bytes at byte 240 of a 240-byte "
                          "allocation (past its end) (kernel argument 0 points into it)"));
  copy_kernel<<<1, 32>>>(in, out, 1, -1);
  CHECK(contains(launch_error(), "memcheck: thread (0,0,0) reads 4 bytes at byte -4 of a 240-byte "
                                 "allocation (before its start)"));
  cudaFree(in);
  cudaFree(out);
}

// Runs `launch` in a child process; returns its stderr, and whether it exited with status 0.
template <typename Launch>
std::string stderr_of_child(Launch launch, bool* exited_cleanly) {
  char path[] = "/tmp/urpe_sim_child_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(fd, 2);
    launch();
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  *exited_cleanly = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return text.str();
}

TEST_CASE("in the AddressSanitizer build the shared red zones and the slack around an allocation "
          "are poisoned, so ASan reports the off-by-one accesses" * doctest::skip(!kAsan)) {
  float* in = to_device(std::vector<float>(60, 1.0f));  // 240 bytes: 16 bytes of slack after
  float* out = to_device(std::vector<float>(64, 0.0f));
  bool clean = true;
  std::string report = stderr_of_child([&] { shifted_tile_kernel<<<1, 64>>>(in, out, 1); }, &clean);
  CHECK_FALSE(clean);
  CHECK(contains(report, "AddressSanitizer"));
  CHECK(contains(report, "shifted_tile_kernel"));
  report = stderr_of_child([&] { copy_kernel<<<1, 32>>>(in, out, 61, 0); }, &clean);
  CHECK_FALSE(clean);
  CHECK(contains(report, "AddressSanitizer"));
  CHECK(contains(report, "copy_kernel"));
  report = stderr_of_child([&] { copy_kernel<<<1, 32>>>(in, out, 1, -1); }, &clean);
  CHECK_FALSE(clean);
  CHECK(contains(report, "AddressSanitizer"));
  report = stderr_of_child([&] { copy_kernel<<<1, 32>>>(in, out, 60, 0); }, &clean);
  CHECK(clean);  // the whole allocation, and nothing past it: no report
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("device memory has a guard page before its start and after its end: far misses fault "
          "in any build") {
  // 1024 floats fill a page: element −1 lies in the guard page before, element 1024 in the one
  // after. Unchecked, so only the guard pages can stop the access.
  float* in = to_device(std::vector<float>(1024, 1.0f));
  float* out = to_device(std::vector<float>(1, 0.0f));
  for (int offset : {-1, 1024}) {
    INFO("element " << offset);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      std::signal(SIGSEGV, SIG_DFL);  // die of the fault, without doctest's crash report
      std::signal(SIGBUS, SIG_DFL);
      ScopedSettings unchecked({kForward}, kNone);
      copy_kernel<<<1, 1>>>(in, out, 1, offset);
      _exit(0);  // not reached when the guard page works
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
  }
  copy_kernel<<<1, 1>>>(in, out, 1, 1023);  // the last element: fine
  CHECK(launch_error() == "");
  CHECK(to_host(out, 1)[0] == 1.0f);
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("more than 48 KiB of static shared memory is a launch failure") {
  float* out = to_device(std::vector<float>(32, 0.0f));
  too_much_shared_kernel<<<1, 32>>>(out);
  const std::string message = launch_error();
  INFO(message);
  CHECK(contains(message, "too_much_shared_kernel in block (0,0,0)"));
  CHECK(contains(message, "more than 48 KiB of static __shared__ memory (65536 bytes with 'second'"));
  cudaFree(out);
}

// ---- initcheck ----

TEST_CASE("initcheck: reads of device or shared words that nothing has written" *
          doctest::skip(kNoHooks)) {
  // 64 floats allocated, 32 of them copied in: the kernel copies all 64.
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, 64 * sizeof(float)) == cudaSuccess);
  float* in = static_cast<float*>(p);
  const std::vector<float> half(32, 2.0f);
  REQUIRE(cudaMemcpy(in, half.data(), 32 * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  float* out = to_device(std::vector<float>(64, 0.0f));
  {
    ScopedSettings unchecked({kForward}, kNone);
    copy_kernel<<<1, 64>>>(in, out, 64, 0);
    partly_written_tile_kernel<<<1, 32>>>(out, 16);
    CHECK(launch_error() == "");  // NaN in out[32..63], but no error
  }
  ScopedSettings checked({kForward}, kInitcheck);
  copy_kernel<<<1, 64>>>(in, out, 64, 0);
  std::string message = launch_error();
  INFO(message);
  CHECK(contains(message, "copy_kernel in block (0,0,0)"));
  CHECK(contains(message, "initcheck: thread (32,0,0) reads 4 bytes at byte 128 of a 256-byte "
                          "allocation, which nothing has written (kernel argument 0 points into "
                          "it)"));
  partly_written_tile_kernel<<<1, 32>>>(out, 16);
  message = launch_error();
  CHECK(contains(message, "initcheck: thread (16,0,0) reads shared 'tile'[16]"));
  CHECK(contains(message, "which no thread of this block has written"));

  // A device-to-device copy carries the written bits: the copy of an unwritten word is unwritten.
  float* copy = to_device(std::vector<float>(64, 0.0f));
  REQUIRE(cudaMemcpy(copy, in, 64 * sizeof(float), cudaMemcpyDeviceToDevice) == cudaSuccess);
  copy_kernel<<<1, 64>>>(copy, out, 32, 0);
  CHECK(launch_error() == "");
  copy_kernel<<<1, 64>>>(copy, out, 64, 0);
  CHECK(contains(launch_error(), "byte 128 of a 256-byte allocation, which nothing has written"));
  REQUIRE(cudaMemset(in, 0, 64 * sizeof(float)) == cudaSuccess);
  ScopedSettings fixed(every_schedule(), kAll);
  copy_kernel<<<1, 64>>>(in, out, 64, 0);
  partly_written_tile_kernel<<<1, 32>>>(out, 32);
  CHECK(launch_error() == "");
  cudaFree(in);
  cudaFree(out);
  cudaFree(copy);
}

TEST_CASE("initcheck: a cuBLAS GEMM that reads an unwritten element of A" *
          doctest::skip(kNoHooks)) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, 16 * sizeof(float)) == cudaSuccess);  // A: 4×4, column 2 left unwritten
  float* a = static_cast<float*>(p);
  const std::vector<float> ones(16, 1.0f);
  REQUIRE(cudaMemcpy(a, ones.data(), 8 * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(a + 12, ones.data(), 4 * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  float* b = to_device(ones);
  void* c = nullptr;
  REQUIRE(cudaMalloc(&c, 16 * sizeof(float)) == cudaSuccess);  // unwritten: fine, β = 0
  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f;
  {
    ScopedSettings checked({kForward}, kInitcheck);
    CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, 4, b, 4, &zero,
                      static_cast<float*>(c), 4) == CUBLAS_STATUS_EXECUTION_FAILED);
    CHECK(launch_error() == "cublasSgemm: initcheck: element (0, 2) of A (batch 0) is read, but "
                            "nothing has written it");
    // B·B into C, then C as an input with β = 1: C now counts as written.
    CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, b, 4, b, 4, &zero,
                      static_cast<float*>(c), 4) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, b, 4, b, 4, &one,
                      static_cast<float*>(c), 4) == CUBLAS_STATUS_SUCCESS);
    CHECK(launch_error() == "");
  }
  cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

// cuBLASLt's stand-in (tests/cuda_sim/cublasLt.cpp): the bias epilogue against a hand-computed
// product, then each call outside the simulated subset, or against cuBLASLt's rules, failing
// loudly: a status and a pending launch error naming it (a caller that took the status for "no
// plan, fall back" still fails its next launch check).
TEST_CASE("cuBLASLt: the bias epilogue; calls outside the subset and misused algorithms are loud errors") {
  // D (2×3) = A (2×4)·B (4×3) + bias (2), column-major, f32.
  std::vector<float> av(8), bv(12);
  for (int i = 0; i < 8; ++i) av[i] = float(i + 1);
  for (int i = 0; i < 12; ++i) bv[i] = 0.25f * float(i - 5);
  const std::vector<float> bias{0.5f, -1.0f};
  float* a = to_device(av);
  float* b = to_device(bv);
  float* bias_d = to_device(bias);
  void* d = nullptr;
  REQUIRE(cudaMalloc(&d, 6 * sizeof(float)) == cudaSuccess);
  cublasLtHandle_t lt = nullptr;
  REQUIRE(cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc = nullptr;
  REQUIRE(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  const uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  const int32_t bias_type = CUDA_R_32F;
  const void* bias_pointer = bias_d;
  CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)) ==
        CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer, sizeof(bias_pointer)) ==
        CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr, lb_other = nullptr;
  REQUIRE(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 2, 4, 2) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 4, 3, 4) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, 2, 3, 2) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&lb_other, CUDA_R_32F, 4, 2, 4) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t pref = nullptr;
  REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  REQUIRE(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &result, &returned) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(returned == 1);
  const float one = 1.0f, zero = 0.0f;
  CHECK(cublasLtMatmul(lt, desc, &one, a, la, b, lb, &zero, d, ld, d, ld, &result.algo, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_SUCCESS);
  CHECK(launch_error() == "");
  std::vector<float> got(6);
  REQUIRE(cudaMemcpy(got.data(), d, 6 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      double want = bias[i];
      for (int p = 0; p < 4; ++p) want += double(av[i + 2 * p]) * double(bv[p + 4 * j]);
      CHECK(got[i + 2 * j] == float(want));
    }
  // Layouts that make no product, and the algorithm on another problem (no bias epilogue).
  CHECK(cublasLtMatmul(lt, desc, &one, a, la, b, lb_other, &zero, d, ld, d, ld, &result.algo, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(contains(launch_error(), "do not make one product"));
  cublasLtMatmulDesc_t plain = nullptr;
  REQUIRE(cublasLtMatmulDescCreate(&plain, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmul(lt, plain, &one, a, la, b, lb, &zero, d, ld, d, ld, &result.algo, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(contains(launch_error(), "the algorithm was not returned by the heuristic for this problem"));
  cublasLtMatmulDescDestroy(plain);
  // A pointer less aligned than the heuristic was told (256 bytes by default).
  CHECK(cublasLtMatmul(lt, desc, &one, a + 1, la, b, lb, &zero, d, ld, d, ld, &result.algo, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(contains(launch_error(), "matrix A is less aligned than the 256 bytes the heuristic was told"));
  // An epilogue, an attribute and a buffer size outside the subset.
  const uint32_t gelu = 32;
  CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &gelu, sizeof(gelu)) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(contains(launch_error(), "epilogue 32 is not simulated"));
  CHECK(cublasLtMatmulDescSetAttribute(desc, static_cast<cublasLtMatmulDescAttributes_t>(9), &gelu, sizeof(gelu)) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(contains(launch_error(), "attribute 9 is not simulated"));
  const int64_t wide = CUBLAS_OP_T;
  CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &wide, sizeof(wide)) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(contains(launch_error(), "attribute buffer of 8 bytes, expected 4"));
  // A bf16 D after f32 A and B: refused by the heuristic, loudly.
  cublasLtMatrixLayout_t ld16 = nullptr;
  REQUIRE(cublasLtMatrixLayoutCreate(&ld16, CUDA_R_16BF, 2, 3, 2) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld16, ld16, pref, 1, &result, &returned) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(returned == 0);
  CHECK(contains(launch_error(), "C and D must share one type"));
  // bf16 A, B and D: the bias must be bf16 too (D's type). An f32 one is what an H100's heuristic
  // refused (CUBLAS_STATUS_INVALID_VALUE); here loudly, so urpe never asks for it.
  using urpe::float_to_bf16_bits;  // round to nearest even (the inputs below are exact in bf16)
  using urpe::bf16_bits_to_float;
  std::vector<uint16_t> a16v(8), b16v(12), bias16v(2);
  for (int i = 0; i < 8; ++i) a16v[i] = float_to_bf16_bits(av[i]);
  for (int i = 0; i < 12; ++i) b16v[i] = float_to_bf16_bits(bv[i]);
  for (int i = 0; i < 2; ++i) bias16v[i] = float_to_bf16_bits(bias[i]);
  uint16_t* a16 = to_device(a16v);
  uint16_t* b16 = to_device(b16v);
  uint16_t* bias16 = to_device(bias16v);
  uint16_t* d16 = to_device(std::vector<uint16_t>(6, 0));
  cublasLtMatrixLayout_t la16 = nullptr, lb16 = nullptr;
  REQUIRE(cublasLtMatrixLayoutCreate(&la16, CUDA_R_16BF, 2, 4, 2) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&lb16, CUDA_R_16BF, 4, 3, 4) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la16, lb16, ld16, ld16, pref, 1, &result, &returned) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(contains(launch_error(), "a bias of another type than D's"));
  const int32_t bias_type16 = CUDA_R_16BF;
  const void* bias16_pointer = bias16;
  CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type16, sizeof(bias_type16)) ==
        CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias16_pointer,
                                       sizeof(bias16_pointer)) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatmulAlgoGetHeuristic(lt, desc, la16, lb16, ld16, ld16, pref, 1, &result, &returned) ==
          CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmul(lt, desc, &one, a16, la16, b16, lb16, &zero, d16, ld16, d16, ld16, &result.algo, nullptr, 0,
                       nullptr) == CUBLAS_STATUS_SUCCESS);
  CHECK(launch_error() == "");
  std::vector<uint16_t> got16(6);
  REQUIRE(cudaMemcpy(got16.data(), d16, 6 * sizeof(uint16_t), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      double want = bf16_bits_to_float(bias16v[i]);
      for (int p = 0; p < 4; ++p) want += double(bf16_bits_to_float(a16v[i + 2 * p])) * double(bf16_bits_to_float(b16v[p + 4 * j]));
      CHECK(got16[i + 2 * j] == float_to_bf16_bits(float(want)));  // the FP32 sum and bias rounded once
    }
  for (void* p : {static_cast<void*>(a16), static_cast<void*>(b16), static_cast<void*>(bias16), static_cast<void*>(d16)})
    cudaFree(p);
  for (cublasLtMatrixLayout_t l : {la, lb, ld, lb_other, ld16, la16, lb16}) cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
  for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(bias_d), d}) cudaFree(p);
}

// GEMMs in a stream capture (CUDA graphs): cuBLAS's and cuBLASLt's calls on a capturing stream
// are checked at the call and recorded, not run; each launch of the graph runs them on what the
// inputs hold then, with α and β as they were at the call (host scalars are read at the call).
TEST_CASE("capture: a cuBLAS GEMM and a cuBLASLt matmul run at each launch of the graph, not at the capture") {
  // C (2×2) = α·A (2×3)·B (3×2); D (2×2) = A·B + bias (cuBLASLt); column-major, f32.
  std::vector<float> av{1.5f, -2.0f, 0.25f, 3.0f, -1.0f, 0.5f};
  const std::vector<float> bv{2.0f, -0.5f, 1.0f, 0.75f, 4.0f, -3.0f};
  const std::vector<float> bias{0.125f, -2.5f};
  const std::vector<float> sentinel(4, -7.0f);
  float* a = to_device(av);
  float* b = to_device(bv);
  float* bias_d = to_device(bias);
  float* c = to_device(sentinel);
  float* d = to_device(sentinel);
  auto product = [&](int i, int j) {
    double sum = 0.0;
    for (int p = 0; p < 3; ++p) sum += double(av[i + 2 * p]) * double(bv[p + 3 * j]);
    return sum;
  };
  auto read = [](const float* device) {
    std::vector<float> host(4);
    REQUIRE(cudaMemcpy(host.data(), device, 4 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    return host;
  };

  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasSetStream(handle, stream) == CUBLAS_STATUS_SUCCESS);
  cublasLtHandle_t lt = nullptr;
  REQUIRE(cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc = nullptr;
  REQUIRE(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  const uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  const void* bias_pointer = bias_d;
  REQUIRE(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)) ==
          CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer,
                                         sizeof(bias_pointer)) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  REQUIRE(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 2, 3, 2) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 3, 2, 3) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, 2, 2, 2) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t pref = nullptr;
  REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  REQUIRE(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &result, &returned) ==
          CUBLAS_STATUS_SUCCESS);

  const size_t gemms_before = urpe_sim::gemm_calls().size();
  float alpha = 2.0f;
  const float one = 1.0f, zero = 0.0f;
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
  CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &alpha, a, 2, b, 3, &zero, c, 2) ==
        CUBLAS_STATUS_SUCCESS);
  alpha = 100.0f;  // read at the call: the graph keeps 2
  CHECK(cublasLtMatmul(lt, desc, &one, a, la, b, lb, &zero, d, ld, d, ld, &result.algo, nullptr, 0, stream) ==
        CUBLAS_STATUS_SUCCESS);
  // An argument error is returned at the call and adds no node (lda 1 < the 2 rows of A).
  CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &alpha, a, 1, b, 3, &zero, c, 2) ==
        CUBLAS_STATUS_INVALID_VALUE);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  CHECK(urpe_sim::graph_nodes(graph) == std::vector<std::string>{"cublasSgemm", "cublasLtMatmul"});
  CHECK(read(c) == sentinel);  // recorded, not run
  CHECK(read(d) == sentinel);
  CHECK(urpe_sim::gemm_calls().size() == gemms_before);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);

  for (int launch = 0; launch < 2; ++launch) {
    INFO("launch " << launch);
    if (launch == 1) {  // new values in A, outside the graph: the next launch reads them
      for (float& x : av) x = 0.5f * x - 1.0f;
      REQUIRE(cudaMemcpy(a, av.data(), av.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
    }
    REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
    CHECK(launch_error() == "");
    const std::vector<float> got_c = read(c), got_d = read(d);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        CHECK(got_c[i + 2 * j] == float(2.0 * product(i, j)));
        CHECK(got_d[i + 2 * j] == float(product(i, j) + bias[i]));
      }
    CHECK(urpe_sim::gemm_calls().size() == gemms_before + 2 * (launch + 1));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (cublasLtMatrixLayout_t l : {la, lb, ld}) cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
  for (float* p : {a, b, bias_d, c, d}) cudaFree(p);
}

// ---- schedules ----

TEST_CASE("schedules: forward, reverse and seeded random orders of the threads") {
  const int n = 64;
  int* order = to_device(std::vector<int>(n, -1));
  int* counter = to_device(std::vector<int>(1, 0));
  auto run = [&](Schedule schedule) {
    ScopedSettings one({schedule}, kNone);
    REQUIRE(cudaMemset(counter, 0, sizeof(int)) == cudaSuccess);
    record_order_kernel<<<1, n>>>(order, counter);
    REQUIRE(launch_error() == "");
    return to_host(order, n);
  };
  std::vector<int> forward(n), reverse(n);
  for (int k = 0; k < n; ++k) forward[k] = k, reverse[k] = n - 1 - k;
  CHECK(run(kForward) == forward);
  // Reverse: warps in reverse order, and lanes inside each in reverse order.
  CHECK(run(kReverse) == reverse);
  const std::vector<int> random = run(Schedule{Order::Random, 5, false});
  CHECK(random != forward);
  CHECK(random != reverse);
  CHECK(std::is_permutation(random.begin(), random.end(), forward.begin()));
  CHECK(run(Schedule{Order::Random, 5, false}) != random);  // a new permutation per launch
  cudaFree(order);
  cudaFree(counter);
}

TEST_CASE("schedules: a launch whose result depends on the order or on the interleaving fails "
          "when run under two of them" * doctest::skip(kNoHooks)) {
  float* out = to_device(std::vector<float>(1, 0.0f));
  {
    // One schedule, no checks: every thread adds 1 without switching in between, and the lost
    // update never happens: 64, the right answer.
    ScopedSettings unchecked({kForward}, kNone);
    count_threads_kernel<<<1, 64>>>(out);
    CHECK(launch_error() == "");
    CHECK(to_host(out, 1)[0] == 64.0f);
  }
  {
    REQUIRE(cudaMemset(out, 0, sizeof(float)) == cudaSuccess);
    ScopedSettings two({kForward, kForwardSwitch}, kAll);
    count_threads_kernel<<<1, 64>>>(out);
    const std::string message = launch_error();
    INFO(message);
    CHECK(contains(message, "count_threads_kernel: the forward and forward+switch schedules give "
                            "different results: byte 0 of a 4-byte allocation is 0x42800000 (64 "
                            "as float) under forward but 0x3f800000 (1 as float) under "
                            "forward+switch"));
  }
  {
    ScopedSettings two({kForward, kReverse}, kAll);
    last_writer_kernel<<<1, 64>>>(out);
    const std::string message = launch_error();
    INFO(message);
    CHECK(contains(message, "last_writer_kernel: the forward and reverse schedules give different "
                            "results"));
  }
  cudaFree(out);
}

TEST_CASE("schedules: the settings' spelling, and one clear error for a bad value") {
  urpe_sim::Settings s;
  std::string error;
  REQUIRE(urpe_sim::parse_settings("forward,reverse+switch,random:42", "racecheck,initcheck", &s,
                                   &error));
  REQUIRE(s.schedules.size() == 3);
  CHECK(urpe_sim::describe(s.schedules[0]) == "forward");
  CHECK(urpe_sim::describe(s.schedules[1]) == "reverse+switch");
  CHECK(urpe_sim::describe(s.schedules[2]) == "random:42");
  CHECK(s.checks.racecheck);
  CHECK_FALSE(s.checks.memcheck);
  CHECK(s.checks.initcheck);
  REQUIRE(urpe_sim::parse_settings(nullptr, nullptr, &s, &error));
  CHECK(s.schedules.size() == 2);  // forward, reverse
  CHECK((s.checks.racecheck && s.checks.memcheck && s.checks.initcheck));
  REQUIRE(urpe_sim::parse_settings(nullptr, "none", &s, &error));
  CHECK_FALSE((s.checks.racecheck || s.checks.memcheck || s.checks.initcheck));
  CHECK_FALSE(urpe_sim::parse_settings("forward,backward", nullptr, &s, &error));
  CHECK(error == "URPE_SIM_SCHEDULES: 'backward' is not a schedule (expected forward, reverse or "
                 "random[:SEED], each optionally followed by +switch, separated by commas)");
  CHECK_FALSE(urpe_sim::parse_settings("random:x", nullptr, &s, &error));
  CHECK_FALSE(urpe_sim::parse_settings("", nullptr, &s, &error));
  CHECK_FALSE(urpe_sim::parse_settings(nullptr, "racecheck,synccheck", &s, &error));
  CHECK(error == "URPE_SIM_CHECKS: 'synccheck' is not a check (expected all, none, or racecheck, "
                 "memcheck, initcheck separated by commas)");
}
