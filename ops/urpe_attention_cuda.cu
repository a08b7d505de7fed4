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
//   urpe_attention_bias_grad_kernel / urpe_attention_c_grad_kernel, deterministic (no float
//     atomics): the map's cells are grouped by bucket with a stable sort (BucketIndex), then one
//     block per (h, k) adds, over its bucket's cells (and every batch item when the map is
//     shared), G·P for ∂C_h[k] or P·(G·C − t) = dZ for ∂B_h[k], with a strided loop and a fixed
//     shuffle tree in double.
//     Bytes: 8·B·H·Nq·Nk read again per table (gathered along the bucket's cells), 4·H·K written.
// AttentionNorm::exp (no denominator): the forward kernel writes E = e^Z (no max, no sum) in P's
//   place and A = E·C; the rows kernel uses t = 0, so ∂S = scale·E·G·C and the bias kernel's
//   P·(G·C − t) is dZ as well.
#include "ops/bucket_index_cuda.cuh"
#include "ops/cuda_common.cuh"
#include "ops/urpe_attention.h"
#include "ops/urpe_attention_cells.cuh"

namespace urpe::kernels {

namespace {

constexpr int kRowsPerBlock = 8;

// Everything a kernel needs to evaluate Z, C and the masks at (b, h, i, j).
struct AttentionGeometry {
  int64_t batch, heads, nq, nk;
  float scale;
  const float* bias_table;   // (H, Kb) or null
  int64_t bias_buckets;
  const int32_t* bias_map;   // (Nq, Nk) or (B, Nq, Nk)
  int64_t bias_map_stride;   // 0 when shared by the batch, Nq·Nk otherwise
  const float* c_table;      // (H, Kc) or null: C ≡ 1
  int64_t c_buckets;
  const int32_t* c_map;
  int64_t c_map_stride;
  AttentionMask mask;
  bool normalize;  // false: AttentionNorm::exp

  __device__ __forceinline__ bool masked(int64_t b, int64_t i, int64_t j) const {
    return mask.masked(b, i, j, nk);
  }
  __device__ __forceinline__ float bias(int64_t b, int64_t h, int64_t ij) const {
    return bias_table ? bias_table[h * bias_buckets + bias_map[b * bias_map_stride + ij]] : 0.0f;
  }
  __device__ __forceinline__ float c_value(int64_t b, int64_t h, int64_t ij) const {
    return c_table ? c_table[h * c_buckets + c_map[b * c_map_stride + ij]] : 1.0f;
  }
};

__global__ void urpe_attention_forward_kernel(AttentionGeometry geo,
                                              const float* __restrict__ scores,
                                              float* __restrict__ probs, float* __restrict__ out) {
  const int lane = threadIdx.x % kWarp;
  const int64_t rows = geo.batch * geo.heads * geo.nq, nk = geo.nk;
  URPE_WARP_STRIDE(r, rows) {
    const int64_t b = r / (geo.heads * geo.nq), h = (r / geo.nq) % geo.heads, i = r % geo.nq;
    const float* s_row = scores + r * nk;
    float* p_row = probs ? probs + r * nk : nullptr;  // null when P is not saved (no backward)
    float* a_row = out + r * nk;
    auto logit = [&](int64_t j) {
      return geo.masked(b, i, j) ? -INFINITY : s_row[j] * geo.scale + geo.bias(b, h, i * nk + j);
    };
    // P (or E) where it is saved, and A = P·C: the same two writes for both normalisations.
    auto store = [&](int64_t j, float p) {
      if (p_row) p_row[j] = p;
      a_row[j] = p * geo.c_value(b, h, i * nk + j);
    };
    if (!geo.normalize) {  // E = e^Z, A = E·C (e^−∞ = 0 where masked)
      for (int64_t j = lane; j < nk; j += kWarp) store(j, expf(logit(j)));
      continue;
    }
    float m = -INFINITY;
    for (int64_t j = lane; j < nk; j += kWarp) m = fmaxf(m, logit(j));
    m = warp_max(m);
    if (m == -INFINITY) {  // fully masked row: attends to nothing
      for (int64_t j = lane; j < nk; j += kWarp) {
        if (p_row) p_row[j] = 0.0f;
        a_row[j] = 0.0f;
      }
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
      store(j, z == -INFINITY ? 0.0f : expf(z - m) * inv);  // p = 0 where masked, so A is too
    }
  }
}

__global__ void urpe_attention_backward_rows_kernel(AttentionGeometry geo,
                                                    const float* __restrict__ grad_out,
                                                    const float* __restrict__ probs,
                                                    float* __restrict__ grad_scores,
                                                    double* __restrict__ row_dot) {
  const int lane = threadIdx.x % kWarp;
  const int64_t rows = geo.batch * geo.heads * geo.nq, nk = geo.nk;
  URPE_WARP_STRIDE(r, rows) {
    const int64_t b = r / (geo.heads * geo.nq), h = (r / geo.nq) % geo.heads, i = r % geo.nq;
    const float* g_row = grad_out + r * nk;
    const float* p_row = probs + r * nk;
    float* ds_row = grad_scores + r * nk;
    auto grad_p = [&](int64_t j) { return g_row[j] * geo.c_value(b, h, i * nk + j); };  // dP = G·C
    double dot = 0.0;  // stays 0 without the denominator
    for (int64_t j = lane; j < nk && geo.normalize; j += kWarp) {
      if (geo.masked(b, i, j)) continue;
      dot += static_cast<double>(p_row[j]) * grad_p(j);
    }
    dot = warp_sum(dot);
    for (int64_t j = lane; j < nk; j += kWarp) {
      if (geo.masked(b, i, j)) {
        ds_row[j] = 0.0f;
      } else {
        const double dz = static_cast<double>(p_row[j]) * (grad_p(j) - dot);
        ds_row[j] = static_cast<float>(geo.scale * dz);
      }
    }
    if (row_dot != nullptr && lane == 0) row_dot[r] = dot;
  }
}

// One block per (h, k): grad_table[h, k] = Σ over the cells of bucket k (× the batch when the map
// is shared) of G·P (kForC) or P·(G·C − t) (the bias table).
template <bool kForC>
__device__ __forceinline__ void table_grad_blocks(const AttentionGeometry& geo,
                                                  const float* __restrict__ grad_out,
                                                  const float* __restrict__ probs,
                                                  const double* __restrict__ row_dot,
                                                  const int32_t* __restrict__ positions,
                                                  const int32_t* __restrict__ offsets,
                                                  int64_t buckets, bool shared_map,
                                                  float* __restrict__ grad_table) {
  URPE_SHARED(double, shared, [32]);
  const int64_t cells = geo.nq * geo.nk;
  for (int64_t hk = blockIdx.x; hk < geo.heads * buckets; hk += gridDim.x) {
    const int64_t h = hk / buckets, key = hk % buckets;
    const int64_t begin = offsets[key], length = offsets[key + 1] - begin;
    const int64_t items = shared_map ? length * geo.batch : length;
    double total = 0;
    for (int64_t item = threadIdx.x; item < items; item += blockDim.x) {
      const auto [b, ij] = bucket_cell(positions, begin, length, item, shared_map, cells);
      const int64_t i = ij / geo.nk, j = ij % geo.nk;
      if (geo.masked(b, i, j)) continue;
      const int64_t row = (b * geo.heads + h) * geo.nq + i;
      const int64_t e = row * geo.nk + j;
      const float g = grad_out[e], p = probs[e];
      if (kForC) {
        total += static_cast<double>(g) * p;
      } else {
        const float dp = g * geo.c_value(b, h, ij);
        total += static_cast<double>(p) * (dp - row_dot[row]);
      }
    }
    total = block_sum(total, shared);
    if (threadIdx.x == 0) grad_table[hk] = static_cast<float>(total);
  }
}

// ∂B_h[k] and ∂C_h[k]: two kernels (two names in Nsight) over the same loop.
__global__ void urpe_attention_bias_grad_kernel(AttentionGeometry geo,
                                                const float* __restrict__ grad_out,
                                                const float* __restrict__ probs,
                                                const double* __restrict__ row_dot,
                                                const int32_t* __restrict__ positions,
                                                const int32_t* __restrict__ offsets,
                                                int64_t buckets, bool shared_map,
                                                float* __restrict__ grad_table) {
  table_grad_blocks<false>(geo, grad_out, probs, row_dot, positions, offsets, buckets, shared_map,
                           grad_table);
}

__global__ void urpe_attention_c_grad_kernel(AttentionGeometry geo,
                                             const float* __restrict__ grad_out,
                                             const float* __restrict__ probs,
                                             const double* __restrict__ row_dot,
                                             const int32_t* __restrict__ positions,
                                             const int32_t* __restrict__ offsets,
                                             int64_t buckets, bool shared_map,
                                             float* __restrict__ grad_table) {
  table_grad_blocks<true>(geo, grad_out, probs, row_dot, positions, offsets, buckets, shared_map,
                          grad_table);
}

int64_t map_stride(const Tensor& map, int64_t nq, int64_t nk) {
  return map.dim() == 3 ? nq * nk : 0;
}

AttentionGeometry geometry_of(const Tensor& scores, const UrpeAttentionParams& params) {
  AttentionGeometry geo{};
  geo.batch = scores.size(0);
  geo.heads = scores.size(1);
  geo.nq = scores.size(2);
  geo.nk = scores.size(3);
  geo.scale = params.scale;
  if (params.bias_table.defined()) {
    geo.bias_table = params.bias_table.f32();
    geo.bias_buckets = params.bias_table.size(1);
    geo.bias_map = params.bias_map.i32();
    geo.bias_map_stride = map_stride(params.bias_map, geo.nq, geo.nk);
  }
  if (params.c_table.defined()) {
    geo.c_table = params.c_table.f32();
    geo.c_buckets = params.c_table.size(1);
    geo.c_map = params.c_map.i32();
    geo.c_map_stride = map_stride(params.c_map, geo.nq, geo.nk);
  }
  geo.mask = attention_mask_of(params);
  geo.normalize = params.norm == AttentionNorm::softmax;
  return geo;
}

template <bool kForC>
void table_gradient(cuda::Context& ctx, const AttentionGeometry& geo, const Tensor& map,
                    const Tensor& grad_out, const Tensor& probs, const double* row_dot,
                    Tensor& grad_table) {
  const int64_t buckets = grad_table.size(1);
  if (geo.heads * buckets == 0) return;
  const BucketIndex index(ctx, map.i32(), map.numel(), buckets, "urpe_attention backward");
  const int threads = 256;
  auto kernel = kForC ? urpe_attention_c_grad_kernel : urpe_attention_bias_grad_kernel;
  kernel<<<grid_for(ctx, geo.heads * buckets * threads, threads), threads, 0, ctx.stream()>>>(
      geo, grad_out.f32(), probs.f32(), row_dot, index.positions(), index.offsets(), buckets,
      map.dim() == 2, grad_table.f32());
  CUDA_CHECK_LAUNCH(kForC ? "urpe_attention_c_grad_kernel" : "urpe_attention_bias_grad_kernel");
}

}  // namespace

// ---- forward ----

void urpe_attention_forward_cuda(const Tensor& scores, const UrpeAttentionParams& params,
                                 Tensor& probs, Tensor& out) {
  cuda::Context& ctx = context_of(out);
  const AttentionGeometry geo = geometry_of(scores, params);
  const int64_t rows = geo.batch * geo.heads * geo.nq;
  if (rows == 0 || geo.nk == 0) return;
  urpe_attention_forward_kernel<<<grid_for(ctx, rows, kRowsPerBlock), kWarp * kRowsPerBlock, 0,
                                  ctx.stream()>>>(geo, scores.f32(),
                                                  probs.defined() ? probs.f32() : nullptr, out.f32());
  CUDA_CHECK_LAUNCH("urpe_attention_forward_kernel");
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
  urpe_attention_backward_rows_kernel<<<grid_for(ctx, rows, kRowsPerBlock),
                                        kWarp * kRowsPerBlock, 0, ctx.stream()>>>(
      geo, grad_out.f32(), probs.f32(), grad_scores.f32(),
      want_bias ? row_dot.as<double>() : nullptr);
  CUDA_CHECK_LAUNCH("urpe_attention_backward_rows_kernel");
  if (want_bias)
    table_gradient<false>(ctx, geo, params.bias_map, grad_out, probs, row_dot.as<double>(),
                          *grad_bias_table);
  if (want_c)
    table_gradient<true>(ctx, geo, params.c_map, grad_out, probs, nullptr, *grad_c_table);
}

}  // namespace urpe::kernels
