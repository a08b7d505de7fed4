// CUDA inverted dropout (maths in dropout.h) with urpe's own Philox (tensor/philox.h), so the
// mask is bit-identical to the CPU's: keep_k = [philox_uniform(seed, 0, k) ≥ p].
// One Philox call yields the four uniforms of elements 4q..4q+3 (the stream starts at offset 0,
// so element k is word k & 3 of block k >> 2): one thread per group of four elements.
// out_k = keep_k ? x_k·scale : 0, scale = 1/(1 − p) (a select, so p = 1 gives zeros, not NaN).
// Bytes: 4 read + 4 written per element (2 + 2 for bf16, T = __nv_bfloat16: the product in FP32,
// rounded once on store); no mask is stored (backward regenerates it).
// The seed arrives by value or as the step anchor plus a delta (ops/dropout_seed.cuh), which each
// thread turns into the value with one more Philox block (CUDA graphs: ops/dropout.h).
#include "ops/bf16_values.cuh"
#include "ops/cuda_common.cuh"
#include "ops/dropout.h"
#include "ops/dropout_seed.cuh"
#include "tensor/philox.h"

namespace urpe::kernels {

namespace {

template <typename T>
__global__ void dropout_philox_kernel(const T* __restrict__ x, T* __restrict__ out,
                                      int64_t n, float p, float scale, KernelDropoutSeed drop_seed) {
  const uint64_t seed = drop_seed.get();
  const int64_t groups = (n + 3) / 4;
  URPE_GRID_STRIDE(q, groups) {
    const PhiloxBlock block = philox4x32(seed, static_cast<uint64_t>(q));
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int64_t k = 4 * q + r;
      if (k < n) {
        // Exactly philox_uniform(seed, 0, k): the top 24 bits of the word, times 2^-24.
        const float u = static_cast<float>(block.x[r] >> 8) * (1.0f / 16777216.0f);
        store(out, k, u >= p ? load(x, k) * scale : 0.0f);
      }
    }
  }
}

}  // namespace

void dropout_apply_cuda(const Tensor& x, float p, const DropoutSeed& seed, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const int64_t n = x.numel();
  if (n == 0) return;
  const KernelDropoutSeed drop_seed = kernel_dropout_seed(ctx, seed);
  const float scale = 1.0f / (1.0f - p);
  const int threads = 256;
  with_device_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    dropout_philox_kernel<T><<<grid_for(ctx, (n + 3) / 4, threads), threads, 0, ctx.stream()>>>(
        values<T>(x), values<T>(out), n, p, scale, drop_seed);
    CUDA_CHECK_LAUNCH("dropout_philox_kernel");
  });
}

// {stream seed, start} into the context's anchor: 16 bytes, stream-ordered, no host wait.
void mark_dropout_step_cuda(const Device& device, uint64_t stream_seed, uint64_t start) {
  device.context()->set_dropout_anchor(stream_seed, start);
}

}  // namespace urpe::kernels
