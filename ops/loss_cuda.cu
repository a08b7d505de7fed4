// CUDA losses (maths in loss.h).
//
// cross_entropy forward, fused: one warp per row computes lse_i = m + log Σ_c e^{x_ic − m} (a max
//   sweep and a sum sweep, the sum in double) and the row's term lse_i − x[i, t_i] (0 and uncounted when t_i is
//   ignore_index). A second kernel, one block, adds the terms and counts in a fixed order (strided
//   loop + shuffle tree, double) and writes loss = Σ/M (0 when M = 0) and M, which stays on the
//   device for the backward (no host wait). Targets are range-checked by the public op
//   (ops/index_check.h: on the device, raised at the next read); here a target outside [0, C)
//   only ever reads in bounds (such a row is left uncounted).
//   Bytes: 4·N·C read (twice from cache), 4·N for lse, 8 bytes per row of scratch. bf16 logits
//   (T = __nv_bfloat16): 2·N·C read, each widened exactly; lse, the sums and the loss as for f32.
// cross_entropy backward: one thread per logit, the softmax recomputed from the saved lse:
//   ∂x[i, c] = (e^{x_ic − lse_i} − [c = t_i])·g/M on counted rows, 0 elsewhere (all 0 when M = 0);
//   g and M are read on the device. Bytes: 4·N·C read, 4·N·C written (2 + 2 for bf16: ∂x in the
//   logits' dtype, rounded once).
// l1_loss forward: L = (1/n) Σ |p − t|: blocks of 8192 elements each reduce their chunk with a
//   fixed tree (double) into a partial; one block adds the partials in order.
//   Bytes: 8·n read. Backward: ∂p = sign(p − t)·g/n, one thread per element (8 B in, 4 B out).
#include "ops/bf16_values.cuh"
#include "ops/cuda_common.cuh"
#include "ops/loss.h"

namespace urpe::kernels {

namespace {

constexpr int kRowsPerBlock = 8;
constexpr int64_t kL1Chunk = 8192;

template <typename T>
__global__ void cross_entropy_rows_kernel(const T* __restrict__ logits,
                                          const int32_t* __restrict__ targets, int64_t rows,
                                          int64_t classes, int32_t ignore_index,
                                          float* __restrict__ lse, double* __restrict__ term,
                                          int32_t* __restrict__ counted) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t(gridDim.x) * kRowsPerBlock;
  for (int64_t r = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp; r < rows;
       r += warps) {
    const T* xr = logits + r * classes;
    float m = -INFINITY;
    for (int64_t c = lane; c < classes; c += kWarp) m = fmaxf(m, load(xr, c));
    m = warp_max(m);
    double s = 0.0;  // Σ e^{x−m} in double, as the CPU reference: large vocabularies add up
    for (int64_t c = lane; c < classes; c += kWarp) s += expf(load(xr, c) - m);
    s = warp_sum(s);
    const double row_lse = static_cast<double>(m) + log(s);
    if (lane == 0) {
      lse[r] = static_cast<float>(row_lse);
      const int32_t t = targets[r];
      if (t == ignore_index || t < 0 || t >= classes) {
        term[r] = 0.0;
        counted[r] = 0;
      } else {
        term[r] = row_lse - static_cast<double>(load(xr, t));
        counted[r] = 1;
      }
    }
  }
}

// One block: loss = Σ term / Σ counted (0 when nothing counts); count_out = Σ counted.
__global__ void cross_entropy_mean_kernel(const double* __restrict__ term,
                                          const int32_t* __restrict__ counted, int64_t rows,
                                          float* __restrict__ loss,
                                          int32_t* __restrict__ count_out) {
  URPE_SHARED(double, shared_sum, [32]);
  URPE_SHARED(long long, shared_count, [32]);
  double total = 0;
  long long count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    total += term[r];
    count += counted[r];
  }
  total = block_sum(total, shared_sum);
  count = block_sum(count, shared_count);
  if (threadIdx.x == 0) {
    loss[0] = count > 0 ? static_cast<float>(total / static_cast<double>(count)) : 0.0f;
    count_out[0] = static_cast<int32_t>(count);
  }
}

template <typename T>
__global__ void cross_entropy_backward_kernel(const T* __restrict__ logits,
                                              const int32_t* __restrict__ targets,
                                              const float* __restrict__ lse, int64_t classes,
                                              int32_t ignore_index,
                                              const int32_t* __restrict__ count_in,
                                              const float* __restrict__ grad_loss,
                                              T* __restrict__ grad_logits, int64_t total) {
  const int32_t count = count_in[0];
  const float scale = count > 0 ? static_cast<float>(static_cast<double>(grad_loss[0]) / count) : 0.0f;  // g/M
  URPE_GRID_STRIDE(k, total) {
    const int64_t r = k / classes, c = k % classes;
    const int32_t t = targets[r];
    if (count == 0 || t == ignore_index || t < 0 || t >= classes) {
      store(grad_logits, k, 0.0f);
    } else {
      const float p = expf(load(logits, k) - lse[r]);
      store(grad_logits, k, (p - (c == t ? 1.0f : 0.0f)) * scale);
    }
  }
}

// partial[b] = Σ_{k in chunk b} |p_k − t_k|; one block per chunk (grid-strided).
__global__ void l1_partial_kernel(const float* __restrict__ pred, const float* __restrict__ target,
                                  int64_t n, int64_t chunks, double* __restrict__ partial) {
  URPE_SHARED(double, shared, [32]);
  for (int64_t b = blockIdx.x; b < chunks; b += gridDim.x) {
    const int64_t begin = b * kL1Chunk, end = min(n, begin + kL1Chunk);
    double total = 0;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x)
      total += fabsf(pred[k] - target[k]);
    total = block_sum(total, shared);
    if (threadIdx.x == 0) partial[b] = total;
  }
}

// One block: loss = Σ partial / n, partials added in a fixed order.
__global__ void l1_finish_kernel(const double* __restrict__ partial, int64_t chunks, int64_t n,
                                 float* __restrict__ loss) {
  URPE_SHARED(double, shared, [32]);
  double total = 0;
  for (int64_t b = threadIdx.x; b < chunks; b += blockDim.x) total += partial[b];
  total = block_sum(total, shared);
  if (threadIdx.x == 0) loss[0] = static_cast<float>(total / static_cast<double>(n));
}

__global__ void l1_backward_kernel(const float* __restrict__ pred,
                                   const float* __restrict__ target,
                                   const float* __restrict__ grad_loss,
                                   float* __restrict__ grad_pred, int64_t n) {
  const float scale = static_cast<float>(static_cast<double>(grad_loss[0]) / n);  // g/n
  URPE_GRID_STRIDE(k, n) {
    const float d = pred[k] - target[k];
    grad_pred[k] = d > 0.0f ? scale : (d < 0.0f ? -scale : 0.0f);
  }
}

}  // namespace

// ---- cross entropy ----

void cross_entropy_forward_cuda(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                                Tensor& loss, Tensor& lse, Tensor& count) {
  cuda::Context& ctx = context_of(loss);
  const int64_t rows = logits.size(0), classes = logits.size(1);
  if (rows == 0) {
    loss.fill(0.0f);
    count.fill(0.0f);
    return;
  }
  cuda::DeviceBuffer term(ctx, sizeof(double) * rows);
  cuda::DeviceBuffer counted(ctx, sizeof(int32_t) * rows);
  with_device_value_type(logits.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_rows_kernel<T><<<grid_for(ctx, rows, kRowsPerBlock), kWarp * kRowsPerBlock, 0,
                                   ctx.stream()>>>(values<T>(logits), targets.i32(), rows, classes,
                                                   ignore_index, lse.f32(), term.as<double>(),
                                                   counted.as<int32_t>());
  });
  CUDA_CHECK_LAUNCH("cross_entropy_rows_kernel");
  cross_entropy_mean_kernel<<<1, 1024, 0, ctx.stream()>>>(term.as<double>(),
                                                           counted.as<int32_t>(), rows,
                                                           loss.f32(), count.i32());
  CUDA_CHECK_LAUNCH("cross_entropy_mean_kernel");
}

void cross_entropy_backward_cuda(const Tensor& logits, const Tensor& targets,
                                 int32_t ignore_index, const Tensor& lse, const Tensor& count,
                                 const Tensor& grad_loss, Tensor& grad_logits) {
  cuda::Context& ctx = context_of(grad_logits);
  const int64_t total = logits.numel();
  if (total == 0) return;
  const int64_t classes = logits.size(1);
  const int threads = 256;
  with_device_value_type(logits.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_backward_kernel<T><<<grid_for(ctx, total, threads), threads, 0, ctx.stream()>>>(
        values<T>(logits), targets.i32(), lse.f32(), classes, ignore_index,
        count.i32(), grad_loss.f32(), values<T>(grad_logits), total);
  });
  CUDA_CHECK_LAUNCH("cross_entropy_backward_kernel");
}

// ---- L1 ----

void l1_loss_forward_cuda(const Tensor& pred, const Tensor& target, Tensor& loss) {
  cuda::Context& ctx = context_of(loss);
  const int64_t n = pred.numel();
  if (n == 0) {
    loss.fill(0.0f);
    return;
  }
  const int64_t chunks = (n + kL1Chunk - 1) / kL1Chunk;
  cuda::DeviceBuffer partial(ctx, sizeof(double) * chunks);
  const int threads = 256;
  l1_partial_kernel<<<grid_for(ctx, chunks * threads, threads), threads, 0, ctx.stream()>>>(
      pred.f32(), target.f32(), n, chunks, partial.as<double>());
  CUDA_CHECK_LAUNCH("l1_partial_kernel");
  l1_finish_kernel<<<1, 1024, 0, ctx.stream()>>>(partial.as<double>(), chunks, n, loss.f32());
  CUDA_CHECK_LAUNCH("l1_finish_kernel");
}

void l1_loss_backward_cuda(const Tensor& pred, const Tensor& target, const Tensor& grad_loss,
                           Tensor& grad_pred) {
  cuda::Context& ctx = context_of(grad_pred);
  const int64_t n = pred.numel();
  if (n == 0) return;
  const int threads = 256;
  l1_backward_kernel<<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(
      pred.f32(), target.f32(), grad_loss.f32(), grad_pred.f32(), n);
  CUDA_CHECK_LAUNCH("l1_backward_kernel");
}

}  // namespace urpe::kernels
