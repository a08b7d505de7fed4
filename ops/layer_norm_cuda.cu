// CUDA layer normalisation over the last axis (maths in layer_norm.h).
//
// Forward: one warp per row (four rows per 128-thread block, rows grid-strided). Three sweeps
//   over the row, which stays in L1/L2 between them: Σx → μ; Σ(x − μ)² → r = 1/√(σ² + ε) (the
//   two-pass variance: no cancellation); then y = γ·(x − μ)·r + β. When D is a multiple of 4 the
//   sweeps use 16-byte float4 loads and stores (rows then start 16-byte aligned, since device
//   allocations are 256-byte aligned). Saves μ and r per row.
//   Bytes: 4·rows·D read (once from DRAM), 4·rows·D written, 8·D of γ, β, 8·rows of μ, r.
// Backward ∂x: one warp per row: ĝ = g·γ, x̂ = (x − μ)·r, ∂x = r·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)).
//   Bytes: 8·rows·D read (x, g), 4·rows·D written. float4 sweeps when D % 4 == 0, as the forward's
//   (the scalar sweeps ran at a quarter of the copy bandwidth: 5.3 ms of Table 5's step on an
//   H100, bench/results/gpu_h100_2026-11-27.md).
// Backward ∂γ = Σ_rows g·x̂, ∂β = Σ_rows g, deterministic in two passes: rows are cut into chunks
//   of 64; pass 1 has one thread per (chunk, d) adding its 64 rows in order (consecutive d:
//   coalesced); pass 2 has one thread per d adding the chunk partials in order.
//   Bytes: 8·rows·D read again, 16·chunks·D of partials, 8·D written.
// bf16 x, y, ∂y, ∂x (T = __nv_bfloat16): 2 bytes an element, the scalar (not float4) sweeps, the
// maths in FP32 and each result rounded once on store (ops/bf16_values.cuh).
#include "ops/bf16_values.cuh"
#include "ops/cuda_common.cuh"
#include "ops/layer_norm.h"

namespace urpe::kernels {

namespace {

constexpr int kRowsPerBlock = 4;  // warps per block, one row each
constexpr int64_t kChunkRows = 64;

// Sum over one row of f(d, x_d) by one warp; float4 loads when kVec (D % 4 == 0).
// T = float when kVec.
template <bool kVec, typename T, typename F>
__device__ __forceinline__ float warp_row_sum(const T* __restrict__ row, int64_t dim, F f) {
  const int lane = threadIdx.x % kWarp;
  float total = 0.0f;
  if (kVec) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    for (int64_t q = lane; q < dim / 4; q += kWarp) {
      const float4 v = row4[q];
      total += f(4 * q, v.x) + f(4 * q + 1, v.y) + f(4 * q + 2, v.z) + f(4 * q + 3, v.w);
    }
  } else {
    for (int64_t d = lane; d < dim; d += kWarp) total += f(d, load(row, d));
  }
  return warp_sum(total);
}

template <typename T, bool kVec>
__global__ void layer_norm_forward_kernel(const T* __restrict__ x,
                                          const float* __restrict__ gamma,
                                          const float* __restrict__ beta, float eps, int64_t rows,
                                          int64_t dim, T* __restrict__ y,
                                          float* __restrict__ mean, float* __restrict__ rstd) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warp = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
  const int64_t warps = int64_t(gridDim.x) * kRowsPerBlock;
  const float inv_dim = 1.0f / static_cast<float>(dim);
  for (int64_t r = warp; r < rows; r += warps) {
    const T* xr = x + r * dim;
    T* yr = y + r * dim;
    const float mu = warp_row_sum<kVec>(xr, dim, [](int64_t, float v) { return v; }) * inv_dim;
    const float var =
        warp_row_sum<kVec>(xr, dim, [mu](int64_t, float v) { return (v - mu) * (v - mu); }) *
        inv_dim;
    const float rs = 1.0f / sqrtf(var + eps);
    if (kVec) {
      const float4* x4 = reinterpret_cast<const float4*>(xr);
      const float4* g4 = reinterpret_cast<const float4*>(gamma);
      const float4* b4 = reinterpret_cast<const float4*>(beta);
      float4* y4 = reinterpret_cast<float4*>(yr);
      for (int64_t q = lane; q < dim / 4; q += kWarp) {
        const float4 v = x4[q], g = g4[q], b = b4[q];
        y4[q] = make_float4(g.x * (v.x - mu) * rs + b.x, g.y * (v.y - mu) * rs + b.y,
                            g.z * (v.z - mu) * rs + b.z, g.w * (v.w - mu) * rs + b.w);
      }
    } else {
      for (int64_t d = lane; d < dim; d += kWarp) store(yr, d, gamma[d] * (load(xr, d) - mu) * rs + beta[d]);
    }
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  }
}

// The row's four values at q (float4, kVec) as an array, for the sweeps below.
struct Four {
  float v[4];
};
__device__ __forceinline__ Four four(const float4 f) { return {{f.x, f.y, f.z, f.w}}; }

template <typename T, bool kVec>
__global__ void layer_norm_backward_input_kernel(const T* __restrict__ x,
                                                 const float* __restrict__ gamma,
                                                 const float* __restrict__ mean,
                                                 const float* __restrict__ rstd,
                                                 const T* __restrict__ grad_y, int64_t rows,
                                                 int64_t dim, T* __restrict__ grad_x) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warp = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
  const int64_t warps = int64_t(gridDim.x) * kRowsPerBlock;
  const float inv_dim = 1.0f / static_cast<float>(dim);
  for (int64_t r = warp; r < rows; r += warps) {
    const T* xr = x + r * dim;
    const T* gr = grad_y + r * dim;
    const float mu = mean[r], rs = rstd[r];
    float sum_g = 0.0f, sum_gx = 0.0f;
    if (kVec) {  // T = float, D % 4 == 0, 16-byte aligned rows
      const float4* x4 = reinterpret_cast<const float4*>(xr);
      const float4* g4 = reinterpret_cast<const float4*>(gr);
      const float4* gm4 = reinterpret_cast<const float4*>(gamma);
      for (int64_t q = lane; q < dim / 4; q += kWarp) {
        const Four xv = four(x4[q]), gv = four(g4[q]), gm = four(gm4[q]);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float gh = gv.v[i] * gm.v[i];
          sum_g += gh;
          sum_gx += gh * (xv.v[i] - mu) * rs;
        }
      }
    } else {
      for (int64_t d = lane; d < dim; d += kWarp) {
        const float gh = load(gr, d) * gamma[d];
        sum_g += gh;
        sum_gx += gh * (load(xr, d) - mu) * rs;
      }
    }
    const float mean_g = warp_sum(sum_g) * inv_dim, mean_gx = warp_sum(sum_gx) * inv_dim;
    T* out = grad_x + r * dim;
    if (kVec) {
      const float4* x4 = reinterpret_cast<const float4*>(xr);
      const float4* g4 = reinterpret_cast<const float4*>(gr);
      const float4* gm4 = reinterpret_cast<const float4*>(gamma);
      float4* out4 = reinterpret_cast<float4*>(out);
      for (int64_t q = lane; q < dim / 4; q += kWarp) {
        const Four xv = four(x4[q]), gv = four(g4[q]), gm = four(gm4[q]);
        Four o;
#pragma unroll
        for (int i = 0; i < 4; ++i) o.v[i] = rs * (gv.v[i] * gm.v[i] - mean_g - (xv.v[i] - mu) * rs * mean_gx);
        out4[q] = make_float4(o.v[0], o.v[1], o.v[2], o.v[3]);
      }
    } else {
      for (int64_t d = lane; d < dim; d += kWarp) {
        const float gh = load(gr, d) * gamma[d];
        const float xh = (load(xr, d) - mu) * rs;
        store(out, d, rs * (gh - mean_g - xh * mean_gx));
      }
    }
  }
}

// partial_gamma/beta[c·D + d] = Σ_{r in chunk c} g[r, d]·x̂[r, d] / g[r, d]
template <typename T>
__global__ void layer_norm_param_partial_kernel(const T* __restrict__ x,
                                                const float* __restrict__ mean,
                                                const float* __restrict__ rstd,
                                                const T* __restrict__ grad_y, int64_t rows,
                                                int64_t dim, int64_t chunks,
                                                double* __restrict__ partial_gamma,
                                                double* __restrict__ partial_beta) {
  URPE_GRID_STRIDE(cd, chunks * dim) {
    const int64_t c = cd / dim, d = cd % dim;
    const int64_t r_end = min(rows, (c + 1) * kChunkRows);
    double sum_gamma = 0, sum_beta = 0;
    for (int64_t r = c * kChunkRows; r < r_end; ++r) {
      const float g = load(grad_y, r * dim + d);
      sum_gamma += g * ((load(x, r * dim + d) - mean[r]) * rstd[r]);
      sum_beta += g;
    }
    partial_gamma[cd] = sum_gamma;
    partial_beta[cd] = sum_beta;
  }
}

__global__ void layer_norm_param_finish_kernel(const double* __restrict__ partial_gamma,
                                               const double* __restrict__ partial_beta,
                                               int64_t dim, int64_t chunks,
                                               float* __restrict__ grad_gamma,
                                               float* __restrict__ grad_beta) {
  URPE_GRID_STRIDE(d, dim) {
    double sum_gamma = 0, sum_beta = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      sum_gamma += partial_gamma[c * dim + d];
      sum_beta += partial_beta[c * dim + d];
    }
    grad_gamma[d] = static_cast<float>(sum_gamma);
    grad_beta[d] = static_cast<float>(sum_beta);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void layer_norm_forward_cuda(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                             Tensor& y, Tensor& mean, Tensor& rstd) {
  cuda::Context& ctx = context_of(y);
  const int64_t dim = x.size(-1);
  const int64_t rows = dim == 0 ? 0 : x.numel() / dim;
  if (rows == 0) return;
  const int threads = kWarp * kRowsPerBlock;
  const int blocks = grid_for(ctx, rows, kRowsPerBlock);
  if (x.dtype() == DType::bf16) {
    using T = __nv_bfloat16;
    layer_norm_forward_kernel<T, false><<<blocks, threads, 0, ctx.stream()>>>(
        values<T>(x), gamma.f32(), beta.f32(), eps, rows, dim, values<T>(y), mean.f32(), rstd.f32());
    CUDA_CHECK_LAUNCH("layer_norm_forward_kernel");
    return;
  }
  const bool vec = dim % 4 == 0 && aligned16(x.f32()) && aligned16(y.f32()) &&
                   aligned16(gamma.f32()) && aligned16(beta.f32());
  if (vec) {
    layer_norm_forward_kernel<float, true><<<blocks, threads, 0, ctx.stream()>>>(
        x.f32(), gamma.f32(), beta.f32(), eps, rows, dim, y.f32(), mean.f32(), rstd.f32());
  } else {
    layer_norm_forward_kernel<float, false><<<blocks, threads, 0, ctx.stream()>>>(
        x.f32(), gamma.f32(), beta.f32(), eps, rows, dim, y.f32(), mean.f32(), rstd.f32());
  }
  CUDA_CHECK_LAUNCH("layer_norm_forward_kernel");
}

void layer_norm_backward_cuda(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                              const Tensor& rstd, const Tensor& grad_y, Tensor& grad_x,
                              Tensor& grad_gamma, Tensor& grad_beta) {
  cuda::Context& ctx = context_of(grad_x);
  const int64_t dim = x.size(-1);
  const int64_t rows = dim == 0 ? 0 : x.numel() / dim;
  if (dim == 0) return;
  if (rows == 0) {
    grad_gamma.fill(0.0f);
    grad_beta.fill(0.0f);
    return;
  }
  const int threads = kWarp * kRowsPerBlock;
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  cuda::DeviceBuffer partial_gamma(ctx, sizeof(double) * chunks * dim);
  cuda::DeviceBuffer partial_beta(ctx, sizeof(double) * chunks * dim);
  const int flat_threads = 256;
  const bool vec = x.dtype() == DType::f32 && dim % 4 == 0 && aligned16(x.f32()) && aligned16(grad_y.f32()) &&
                   aligned16(grad_x.f32()) && aligned16(gamma.f32());
  if (vec) {
    layer_norm_backward_input_kernel<float, true><<<grid_for(ctx, rows, kRowsPerBlock), threads, 0, ctx.stream()>>>(
        x.f32(), gamma.f32(), mean.f32(), rstd.f32(), grad_y.f32(), rows, dim, grad_x.f32());
    CUDA_CHECK_LAUNCH("layer_norm_backward_input_kernel");
  }
  with_device_value_type(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (!vec) {
      layer_norm_backward_input_kernel<T, false><<<grid_for(ctx, rows, kRowsPerBlock), threads, 0, ctx.stream()>>>(
          values<T>(x), gamma.f32(), mean.f32(), rstd.f32(), values<T>(grad_y), rows, dim, values<T>(grad_x));
      CUDA_CHECK_LAUNCH("layer_norm_backward_input_kernel");
    }
    layer_norm_param_partial_kernel<T><<<grid_for(ctx, chunks * dim, flat_threads), flat_threads, 0,
                                         ctx.stream()>>>(values<T>(x), mean.f32(), rstd.f32(),
                                                         values<T>(grad_y), rows, dim, chunks,
                                                         partial_gamma.as<double>(),
                                                         partial_beta.as<double>());
    CUDA_CHECK_LAUNCH("layer_norm_param_partial_kernel");
  });
  layer_norm_param_finish_kernel<<<grid_for(ctx, dim, flat_threads), flat_threads, 0,
                                   ctx.stream()>>>(partial_gamma.as<double>(),
                                                   partial_beta.as<double>(), dim, chunks,
                                                   grad_gamma.f32(), grad_beta.f32());
  CUDA_CHECK_LAUNCH("layer_norm_param_finish_kernel");
}

}  // namespace urpe::kernels
