// CUDA kernels of linear_cross_entropy (maths in linear_cross_entropy.h); the GEMMs are cuBLAS's
// (gemm_cuda), called by the op between these kernels.
//
// chunk statistics: one warp per row of the chunk: a sweep for the max and its first index (each
//   lane's strided best, then a shuffle tree that keeps the smaller index on ties; NaN reads as
//   −∞, as argmax_last), a sweep for Σ e^{z − m} (double), then lse, lse − z_t and the argmax.
//   Bytes: 4·rows·C read twice (the second from cache), 12 per row written.
// count: one block counts M, the rows whose target is counted (not ignored, inside [0, C)), in a
//   fixed order; read on the device by the mean and the gradient (no host wait: a CUDA graph
//   replays it with each step's targets). Bytes: 4·N read.
// mean: one block adds the N row terms in a fixed order (strided loop + shuffle tree, double) and
//   writes Σ/M.
// chunk gradient: one thread per logit, in place: dz = (e^{z − lse} − [c = t])·g/M, 0 on ignored
//   rows; g read on the device. Bytes: 4·rows·C read and written.
#include "ops/cuda_common.cuh"
#include "ops/linear_cross_entropy.h"

namespace urpe::kernels {

namespace {

constexpr int kRowsPerBlock = 8;

// rows r of the chunk → lse[r], term[r], best[r] (best may be null); the pointers start at row0.
__global__ void linear_ce_chunk_stats_kernel(const float* __restrict__ logits, int64_t rows, int64_t classes,
                                             const int32_t* __restrict__ targets, int32_t ignore_index,
                                             float* __restrict__ lse, float* __restrict__ term,
                                             int32_t* __restrict__ best) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t(gridDim.x) * kRowsPerBlock;
  for (int64_t r = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp; r < rows; r += warps) {
    const float* z = logits + r * classes;
    float m = -INFINITY;
    int64_t index = INT64_MAX;
    for (int64_t c = lane; c < classes; c += kWarp) {
      const float v = isnan(z[c]) ? -INFINITY : z[c];
      if (v > m || (v == m && c < index)) m = v, index = c;
    }
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      const float v = __shfl_xor_sync(0xffffffffu, m, offset);
      const int64_t i = __shfl_xor_sync(0xffffffffu, index, offset);
      if (v > m || (v == m && i < index)) m = v, index = i;
    }
    double s = 0.0;  // Σ e^{z − m} in double, as the CPU reference
    for (int64_t c = lane; c < classes; c += kWarp) s += expf(z[c] - m);
    s = warp_sum(s);
    if (lane == 0) {
      const double row_lse = static_cast<double>(m) + log(s);
      lse[r] = static_cast<float>(row_lse);
      const int32_t t = targets[r];
      term[r] = (t == ignore_index || t < 0 || t >= classes) ? 0.0f : static_cast<float>(row_lse - z[t]);
      if (best) best[r] = index == INT64_MAX ? 0 : static_cast<int32_t>(index);
    }
  }
}

// One block: count[0] = M = #{r : targets[r] ≠ ignore_index, 0 ≤ targets[r] < classes}.
__global__ void linear_ce_count_kernel(const int32_t* __restrict__ targets, int64_t rows, int64_t classes,
                                       int32_t ignore_index, int32_t* __restrict__ count) {
  URPE_SHARED(long long, shared, [32]);
  long long counted = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const int32_t t = targets[r];
    counted += (t != ignore_index && t >= 0 && t < classes) ? 1 : 0;
  }
  counted = block_sum(counted, shared);
  if (threadIdx.x == 0) count[0] = static_cast<int32_t>(counted);
}

// One block: loss = Σ term / M (0 when M = 0), M = count[0].
__global__ void linear_ce_mean_kernel(const float* __restrict__ term, int64_t rows,
                                      const int32_t* __restrict__ count_in, float* __restrict__ loss) {
  URPE_SHARED(double, shared, [32]);
  double total = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) total += term[r];
  total = block_sum(total, shared);
  const int64_t count = count_in[0];
  if (threadIdx.x == 0) loss[0] = count > 0 ? static_cast<float>(total / static_cast<double>(count)) : 0.0f;
}

// dz in place over rows · classes logits; targets and lse start at row0.
__global__ void linear_ce_chunk_grad_kernel(float* __restrict__ logits, int64_t classes,
                                            const int32_t* __restrict__ targets, int32_t ignore_index,
                                            const float* __restrict__ lse, const int32_t* __restrict__ count_in,
                                            const float* __restrict__ grad_loss, int64_t total) {
  // g/M; M = 0 means every row is ignored (each dz then 0)
  const int64_t count = count_in[0];
  const float scale = count > 0 ? static_cast<float>(static_cast<double>(grad_loss[0]) / count) : 0.0f;
  URPE_GRID_STRIDE(k, total) {
    const int64_t r = k / classes, c = k % classes;
    const int32_t t = targets[r];
    if (count == 0 || t == ignore_index || t < 0 || t >= classes) {
      logits[k] = 0.0f;
    } else {
      const float p = expf(logits[k] - lse[r]);
      logits[k] = (p - (c == t ? 1.0f : 0.0f)) * scale;
    }
  }
}

}  // namespace

void linear_ce_chunk_stats_cuda(const Tensor& logits, int64_t rows, int64_t classes, const Tensor& targets,
                                int64_t row0, int32_t ignore_index, Tensor& lse, Tensor& term, Tensor& argmax) {
  cuda::Context& ctx = context_of(lse);
  if (rows == 0) return;
  linear_ce_chunk_stats_kernel<<<grid_for(ctx, rows, kRowsPerBlock), kWarp * kRowsPerBlock, 0, ctx.stream()>>>(
      logits.f32(), rows, classes, targets.i32() + row0, ignore_index, lse.f32() + row0, term.f32() + row0,
      argmax.defined() ? argmax.i32() + row0 : nullptr);
  CUDA_CHECK_LAUNCH("linear_ce_chunk_stats_kernel");
}

void linear_ce_count_cuda(const Tensor& targets, int64_t classes, int32_t ignore_index, Tensor& count) {
  cuda::Context& ctx = context_of(count);
  linear_ce_count_kernel<<<1, 1024, 0, ctx.stream()>>>(targets.i32(), targets.numel(), classes, ignore_index,
                                                       count.i32());
  CUDA_CHECK_LAUNCH("linear_ce_count_kernel");
}

void linear_ce_mean_cuda(const Tensor& term, const Tensor& count, Tensor& loss) {
  cuda::Context& ctx = context_of(loss);
  linear_ce_mean_kernel<<<1, 1024, 0, ctx.stream()>>>(term.f32(), term.numel(), count.i32(), loss.f32());
  CUDA_CHECK_LAUNCH("linear_ce_mean_kernel");
}

void linear_ce_chunk_grad_cuda(Tensor& logits, int64_t rows, int64_t classes, const Tensor& targets, int64_t row0,
                               int32_t ignore_index, const Tensor& lse, const Tensor& count, const Tensor& grad_loss) {
  cuda::Context& ctx = context_of(logits);
  const int64_t total = rows * classes;
  if (total == 0) return;
  const int threads = 256;
  linear_ce_chunk_grad_kernel<<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
      logits.f32(), classes, targets.i32() + row0, ignore_index, lse.f32() + row0, count.i32(), grad_loss.f32(),
      total);
  CUDA_CHECK_LAUNCH("linear_ce_chunk_grad_kernel");
}

}  // namespace urpe::kernels
