// CUDA simulator: runs a grid on the CPU. Blocks run one after another; inside a block every
// CUDA thread is a coroutine (coroutine.h) with its own stack, and the scheduler runs each one until
// it finishes or waits at a barrier:
//   __syncthreads()            waits until every thread of the block is there;
//   warp shuffles and votes    wait until every lane of the warp is there (per warp).
// It is strict where a GPU is only undefined: a barrier that some thread can never reach (it has
// exited, or waits at a different barrier), a full-mask warp collective in a warp with missing or
// exited lanes, and lanes at different collectives are reported as launch failures naming the
// kernel, the block and the threads, instead of hanging or giving wrong numbers later.
//
// Warp exchanges use two slots per lane, alternating between consecutive collectives, so one
// barrier per collective is enough: a lane cannot overwrite slot k%2 before every lane has passed
// collective k+1, and each lane reads slot k%2 before it arrives there.
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
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
namespace {

constexpr int kWarp = 32;
constexpr int kMaxThreads = 1024;
constexpr size_t kStackBytes = size_t(128) << 10;
constexpr size_t kGuardBytes = size_t(4) << 10;

enum class Wait { None, Block, Warp, Done };
enum class Collective { Shuffle, VoteAll, VoteAny };

struct SimThread {
  Coroutine coroutine;
  uint3 index;
  Wait wait = Wait::None;
  // the warp collective this lane waits at
  Collective collective = Collective::Shuffle;
  unsigned mask = 0;
  uint64_t collective_count = 0;
  uint64_t slot[2] = {0, 0};
};

struct BlockRun {
  const LaunchConfig* config;
  void (*thread_main)(void*);
  void* closure;
  std::vector<SimThread> threads;
  SimThread* current = nullptr;
  std::string failure;  // non-empty: stop the grid and report this
};

BlockRun* g_run = nullptr;
uint64_t g_launches = 0;

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

std::string describe_thread(const SimThread& t) {
  std::ostringstream out;
  out << "thread (" << t.index.x << "," << t.index.y << "," << t.index.z << ")";
  return out.str();
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

int lane_of(const SimThread& t) {
  const int linear = static_cast<int>(&t - g_run->threads.data());
  return linear % kWarp;
}

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
        lane.collective_count != first.collective_count) {
      fail("lanes of one warp wait at different warp collectives (" + describe_thread(first) +
           " and " + describe_thread(lane) + ")");
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
      fail("__syncthreads() is waited at, but " + describe_thread(t) + " has already exited");
      return false;
    }
  for (SimThread& t : g_run->threads) t.wait = Wait::None;
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
  if (example_block) out << " (e.g. " << describe_thread(*example_block) << ")";
  out << " and " << at_warp << " at a warp collective";
  if (example_warp) out << " (e.g. " << describe_thread(*example_warp) << ")";
  return out.str();
}

// Runs the lanes of one warp that are ready, in order or in reverse.
void run_ready_lanes(BlockRun& run, int base, bool reverse) {
  const int n = static_cast<int>(run.threads.size());
  const int end = std::min(n, base + kWarp);
  for (int i = 0; i < end - base && run.failure.empty(); ++i) {
    SimThread& thread = run.threads[reverse ? end - 1 - i : base + i];
    if (thread.wait != Wait::None) continue;
    run.current = &thread;
    threadIdx = thread.index;
    thread.coroutine.resume();
  }
}

// A fresh coroutine for thread t of the block, ready to run the kernel from its start.
void start_thread(BlockRun& run, int t) {
  SimThread& thread = run.threads[t];
  thread = SimThread{};
  thread.index = {static_cast<unsigned>(t % blockDim.x),
                  static_cast<unsigned>(t / blockDim.x % blockDim.y),
                  static_cast<unsigned>(t / (blockDim.x * blockDim.y))};
  thread.coroutine.start(stack_of(t), kStackBytes, thread_entry);
}

// Warps run as far apart as the block barriers allow: each warp in turn runs until it waits at
// __syncthreads() or exits, and the order of the warps (and of the lanes inside each warp)
// alternates between barrier phases and blocks. A kernel that leans on an ordering that only a
// barrier would guarantee then reads the wrong values here, as it eventually would on a GPU.
void run_block(BlockRun& run, uint64_t block_number) {
  const int n = static_cast<int>(run.threads.size());
  for (int t = 0; t < n; ++t) start_thread(run, t);
  const int warps = (n + kWarp - 1) / kWarp;
  for (uint64_t phase = block_number;; ++phase) {
    const bool reverse = phase % 2 == 1;
    for (int i = 0; i < warps; ++i) {
      const int base = (reverse ? warps - 1 - i : i) * kWarp;
      do {
        run_ready_lanes(run, base, reverse);
        if (!run.failure.empty()) return;
      } while (release_warp(base));
      if (!run.failure.empty()) return;
    }
    bool all_done = true;
    for (const SimThread& thread : run.threads) all_done = all_done && thread.wait == Wait::Done;
    if (all_done) return;
    if (!release_block_barrier()) {
      fail(describe_deadlock());
      return;
    }
  }
}

}  // namespace

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
  if (g_run) {
    record_launch_error(cudaErrorLaunchFailure,
                        std::string(config.kernel_name) + ": launched from inside a kernel");
    return;
  }
  ++g_launches;
  BlockRun run;
  run.config = &config;
  run.thread_main = thread_main;
  run.closure = closure;
  run.threads.resize(threads);
  g_run = &run;
  blockDim = config.block;
  gridDim = config.grid;
  uint64_t block_number = 0;
  for (unsigned z = 0; z < config.grid.z && run.failure.empty(); ++z)
    for (unsigned y = 0; y < config.grid.y && run.failure.empty(); ++y)
      for (unsigned x = 0; x < config.grid.x && run.failure.empty(); ++x) {
        blockIdx = {x, y, z};
        run_block(run, block_number++);
      }
  g_run = nullptr;
  if (!run.failure.empty()) {
    std::ostringstream out;
    out << config.kernel_name << " in block (" << blockIdx.x << "," << blockIdx.y << ","
        << blockIdx.z << "): " << run.failure;
    record_launch_error(cudaErrorLaunchFailure, out.str());
  }
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
  self.slot[self.collective_count % 2] = bits;
  suspend(Wait::Warp);
  return self;
}

const SimThread& lane_in_warp(const SimThread& self, int lane) {
  const int linear = static_cast<int>(&self - g_run->threads.data());
  return g_run->threads[linear - linear % kWarp + lane];
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
    result = lane_in_warp(self, source).slot[self.collective_count % 2];
  ++self.collective_count;
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
      result = lane_in_warp(self, source).slot[self.collective_count % 2];
  }
  ++self.collective_count;
  return result;
}

namespace {
int vote(Collective kind, unsigned mask, int predicate) {
  SimThread& self = arrive_at_collective(kind, mask, predicate != 0);
  bool all = true, any = false;
  for (int lane = 0; lane < kWarp; ++lane) {
    if (!(mask >> lane & 1u)) continue;
    const bool p = lane_in_warp(self, lane).slot[self.collective_count % 2] != 0;
    all = all && p;
    any = any || p;
  }
  ++self.collective_count;
  return kind == Collective::VoteAll ? all : any;
}
}  // namespace

int vote_all(unsigned mask, int predicate) { return vote(Collective::VoteAll, mask, predicate); }
int vote_any(unsigned mask, int predicate) { return vote(Collective::VoteAny, mask, predicate); }

}  // namespace urpe_sim

void __syncthreads() {
  if (!urpe_sim::g_run) {
    std::fprintf(stderr, "cuda_sim: __syncthreads() was called outside a kernel\n");
    std::abort();
  }
  urpe_sim::suspend(urpe_sim::Wait::Block);
}
