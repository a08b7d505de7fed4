// Host (CPU) memory for tensor storage: a caching allocator. A training step allocates and frees
// the same large buffers every step (activations, gradients, GEMM outputs); from the C library
// each of them is a fresh mmap, page-faulted in on first touch and unmapped on free. Freed blocks
// are instead kept on free lists by size class and handed out again.
//
// Size classes: requests of kMinCachedBytes or more are rounded up to one of four classes per
// power of two (2^k · {1, 1.25, 1.5, 1.75}), so at most 25% of a block is slack. Smaller requests
// go straight to aligned_alloc/free (malloc's own bins serve them well). The cache holds at most
// kMaxCachedBytes of free blocks; a block freed beyond that goes back to the system, so memory
// stays bounded by the peak in use plus that limit. Thread-safe (one mutex); blocks are 64-byte
// aligned, and their contents on reuse are whatever was there (like malloc: uninitialised).
//
// Process-wide, like malloc: CPU tensors carry no context object to hang a per-run allocator on.
#pragma once
#include <cstddef>

namespace urpe::host {

constexpr size_t kMinCachedBytes = size_t(1) << 12;    // 4 KiB
constexpr size_t kMaxCachedBytes = size_t(1) << 30;    // 1 GiB of free blocks at most
// Larger requests are refused before any rounding (which would otherwise wrap around): no machine
// has 4 EiB, and a count that large is a size computation gone wrong.
constexpr size_t kMaxAllocationBytes = size_t(1) << 62;

// The capacity a request of `bytes` really gets (a multiple of 64).
size_t size_class(size_t bytes);

void* allocate(size_t bytes);             // 64-byte aligned; throws urpe::Error when out of memory
                                          // or above kMaxAllocationBytes
void release(void* data, size_t bytes);   // `bytes` as passed to allocate

struct CacheStats {
  size_t cached_bytes = 0;   // free blocks held now
  size_t cached_blocks = 0;
  size_t hits = 0;           // allocations served from the cache
  size_t misses = 0;         // allocations that went to the system (cacheable sizes only)
  size_t small = 0;          // allocations below kMinCachedBytes (straight to aligned_alloc)
};
CacheStats cache_stats();
void empty_cache();  // returns every cached free block to the system

// Bytes of tensor storage in use now (the capacities of live blocks, cached free blocks not
// counted) and the most in use at once since the last reset_peak(): what a computation needs,
// independent of the cache and of the C library's own overheads (urpe repro table5 reports it).
size_t in_use_bytes();
size_t peak_bytes();
void reset_peak();  // peak := in use now

}  // namespace urpe::host
