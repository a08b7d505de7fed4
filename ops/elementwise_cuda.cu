// CUDA kernels for elementwise arithmetic (maths in elementwise.h).
//
// Forward: out[k] = a[k mod |a|] ∘ b[k mod |b|]; one thread per output element (grid-stride).
//   Bytes: 4·(|a| + |b|) read (the smaller operand stays in cache), 4·n written.
// Backward: the local gradient of each output element, e.g. ∂a_k = g_k·b[k mod |b|], summed over
//   the repeats of a broadcast operand. With r = n/|x| repeats of operand x, element e of ∂x is
//   Σ_{t<r} local(t·|x| + e). Deterministic two-pass reduction: pass 1 splits the r repeats into
//   P fixed chunks (P depends only on the sizes), one thread per (chunk, e) summing its chunk in
//   order into a partial; pass 2 sums the P partials of each e in chunk order. Threads with
//   consecutive e read consecutive addresses, so both passes are coalesced.
//   Bytes: 4·n of g plus the other operand, 8·P·|x| of partials (double), 4·|x| written.
// affine: out = alpha·x + beta; 4 B read + 4 B written per element.
// bf16 (ops/bf16_values.cuh): a binary op with any bf16 operand or output reads them through a
// run-time dtype (AnyDeviceValues), computes in FP32 and rounds a bf16 output once. Its gradients
// take the same two passes as f32's, templated on how values are read and on the gradient's
// dtype (rounded once, in pass 2). (They were one thread per element of a broadcast operand
// summing all its repeats: Transformer-XL's r_w / r_r biases, 410 elements of 9,000 repeats,
// made `add backward` 38% of its bf16 step on an H100, bench/results/gpu_h100_2026-11-27.md.)
// affine is templated on the type.
#include "ops/bf16_values.cuh"
#include "ops/cuda_common.cuh"
#include "ops/elementwise.h"

namespace urpe::kernels {

namespace {

__device__ __forceinline__ float apply_binary(BinaryOp op, float x, float y) {
  switch (op) {
    case BinaryOp::add: return x + y;
    case BinaryOp::sub: return x - y;
    case BinaryOp::mul: return x * y;
    default: return x / y;
  }
}

// Which operand's gradient a reduction computes.
enum class Side { a, b };

// The local gradient of output element k with respect to the operand on `side`, in FP32. V reads
// the values: const float* (every operand f32) or AnyDeviceValues (any of them bf16).
template <typename V>
__device__ __forceinline__ float local_gradient(BinaryOp op, Side side, V g, V a, V b, int64_t k, int64_t na,
                                                int64_t nb) {
  const float gk = g[k];
  if (side == Side::a) {
    switch (op) {
      case BinaryOp::add:
      case BinaryOp::sub: return gk;
      case BinaryOp::mul: return gk * b[k % nb];
      default: return gk / b[k % nb];
    }
  }
  switch (op) {
    case BinaryOp::add: return gk;
    case BinaryOp::sub: return -gk;
    case BinaryOp::mul: return gk * a[k % na];
    default: {
      const float y = b[k % nb];
      return -gk * a[k % na] / (y * y);
    }
  }
}

// out[k] = a[k mod na] ∘ b[k mod nb]
__global__ void binary_broadcast_forward_kernel(BinaryOp op, const float* __restrict__ a,
                                                int64_t na, const float* __restrict__ b,
                                                int64_t nb, float* __restrict__ out, int64_t n) {
  if (na == n && nb == n) {
    URPE_GRID_STRIDE(k, n) out[k] = apply_binary(op, a[k], b[k]);
  } else {
    URPE_GRID_STRIDE(k, n) out[k] = apply_binary(op, a[k % na], b[k % nb]);
  }
}

// The operand is not broadcast: grad[k] = local(k), stored as T.
template <typename V, typename T>
__global__ void binary_elementwise_backward_kernel(BinaryOp op, Side side, V g, V a, int64_t na, V b, int64_t nb,
                                                   T* __restrict__ grad, int64_t n) {
  URPE_GRID_STRIDE(k, n) store(grad, k, local_gradient(op, side, g, a, b, k, na, nb));
}

// Pass 1: partial[c·size + e] = Σ_{t in chunk c} local(t·size + e), t ascending.
template <typename V>
__global__ void binary_broadcast_backward_partial_kernel(BinaryOp op, Side side, V g, V a, int64_t na, V b,
                                                         int64_t nb, int64_t size, int64_t repeats, int64_t chunk,
                                                         int64_t chunks, double* __restrict__ partial) {
  URPE_GRID_STRIDE(ce, chunks * size) {
    const int64_t c = ce / size, e = ce % size;
    const int64_t t_end = min(repeats, (c + 1) * chunk);
    double total = 0;
    for (int64_t t = c * chunk; t < t_end; ++t)
      total += local_gradient(op, side, g, a, b, t * size + e, na, nb);
    partial[ce] = total;
  }
}

// Pass 2: grad[e] = Σ_c partial[c·size + e], c ascending, stored as T (rounded once when bf16).
template <typename T>
__global__ void binary_broadcast_backward_finish_kernel(const double* __restrict__ partial,
                                                        int64_t size, int64_t chunks,
                                                        T* __restrict__ grad) {
  URPE_GRID_STRIDE(e, size) {
    double total = 0;
    for (int64_t c = 0; c < chunks; ++c) total += partial[c * size + e];
    store(grad, e, static_cast<float>(total));
  }
}

template <typename T>
__global__ void affine_kernel(const T* __restrict__ x, float alpha, float beta,
                              T* __restrict__ out, int64_t n) {
  URPE_GRID_STRIDE(k, n) store(out, k, alpha * load(x, k) + beta);
}

// ---- any bf16 among the operands (see the file comment) ----

// out[k] = a[k mod na] ∘ b[k mod nb] in FP32, stored as T.
template <typename T>
__global__ void binary_any_forward_kernel(BinaryOp op, AnyDeviceValues a, int64_t na, AnyDeviceValues b,
                                          int64_t nb, T* __restrict__ out, int64_t n) {
  URPE_GRID_STRIDE(k, n) store(out, k, apply_binary(op, a[k % na], b[k % nb]));
}

// The gradient of the operand on `side` (grad: its size, its dtype), from the n elements of g.
template <typename V>
void operand_gradient(cuda::Context& ctx, BinaryOp op, Side side, V g, int64_t n, V a, int64_t na, V b, int64_t nb,
                      Tensor& grad) {
  const int64_t size = grad.numel();
  if (size == 0) return;
  const int threads = 256;
  with_device_value_type(grad.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (size == n) {
      binary_elementwise_backward_kernel<V, T><<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(
          op, side, g, a, na, b, nb, values<T>(grad), n);
      CUDA_CHECK_LAUNCH("binary_elementwise_backward_kernel");
      return;
    }
    const int64_t repeats = n / size;
    // About 64K threads in pass 1, whatever the device (so the summation order is fixed by shapes).
    const int64_t wanted = std::max<int64_t>(1, (int64_t(1) << 16) / size);
    const int64_t chunks_guess = std::min<int64_t>(repeats, wanted);
    const int64_t chunk = (repeats + chunks_guess - 1) / chunks_guess;
    const int64_t chunks = (repeats + chunk - 1) / chunk;
    cuda::DeviceBuffer partial(ctx, sizeof(double) * chunks * size);
    binary_broadcast_backward_partial_kernel<V><<<grid_for(ctx, chunks * size, threads), threads, 0, ctx.stream()>>>(
        op, side, g, a, na, b, nb, size, repeats, chunk, chunks, partial.as<double>());
    CUDA_CHECK_LAUNCH("binary_broadcast_backward_partial_kernel");
    binary_broadcast_backward_finish_kernel<T><<<grid_for(ctx, size, threads), threads, 0, ctx.stream()>>>(
        partial.as<double>(), size, chunks, values<T>(grad));
    CUDA_CHECK_LAUNCH("binary_broadcast_backward_finish_kernel");
  });
}

}  // namespace

// ---- forward ----

void binary_forward_cuda(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const int64_t n = out.numel();
  if (n == 0) return;
  const int threads = 256;
  if (a.dtype() != DType::f32 || b.dtype() != DType::f32) {
    with_device_value_type(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      binary_any_forward_kernel<T><<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(
          op, any_device_values(a), a.numel(), any_device_values(b), b.numel(), values<T>(out), n);
      CUDA_CHECK_LAUNCH("binary_any_forward_kernel");
    });
    return;
  }
  binary_broadcast_forward_kernel<<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(
      op, a.f32(), a.numel(), b.f32(), b.numel(), out.f32(), n);
  CUDA_CHECK_LAUNCH("binary_broadcast_forward_kernel");
}

// ---- backward ----

void binary_backward_cuda(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& grad_out,
                          Tensor* grad_a, Tensor* grad_b) {
  cuda::Context& ctx = context_of(grad_out);
  if (grad_out.numel() == 0) {
    if (grad_a && grad_a->numel()) grad_a->fill(0.0f);
    if (grad_b && grad_b->numel()) grad_b->fill(0.0f);
    return;
  }
  const int64_t n = grad_out.numel();
  if (grad_out.dtype() != DType::f32 || a.dtype() != DType::f32 || b.dtype() != DType::f32) {
    const AnyDeviceValues g = any_device_values(grad_out), av = any_device_values(a), bv = any_device_values(b);
    if (grad_a) operand_gradient(ctx, op, Side::a, g, n, av, a.numel(), bv, b.numel(), *grad_a);
    if (grad_b) operand_gradient(ctx, op, Side::b, g, n, av, a.numel(), bv, b.numel(), *grad_b);
    return;
  }
  if (grad_a) operand_gradient(ctx, op, Side::a, grad_out.f32(), n, a.f32(), a.numel(), b.f32(), b.numel(), *grad_a);
  if (grad_b) operand_gradient(ctx, op, Side::b, grad_out.f32(), n, a.f32(), a.numel(), b.f32(), b.numel(), *grad_b);
}

void affine_cuda(const Tensor& x, float alpha, float beta, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const int64_t n = x.numel();
  if (n == 0) return;
  const int threads = 256;
  with_device_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    affine_kernel<T><<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(values<T>(x), alpha, beta,
                                                                              values<T>(out), n);
    CUDA_CHECK_LAUNCH("affine_kernel");
  });
}

}  // namespace urpe::kernels
