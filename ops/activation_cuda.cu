// CUDA kernels for the pointwise nonlinearities (maths in activation.h): one thread per element,
// grid-stride. Forward moves 4 B in + 4 B out per element; backward 8 B in (x, g) + 4 B out.
//   relu: y = max(x, 0)                       ∂x = g·[x > 0]
//   gelu: y = x·Φ(x), Φ(x) = (1 + erf(x/√2))/2   ∂x = g·(Φ(x) + x·φ(x)),  φ(x) = e^{−x²/2}/√(2π)
// Φ is CUDA's normcdff (erfc-based: accurate in the negative tail, where 1 + erf(x/√2) cancels).
// bf16 tensors (T = __nv_bfloat16): 2 B an element each way, the maths in FP32, each result
// rounded once to nearest even (ops/bf16_values.cuh), as the CPU twin does.
#include "ops/activation.h"
#include "ops/bf16_values.cuh"
#include "ops/cuda_common.cuh"

namespace urpe::kernels {

namespace {

constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

template <typename T>
__global__ void relu_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  URPE_GRID_STRIDE(k, n) {
    const float v = load(x, k);
    store(y, k, v < 0.0f ? 0.0f : v);  // NaN stays NaN, as on the CPU
  }
}

template <typename T>
__global__ void relu_backward_kernel(const T* __restrict__ x, const T* __restrict__ g,
                                     T* __restrict__ grad_x, int64_t n) {
  URPE_GRID_STRIDE(k, n) store(grad_x, k, load(x, k) > 0.0f ? load(g, k) : 0.0f);
}

template <typename T>
__global__ void gelu_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  URPE_GRID_STRIDE(k, n) {
    const float v = load(x, k);
    store(y, k, v * normcdff(v));
  }
}

template <typename T>
__global__ void gelu_backward_kernel(const T* __restrict__ x, const T* __restrict__ g,
                                     T* __restrict__ grad_x, int64_t n) {
  URPE_GRID_STRIDE(k, n) {
    const float v = load(x, k);
    const float cdf = normcdff(v);
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    store(grad_x, k, load(g, k) * (cdf + v * pdf));
  }
}

}  // namespace

void activation_forward_cuda(Activation kind, const Tensor& x, Tensor& y) {
  cuda::Context& ctx = context_of(y);
  const int64_t n = x.numel();
  if (n == 0) return;
  const int threads = 256, blocks = grid_for(ctx, n, threads);
  with_device_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (kind == Activation::relu) {
      relu_forward_kernel<T><<<blocks, threads, 0, ctx.stream()>>>(values<T>(x), values<T>(y), n);
      CUDA_CHECK_LAUNCH("relu_forward_kernel");
    } else {
      gelu_forward_kernel<T><<<blocks, threads, 0, ctx.stream()>>>(values<T>(x), values<T>(y), n);
      CUDA_CHECK_LAUNCH("gelu_forward_kernel");
    }
  });
}

void activation_backward_cuda(Activation kind, const Tensor& x, const Tensor& grad_y,
                              Tensor& grad_x) {
  cuda::Context& ctx = context_of(grad_x);
  const int64_t n = x.numel();
  if (n == 0) return;
  const int threads = 256, blocks = grid_for(ctx, n, threads);
  with_device_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (kind == Activation::relu) {
      relu_backward_kernel<T><<<blocks, threads, 0, ctx.stream()>>>(values<T>(x), values<T>(grad_y),
                                                                    values<T>(grad_x), n);
      CUDA_CHECK_LAUNCH("relu_backward_kernel");
    } else {
      gelu_backward_kernel<T><<<blocks, threads, 0, ctx.stream()>>>(values<T>(x), values<T>(grad_y),
                                                                    values<T>(grad_x), n);
      CUDA_CHECK_LAUNCH("gelu_backward_kernel");
    }
  });
}

}  // namespace urpe::kernels
