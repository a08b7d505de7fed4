// CUDA simulator: __shared__ memory and its checks. A kernel declares shared arrays with
// URPE_SHARED (include/cuda_runtime.h); here each block places them in an arena, red zones
// between them, freshly filled with 0xFF bytes (NaN as float), and every access (reported by the
// access hooks) is checked against a state per 4-byte word:
//   memcheck   the word belongs to one of the block's arrays (a red zone does not);
//   initcheck  a read finds the word written earlier in this block;
//   racecheck  two threads' accesses to the word, one of them a write, are ordered: separated by
//              a __syncthreads() (which starts a new epoch), or, for two lanes of one warp, by a
//              warp collective (__syncwarp, a shuffle or a vote) that both passed in between.
// The race state keeps, per word, the last writer (its epoch and its count of warp collectives)
// and the readers since the last barrier: the first reader's warp with the lanes that read at
// that warp's latest collective count, and one reader from another warp if any. That is enough
// to decide, for any later access, whether some earlier unordered access by another thread exists.
// Dynamic shared memory (URPE_DYNAMIC_SHARED) is a set of arrays placed the same way, each at a
// byte offset of the launch's dynamic bytes: one outside them or two that overlap are failures.
// Asynchronous copies (cp.async, ops/cp_async.cuh) are a queue per thread, in groups: a copy is
// checked as the thread's write when issued, its destination words are then "in flight" (any
// access to them is a racecheck failure naming the copy), and it lands, as a second write,
// when the thread's wait retires its group: a kernel that reads without waiting sees stale bytes.
// Limits: accesses narrower than 4 bytes are tracked per 4-byte word (no project kernel has such
// shared arrays); arrays are checked as a whole (an index past the end of row r of a 2-D array
// that lands in row r + 1 is inside the array, as on a GPU).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "cuda_runtime.h"
#include "sim_state.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace urpe_sim {

namespace {

constexpr size_t kStaticSharedLimit = size_t(48) << 10;  // a block's static __shared__ limit
constexpr size_t kRedZone = 64;                          // bytes after every array
constexpr size_t kArenaBytes = size_t(320) << 10;  // 48 KiB static + up to 227 KiB dynamic, red zones
constexpr size_t kWords = kArenaBytes / 4;
constexpr uint16_t kNoThread = 0xFFFF;
constexpr int kWarp = 32;

alignas(256) char g_arena[kArenaBytes];

struct WordState {
  uint32_t write_epoch = 0, writer_sync = 0;
  uint32_t read_epoch = 0, reader_sync = 0;
  uint32_t reader_lanes = 0;  // lanes of first_reader's warp that read at reader_sync
  uint32_t written_block = 0;  // block_serial of the last write (initcheck)
  uint16_t writer = kNoThread, first_reader = kNoThread, outside_reader = kNoThread;
};
WordState g_words[kWords];
uint16_t g_owner[kWords];  // 1 + index into g_placed; 0: a red zone or unused
uint16_t g_in_flight[kWords];  // 1 + the thread whose cp.async copy into the word has not landed

struct Placed {
  const SharedSite* site;
  size_t offset;
  size_t bytes;
};
std::vector<Placed> g_placed;  // this block's arrays, in increasing offset
size_t g_top = 0;              // first free byte of the arena
size_t g_declared = 0;         // bytes of this block's static arrays
size_t g_dynamic_bytes = 0;    // the launch's dynamic shared memory per block
struct DynamicPlaced {
  const SharedSite* site;
  size_t begin, end;  // bytes of the dynamic memory
};
std::vector<DynamicPlaced> g_dynamic;  // this block's dynamic arrays

// One thread's cp.async copies: the open group (since its last commit) and the committed ones,
// oldest first.
struct AsyncCopy {
  char* dst;
  uint32_t words[4];
  int bytes;
};
struct ThreadCopies {
  std::vector<AsyncCopy> open;
  std::vector<std::vector<AsyncCopy>> committed;
};
std::vector<ThreadCopies> g_copies;  // per thread of the block

int warp_of(int linear) { return linear / kWarp; }

std::string element_name(const SharedSite& site, long long index) {
  std::ostringstream out;
  out << "'" << site.name << "'";
  if (site.row_elements > 0 && index >= 0)
    out << "[" << index / (long long)site.row_elements << "][" << index % (long long)site.row_elements << "]";
  else
    out << "[" << index << "]";
  return out.str();
}

std::string declared_at(const SharedSite& site) {
  std::string file = site.file;
#ifdef URPE_SIM_SOURCE_ROOT
  const std::string root = URPE_SIM_SOURCE_ROOT;
  if (file.compare(0, root.size(), root) == 0) file = file.substr(root.size());
#endif
  return " (declared at " + file + ":" + std::to_string(site.line) + ")";
}

// The array and element of an arena word that lies inside an array.
std::string describe_word(size_t word) {
  const Placed& p = g_placed[g_owner[word] - 1];
  const long long index = (long long)((word * 4 - p.offset) / p.site->element_bytes);
  return "shared " + element_name(*p.site, index) + declared_at(*p.site);
}

void report_out_of_bounds(size_t offset, size_t bytes, bool write) {
  std::ostringstream out;
  out << "memcheck: " << describe_thread(*g_access.thread) << (write ? " writes " : " reads ")
      << bytes << " bytes of shared memory outside every array: ";
  if (g_placed.empty()) {
    out << "the block has declared no shared array";
  } else {
    // The array just before the address (an index past its end), else the first (before it).
    auto it = std::upper_bound(g_placed.begin(), g_placed.end(), offset,
                               [](size_t o, const Placed& p) { return o < p.offset; });
    const Placed& p = it == g_placed.begin() ? *it : *std::prev(it);
    const long long element = (long long)p.site->element_bytes;
    const long long delta = (long long)offset - (long long)p.offset;
    const long long index = delta >= 0 ? delta / element : -((-delta + element - 1) / element);
    out << "index " << index << " of shared '" << p.site->name << "', which has "
        << p.bytes / p.site->element_bytes << " elements" << declared_at(*p.site);
  }
  record_failure(out.str());
}

void report_race(const char* kind, size_t word, int earlier, const char* verb) {
  const ThreadInfo& self = *g_access.thread;
  const bool same_warp = warp_of(earlier) == warp_of(self.linear);
  std::ostringstream out;
  out << "racecheck: " << kind << " hazard on " << describe_word(word) << ": "
      << describe_thread(self) << " of warp " << warp_of(self.linear) << " " << verb << " "
      << describe_linear_thread(earlier) << " of warp " << warp_of(earlier)
      << (same_warp ? ", with no __syncwarp() or warp collective between them"
                    : ", with no __syncthreads() between them");
  record_failure(out.str());
}

void report_unwritten(size_t word) {
  record_failure("initcheck: " + describe_thread(*g_access.thread) + " reads " +
                 describe_word(word) + ", which no thread of this block has written");
}

// An earlier access by `other` at collective count `other_sync` is ordered before the current
// thread's access when it is the same thread, or a lane of the same warp that has passed a warp
// collective since (every lane of a warp passes the same collectives, so the current count
// being larger means collective number other_sync lay between the two).
bool ordered(int other, uint32_t other_sync, const ThreadInfo& self) {
  return other == self.linear ||
         (warp_of(other) == warp_of(self.linear) && uint32_t(self.sync) > other_sync);
}

// The report functions build and free their message in their own frame; the stop_at_* wrappers
// own nothing when they stop the thread (its stack is abandoned, never unwound).
[[noreturn]] void stop_at_race(const char* kind, size_t word, int earlier, const char* verb) {
  report_race(kind, word, earlier, verb);
  stop_thread();
}
[[noreturn]] void stop_at_unwritten(size_t word) {
  report_unwritten(word);
  stop_thread();
}

void check_word(size_t word, bool write) {
  WordState& s = g_words[word];
  const ThreadInfo& self = *g_access.thread;
  const uint32_t epoch = g_access.epoch, sync = uint32_t(self.sync);
  const int lane = self.linear % kWarp, warp = warp_of(self.linear);
  const bool racecheck = g_access.checks.racecheck;
  const bool written_before = s.write_epoch == epoch && s.writer != kNoThread;
  if (!write) {
    if (g_access.checks.initcheck && s.written_block != g_access.block_serial)
      stop_at_unwritten(word);
    if (racecheck && written_before && !ordered(s.writer, s.writer_sync, self))
      stop_at_race("read-after-write", word, s.writer, "reads what was written by");
    if (s.read_epoch != epoch) {
      s.read_epoch = epoch;
      s.first_reader = uint16_t(self.linear);
      s.outside_reader = kNoThread;
      s.reader_sync = sync;
      s.reader_lanes = 1u << lane;
    } else if (warp_of(s.first_reader) == warp) {
      // Lanes that read at an earlier collective count are ordered before any later access of
      // the warp: only the latest count's readers matter.
      if (sync != s.reader_sync) s.reader_lanes = 0, s.reader_sync = sync;
      s.reader_lanes |= 1u << lane;
    } else if (s.outside_reader == kNoThread) {
      s.outside_reader = uint16_t(self.linear);
    }
    return;
  }
  if (racecheck) {
    if (written_before && !ordered(s.writer, s.writer_sync, self))
      stop_at_race("write-after-write", word, s.writer, "overwrites what was written by");
    if (s.read_epoch == epoch) {
      if (warp_of(s.first_reader) != warp)
        stop_at_race("write-after-read", word, s.first_reader, "writes what was read by");
      if (s.outside_reader != kNoThread)
        stop_at_race("write-after-read", word, s.outside_reader, "writes what was read by");
      const uint32_t others = s.reader_lanes & ~(1u << lane);
      if (sync == s.reader_sync && others != 0)
        stop_at_race("write-after-read", word, warp * kWarp + __builtin_ctz(others),
                     "writes what was read by");
    }
  }
  s.write_epoch = epoch;
  s.writer = uint16_t(self.linear);
  s.writer_sync = sync;
  s.written_block = g_access.block_serial;
}

void report_in_flight(size_t word, bool write) {
  record_failure("racecheck: " + describe_thread(*g_access.thread) + (write ? " writes " : " reads ") +
                 describe_word(word) + " while " + describe_linear_thread(g_in_flight[word] - 1) +
                 "'s cp.async copy into it is in flight (no cp.async.wait_group retired it first)");
}
[[noreturn]] void stop_at_in_flight(size_t word, bool write) {
  report_in_flight(word, write);
  stop_thread();
}

void report_too_much_shared(const SharedSite& site, size_t bytes) {
  std::ostringstream out;
  out << "the block declares more than " << (kStaticSharedLimit >> 10)
      << " KiB of static __shared__ memory (" << bytes << " bytes with '" << site.name << "'"
      << declared_at(site) << ")";
  record_failure(out.str());
}

[[noreturn]] void stop_at_too_much_shared(const SharedSite& site, size_t bytes) {
  report_too_much_shared(site, bytes);
  stop_thread();
}

[[noreturn]] void stop_at_out_of_bounds(size_t offset, size_t bytes, bool write) {
  report_out_of_bounds(offset, bytes, write);
  stop_thread();
}

}  // namespace

char* g_shared_base = g_arena;
size_t g_shared_bytes = kArenaBytes;

void begin_block_shared_memory(size_t dynamic_bytes, int threads) {
  std::memset(g_owner, 0, (g_top + 3) / 4 * sizeof(uint16_t));
  std::memset(g_in_flight, 0, (g_top + 3) / 4 * sizeof(uint16_t));
  g_placed.clear();
  g_dynamic.clear();
  g_top = 0;
  g_declared = 0;
  g_dynamic_bytes = dynamic_bytes;
  g_copies.assign(size_t(threads), ThreadCopies{});
  // The epochs and block serials of the word states are 32-bit: start afresh before they wrap.
  if (g_access.epoch > 0xF0000000u || g_access.block_serial > 0xF0000000u) {
    std::fill(std::begin(g_words), std::end(g_words), WordState{});
    g_access.epoch = 1;
    g_access.block_serial = 1;
  }
#if defined(__SANITIZE_ADDRESS__)
  ASAN_POISON_MEMORY_REGION(g_arena, kArenaBytes);
#endif
}

namespace {

void check_inside_kernel(const SharedSite& site) {
  if (!g_access.thread) {
    std::fprintf(stderr, "cuda_sim: shared array '%s' (%s:%d) declared outside a kernel\n",
                 site.name, site.file, site.line);
    std::abort();
  }
}

// Places a new array of the block in the arena (red zones around it, 0xFF bytes in it).
void* place(SharedSite& site, size_t offset, size_t bytes) {
  g_placed.push_back({&site, offset, bytes});
  const uint16_t owner = uint16_t(g_placed.size());
  for (size_t w = offset / 4; w < (offset + bytes + 3) / 4; ++w) g_owner[w] = owner;
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(g_arena + offset, bytes);
#endif
  std::memset(g_arena + offset, 0xFF, bytes);
  g_top = offset + bytes;
  site.block_serial = g_access.block_serial;
  site.offset = offset;
  return g_arena + offset;
}

size_t next_offset(size_t align) {
  const size_t alignment = std::max<size_t>(align, 16);
  return (g_top + kRedZone + alignment - 1) / alignment * alignment;
}

// What is wrong with a dynamic array: misaligned, outside the launch's bytes, or overlapping
// `other` (the report builds its message in its own frame; the stop owns nothing).
enum class DynamicFault { Misaligned, Outside, Overlap };
void report_bad_dynamic(const SharedSite& site, size_t begin, size_t end, DynamicFault fault, size_t align,
                        const DynamicPlaced* other) {
  std::ostringstream out;
  out << "dynamic shared '" << site.name << "'" << declared_at(site) << " at bytes [" << begin << ", " << end << ") ";
  if (fault == DynamicFault::Misaligned) out << "is not aligned to its element's " << align << " bytes";
  if (fault == DynamicFault::Outside) out << "lies outside the launch's " << g_dynamic_bytes << " bytes of dynamic shared memory";
  if (fault == DynamicFault::Overlap)
    out << "overlaps dynamic shared '" << other->site->name << "' at [" << other->begin << ", " << other->end << ")";
  record_failure(out.str());
}
[[noreturn]] void stop_at_bad_dynamic(const SharedSite& site, size_t begin, size_t end, DynamicFault fault,
                                      size_t align = 0, const DynamicPlaced* other = nullptr) {
  report_bad_dynamic(site, begin, end, fault, align, other);
  stop_thread();
}

}  // namespace

void* shared_array(SharedSite& site, size_t align) {
  check_inside_kernel(site);
  if (site.block_serial == g_access.block_serial) return g_arena + site.offset;
  const size_t bytes = site.element_bytes * site.elements;
  const size_t offset = next_offset(align);
  if (g_declared + bytes > kStaticSharedLimit || offset + bytes + kRedZone > kArenaBytes)
    stop_at_too_much_shared(site, g_declared + bytes);
  g_declared += bytes;
  return place(site, offset, bytes);
}

void* dynamic_shared_array(SharedSite& site, size_t align, size_t dynamic_offset) {
  check_inside_kernel(site);
  if (site.block_serial == g_access.block_serial) return g_arena + site.offset;
  const size_t bytes = site.element_bytes * site.elements, end = dynamic_offset + bytes;
  if (dynamic_offset % std::max<size_t>(align, 1) != 0)
    stop_at_bad_dynamic(site, dynamic_offset, end, DynamicFault::Misaligned, align);
  if (end > g_dynamic_bytes) stop_at_bad_dynamic(site, dynamic_offset, end, DynamicFault::Outside);
  for (const DynamicPlaced& d : g_dynamic)
    if (dynamic_offset < d.end && d.begin < end) stop_at_bad_dynamic(site, dynamic_offset, end, DynamicFault::Overlap, 0, &d);
  const size_t offset = next_offset(align);
  if (offset + bytes + kRedZone > kArenaBytes) stop_at_too_much_shared(site, g_declared + end);
  g_dynamic.push_back({&site, dynamic_offset, end});
  return place(site, offset, bytes);
}

void shared_access(char* p, size_t bytes, bool write) {
  const size_t offset = size_t(p - g_arena);
  const size_t first = offset / 4, last = std::min(kWords - 1, (offset + bytes - 1) / 4);
  ++g_access.record->shared_accesses;
  const bool any_check = g_access.checks.memcheck || g_access.checks.racecheck ||
                         g_access.checks.initcheck;
  if (any_check) {
    for (size_t w = first; w <= last; ++w) {
      if (g_owner[w] == 0) {
        if (g_access.checks.memcheck) stop_at_out_of_bounds(offset, bytes, write);
        continue;
      }
      if (g_access.checks.racecheck && g_in_flight[w] != 0) stop_at_in_flight(w, write);
      check_word(w, write);
    }
  }
  if (g_access.switch_at_access) switch_thread();
}

// ---- cp.async ----

namespace {

// A cp.async the instruction does not allow (the report builds its message in its own frame).
enum class CopyFault { Size, SourceBytes, NotShared, Misaligned };
void report_bad_copy(CopyFault fault, int bytes, int src_bytes) {
  std::ostringstream out;
  out << "cp.async: " << describe_thread(*g_access.thread) << " ";
  if (fault == CopyFault::Size) out << "copies " << bytes << " bytes (4, 8 or 16)";
  if (fault == CopyFault::SourceBytes)
    out << "reads " << src_bytes << " source bytes of a " << bytes
        << "-byte copy (the simulator takes 0 to the copy's size, in whole words)";
  if (fault == CopyFault::NotShared) out << "copies to an address outside shared memory";
  if (fault == CopyFault::Misaligned) out << "copies " << bytes << " bytes to a shared address not aligned to them";
  record_failure(out.str());
}
[[noreturn]] void stop_at_bad_copy(CopyFault fault, int bytes, int src_bytes) {
  report_bad_copy(fault, bytes, src_bytes);
  stop_thread();
}

// The copy's bytes reach shared memory: a write of the issuing thread, now.
void land(const AsyncCopy& copy) {
  const size_t first = size_t(copy.dst - g_arena) / 4;
  for (size_t w = first; w < first + size_t(copy.bytes) / 4; ++w) g_in_flight[w] = 0;
  shared_access(copy.dst, size_t(copy.bytes), true);
  std::memcpy(copy.dst, copy.words, size_t(copy.bytes));
}

}  // namespace

void cp_async(void* dst, const uint32_t* words, int bytes, int src_bytes) {
  char* p = static_cast<char*>(dst);
  if (bytes != 4 && bytes != 8 && bytes != 16) stop_at_bad_copy(CopyFault::Size, bytes, src_bytes);
  if (src_bytes < 0 || src_bytes > bytes || src_bytes % 4 != 0) stop_at_bad_copy(CopyFault::SourceBytes, bytes, src_bytes);
  if (!in_shared_arena(p) || !in_shared_arena(p + bytes - 1)) stop_at_bad_copy(CopyFault::NotShared, bytes, src_bytes);
  if (size_t(p - g_arena) % size_t(bytes) != 0) stop_at_bad_copy(CopyFault::Misaligned, bytes, src_bytes);
  // The bank model counts the copy as issued here (its site: the kernel's call, ops/cp_async.cuh).
  if (g_access.banks) bank_access(p, size_t(bytes), true, __builtin_return_address(0), /*async=*/true);
  shared_access(p, size_t(bytes), true);  // the destination checked as written now (memcheck, racecheck)
  const size_t first = size_t(p - g_arena) / 4;
  for (size_t w = first; w < first + size_t(bytes) / 4; ++w) {
    if (g_in_flight[w] != 0 && g_access.checks.racecheck) stop_at_in_flight(w, true);
    g_in_flight[w] = uint16_t(g_access.thread->linear + 1);
  }
  AsyncCopy copy{p, {0, 0, 0, 0}, bytes};
  std::memcpy(copy.words, words, size_t(bytes));
  g_copies[size_t(g_access.thread->linear)].open.push_back(copy);
}

void cp_async_commit() {
  ThreadCopies& mine = g_copies[size_t(g_access.thread->linear)];
  mine.committed.push_back(std::move(mine.open));
  mine.open.clear();
}

void cp_async_wait(int n) {
  ThreadCopies& mine = g_copies[size_t(g_access.thread->linear)];
  while (mine.committed.size() > size_t(std::max(n, 0))) {
    const std::vector<AsyncCopy> group = std::move(mine.committed.front());
    mine.committed.erase(mine.committed.begin());
    for (const AsyncCopy& copy : group) land(copy);
  }
}

void end_block_async_copies() {
  for (size_t t = 0; t < g_copies.size(); ++t) {
    size_t pending = g_copies[t].open.size();
    for (const auto& group : g_copies[t].committed) pending += group.size();
    if (pending > 0) {
      record_failure("cp.async: " + describe_linear_thread(int(t)) + " ended with " + std::to_string(pending) +
                     " asynchronous copies to shared memory never waited for (cp.async.wait_group)");
      return;
    }
  }
}

}  // namespace urpe_sim
