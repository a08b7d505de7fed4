// The device half of the index range check (index_check.h): count the values outside
// [0, size) (and not the ignore value) without reading them back.
//
// count_outside_range_partial_kernel: each block counts its grid-strided share (a fixed shuffle
//   tree); count_outside_range_total_kernel: one thread adds the blocks' counts into the check's
//   slot. Bytes: 4·n read, 8 per block written. Integer counts: exact in any order.
#include "ops/cuda_common.cuh"
#include "ops/index_check.h"

namespace urpe::kernels {

namespace {

// partial[b] = #{k in block b's share: x[k] ∉ [0, size) and x[k] ≠ ignore (if has_ignore)}
__global__ void count_outside_range_partial_kernel(const int32_t* __restrict__ x, int64_t n, int64_t size,
                                                   bool has_ignore, int32_t ignore,
                                                   long long* __restrict__ partial) {
  URPE_SHARED(long long, shared, [32]);
  long long bad = 0;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    const int32_t v = x[k];
    if (!(has_ignore && v == ignore) && (v < 0 || v >= size)) ++bad;
  }
  bad = block_sum(bad, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = bad;
}

// slot[0] = Σ partial over `blocks` (one thread; blocks ≤ a few hundred).
__global__ void count_outside_range_total_kernel(const long long* __restrict__ partial, int64_t blocks,
                                                 int64_t* __restrict__ slot) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  long long total = 0;
  for (int64_t b = 0; b < blocks; ++b) total += partial[b];
  slot[0] = static_cast<int64_t>(total);
}

}  // namespace

void count_outside_range_cuda(const Tensor& indices, int64_t size, bool has_ignore, int32_t ignore, int64_t* slot) {
  cuda::Context& ctx = context_of(indices);
  const int64_t n = indices.numel();
  if (n == 0) return;
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 264);
  cuda::DeviceBuffer partial(ctx, sizeof(long long) * blocks);
  count_outside_range_partial_kernel<<<static_cast<unsigned>(blocks), threads, 0, ctx.stream()>>>(
      indices.i32(), n, size, has_ignore, ignore, partial.as<long long>());
  CUDA_CHECK_LAUNCH("count_outside_range_partial_kernel");
  count_outside_range_total_kernel<<<1, kWarp, 0, ctx.stream()>>>(partial.as<long long>(), blocks, slot);
  CUDA_CHECK_LAUNCH("count_outside_range_total_kernel");
}

}  // namespace urpe::kernels
