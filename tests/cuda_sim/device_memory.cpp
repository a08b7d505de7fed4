// CUDA simulator: device memory. Every cudaMalloc block comes from one reserved range of the
// address space (DeviceRegion), so an access can be told to be "device memory" with one compare,
// and each word of it has a shadow byte: addressable (inside a live allocation), written (by a
// kernel, a copy, a memset or a library stand-in), logged (in the undo log of a schedule's run).
//
// Layout of one allocation, in pages: [guard][data ... user range][guard]. The user range ends
// where the trailing guard page begins, and a guard page (no access) lies before the data too:
// an access far past either end faults at once in any build. Nearer misses (the slack between
// the data page's start and the user range, the bytes past a size that is not a multiple of
// 256) are caught by the shadow (memcheck, with the access hooks) or, in the AddressSanitizer
// build, by poisoning them. A freed block loses its pages (any later access faults) and its
// addresses are not handed out again until the whole range has been used once.
// New memory is filled with 0xFF bytes (NaN as float), so unwritten outputs show up as NaN even
// where the written bits are not tracked.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "cuda_runtime.h"
#include "sim_state.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define URPE_SIM_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define URPE_SIM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define URPE_SIM_POISON(p, n) ((void)(p), (void)(n))
#define URPE_SIM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace urpe_sim {

DeviceRegion g_device;

namespace {

// Address space for every allocation of a process (reserved, not committed).
constexpr size_t kRegionBytes = size_t(64) << 30;

struct Block {
  size_t span_offset;  // from g_device.base: the leading guard page
  size_t span_bytes;   // guard + data pages + guard
  size_t bytes;        // what the user asked for
};

std::mutex g_mutex;
std::map<const char*, Block> g_blocks;  // keyed by the first byte of the user's range
size_t g_in_use = 0;
size_t g_bump = 0;                 // never-used addresses start here
std::map<size_t, size_t> g_freed;  // offset → bytes of freed spans (reused once g_bump is at the end)

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

bool reserve_region() {
  if (g_device.base) return true;
  void* region = mmap(nullptr, kRegionBytes, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void* shadow = mmap(nullptr, kRegionBytes / 4, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED || shadow == MAP_FAILED) {
    std::fprintf(stderr, "cuda_sim: cannot reserve %zu GiB of address space for device memory\n",
                 kRegionBytes >> 30);
    return false;
  }
  g_device.base = static_cast<char*>(region);
  g_device.shadow = static_cast<uint8_t*>(shadow);
  g_device.bytes = kRegionBytes;
  return true;
}

// A span of `bytes` from never-used addresses, else the first freed span that fits.
bool take_span(size_t bytes, size_t* offset) {
  if (kRegionBytes - g_bump >= bytes) {
    *offset = g_bump;
    g_bump += bytes;
    return true;
  }
  for (auto it = g_freed.begin(); it != g_freed.end(); ++it) {
    if (it->second < bytes) continue;
    *offset = it->first;
    const size_t rest = it->second - bytes;
    const size_t rest_offset = it->first + bytes;
    g_freed.erase(it);
    if (rest > 0) g_freed[rest_offset] = rest;
    return true;
  }
  return false;
}

void give_back_span(size_t offset, size_t bytes) {
  auto next = g_freed.lower_bound(offset);
  if (next != g_freed.end() && offset + bytes == next->first) {
    bytes += next->second;
    next = g_freed.erase(next);
  }
  if (next != g_freed.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      previous->second += bytes;
      return;
    }
  }
  g_freed[offset] = bytes;
}

size_t word_of(const void* p) { return size_t(static_cast<const char*>(p) - g_device.base) / 4; }

// Words [first, last] covering [p, p + bytes), bytes > 0.
void word_range(const void* p, size_t bytes, size_t* first, size_t* last) {
  *first = word_of(p);
  *last = word_of(static_cast<const char*>(p) + bytes - 1);
}

bool is_device_range_locked(const void* pointer, size_t bytes) {
  const char* p = static_cast<const char*>(pointer);
  auto it = g_blocks.upper_bound(p);
  if (it == g_blocks.begin()) return false;
  --it;
  const char* begin = it->first;
  return p >= begin && p + bytes <= begin + it->second.bytes;
}

// ---- the undo log of one schedule's run ----

struct LogEntry {
  size_t word;
  uint32_t old_bits;
  uint8_t old_shadow;
};
std::vector<LogEntry> g_log;
bool g_recording = false;

uint32_t word_bits(size_t word) {
  uint32_t bits;
  std::memcpy(&bits, g_device.base + word * 4, 4);
  return bits;
}

}  // namespace

struct RunWrites {
  std::vector<std::pair<size_t, uint32_t>> words;  // (word, final bits), sorted by word
};

bool is_device_range(const void* pointer, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return is_device_range_locked(pointer, bytes == 0 ? 1 : bytes);
}

std::vector<std::pair<int, const void*>> g_launch_pointers;

void begin_launch() { g_launch_pointers.clear(); }

bool check_kernel_pointer(const LaunchConfig& config, int argument, const void* pointer) {
  if (pointer == nullptr) return true;
  if (is_device_range(pointer, 1)) {
    g_launch_pointers.push_back({argument, pointer});
    return true;
  }
  record_launch_error(cudaErrorInvalidDevicePointer,
                      std::string(config.kernel_name) + ": argument " + std::to_string(argument) +
                          " is a pointer that is not device memory (a host pointer?)");
  return false;
}

void mark_written(const void* p, size_t bytes) {
  if (bytes == 0 || !in_device_region(p)) return;
  size_t first, last;
  word_range(p, bytes, &first, &last);
  for (size_t w = first; w <= last; ++w) g_device.shadow[w] |= kWritten;
}

bool all_written(const void* p, size_t bytes) {
  if (bytes == 0 || !in_device_region(p)) return true;
  size_t first, last;
  word_range(p, bytes, &first, &last);
  for (size_t w = first; w <= last; ++w)
    if (!(g_device.shadow[w] & kWritten)) return false;
  return true;
}

void copy_written_bits(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  const bool aligned = (size_t(dst) | size_t(src) | bytes) % 4 == 0;
  if (!aligned || !in_device_region(src)) {
    mark_written(dst, bytes);
    return;
  }
  const size_t d = word_of(dst), s = word_of(src);
  for (size_t w = 0; w < bytes / 4; ++w)
    g_device.shadow[d + w] = (g_device.shadow[d + w] & ~kWritten) | (g_device.shadow[s + w] & kWritten);
}

const char* allocation_of(const void* pointer) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const char* p = static_cast<const char*>(pointer);
  auto next = g_blocks.upper_bound(p);
  if (next != g_blocks.begin()) {
    const Block& block = std::prev(next)->second;
    if (p < g_device.base + block.span_offset + block.span_bytes) return std::prev(next)->first;
  }
  if (next != g_blocks.end() && p >= g_device.base + next->second.span_offset) return next->first;
  return nullptr;
}

std::string describe_device_address(const void* pointer) {
  const char* p = static_cast<const char*>(pointer);
  const char* begin = allocation_of(p);
  if (!begin) return "an address outside every live allocation (freed memory?)";
  std::lock_guard<std::mutex> lock(g_mutex);
  const size_t bytes = g_blocks.at(begin).bytes;
  std::ostringstream out;
  out << "byte " << (p - begin) << " of a " << bytes << "-byte allocation";
  if (p < begin) out << " (before its start)";
  else if (p >= begin + bytes) out << " (past its end)";
  return out.str();
}

// ---- undo log ----

bool recording() { return g_recording; }

void log_word(size_t word) {
  g_log.push_back({word, word_bits(word), g_device.shadow[word]});
  g_device.shadow[word] |= kLogged;
}

void start_recording() {
  g_log.clear();
  g_recording = true;
}

RunWrites* finish_recording(bool restore) {
  g_recording = false;
  auto* run = new RunWrites;
  run->words.reserve(g_log.size());
  for (const LogEntry& e : g_log) run->words.push_back({e.word, word_bits(e.word)});
  for (const LogEntry& e : g_log) {
    if (restore) {
      std::memcpy(g_device.base + e.word * 4, &e.old_bits, 4);
      g_device.shadow[e.word] = e.old_shadow;
    } else {
      g_device.shadow[e.word] &= ~kLogged;
    }
  }
  g_log.clear();
  std::sort(run->words.begin(), run->words.end());
  return run;
}

std::string compare_runs(const RunWrites& first, const char* first_name, const RunWrites& second,
                         const char* second_name) {
  const auto& a = first.words;
  const auto& b = second.words;
  const size_t n = std::max(a.size(), b.size());
  for (size_t k = 0; k < n; ++k) {
    const bool in_a = k < a.size(), in_b = k < b.size();
    std::ostringstream out;
    if (in_a && in_b && a[k] == b[k]) continue;
    auto value = [](uint32_t bits) {
      float f;
      std::memcpy(&f, &bits, 4);
      std::ostringstream v;
      v << "0x" << std::hex << bits << std::dec << " (" << f << " as float)";
      return v.str();
    };
    if (in_a && in_b && a[k].first == b[k].first) {
      out << "the " << first_name << " and " << second_name << " schedules give different results: "
          << describe_device_address(g_device.base + a[k].first * 4) << " is " << value(a[k].second)
          << " under " << first_name << " but " << value(b[k].second) << " under " << second_name;
    } else {
      // One run wrote a word the other did not: name the smaller word index.
      const bool only_a = in_a && (!in_b || a[k].first < b[k].first);
      const size_t word = only_a ? a[k].first : b[k].first;
      out << "the " << first_name << " and " << second_name << " schedules write different words: "
          << describe_device_address(g_device.base + word * 4) << " is written under "
          << (only_a ? first_name : second_name) << " only";
    }
    return out.str();
  }
  return "";
}

void free_run(RunWrites* run) { delete run; }

}  // namespace urpe_sim

using namespace urpe_sim;

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  *pointer = nullptr;
  if (capture_forbids("cudaMalloc")) return cudaErrorStreamCaptureUnsupported;
  if (bytes == 0) return cudaSuccess;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (bytes > kDeviceBytes - g_in_use) return record_api_error(cudaErrorMemoryAllocation);
  if (!reserve_region()) return record_api_error(cudaErrorMemoryAllocation);
  const size_t page = page_size();
  const size_t rounded = (bytes + 255) / 256 * 256;  // cudaMalloc's 256-byte alignment
  const size_t data_pages = (rounded + page - 1) / page;
  const size_t span = (data_pages + 2) * page;
  size_t offset = 0;
  if (!take_span(span, &offset)) return record_api_error(cudaErrorMemoryAllocation);
  char* data = g_device.base + offset + page;
  const size_t data_bytes = data_pages * page;
  if (mprotect(data, data_bytes, PROT_READ | PROT_WRITE) != 0) {
    give_back_span(offset, span);
    return record_api_error(cudaErrorMemoryAllocation);
  }
  char* user = data + data_bytes - rounded;
  std::memset(user, 0xFF, rounded);
  const size_t first = word_of(user), last = word_of(user + bytes - 1);
  std::memset(g_device.shadow + first, kAddressable, last - first + 1);
  URPE_SIM_POISON(data, size_t(user - data));
  URPE_SIM_POISON(user + bytes, rounded - bytes);
  g_blocks[user] = Block{offset, span, bytes};
  g_in_use += bytes;
  *pointer = user;
  return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
  if (!pointer) return cudaSuccess;
  if (capture_forbids("cudaFree")) return cudaErrorStreamCaptureUnsupported;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_blocks.find(static_cast<const char*>(pointer));
  if (it == g_blocks.end()) return record_api_error(cudaErrorInvalidDevicePointer);
  const Block block = it->second;
  const size_t page = page_size();
  char* data = g_device.base + block.span_offset + page;
  const size_t data_bytes = block.span_bytes - 2 * page;
  URPE_SIM_UNPOISON(data, data_bytes);
  mprotect(data, data_bytes, PROT_NONE);
  madvise(data, data_bytes, MADV_DONTNEED);
  const size_t first = word_of(it->first), last = word_of(it->first + block.bytes - 1);
  std::memset(g_device.shadow + first, 0, last - first + 1);
  give_back_span(block.span_offset, block.span_bytes);
  g_in_use -= block.bytes;
  g_blocks.erase(it);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *free_bytes = kDeviceBytes - g_in_use;
  *total_bytes = kDeviceBytes;
  return cudaSuccess;
}
