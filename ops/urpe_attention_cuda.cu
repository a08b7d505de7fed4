// The fused URPE attention core on CUDA (maths in urpe_attention.h):
//   Z = S·scale + B_h[bias_map] (−∞ where masked),  P = softmax_j(Z),  A = P ⊙ C_h[c_map]
//
// Forward (urpe_attention_forward_kernel): one warp per row (b, h, i), eight rows per block, rows
//   grid-strided; lanes stride over j. Sweep 1 finds max_j Z, sweep 2 adds e^{Z−m}, sweep 3
//   writes P and A (Z is recomputed from S and the tables each sweep; the row stays in L1/L2).
//   A fully masked row (m = −∞) writes P = A = 0. Map values are range-checked on the host by
//   the public op (urpe_attention.cpp) before any kernel runs.
//   Bytes: 4·B·H·Nq·Nk of S read, 8·B·H·Nq·Nk written (P and A), the maps (4·Nq·Nk, or per batch)
//   and tables (small) from cache.
// Backward, G = ∂L/∂A:
//   urpe_attention_backward_rows_kernel, one warp per row: dP = G·C, t = Σ_j P·dP (in double,
//     like the CPU reference: dP − t cancels), ∂S = scale·P·(dP − t) (0 where masked); saves t
//     per row when ∂B is wanted.
//     Bytes: 8·B·H·Nq·Nk read (G, P), 4·B·H·Nq·Nk written.
//   ∂B and ∂C (the table gradients, summed over every cell of a bucket): in
//     urpe_attention_table_grad_cuda.cu.
// AttentionNorm::exp (no denominator): the forward kernel writes E = e^Z (no max, no sum) in P's
//   place and A = E·C; the rows kernel uses t = 0, so ∂S = scale·E·G·C and the bias kernel's
//   P·(G·C − t) is dZ as well.
// bf16 S, P, A, G, ∂S (T = __nv_bfloat16, precision=bf16): the same kernels reading widened values
// and rounding P, A, ∂S once on store (ops/bf16_values.cuh): 2 bytes an element instead of 4; the
// row sums stay double, the tables f32. Backward reads the rounded P, as the CPU twin does.
#include "ops/bf16_values.cuh"
#include "ops/urpe_attention_geometry.cuh"

namespace urpe::kernels {

namespace {

constexpr int kRowsPerBlock = 8;

template <typename T>
__global__ void urpe_attention_forward_kernel(AttentionGeometry geo,
                                              const T* __restrict__ scores,
                                              T* __restrict__ probs, T* __restrict__ out) {
  const int lane = threadIdx.x % kWarp;
  const int64_t rows = geo.batch * geo.heads * geo.nq, nk = geo.nk;
  URPE_WARP_STRIDE(r, rows) {
    const int64_t b = r / (geo.heads * geo.nq), h = (r / geo.nq) % geo.heads, i = r % geo.nq;
    const T* s_row = scores + r * nk;
    T* p_row = probs ? probs + r * nk : nullptr;  // null when P is not saved (no backward)
    T* a_row = out + r * nk;
    auto logit = [&](int64_t j) {
      return geo.masked(b, i, j) ? -INFINITY : load(s_row, j) * geo.scale + geo.bias(b, h, i * nk + j);
    };
    // P (or E) where it is saved, and A = P·C: the same two writes for both normalisations.
    auto store_pa = [&](int64_t j, float p) {
      if (p_row) store(p_row, j, p);
      store(a_row, j, p * geo.c_value(b, h, i * nk + j));
    };
    if (!geo.normalize) {  // E = e^Z, A = E·C (e^−∞ = 0 where masked)
      for (int64_t j = lane; j < nk; j += kWarp) store_pa(j, expf(logit(j)));
      continue;
    }
    float m = -INFINITY;
    for (int64_t j = lane; j < nk; j += kWarp) m = fmaxf(m, logit(j));
    m = warp_max(m);
    if (m == -INFINITY) {  // fully masked row: attends to nothing
      for (int64_t j = lane; j < nk; j += kWarp) store_pa(j, 0.0f);
      continue;
    }
    double sum = 0.0;  // each e^{z−m} ≤ 1 in float, their sum in double (as the CPU reference)
    for (int64_t j = lane; j < nk; j += kWarp) {
      const float z = logit(j);
      sum += z == -INFINITY ? 0.0f : expf(z - m);
    }
    const float inv = static_cast<float>(1.0 / warp_sum(sum));
    for (int64_t j = lane; j < nk; j += kWarp) {
      const float z = logit(j);
      store_pa(j, z == -INFINITY ? 0.0f : expf(z - m) * inv);  // p = 0 where masked, so A is too
    }
  }
}

template <typename T>
__global__ void urpe_attention_backward_rows_kernel(AttentionGeometry geo,
                                                    const T* __restrict__ grad_out,
                                                    const T* __restrict__ probs,
                                                    T* __restrict__ grad_scores,
                                                    double* __restrict__ row_dot) {
  const int lane = threadIdx.x % kWarp;
  const int64_t rows = geo.batch * geo.heads * geo.nq, nk = geo.nk;
  URPE_WARP_STRIDE(r, rows) {
    const int64_t b = r / (geo.heads * geo.nq), h = (r / geo.nq) % geo.heads, i = r % geo.nq;
    const T* g_row = grad_out + r * nk;
    const T* p_row = probs + r * nk;
    T* ds_row = grad_scores + r * nk;
    auto grad_p = [&](int64_t j) { return load(g_row, j) * geo.c_value(b, h, i * nk + j); };  // dP = G·C
    double dot = 0.0;  // stays 0 without the denominator
    for (int64_t j = lane; j < nk && geo.normalize; j += kWarp) {
      if (geo.masked(b, i, j)) continue;
      dot += static_cast<double>(load(p_row, j)) * grad_p(j);
    }
    dot = warp_sum(dot);
    for (int64_t j = lane; j < nk; j += kWarp) {
      if (geo.masked(b, i, j)) {
        store(ds_row, j, 0.0f);
      } else {
        const double dz = static_cast<double>(load(p_row, j)) * (grad_p(j) - dot);
        store(ds_row, j, static_cast<float>(geo.scale * dz));
      }
    }
    if (row_dot != nullptr && lane == 0) row_dot[r] = dot;
  }
}

}  // namespace

// ---- forward ----

void urpe_attention_forward_cuda(const Tensor& scores, const UrpeAttentionParams& params,
                                 Tensor& probs, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const AttentionGeometry geo = geometry_of(scores, params);
  const int64_t rows = geo.batch * geo.heads * geo.nq;
  if (rows == 0 || geo.nk == 0) return;
  with_device_value_type(scores.dtype(), [&](auto tag) {
    using T = decltype(tag);
    urpe_attention_forward_kernel<T><<<grid_for(ctx, rows, kRowsPerBlock), kWarp * kRowsPerBlock, 0,
                                       ctx.stream()>>>(geo, values<T>(scores),
                                                       probs.defined() ? values<T>(probs) : nullptr,
                                                       values<T>(out));
    CUDA_CHECK_LAUNCH("urpe_attention_forward_kernel");
  });
}

// ---- backward ----

void urpe_attention_backward_cuda(const Tensor& grad_out, const Tensor& probs,
                                  const UrpeAttentionParams& params, Tensor& grad_scores,
                                  Tensor* grad_bias_table, Tensor* grad_c_table) {
  cuda::Context& ctx = context_of(grad_scores);
  const AttentionGeometry geo = geometry_of(probs, params);
  const int64_t rows = geo.batch * geo.heads * geo.nq;
  const bool want_bias = grad_bias_table != nullptr && geo.bias_table != nullptr;
  const bool want_c = grad_c_table != nullptr && geo.c_table != nullptr;
  if (rows == 0 || geo.nk == 0) {
    if (grad_bias_table && grad_bias_table->numel()) grad_bias_table->fill(0.0f);
    if (grad_c_table && grad_c_table->numel()) grad_c_table->fill(0.0f);
    return;
  }
  cuda::DeviceBuffer row_dot(ctx, want_bias ? sizeof(double) * rows : 0);
  with_device_value_type(probs.dtype(), [&](auto tag) {
    using T = decltype(tag);
    urpe_attention_backward_rows_kernel<T><<<grid_for(ctx, rows, kRowsPerBlock),
                                             kWarp * kRowsPerBlock, 0, ctx.stream()>>>(
        geo, values<T>(grad_out), values<T>(probs), values<T>(grad_scores),
        want_bias ? row_dot.as<double>() : nullptr);
    CUDA_CHECK_LAUNCH("urpe_attention_backward_rows_kernel");
  });
  urpe_attention_table_gradients_cuda(ctx, geo, params, grad_out, probs,
                                      want_bias ? row_dot.as<double>() : nullptr,
                                      want_bias ? grad_bias_table : nullptr, want_c ? grad_c_table : nullptr);
}

}  // namespace urpe::kernels
