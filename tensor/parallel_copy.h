// A host-to-host copy that spreads large sizes over the OpenMP threads. Why: an upload to the GPU
// first copies its bytes into a pinned staging block (Context::upload), and one core's memcpy
// moves about 5 GB/s: a ZINC batch's 15 MB of multi-hop ids held the GPU idle for ~3 ms of a
// 38.5 ms step on the H200 (bench/results/gpu_h200_2026-11-27.md). The machines that have GPUs
// have 16 cores.
#pragma once

#include <cstddef>

namespace urpe {

// Copies `bytes` from src to dst (non-overlapping), like std::memcpy. From kParallelCopyMinBytes
// on, and outside any parallel region, each OpenMP thread copies one contiguous slice of at least
// kParallelCopySliceBytes (4 KiB-aligned boundaries); otherwise one memcpy.
constexpr size_t kParallelCopyMinBytes = size_t(1) << 20;
constexpr size_t kParallelCopySliceBytes = size_t(256) << 10;
void parallel_copy(void* dst, const void* src, size_t bytes);

// How many threads parallel_copy would use for `bytes` here (1: a plain memcpy); for tests.
int parallel_copy_threads(size_t bytes);

}  // namespace urpe
