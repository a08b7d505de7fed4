// CUDA softmax / log-softmax over the last axis (maths in softmax.h).
//
// One warp per row (eight rows per 256-thread block, rows grid-strided), lanes striding the row:
// a max sweep, a Σ e^{x−m} sweep, a write sweep (the row is re-read from L1/L2). A row whose max
// is −∞ (every entry masked) is written as zeros: it attends to nothing. A NaN anywhere in a row
// makes the max NaN, so the row comes out NaN (as on the CPU), never passing for a masked row.
//   softmax:     y = e^{x−m} / Σ e^{x−m}            ∂x = y·(g − Σ g·y)
//   log_softmax: y = x − m − log Σ e^{x−m}          ∂x = g − e^{y}·Σ g, and ∂x = 0 on a row of
//                all-zero outputs (a fully masked row; see softmax.h)
// Bytes: forward 4 B read + 4 B written per element; backward 8 B read + 4 B written (half of each
// for bf16, T = __nv_bfloat16: FP32 maths, each result rounded once on store, ops/bf16_values.cuh).
#include "ops/bf16_values.cuh"
#include "ops/cuda_common.cuh"
#include "ops/softmax.h"

namespace urpe::kernels {

namespace {

constexpr int kRowsPerBlock = 8;

// max(a, b) that returns NaN when either is NaN (fmaxf would drop it).
__device__ __forceinline__ float max_keep_nan(float a, float b) {
  return (a > b || isnan(a)) ? a : b;
}

__device__ __forceinline__ float warp_max_keep_nan(float v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = max_keep_nan(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The row loops shared by the two ops; the __global__ wrappers below give each op its own kernel
// name in Nsight.
template <bool kLog, typename T>
__device__ __forceinline__ void softmax_forward_rows(const T* __restrict__ x, int64_t rows,
                                                     int64_t n, T* __restrict__ y) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t(gridDim.x) * kRowsPerBlock;
  for (int64_t r = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp; r < rows;
       r += warps) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    float m = -INFINITY;
    for (int64_t j = lane; j < n; j += kWarp) m = max_keep_nan(m, load(xr, j));
    m = warp_max_keep_nan(m);
    if (m == -INFINITY) {
      for (int64_t j = lane; j < n; j += kWarp) store(yr, j, 0.0f);
      continue;
    }
    double s = 0.0;  // the denominator in double, as the CPU reference
    for (int64_t j = lane; j < n; j += kWarp) s += expf(load(xr, j) - m);
    s = warp_sum(s);
    if (kLog) {
      const double log_s = log(s);
      for (int64_t j = lane; j < n; j += kWarp)
        store(yr, j, static_cast<float>(static_cast<double>(load(xr, j)) - m - log_s));
    } else {
      const float inv = static_cast<float>(1.0 / s);
      for (int64_t j = lane; j < n; j += kWarp) store(yr, j, expf(load(xr, j) - m) * inv);
    }
  }
}

template <bool kLog, typename T>
__device__ __forceinline__ void softmax_backward_rows(const T* __restrict__ y,
                                                      const T* __restrict__ g, int64_t rows,
                                                      int64_t n, T* __restrict__ grad_x) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t(gridDim.x) * kRowsPerBlock;
  for (int64_t r = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp; r < rows;
       r += warps) {
    const T* yr = y + r * n;
    const T* gr = g + r * n;
    T* out = grad_x + r * n;
    float s = 0.0f;
    bool lane_all_zero = true;
    for (int64_t j = lane; j < n; j += kWarp) {
      s += kLog ? load(gr, j) : load(gr, j) * load(yr, j);
      lane_all_zero = lane_all_zero && load(yr, j) == 0.0f;
    }
    s = warp_sum(s);
    if (kLog) {
      const bool all_zero = __all_sync(0xffffffffu, lane_all_zero);
      for (int64_t j = lane; j < n; j += kWarp)
        store(out, j, all_zero ? 0.0f : load(gr, j) - expf(load(yr, j)) * s);
    } else {
      for (int64_t j = lane; j < n; j += kWarp) store(out, j, load(yr, j) * (load(gr, j) - s));
    }
  }
}

template <typename T>
__global__ void softmax_forward_kernel(const T* __restrict__ x, int64_t rows, int64_t n,
                                       T* __restrict__ y) {
  softmax_forward_rows<false>(x, rows, n, y);
}
template <typename T>
__global__ void log_softmax_forward_kernel(const T* __restrict__ x, int64_t rows, int64_t n,
                                           T* __restrict__ y) {
  softmax_forward_rows<true>(x, rows, n, y);
}
template <typename T>
__global__ void softmax_backward_kernel(const T* __restrict__ y, const T* __restrict__ g,
                                        int64_t rows, int64_t n, T* __restrict__ grad_x) {
  softmax_backward_rows<false>(y, g, rows, n, grad_x);
}
template <typename T>
__global__ void log_softmax_backward_kernel(const T* __restrict__ y,
                                            const T* __restrict__ g, int64_t rows, int64_t n,
                                            T* __restrict__ grad_x) {
  softmax_backward_rows<true>(y, g, rows, n, grad_x);
}

template <typename T> using ForwardKernel = void (*)(const T*, int64_t, int64_t, T*);
template <typename T> using BackwardKernel = void (*)(const T*, const T*, int64_t, int64_t, T*);

template <bool kLog>
void forward(const Tensor& x, Tensor& y, const char* name) {
  cuda::Context& ctx = context_of(y);
  const int64_t n = x.dim() == 0 ? 1 : x.size(-1);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  if (rows == 0) return;
  with_device_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const ForwardKernel<T> kernel = kLog ? log_softmax_forward_kernel<T> : softmax_forward_kernel<T>;
    kernel<<<grid_for(ctx, rows, kRowsPerBlock), kWarp * kRowsPerBlock, 0, ctx.stream()>>>(
        values<T>(x), rows, n, values<T>(y));
    CUDA_CHECK_LAUNCH(name);
  });
}

template <bool kLog>
void backward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x, const char* name) {
  cuda::Context& ctx = context_of(grad_x);
  const int64_t n = y.dim() == 0 ? 1 : y.size(-1);
  const int64_t rows = n == 0 ? 0 : y.numel() / n;
  if (rows == 0) return;
  with_device_value_type(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const BackwardKernel<T> kernel = kLog ? log_softmax_backward_kernel<T> : softmax_backward_kernel<T>;
    kernel<<<grid_for(ctx, rows, kRowsPerBlock), kWarp * kRowsPerBlock, 0, ctx.stream()>>>(
        values<T>(y), values<T>(grad_y), rows, n, values<T>(grad_x));
    CUDA_CHECK_LAUNCH(name);
  });
}

}  // namespace

void softmax_forward_cuda(const Tensor& x, Tensor& y) {
  forward<false>(x, y, "softmax_forward_kernel");
}
void softmax_backward_cuda(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  backward<false>(y, grad_y, grad_x, "softmax_backward_kernel");
}
void log_softmax_forward_cuda(const Tensor& x, Tensor& y) {
  forward<true>(x, y, "log_softmax_forward_kernel");
}
void log_softmax_backward_cuda(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  backward<true>(y, grad_y, grad_x, "log_softmax_backward_kernel");
}

}  // namespace urpe::kernels
