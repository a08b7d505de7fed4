// Stable bucket index on the GPU (see bucket_index_cuda.cuh): radix-sort (key, position) pairs
// with CUB (stable; only the bits the bucket count needs), then find each bucket's first position
// by binary search over the sorted keys.
// Bytes: the sort makes one pass per 8 key bits (onesweep), each reading and writing 8 B per item
// (key + position); the offsets pass reads log2(n) keys per bucket. No host synchronisation.
#include <cub/device/device_radix_sort.cuh>

#include "ops/bucket_index_cuda.cuh"
#include "ops/cuda_common.cuh"

namespace urpe::kernels {

namespace {

__global__ void iota_kernel(int32_t* __restrict__ out, int64_t n) {
  URPE_GRID_STRIDE(k, n) out[k] = static_cast<int32_t>(k);
}

// offsets[b] = first index of sorted_keys with key ≥ b (lower bound), for b ≤ buckets.
__global__ void bucket_offsets_kernel(const uint32_t* __restrict__ sorted_keys, int64_t n,
                                      int64_t buckets, int32_t* __restrict__ offsets) {
  URPE_GRID_STRIDE(b, buckets + 1) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (static_cast<int64_t>(sorted_keys[mid]) < b) lo = mid + 1;
      else hi = mid;
    }
    offsets[b] = static_cast<int32_t>(lo);
  }
}

}  // namespace

BucketIndex::BucketIndex(cuda::Context& ctx, const int32_t* keys, int64_t n, int64_t buckets,
                         const char* op)
    : positions_(ctx, sizeof(int32_t) * n), offsets_(ctx, sizeof(int32_t) * (buckets + 1)) {
  URPE_CHECK(n < (int64_t(1) << 31) && buckets < (int64_t(1) << 31),
             op << ": " << n << " indices into " << buckets
                << " buckets exceed the 32-bit limit of the CUDA bucket sort");
  const int threads = 256;
  cuda::DeviceBuffer sorted_keys(ctx, sizeof(uint32_t) * std::max<int64_t>(n, 1));
  if (n > 0) {
    cuda::DeviceBuffer iota(ctx, sizeof(int32_t) * n);
    iota_kernel<<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(iota.as<int32_t>(), n);
    CUDA_CHECK_LAUNCH("iota_kernel");
    int end_bit = 1;
    while (end_bit < 32 && (int64_t(1) << end_bit) < buckets) ++end_bit;
    // Valid keys are non-negative, so their unsigned view sorts the same way.
    const uint32_t* keys_in = reinterpret_cast<const uint32_t*>(keys);
    size_t temp_bytes = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in,
                                               sorted_keys.as<uint32_t>(), iota.as<int32_t>(),
                                               positions_.as<int32_t>(), static_cast<int>(n), 0,
                                               end_bit, ctx.stream()));
    cuda::DeviceBuffer temp(ctx, std::max<size_t>(temp_bytes, 1));
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.as<void>(), temp_bytes, keys_in,
                                               sorted_keys.as<uint32_t>(), iota.as<int32_t>(),
                                               positions_.as<int32_t>(), static_cast<int>(n), 0,
                                               end_bit, ctx.stream()));
    CUDA_CHECK_LAUNCH("cub::DeviceRadixSort::SortPairs");
  }
  bucket_offsets_kernel<<<grid_for(ctx, buckets + 1, threads), threads, 0, ctx.stream()>>>(
      sorted_keys.as<uint32_t>(), n, buckets, offsets_.as<int32_t>());
  CUDA_CHECK_LAUNCH("bucket_offsets_kernel");
}

}  // namespace urpe::kernels
