// Caching host allocator; see host_allocator.h for the policy.
#include "tensor/host_allocator.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensor/bytes.h"
#include "tensor/error.h"

namespace urpe::host {

namespace {

struct Cache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // size class → free blocks
  CacheStats stats;
};

// Lock-free: blocks below kMinCachedBytes never take the cache's mutex.
std::atomic<size_t> g_in_use{0}, g_peak{0}, g_small{0};

void count_allocated(size_t capacity) {
  const size_t now = g_in_use.fetch_add(capacity, std::memory_order_relaxed) + capacity;
  size_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

Cache& cache() {
  static Cache* instance = new Cache();  // never destroyed: tensors may be freed during exit
  return *instance;
}

void* system_allocate(size_t capacity) {
  void* data = std::aligned_alloc(64, capacity);
  URPE_CHECK(data != nullptr, "out of host memory: could not allocate " << human_bytes(static_cast<double>(capacity))
                                                                        << " (" << capacity << " bytes); try a smaller "
                                                                           "batch, sequence length or model");
  return data;
}

}  // namespace

size_t size_class(size_t bytes) {
  URPE_CHECK(bytes <= kMaxAllocationBytes, "cannot allocate " << bytes << " bytes of host memory ("
                                               << human_bytes(static_cast<double>(bytes))
                                               << "): more than any machine has");
  const size_t rounded = (bytes + 63) / 64 * 64;  // aligned_alloc needs a multiple of 64
  if (rounded < kMinCachedBytes) return rounded;
  size_t power = kMinCachedBytes;  // largest power of two ≤ rounded
  while (power <= rounded / 2) power *= 2;
  const size_t quarter = power / 4;
  return (rounded + quarter - 1) / quarter * quarter;
}

// A block of exactly `capacity` bytes: from the cache when one is free, else from the system.
static void* allocate_block(size_t capacity) {
  if (capacity < kMinCachedBytes) {
    g_small.fetch_add(1, std::memory_order_relaxed);
    return system_allocate(capacity);
  }
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto found = c.free_blocks.find(capacity);
    if (found != c.free_blocks.end() && !found->second.empty()) {
      void* data = found->second.back();
      found->second.pop_back();
      c.stats.cached_bytes -= capacity;
      c.stats.cached_blocks -= 1;
      c.stats.hits += 1;
      return data;
    }
    c.stats.misses += 1;
  }
  return system_allocate(capacity);
}

void* allocate(size_t bytes) {
  const size_t capacity = size_class(bytes);
  void* data = allocate_block(capacity);
  count_allocated(capacity);
  return data;
}

void release(void* data, size_t bytes) {
  if (data == nullptr) return;
  const size_t capacity = size_class(bytes);
  g_in_use.fetch_sub(capacity, std::memory_order_relaxed);
  if (capacity >= kMinCachedBytes) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.stats.cached_bytes + capacity <= kMaxCachedBytes) {
      c.free_blocks[capacity].push_back(data);
      c.stats.cached_bytes += capacity;
      c.stats.cached_blocks += 1;
      return;
    }
  }
  std::free(data);
}

CacheStats cache_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  CacheStats stats = c.stats;
  stats.small = g_small.load(std::memory_order_relaxed);
  return stats;
}

size_t in_use_bytes() { return g_in_use.load(std::memory_order_relaxed); }
size_t peak_bytes() { return g_peak.load(std::memory_order_relaxed); }
void reset_peak() { g_peak.store(g_in_use.load(std::memory_order_relaxed), std::memory_order_relaxed); }

void empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& [capacity, blocks] : c.free_blocks)
    for (void* data : blocks) std::free(data);
  c.free_blocks.clear();
  c.stats.cached_bytes = 0;
  c.stats.cached_blocks = 0;
}

}  // namespace urpe::host
