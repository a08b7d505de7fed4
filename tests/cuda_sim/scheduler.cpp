// CUDA simulator: runs a grid on the CPU. Blocks run one after another; inside a block every
// CUDA thread is a coroutine (coroutine.h) with its own stack, and the scheduler runs each one until
// it finishes or waits at a barrier:
//   __syncthreads()                      waits until every thread of the block is there;
//   warp shuffles, votes, __syncwarp()   wait until every lane of the warp is there (per warp).
// It is strict where a GPU is only undefined: a barrier that some thread can never reach (it has
// exited, or waits at a different barrier), a full-mask warp collective in a warp with missing or
// exited lanes, and lanes at different collectives are reported as launch failures naming the
// kernel, the block and the threads, instead of hanging or giving wrong numbers later.
//
// Between barriers the order is the schedule's (urpe_sim_checks.h): warps, and the lanes inside
// each warp, in forward, reverse or seeded random order; each warp runs as far as the barriers
// allow before the next starts. With +switch the scheduler instead takes turns among all ready
// threads of the block at every shared or global access (the access hooks call switch_thread()),
// so interleavings that only a barrier would rule out really happen. With several schedules each
// launch runs under every one of them from the same memory (the undo log of device_memory.cpp)
// and must write the same bits: the kernels are written to be deterministic.
//
// Warp exchanges use two slots per lane, alternating between consecutive collectives, so one
// barrier per collective is enough: a lane cannot overwrite slot k%2 before every lane has passed
// collective k+1, and each lane reads slot k%2 before it arrives there.
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "coroutine.h"
#include "cuda_runtime.h"
#include "sim_state.h"

uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;

namespace urpe_sim {

AccessContext g_access;

namespace {

constexpr int kWarp = 32;
constexpr int kMaxThreads = 1024;
constexpr size_t kStackBytes = size_t(128) << 10;
constexpr size_t kGuardBytes = size_t(4) << 10;

// Ready: runnable. Block / Warp: at __syncthreads() / a warp collective. Done: returned.
// Stopped: broke a rule (stop_thread); never resumed.
enum class Wait { None, Block, Warp, Done, Stopped };
enum class Collective { Shuffle, VoteAll, VoteAny, SyncWarp, Gather };
// Words a lane offers at one gather (the tensor-core emulation's A and B fragments, mma.cpp).
constexpr int kGatherWords = 8;

struct SimThread {
  Coroutine coroutine;
  ThreadInfo info;
  Wait wait = Wait::None;
  // the warp collective this lane waits at
  Collective collective = Collective::Shuffle;
  unsigned mask = 0;
  uint64_t slot[2] = {0, 0};
  uint32_t words[2][kGatherWords] = {};  // a gather's offer, alternating like `slot`
  int word_count = 0;                    // words offered at the pending gather
};

// splitmix64: the random schedule's generator (seeded per schedule, launch and block).
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

struct BlockRun {
  const LaunchConfig* config;
  void (*thread_main)(void*);
  void* closure;
  Schedule schedule;
  Random random{0};
  std::vector<SimThread> threads;
  SimThread* current = nullptr;
  std::string failure;  // non-empty: stop the grid and report this
};

BlockRun* g_run = nullptr;
uint64_t g_launches = 0;
// The running launch's kernel: the name written before <<<, or, when that is a function
// pointer, the name its body announces (name_kernel).
std::string g_kernel_name;

// One stack per possible thread of a block, each above a guard page (an overflow faults at once
// instead of corrupting the neighbour), mapped once and reused by every launch.
char* stack_of(int thread) {
  static char* stacks = nullptr;
  const size_t stride = kStackBytes + kGuardBytes;
  if (!stacks) {
    void* p = mmap(nullptr, stride * kMaxThreads, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "cuda_sim: cannot map thread stacks\n");
      std::abort();
    }
    stacks = static_cast<char*>(p);
    for (int t = 0; t < kMaxThreads; ++t) mprotect(stacks + stride * t, kGuardBytes, PROT_NONE);
  }
  return stacks + stride * thread + kGuardBytes;
}

void thread_entry() {
  BlockRun* run = g_run;
  run->thread_main(run->closure);
  run->current->wait = Wait::Done;
  run->current->coroutine.yield();  // for good: the scheduler never resumes a finished thread
}

// Suspends the calling simulated thread until the scheduler releases it.
void suspend(Wait wait) {
  SimThread* self = g_run->current;
  self->wait = wait;
  self->coroutine.yield();
}

void fail(const std::string& what) {
  if (g_run->failure.empty()) g_run->failure = what;
}

int lane_of(const SimThread& t) { return t.info.linear % kWarp; }

// A warp's lanes are released together when each lane that has not exited waits at a warp
// collective. Returns true when it was released; records a failure for a mismatch.
bool release_warp(int base) {
  const int n = static_cast<int>(g_run->threads.size());
  const int end = std::min(n, base + kWarp);
  unsigned waiting = 0, exited = 0;
  for (int t = base; t < end; ++t) {
    const Wait w = g_run->threads[t].wait;
    if (w == Wait::Warp) waiting |= 1u << (t - base);
    else if (w == Wait::Done) exited |= 1u << (t - base);
    else return false;  // a lane still runs or waits at __syncthreads()
  }
  if (waiting == 0) return false;
  const SimThread& first = g_run->threads[base + __builtin_ctz(waiting)];
  for (int t = base; t < end; ++t) {
    const SimThread& lane = g_run->threads[t];
    if (lane.wait != Wait::Warp) continue;
    if (lane.mask != first.mask || lane.collective != first.collective ||
        lane.info.sync != first.info.sync || lane.word_count != first.word_count) {
      fail("lanes of one warp wait at different warp collectives (" + describe_thread(first.info) +
           " and " + describe_thread(lane.info) + ")");
      return false;
    }
  }
  if ((first.mask & waiting) != first.mask) {
    std::ostringstream out;
    out << "warp collective with mask 0x" << std::hex << first.mask << " but only lanes 0x"
        << waiting << " of warp " << std::dec << base / kWarp << " arrive"
        << (exited ? " (the others have exited)" : " (the block has fewer threads)");
    fail(out.str());
    return false;
  }
  for (int t = base; t < end; ++t)
    if (g_run->threads[t].wait == Wait::Warp) g_run->threads[t].wait = Wait::None;
  return true;
}

// The block barrier opens when every thread waits at it; a thread that exited never will.
bool release_block_barrier() {
  bool any = false;
  for (const SimThread& t : g_run->threads) {
    if (t.wait == Wait::Block) any = true;
    else if (t.wait != Wait::Done) return false;
  }
  if (!any) return false;
  for (const SimThread& t : g_run->threads)
    if (t.wait == Wait::Done) {
      fail("__syncthreads() is waited at, but " + describe_thread(t.info) + " has already exited");
      return false;
    }
  for (SimThread& t : g_run->threads) t.wait = Wait::None;
  if (g_access.banks) bank_flush();  // the warps' requests before the barrier are complete
  ++g_access.epoch;
  return true;
}

std::string describe_deadlock() {
  int at_block = 0, at_warp = 0;
  const SimThread* example_block = nullptr;
  const SimThread* example_warp = nullptr;
  for (const SimThread& t : g_run->threads) {
    if (t.wait == Wait::Block) ++at_block, example_block = example_block ? example_block : &t;
    if (t.wait == Wait::Warp) ++at_warp, example_warp = example_warp ? example_warp : &t;
  }
  std::ostringstream out;
  out << "deadlock: " << at_block << " thread(s) wait at __syncthreads()";
  if (example_block) out << " (e.g. " << describe_thread(example_block->info) << ")";
  out << " and " << at_warp << " at a warp collective";
  if (example_warp) out << " (e.g. " << describe_thread(example_warp->info) << ")";
  return out.str();
}

// 0, 1, …, n−1 in the schedule's order (a fresh permutation for every call when random).
void order_of(BlockRun& run, int n, std::vector<int>& order) {
  order.resize(n);
  std::iota(order.begin(), order.end(), 0);
  if (run.schedule.order == Order::Reverse) std::reverse(order.begin(), order.end());
  if (run.schedule.order == Order::Random)
    for (int i = n - 1; i > 0; --i) std::swap(order[i], order[run.random.next() % uint64_t(i + 1)]);
}

void resume(BlockRun& run, SimThread& thread) {
  run.current = &thread;
  g_access.thread = &thread.info;
  threadIdx = thread.info.index;
  thread.coroutine.resume();
  g_access.thread = nullptr;
}

// Runs the ready lanes of one warp, each until it waits, in the schedule's lane order.
void run_ready_lanes(BlockRun& run, int base, std::vector<int>& lanes) {
  const int n = static_cast<int>(run.threads.size());
  const int end = std::min(n, base + kWarp);
  order_of(run, end - base, lanes);
  for (int i : lanes) {
    SimThread& thread = run.threads[base + i];
    if (thread.wait != Wait::None) continue;
    resume(run, thread);
    if (!run.failure.empty()) return;
  }
}

// One barrier phase, warp by warp: each warp in turn runs until it waits at __syncthreads() or
// exits, so warps run as far apart as the block barriers allow.
void run_phase_by_warp(BlockRun& run) {
  const int n = static_cast<int>(run.threads.size());
  std::vector<int> warps, lanes;
  order_of(run, (n + kWarp - 1) / kWarp, warps);
  for (int w : warps) {
    do {
      run_ready_lanes(run, w * kWarp, lanes);
      if (!run.failure.empty()) return;
    } while (release_warp(w * kWarp));
    if (!run.failure.empty()) return;
  }
}

// One barrier phase, interleaved: sweeps over every ready thread of the block, each running to
// its next access (switch_thread) or wait, until none is ready and no warp can be released.
void run_phase_interleaved(BlockRun& run) {
  const int n = static_cast<int>(run.threads.size());
  std::vector<int> order;
  for (;;) {
    bool progress = false;
    order_of(run, n, order);
    for (int t : order) {
      SimThread& thread = run.threads[t];
      if (thread.wait != Wait::None) continue;
      resume(run, thread);
      progress = true;
      if (!run.failure.empty()) return;
    }
    for (int base = 0; base < n; base += kWarp) {
      progress = release_warp(base) || progress;
      if (!run.failure.empty()) return;
    }
    if (!progress) return;
  }
}

// A fresh coroutine for thread t of the block, ready to run the kernel from its start.
void start_thread(BlockRun& run, int t) {
  SimThread& thread = run.threads[t];
  thread = SimThread{};
  thread.info.linear = t;
  thread.info.index = {static_cast<unsigned>(t % blockDim.x),
                       static_cast<unsigned>(t / blockDim.x % blockDim.y),
                       static_cast<unsigned>(t / (blockDim.x * blockDim.y))};
  thread.coroutine.start(stack_of(t), kStackBytes, thread_entry);
}

void run_block(BlockRun& run, uint64_t block_number) {
  const int n = static_cast<int>(run.threads.size());
  for (int t = 0; t < n; ++t) start_thread(run, t);
  run.random.state = run.schedule.seed * 0x2545f4914f6cdd1dull + g_launches * 0x9e3779b97f4a7c15ull +
                     block_number;
  begin_block_shared_memory(run.config->shared_bytes, n);
  if (g_access.banks) bank_begin_block(n);
  ++g_access.block_serial;
  ++g_access.epoch;
  for (;;) {
    if (run.schedule.switch_at_access) run_phase_interleaved(run);
    else run_phase_by_warp(run);
    if (!run.failure.empty()) return;
    bool all_done = true;
    for (const SimThread& thread : run.threads) all_done = all_done && thread.wait == Wait::Done;
    if (all_done) {
      end_block_async_copies();
      if (g_access.banks) bank_flush();
      return;
    }
    if (!release_block_barrier()) {
      fail(describe_deadlock());
      return;
    }
  }
}

// Runs the whole grid under one schedule; returns the failure ("" when none), naming the block.
// count_banks: the bank model counts this run (the first schedule's, when it is on).
std::string run_schedule(const LaunchConfig& config, void (*thread_main)(void*), void* closure,
                         const Schedule& schedule, LaunchRecord& record, bool count_banks) {
  const uint64_t threads = uint64_t(config.block.x) * config.block.y * config.block.z;
  BlockRun run;
  run.config = &config;
  run.thread_main = thread_main;
  run.closure = closure;
  run.schedule = schedule;
  run.threads.resize(threads);
  g_run = &run;
  g_access.switch_at_access = schedule.switch_at_access && access_hooks_available();
  g_access.checks = access_hooks_available() ? settings().checks : Checks{false, false, false};
  g_access.record = &record;
  g_access.banks = count_banks && access_hooks_available();
  blockDim = config.block;
  gridDim = config.grid;
  uint64_t block_number = 0;
  for (unsigned z = 0; z < config.grid.z && run.failure.empty(); ++z)
    for (unsigned y = 0; y < config.grid.y && run.failure.empty(); ++y)
      for (unsigned x = 0; x < config.grid.x && run.failure.empty(); ++x) {
        blockIdx = {x, y, z};
        run_block(run, block_number++);
        ++record.blocks;
      }
  g_run = nullptr;
  g_access.thread = nullptr;
  if (g_access.banks) bank_end_launch(g_kernel_name);
  g_access.banks = false;
  if (run.failure.empty()) return "";
  std::ostringstream out;
  out << g_kernel_name << " in block (" << blockIdx.x << "," << blockIdx.y << ","
      << blockIdx.z << ")";
  if (settings().schedules.size() > 1 || schedule.order != Order::Forward || schedule.switch_at_access)
    out << " under the " << describe(schedule) << " schedule";
  out << ": " << run.failure;
  return out.str();
}

}  // namespace

std::string describe_thread(const ThreadInfo& t) {
  std::ostringstream out;
  out << "thread (" << t.index.x << "," << t.index.y << "," << t.index.z << ")";
  return out.str();
}

std::string describe_linear_thread(int linear) { return describe_thread(g_run->threads[linear].info); }

void record_failure(const std::string& failure) { fail(failure); }

void stop_thread() {
  suspend(Wait::Stopped);
  std::abort();  // not reached: a stopped thread is never resumed
}

void switch_thread() { suspend(Wait::None); }

void run_grid(const LaunchConfig& config, void (*thread_main)(void*), void* closure) {
  const uint64_t threads = uint64_t(config.block.x) * config.block.y * config.block.z;
  if (threads == 0 || threads > kMaxThreads || config.block.z > 64 || config.grid.x == 0 ||
      config.grid.y == 0 || config.grid.z == 0 || config.grid.y > 65535 || config.grid.z > 65535 ||
      config.grid.x > 2147483647u) {
    std::ostringstream out;
    out << config.kernel_name << ": invalid launch configuration grid (" << config.grid.x << ","
        << config.grid.y << "," << config.grid.z << ") block (" << config.block.x << ","
        << config.block.y << "," << config.block.z << ")";
    record_launch_error(cudaErrorInvalidConfiguration, out.str());
    return;
  }
  if (config.shared_bytes > kDefaultDynamicSharedBytes &&
      (config.kernel == nullptr || config.shared_bytes > dynamic_shared_limit(config.kernel))) {
    std::ostringstream out;
    out << config.kernel_name << ": launched with " << config.shared_bytes
        << " bytes of dynamic shared memory, above 48 KiB, but cudaFuncSetAttribute("
           "cudaFuncAttributeMaxDynamicSharedMemorySize) allowed the kernel "
        << (config.kernel ? dynamic_shared_limit(config.kernel) : kDefaultDynamicSharedBytes) << " bytes";
    record_launch_error(cudaErrorInvalidConfiguration, out.str());
    return;
  }
  if (g_run) {
    record_launch_error(cudaErrorLaunchFailure,
                        std::string(config.kernel_name) + ": launched from inside a kernel");
    return;
  }
  ++g_launches;
  g_kernel_name = config.kernel_name;
  LaunchRecord record;  // added to the kernel's record at the end, under its final name
  record.launches = 1;
  // Several schedules: run each from the same memory (undo log) and compare what they wrote.
  const std::vector<Schedule>& schedules = settings().schedules;
  const size_t runs = access_hooks_available() ? schedules.size() : 1;
  RunWrites* first = nullptr;
  std::string failure;
  for (size_t r = 0; r < runs && failure.empty(); ++r) {
    if (runs > 1) start_recording();
    failure = run_schedule(config, thread_main, closure, schedules[r], record,
                           r == 0 && settings().banks != BankReport::Off);
    if (runs == 1) break;
    RunWrites* writes = finish_recording(/*restore=*/failure.empty() && r + 1 < runs);
    if (!failure.empty()) {
      free_run(writes);
    } else if (r == 0) {
      first = writes;
    } else {
      const std::string difference = compare_runs(*first, describe(schedules[0]).c_str(), *writes,
                                                  describe(schedules[r]).c_str());
      free_run(writes);
      if (!difference.empty()) failure = g_kernel_name + ": " + difference;
    }
  }
  if (first) free_run(first);
  if (!failure.empty()) {
    ++record.failures;
    record_launch_error(cudaErrorLaunchFailure, failure);
  } else if (runs > 1) {
    ++record.replayed;
  }
  LaunchRecord& total = launch_record(g_kernel_name);
  total.launches += record.launches;
  total.replayed += record.replayed;
  total.blocks += record.blocks;
  total.shared_accesses += record.shared_accesses;
  total.global_accesses += record.global_accesses;
  total.failures += record.failures;
}

void name_kernel(const char* name) {
  // Keep the launch's own text when it names this kernel (with its template arguments).
  const size_t n = std::strlen(name);
  if (g_kernel_name.compare(0, n, name) == 0 &&
      (g_kernel_name.size() == n || g_kernel_name[n] == '<'))
    return;
  g_kernel_name = name;
}

uint64_t launch_count() { return g_launches; }

// ---- warp collectives and the block barrier ----

namespace {

// Offers `bits`, waits for the warp, and returns the lanes' offers through `slot_of`.
SimThread& arrive_at_collective(Collective kind, unsigned mask, uint64_t bits) {
  if (!g_run) {
    std::fprintf(stderr, "cuda_sim: a warp collective was called outside a kernel\n");
    std::abort();
  }
  SimThread& self = *g_run->current;
  self.collective = kind;
  self.mask = mask;
  self.slot[self.info.sync % 2] = bits;
  suspend(Wait::Warp);
  return self;
}

const SimThread& lane_in_warp(const SimThread& self, int lane) {
  return g_run->threads[self.info.linear - self.info.linear % kWarp + lane];
}

}  // namespace

uint64_t shuffle_xor(unsigned mask, uint64_t bits, int lane_mask, int width) {
  SimThread& self = arrive_at_collective(Collective::Shuffle, mask, bits);
  const int lane = lane_of(self);
  // CUDA: source lane = lane ^ lane_mask; a source beyond this lane's width-sized segment (or
  // outside the mask) leaves the value unchanged.
  const int source = lane ^ lane_mask;
  uint64_t result = bits;
  const bool same_segment = width > 0 && source / width == lane / width;
  if (source >= 0 && source < kWarp && same_segment && (mask >> source & 1u))
    result = lane_in_warp(self, source).slot[self.info.sync % 2];
  ++self.info.sync;
  return result;
}

uint64_t shuffle_index(unsigned mask, uint64_t bits, int source_lane, int width) {
  SimThread& self = arrive_at_collective(Collective::Shuffle, mask, bits);
  const int lane = lane_of(self);
  // CUDA: the source is lane source_lane % width of this lane's segment; a source outside the
  // mask leaves the value unchanged.
  uint64_t result = bits;
  if (width > 0) {
    const int source = lane / width * width + ((source_lane % width) + width) % width;
    if (source >= 0 && source < kWarp && (mask >> source & 1u))
      result = lane_in_warp(self, source).slot[self.info.sync % 2];
  }
  ++self.info.sync;
  return result;
}

namespace {
int vote(Collective kind, unsigned mask, int predicate) {
  SimThread& self = arrive_at_collective(kind, mask, predicate != 0);
  bool all = true, any = false;
  for (int lane = 0; lane < kWarp; ++lane) {
    if (!(mask >> lane & 1u)) continue;
    const bool p = lane_in_warp(self, lane).slot[self.info.sync % 2] != 0;
    all = all && p;
    any = any || p;
  }
  ++self.info.sync;
  return kind == Collective::VoteAll ? all : any;
}
}  // namespace

int vote_all(unsigned mask, int predicate) { return vote(Collective::VoteAll, mask, predicate); }

void gather_words(unsigned mask, const uint32_t* words, int count, uint32_t* all) {
  if (count < 0 || count > kGatherWords) {
    std::fprintf(stderr, "cuda_sim: gather_words of %d words (at most %d)\n", count, kGatherWords);
    std::abort();
  }
  if (!g_run) {
    std::fprintf(stderr, "cuda_sim: a warp collective was called outside a kernel\n");
    std::abort();
  }
  SimThread& offer = *g_run->current;
  std::memcpy(offer.words[offer.info.sync % 2], words, sizeof(uint32_t) * count);
  offer.word_count = count;
  SimThread& self = arrive_at_collective(Collective::Gather, mask, 0);
  for (int lane = 0; lane < kWarp; ++lane) {
    if (!(mask >> lane & 1u)) continue;
    std::memcpy(all + lane * count, lane_in_warp(self, lane).words[self.info.sync % 2],
                sizeof(uint32_t) * count);
  }
  ++self.info.sync;
}

int current_lane() {
  if (!g_run) {
    std::fprintf(stderr, "cuda_sim: current_lane() outside a kernel\n");
    std::abort();
  }
  return lane_of(*g_run->current);
}
int vote_any(unsigned mask, int predicate) { return vote(Collective::VoteAny, mask, predicate); }

void sync_warp(unsigned mask) {
  SimThread& self = arrive_at_collective(Collective::SyncWarp, mask, 0);
  ++self.info.sync;
}

}  // namespace urpe_sim

void __syncthreads() {
  if (!urpe_sim::g_run) {
    std::fprintf(stderr, "cuda_sim: __syncthreads() was called outside a kernel\n");
    std::abort();
  }
  urpe_sim::suspend(urpe_sim::Wait::Block);
}
