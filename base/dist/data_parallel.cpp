// Batch shards, the per-step gradient all-reduce (MPI on the host, or NCCL on the GPU), ZeRO-1's
// reduce-scatter and all-gather, and the same-run check of base/dist/data_parallel.h.
#include "base/dist/data_parallel.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "tensor/cuda_backend.h"
#include "tensor/error.h"
#include "tensor/op_profile.h"

namespace urpe::dist {

namespace {
#if URPE_WITH_CUDA
constexpr bool kCudaBuild = true;
#else
constexpr bool kCudaBuild = false;
#endif
}  // namespace

Shard batch_shard(const Communicator& comm, int64_t global, const std::string& key) {
  const int64_t ranks = comm.size();
  URPE_CHECK(global % ranks == 0, "config: " << key << " = " << global << " is the global batch and must divide "
                                             << "evenly across the " << ranks << " ranks (mpirun -np " << ranks
                                             << "); use a multiple of " << ranks);
  const int64_t count = global / ranks;
  return {comm.rank() * count, count};
}

Tensor shard_rows(const Tensor& x, const Shard& shard, int axis) {
  if (shard.begin == 0 && shard.count == x.size(axis)) return x;
  const Tensor host = x.cpu().detach();
  const Shape& shape = host.shape();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  Shape out_shape = shape;
  out_shape[static_cast<size_t>(axis)] = shard.count;
  Tensor out = Tensor::empty(out_shape, host.dtype());
  const size_t element = host.dtype() == DType::f32 ? sizeof(float) : sizeof(int32_t);
  const char* src = host.dtype() == DType::f32 ? reinterpret_cast<const char*>(host.f32())
                                               : reinterpret_cast<const char*>(host.i32());
  char* dst = host.dtype() == DType::f32 ? reinterpret_cast<char*>(out.f32()) : reinterpret_cast<char*>(out.i32());
  const size_t row = static_cast<size_t>(inner) * element;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o * shard.count) * row,
                src + static_cast<size_t>(o * x.size(axis) + shard.begin) * row, static_cast<size_t>(shard.count) * row);
  return out.to(x.device());
}

void copy_elements(const Tensor& dst, int64_t dst_at, const Tensor& src, int64_t src_at, int64_t n) {
  if (n == 0) return;
  float* to = dst.f32() + dst_at;
  const float* from = src.f32() + src_at;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  if (dst.device().is_cpu() && src.device().is_cpu()) std::memcpy(to, from, bytes);
  else if (src.device().is_cpu()) cuda::copy_host_to_device(dst.device().context(), to, from, bytes);
  else if (dst.device().is_cpu()) cuda::copy_device_to_host(src.device().context(), to, from, bytes);
  else cuda::copy_device_to_device(dst.device().context(), to, from, bytes);
}

int64_t total_elements(const std::vector<Tensor>& tensors) {
  int64_t total = 0;
  for (const Tensor& t : tensors) total += t.numel();
  return total;
}

namespace {

// The small part of a step's exchange, [one "has a gradient" flag per parameter | weight * loss,
// weight, stop]: all-reduced on its own before the gradients (NCCL, ZeRO-1), or after them in the
// host's one buffer (average_gradients).
struct StepTail {
  std::vector<float> values;
  size_t end = 0;  // index of weight * loss
  float total_weight() const { return values[end + 1]; }
  double loss() const { return static_cast<double>(values[end]) / static_cast<double>(total_weight()); }
  bool stop() const { return values[end + 2] > 0.0f; }
  bool reached(size_t k) const { return values[k] > 0.0f; }
};
// This rank's tail, before the sum over the ranks.
StepTail local_tail(const std::vector<Tensor>& parameters, double local_loss, double weight, bool stop_requested) {
  StepTail tail;
  tail.end = parameters.size();
  tail.values.assign(tail.end + 3, 0.0f);
  for (size_t k = 0; k < parameters.size(); ++k) tail.values[k] = parameters[k].grad().defined() ? 1.0f : 0.0f;
  tail.values[tail.end] = static_cast<float>(local_loss * weight);
  tail.values[tail.end + 1] = static_cast<float>(weight);
  tail.values[tail.end + 2] = stop_requested ? 1.0f : 0.0f;
  return tail;
}
StepTail all_reduce_tail(Communicator& comm, const std::vector<Tensor>& parameters, double local_loss,
                         double weight, bool stop_requested) {
  StepTail tail = local_tail(parameters, local_loss, weight, stop_requested);
  comm.all_reduce_sum(tail.values.data(), static_cast<int64_t>(tail.values.size()));
  return tail;
}

// The parameters' gradients, concatenated into (length,) zeros on `device` (a parameter without a
// gradient leaves its range zero; elements past the parameters' total stay zero).
Tensor pack_gradients(const std::vector<Tensor>& parameters, int64_t length, const Device& device) {
  Tensor flat = Tensor::zeros({length}, DType::f32, device);
  int64_t at = 0;
  for (const Tensor& p : parameters) {
    const Tensor g = p.grad();
    if (g.defined()) copy_elements(flat, at, g, 0, g.numel());
    at += p.numel();
  }
  return flat;
}

// The inverse of pack_gradients for the averaged buffer (any device): every parameter some rank's
// backward reached gets its range as its gradient, a zero gradient created first where this
// rank's batch did not reach it, so that every rank's Adam updates the same parameters.
void unpack_gradients(const std::vector<Tensor>& parameters, const Tensor& flat, const StepTail& tail) {
  int64_t at = 0;
  for (size_t k = 0; k < parameters.size(); ++k) {
    const Tensor& p = parameters[k];
    if (tail.reached(k)) {
      if (!p.grad().defined()) p.impl().grad = Tensor::zeros(p.shape(), DType::f32, p.device()).impl_ptr();
      copy_elements(p.grad(), 0, flat, at, p.numel());
    }
    at += p.numel();
  }
}

// average_gradients with NCCL: the flat buffer stays on the GPU.
StepSync average_gradients_on_device(Communicator& comm, DeviceCollectives& device,
                                     const std::vector<Tensor>& parameters, double local_loss, double weight,
                                     bool stop_requested) {
  const StepTail tail = all_reduce_tail(comm, parameters, local_loss, weight, stop_requested);
  const int64_t total = total_elements(parameters);
  const Tensor flat = pack_gradients(parameters, total, parameters.at(0).device());
  device.all_reduce_sum(flat.f32(), total, static_cast<float>(weight / static_cast<double>(tail.total_weight())));
  unpack_gradients(parameters, flat, tail);
  return {tail.loss(), tail.stop()};
}

}  // namespace

StepSync average_gradients(Communicator& comm, const std::vector<Tensor>& parameters, double local_loss,
                           double weight, bool stop_requested, DeviceCollectives* device) {
  if (comm.size() == 1 && !device) return {local_loss, stop_requested};
  // Per-op profiler: one op of the communication phase; its bytes are the gradients this rank
  // contributes (its GB/s is the collective's algorithm bandwidth, not a memory roofline).
  const profile::PhaseRange phase(profile::Phase::communication);
  const profile::OpRange range("all_reduce_gradients", parameters.empty() ? Device::cpu() : parameters[0].device());
  URPE_PROFILE_COST((profile::Cost{0.0, profile::kElementBytes * double(total_elements(parameters))}));
  URPE_CHECK(weight > 0, "data parallel: a step's loss weight must be positive, got " << weight);
  if (device && !parameters.empty())
    return average_gradients_on_device(comm, *device, parameters, local_loss, weight, stop_requested);
  // One all-reduce on the host of [weighted gradients | the tail]: Σ_r weight_r · g_r, then ÷ Σ_r weight_r.
  const int64_t total = total_elements(parameters);
  StepTail tail = local_tail(parameters, local_loss, weight, stop_requested);
  const int64_t length = total + static_cast<int64_t>(tail.values.size());
  const Tensor flat = pack_gradients(parameters, length, Device::cpu());
  float* values = flat.f32();
  const float w = static_cast<float>(weight);
  for (int64_t i = 0; i < total; ++i) values[i] *= w;
  std::copy(tail.values.begin(), tail.values.end(), values + total);
  comm.all_reduce_sum(values, length);
  std::copy(values + total, values + length, tail.values.begin());
  const float total_weight = tail.total_weight();
  for (int64_t i = 0; i < total; ++i) values[i] /= total_weight;
  unpack_gradients(parameters, flat, tail);
  return {tail.loss(), tail.stop()};
}

// ---- ZeRO-1 ----

int64_t optimizer_shard_stride(const Communicator& comm, int64_t total) {
  return (total + comm.size() - 1) / comm.size();
}

FlatRange optimizer_shard(const Communicator& comm, int64_t total) {
  const int64_t stride = optimizer_shard_stride(comm, total);
  const int64_t begin = std::min(total, comm.rank() * stride);
  return {begin, std::min(total, begin + stride)};
}

ShardedStepSync reduce_scatter_gradients(Communicator& comm, const std::vector<Tensor>& parameters,
                                         double local_loss, double weight, bool stop_requested,
                                         DeviceCollectives* device) {
  const int64_t total = total_elements(parameters);
  const profile::PhaseRange phase(profile::Phase::communication);
  const profile::OpRange range("reduce_scatter_gradients", parameters.empty() ? Device::cpu() : parameters[0].device());
  URPE_PROFILE_COST((profile::Cost{0.0, profile::kElementBytes * double(total)}));
  const int64_t stride = optimizer_shard_stride(comm, total);
  const bool one = comm.size() == 1 && !device;  // the gradients as they are (as average_gradients)
  URPE_CHECK(one || weight > 0, "data parallel: a step's loss weight must be positive, got " << weight);
  const StepTail tail = one ? StepTail{} : all_reduce_tail(comm, parameters, local_loss, weight, stop_requested);
  ShardedStepSync out;
  out.loss = one ? local_loss : tail.loss();
  out.stop = one ? stop_requested : tail.stop();
  out.reached.resize(parameters.size());
  for (size_t k = 0; k < parameters.size(); ++k) out.reached[k] = one ? parameters[k].grad().defined() : tail.reached(k);
  // The flat buffer, zero-padded to K·S: rank r's block is its range.
  const Device& where = device ? parameters.at(0).device() : Device::cpu();
  const Tensor flat = pack_gradients(parameters, stride * comm.size(), where);
  out.gradient = Tensor::empty({stride}, DType::f32, where);
  if (device) {
    device->reduce_scatter_sum(flat.f32(), out.gradient.f32(), stride,
                               static_cast<float>(weight / static_cast<double>(tail.total_weight())));
    return out;
  }
  if (!one) {
    const float w = static_cast<float>(weight);
    float* values = flat.f32();
    for (int64_t i = 0; i < total; ++i) values[i] *= w;
  }
  comm.reduce_scatter_sum(flat.f32(), out.gradient.f32(), stride);
  if (!one) {
    const float total_weight = tail.total_weight();
    float* values = out.gradient.f32();
    for (int64_t i = 0; i < stride; ++i) values[i] /= total_weight;
  }
  return out;
}

std::vector<float> all_gather_ranges(Communicator& comm, int64_t total, const std::vector<float>& mine) {
  const int64_t stride = optimizer_shard_stride(comm, total);
  URPE_CHECK(static_cast<int64_t>(mine.size()) == optimizer_shard(comm, total).size(),
             "all_gather_ranges: this rank's range has " << mine.size() << " values, expected "
                                                         << optimizer_shard(comm, total).size());
  std::vector<float> padded(static_cast<size_t>(stride), 0.0f);
  std::copy(mine.begin(), mine.end(), padded.begin());
  std::vector<float> all(static_cast<size_t>(stride * comm.size()));
  comm.all_gather(padded.data(), all.data(), stride);
  all.resize(static_cast<size_t>(total));
  return all;
}

void all_gather_parameters(Communicator& comm, const std::vector<Tensor>& parameters, const Tensor& mine,
                           DeviceCollectives* device) {
  const int64_t total = total_elements(parameters);
  const profile::PhaseRange phase(profile::Phase::communication);
  const profile::OpRange range("all_gather_parameters", mine);
  URPE_PROFILE_COST((profile::Cost{0.0, profile::kElementBytes * double(total)}));
  Tensor all;
  if (device) {
    const int64_t stride = optimizer_shard_stride(comm, total);
    const Tensor padded = Tensor::zeros({stride}, DType::f32, mine.device());
    copy_elements(padded, 0, mine, 0, mine.numel());
    all = Tensor::empty({stride * comm.size()}, DType::f32, mine.device());
    device->all_gather(padded.f32(), all.f32(), stride);
  } else {
    all = Tensor::from_vector(all_gather_ranges(comm, total, mine.to_vector_f32()), {total});
  }
  int64_t at = 0;
  for (const Tensor& p : parameters) {
    copy_elements(p, 0, all, at, p.numel());
    at += p.numel();
  }
}

void check_same_run(Communicator& comm, const std::string& config_text) {
  if (comm.size() == 1) return;
  // The build: compiler, build type and the backends compiled in; __DATE__/__TIME__ of this file
  // tells two builds of the same sources apart.
  const std::string build = std::string(__VERSION__) + " " + __DATE__ + " " + __TIME__ +
                            (built_with_mpi() ? " mpi" : "") + (kCudaBuild ? " cuda" : "");
  std::string root_config = config_text, root_build = build;
  comm.broadcast(root_config);
  comm.broadcast(root_build);
  const bool same_build = root_build == build, same_config = root_config == config_text;
  check_collective(comm, same_build && same_config,
                   !same_build ? "this rank runs another urpe build than rank 0 (" + build + " vs " + root_build +
                                     "); every rank must run the same binary"
                               : "this rank's resolved config differs from rank 0's; every rank must train the "
                                 "same config (same file, same --set options)");
}

}  // namespace urpe::dist
