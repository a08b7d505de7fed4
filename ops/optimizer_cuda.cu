// CUDA optimizer kernels (maths in optimizer_kernels.h), multi-tensor: every parameter of the
// model is updated by ONE launch. The host cuts each tensor into chunks of 8192 elements and
// hands the kernel a table of tensors (pointers, sizes) and chunks (tensor, start); one block per
// chunk. The tables live on the device in the context's table cache (cuda::Context::cached_table):
// while the parameter set and its gradients' blocks are unchanged, a step uploads nothing, so it
// never waits for the stream (an upload from pageable memory would).
//
// adam_multi_tensor_kernel: per element, with bias corrections bc1 = 1 − β1ᵗ, bc2 = 1 − β2ᵗ (the
//   step's scalars read from device memory, uploaded by the host each step: CUDA graphs):
//   AdamW: θ ← θ − lr·wd·θ;   Adam (L2): g ← g + wd·θ
//   m ← β1·m + (1 − β1)·g,  v ← β2·v + (1 − β2)·g²,  θ ← θ − lr·(m/bc1)/(√(v/bc2) + ε)
//   Bytes: 16 B read (θ, g, m, v) + 12 B written (θ, m, v) per element.
// sum_of_squares: one block per chunk adds g² with a strided loop and a fixed shuffle tree
//   (double) into a partial; one block adds the partials in chunk order: deterministic.
//   Bytes: 4 B read per element.
// clip_by_norm_multi_tensor_kernel: reads Σg² from the device, ‖g‖ = (float)√Σg², factor =
//   max_norm / (‖g‖ + 1e-6) in double; g ← (float)factor · g when ‖g‖ is finite and factor < 1
//   (clip_grad_norm's rule, on the device: no host wait). 4 B read + 4 B written per element.
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

// A tensor of a norm or a clip (read by the sum of squares, scaled by the clip).
struct MultiTensor {
  float* x;
  int64_t n;
};

// The step's scalars come from device memory (`step`, uploaded by the host before the launch),
// not from the arguments: a CUDA graph replays arguments as captured, so only memory can carry a
// new lr, step and bias corrections into a replay. Every argument here is the same every step
// while the parameter set is (the tables come from the context's cache).
__global__ void adam_multi_tensor_kernel(const AdamTensor* __restrict__ tensors,
                                         const TensorChunk* __restrict__ chunks,
                                         int64_t num_chunks, const AdamStepScalars* __restrict__ step) {
  const AdamStepScalars s = *step;
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

__global__ void sum_of_squares_partial_kernel(const MultiTensor* __restrict__ tensors,
                                              const TensorChunk* __restrict__ chunks,
                                              int64_t num_chunks, double* __restrict__ partial) {
  URPE_SHARED(double, shared, [32]);
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const MultiTensor t = tensors[chunks[c].tensor];
    const float* x = t.x;
    const int64_t end = min(t.n, chunks[c].start + kChunk);
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

// clip_grad_norm on the device: the norm and the factor from Σg² (device memory), the same
// arithmetic as the host's clip_grad_norm (norm rounded to float, factor in double).
__global__ void clip_by_norm_multi_tensor_kernel(const MultiTensor* __restrict__ tensors,
                                                 const TensorChunk* __restrict__ chunks,
                                                 int64_t num_chunks,
                                                 const double* __restrict__ sum_of_squares,
                                                 float max_norm, float* __restrict__ norm_out) {
  const float norm = static_cast<float>(sqrt(sum_of_squares[0]));
  if (blockIdx.x == 0 && threadIdx.x == 0) norm_out[0] = norm;
  if (!isfinite(norm)) return;  // an inf or NaN gradient is left for the caller to see
  const double factor = static_cast<double>(max_norm) / (static_cast<double>(norm) + 1e-6);
  if (factor >= 1.0) return;
  const float f = static_cast<float>(factor);
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const MultiTensor t = tensors[chunks[c].tensor];
    const int64_t end = min(t.n, chunks[c].start + kChunk);
    for (int64_t k = chunks[c].start + threadIdx.x; k < end; k += blockDim.x) t.x[k] *= f;
  }
}

__global__ void scale_in_place_kernel(float* __restrict__ x, float factor, int64_t n) {
  URPE_GRID_STRIDE(k, n) x[k] *= factor;
}

void append_chunks(int64_t tensor, int64_t n, std::vector<TensorChunk>& chunks) {
  for (int64_t start = 0; start < n; start += kChunk) chunks.push_back({tensor, start});
}

// The device copy of a host table, from the context's cache (uploaded only when new).
template <typename T>
const T* device_table(cuda::Context& ctx, const std::vector<T>& host) {
  return static_cast<const T*>(ctx.cached_table(host.data(), sizeof(T) * host.size()));
}

// The tensors of a norm or a clip, cut into chunks: defined, non-empty tensors only.
struct NormTables {
  std::vector<MultiTensor> tensors;
  std::vector<TensorChunk> chunks;
  cuda::Context* ctx = nullptr;
};
NormTables norm_tables(const std::vector<Tensor>& tensors) {
  NormTables out;
  for (const Tensor& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    if (!out.ctx) out.ctx = &context_of(t);
    append_chunks(static_cast<int64_t>(out.tensors.size()), t.numel(), out.chunks);
    out.tensors.push_back({t.f32(), t.numel()});
  }
  return out;
}

// Σ x² over the tables' tensors into `result` (device memory, one double), deterministic.
void sum_of_squares_on_device(const NormTables& tables, const cuda::DeviceBuffer& result) {
  cuda::Context& ctx = *tables.ctx;
  const MultiTensor* device_tensors = device_table(ctx, tables.tensors);
  const TensorChunk* device_chunks = device_table(ctx, tables.chunks);
  const int64_t num_chunks = static_cast<int64_t>(tables.chunks.size());
  cuda::DeviceBuffer partial(ctx, sizeof(double) * num_chunks);
  const int threads = 256;
  sum_of_squares_partial_kernel<<<grid_for(ctx, num_chunks * threads, threads), threads, 0,
                                  ctx.stream()>>>(device_tensors, device_chunks, num_chunks,
                                                  partial.as<double>());
  CUDA_CHECK_LAUNCH("sum_of_squares_partial_kernel");
  sum_partials_in_order_kernel<<<1, 1024, 0, ctx.stream()>>>(partial.as<double>(), num_chunks,
                                                              result.as<double>());
  CUDA_CHECK_LAUNCH("sum_partials_in_order_kernel");
}

}  // namespace

namespace {

// The update's launch, reading the step's scalars at `device_step`.
void launch_adam(const std::vector<AdamSlot>& slots, const AdamStepScalars* device_step) {
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
  const AdamTensor* device_tensors = device_table(*ctx, tensors);
  const TensorChunk* device_chunks = device_table(*ctx, chunks);
  const int threads = 256;
  const int64_t num_chunks = static_cast<int64_t>(chunks.size());
  adam_multi_tensor_kernel<<<grid_for(*ctx, num_chunks * threads, threads), threads, 0,
                             ctx->stream()>>>(device_tensors, device_chunks, num_chunks, device_step);
  CUDA_CHECK_LAUNCH("adam_multi_tensor_kernel");
}

bool any_update(const std::vector<AdamSlot>& slots) {
  for (const AdamSlot& slot : slots)
    if (slot.grad.defined() && slot.param.numel() > 0) return true;
  return false;
}

}  // namespace

void upload_adam_step_scalars_cuda(const Tensor& step_scalars, const AdamHyper& hyper) {
  // One upload of 32 bytes from pinned staging: stream-ordered, the host does not wait.
  const AdamStepScalars s = adam_step_scalars(hyper);
  context_of(step_scalars).upload(step_scalars.f32(), &s, sizeof(s));
}

void launch_adam_update_cuda(const std::vector<AdamSlot>& slots, const Tensor& step_scalars) {
  launch_adam(slots, reinterpret_cast<const AdamStepScalars*>(step_scalars.f32()));
}

void adam_update_cuda(const std::vector<AdamSlot>& slots, const AdamHyper& hyper, const Tensor& step_scalars) {
  if (!any_update(slots)) return;
  if (step_scalars.defined()) {
    upload_adam_step_scalars_cuda(step_scalars, hyper);
    launch_adam_update_cuda(slots, step_scalars);
    return;
  }
  // No persistent buffer: a temporary, released stream-ordered after the launch.
  cuda::Context& ctx = context_of(slots[0].param);
  const cuda::DeviceBuffer temporary(ctx, sizeof(AdamStepScalars));
  const AdamStepScalars s = adam_step_scalars(hyper);
  ctx.upload(temporary.as<void>(), &s, sizeof(s));
  launch_adam(slots, temporary.as<AdamStepScalars>());
}

double sum_of_squares_cuda(const std::vector<Tensor>& tensors) {
  const NormTables tables = norm_tables(tensors);
  if (tables.chunks.empty()) return 0.0;
  const cuda::DeviceBuffer result(*tables.ctx, sizeof(double));
  sum_of_squares_on_device(tables, result);
  double host = 0.0;
  tables.ctx->read_back(&host, result.as<double>(), sizeof(host));
  return host;
}

void clip_grad_norm_cuda(const std::vector<Tensor>& grads, float max_norm, Tensor& norm) {
  const NormTables tables = norm_tables(grads);
  if (tables.chunks.empty()) {
    norm.fill(0.0f);
    return;
  }
  cuda::Context& ctx = *tables.ctx;
  const cuda::DeviceBuffer sum(ctx, sizeof(double));
  sum_of_squares_on_device(tables, sum);
  const MultiTensor* device_tensors = device_table(ctx, tables.tensors);
  const TensorChunk* device_chunks = device_table(ctx, tables.chunks);
  const int64_t num_chunks = static_cast<int64_t>(tables.chunks.size());
  const int threads = 256;
  clip_by_norm_multi_tensor_kernel<<<grid_for(ctx, num_chunks * threads, threads), threads, 0,
                                     ctx.stream()>>>(device_tensors, device_chunks, num_chunks,
                                                     sum.as<double>(), max_norm, norm.f32());
  CUDA_CHECK_LAUNCH("clip_by_norm_multi_tensor_kernel");
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
