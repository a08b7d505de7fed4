// CUDA optimizer kernels (maths in optimizer_kernels.h), multi-tensor: every parameter of the
// model is updated by ONE launch. The host cuts each tensor into chunks of 8192 elements and
// uploads a table of tensors (pointers, sizes) and chunks (tensor, start); one block per chunk.
//
// adam_multi_tensor_kernel: per element, with bias corrections bc1 = 1 − β1ᵗ, bc2 = 1 − β2ᵗ:
//   AdamW: θ ← θ − lr·wd·θ;   Adam (L2): g ← g + wd·θ
//   m ← β1·m + (1 − β1)·g,  v ← β2·v + (1 − β2)·g²,  θ ← θ − lr·(m/bc1)/(√(v/bc2) + ε)
//   Bytes: 16 B read (θ, g, m, v) + 12 B written (θ, m, v) per element.
// sum_of_squares: one block per chunk adds g² with a strided loop and a fixed shuffle tree
//   (double) into a partial; one block adds the partials in chunk order: deterministic.
//   Bytes: 4 B read per element.
// scale_in_place: x ← factor·x, 4 B read + 4 B written per element.
#include <cmath>
#include <vector>

#include "ops/cuda_common.cuh"
#include "ops/optimizer_kernels.h"

namespace urpe::kernels {

namespace {

constexpr int64_t kChunk = 8192;

struct AdamTensor {
  float* param;
  const float* grad;
  float* m;
  float* v;
  int64_t n;
};

struct TensorChunk {
  int64_t tensor;
  int64_t start;
};

struct AdamStep {
  float lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2;
  bool decoupled;
};

__global__ void adam_multi_tensor_kernel(const AdamTensor* __restrict__ tensors,
                                         const TensorChunk* __restrict__ chunks,
                                         int64_t num_chunks, AdamStep s) {
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const AdamTensor t = tensors[chunks[c].tensor];
    const int64_t end = min(t.n, chunks[c].start + kChunk);
    for (int64_t k = chunks[c].start + threadIdx.x; k < end; k += blockDim.x) {
      float theta = t.param[k], g = t.grad[k];
      if (s.decoupled) theta -= s.lr * s.weight_decay * theta;  // AdamW: outside the moments
      else g += s.weight_decay * theta;                         // Adam + L2: inside the gradient
      const float m = s.beta1 * t.m[k] + (1.0f - s.beta1) * g;
      const float v = s.beta2 * t.v[k] + (1.0f - s.beta2) * g * g;
      t.m[k] = m;
      t.v[k] = v;
      const float m_hat = m / s.bias_correction1, v_hat = v / s.bias_correction2;
      t.param[k] = theta - s.lr * m_hat / (sqrtf(v_hat) + s.eps);
    }
  }
}

__global__ void sum_of_squares_partial_kernel(const float* const* __restrict__ tensors,
                                              const int64_t* __restrict__ sizes,
                                              const TensorChunk* __restrict__ chunks,
                                              int64_t num_chunks, double* __restrict__ partial) {
  URPE_SHARED(double, shared, [32]);
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const float* x = tensors[chunks[c].tensor];
    const int64_t end = min(sizes[chunks[c].tensor], chunks[c].start + kChunk);
    double total = 0;
    for (int64_t k = chunks[c].start + threadIdx.x; k < end; k += blockDim.x) {
      const double v = x[k];
      total += v * v;
    }
    total = block_sum(total, shared);
    if (threadIdx.x == 0) partial[c] = total;
  }
}

__global__ void sum_partials_in_order_kernel(const double* __restrict__ partial, int64_t n,
                                             double* __restrict__ result) {
  URPE_SHARED(double, shared, [32]);
  double total = 0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) total += partial[k];
  total = block_sum(total, shared);
  if (threadIdx.x == 0) result[0] = total;
}

__global__ void scale_in_place_kernel(float* __restrict__ x, float factor, int64_t n) {
  URPE_GRID_STRIDE(k, n) x[k] *= factor;
}

void append_chunks(int64_t tensor, int64_t n, std::vector<TensorChunk>& chunks) {
  for (int64_t start = 0; start < n; start += kChunk) chunks.push_back({tensor, start});
}

// Copies a host vector into a device buffer on the context's stream.
template <typename T>
void upload(cuda::Context& ctx, const std::vector<T>& host, const cuda::DeviceBuffer& device) {
  if (host.empty()) return;
  ctx.note_host_sync(cuda::HostSync::pageable_upload, sizeof(T) * host.size());
  CUDA_CHECK(cudaMemcpyAsync(device.as<void>(), host.data(), sizeof(T) * host.size(),
                             cudaMemcpyHostToDevice, ctx.stream()));
}

}  // namespace

void adam_update_cuda(const std::vector<AdamSlot>& slots, const AdamHyper& hyper) {
  std::vector<AdamTensor> tensors;
  std::vector<TensorChunk> chunks;
  cuda::Context* ctx = nullptr;
  for (const AdamSlot& slot : slots) {
    if (!slot.grad.defined() || slot.param.numel() == 0) continue;
    if (!ctx) ctx = &context_of(slot.param);
    append_chunks(static_cast<int64_t>(tensors.size()), slot.param.numel(), chunks);
    tensors.push_back({slot.param.f32(), slot.grad.f32(), slot.m.f32(), slot.v.f32(),
                       slot.param.numel()});
  }
  if (chunks.empty()) return;
  cuda::DeviceBuffer device_tensors(*ctx, sizeof(AdamTensor) * tensors.size());
  cuda::DeviceBuffer device_chunks(*ctx, sizeof(TensorChunk) * chunks.size());
  upload(*ctx, tensors, device_tensors);
  upload(*ctx, chunks, device_chunks);
  const double t = static_cast<double>(hyper.step);
  AdamStep s{};
  s.lr = hyper.lr;
  s.beta1 = hyper.beta1;
  s.beta2 = hyper.beta2;
  s.eps = hyper.eps;
  s.weight_decay = hyper.weight_decay;
  s.bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(hyper.beta1), t));
  s.bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(hyper.beta2), t));
  s.decoupled = hyper.decoupled_weight_decay;
  const int threads = 256;
  const int64_t num_chunks = static_cast<int64_t>(chunks.size());
  adam_multi_tensor_kernel<<<grid_for(*ctx, num_chunks * threads, threads), threads, 0,
                             ctx->stream()>>>(device_tensors.as<AdamTensor>(),
                                              device_chunks.as<TensorChunk>(), num_chunks, s);
  CUDA_CHECK_LAUNCH("adam_multi_tensor_kernel");
}

double sum_of_squares_cuda(const std::vector<Tensor>& tensors) {
  std::vector<const float*> pointers;
  std::vector<int64_t> sizes;
  std::vector<TensorChunk> chunks;
  cuda::Context* ctx = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    if (!ctx) ctx = &context_of(t);
    append_chunks(static_cast<int64_t>(pointers.size()), t.numel(), chunks);
    pointers.push_back(t.f32());
    sizes.push_back(t.numel());
  }
  if (chunks.empty()) return 0.0;
  cuda::DeviceBuffer device_pointers(*ctx, sizeof(const float*) * pointers.size());
  cuda::DeviceBuffer device_sizes(*ctx, sizeof(int64_t) * sizes.size());
  cuda::DeviceBuffer device_chunks(*ctx, sizeof(TensorChunk) * chunks.size());
  upload(*ctx, pointers, device_pointers);
  upload(*ctx, sizes, device_sizes);
  upload(*ctx, chunks, device_chunks);
  const int64_t num_chunks = static_cast<int64_t>(chunks.size());
  cuda::DeviceBuffer partial(*ctx, sizeof(double) * num_chunks);
  cuda::DeviceBuffer result(*ctx, sizeof(double));
  const int threads = 256;
  sum_of_squares_partial_kernel<<<grid_for(*ctx, num_chunks * threads, threads), threads, 0,
                                  ctx->stream()>>>(device_pointers.as<const float*>(),
                                                   device_sizes.as<int64_t>(),
                                                   device_chunks.as<TensorChunk>(), num_chunks,
                                                   partial.as<double>());
  CUDA_CHECK_LAUNCH("sum_of_squares_partial_kernel");
  sum_partials_in_order_kernel<<<1, 1024, 0, ctx->stream()>>>(partial.as<double>(), num_chunks,
                                                              result.as<double>());
  CUDA_CHECK_LAUNCH("sum_partials_in_order_kernel");
  double host = 0.0;
  CUDA_CHECK(cudaMemcpyAsync(&host, result.as<double>(), sizeof(host), cudaMemcpyDeviceToHost,
                             ctx->stream()));
  ctx->synchronize_stream(cuda::HostSync::device_to_host, sizeof(host));
  return host;
}

void scale_in_place_cuda(const Tensor& x, float factor) {
  cuda::Context& ctx = context_of(x);
  const int64_t n = x.numel();
  if (n == 0) return;
  const int threads = 256;
  scale_in_place_kernel<<<grid_for(ctx, n, threads), threads, 0, ctx.stream()>>>(x.f32(), factor,
                                                                                 n);
  CUDA_CHECK_LAUNCH("scale_in_place_kernel");
}

}  // namespace urpe::kernels
