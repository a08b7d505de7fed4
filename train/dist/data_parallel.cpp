// Batch shards, the per-step gradient all-reduce and the same-run check of train/dist/data_parallel.h.
#include "train/dist/data_parallel.h"

#include <cstring>
#include <functional>

#include "tensor/error.h"

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

StepSync average_gradients(Communicator& comm, const std::vector<Tensor>& parameters, double local_loss,
                           double weight, bool stop_requested) {
  if (comm.size() == 1) return {local_loss, stop_requested};
  URPE_CHECK(weight > 0, "data parallel: a step's loss weight must be positive, got " << weight);
  int64_t total = 0;
  for (const Tensor& p : parameters) total += p.numel();
  // [weighted gradients | one "has a gradient" flag per parameter | weight * loss, weight, stop]
  const int64_t flags = total, tail = total + static_cast<int64_t>(parameters.size());
  std::vector<float> flat(static_cast<size_t>(tail) + 3, 0.0f);
  const float w = static_cast<float>(weight);
  int64_t at = 0;
  for (size_t k = 0; k < parameters.size(); ++k) {
    const Tensor g = parameters[k].grad();
    if (g.defined()) {
      const Tensor host = g.cpu();
      const float* src = host.f32();
      float* dst = flat.data() + at;
      for (int64_t i = 0; i < g.numel(); ++i) dst[i] = src[i] * w;
      flat[static_cast<size_t>(flags) + k] = 1.0f;
    }
    at += parameters[k].numel();
  }
  flat[static_cast<size_t>(tail)] = static_cast<float>(local_loss * weight);
  flat[static_cast<size_t>(tail) + 1] = w;
  flat[static_cast<size_t>(tail) + 2] = stop_requested ? 1.0f : 0.0f;
  comm.all_reduce_sum(flat.data(), static_cast<int64_t>(flat.size()));
  const float total_weight = flat[static_cast<size_t>(tail) + 1];
  at = 0;
  for (size_t k = 0; k < parameters.size(); ++k) {
    const Tensor& p = parameters[k];
    // A parameter some rank's backward reached gets the average on every rank (a zero gradient
    // where this rank's batch did not reach it), so that every rank's Adam updates the same ones.
    if (flat[static_cast<size_t>(flags) + k] > 0.0f) {
      float* values = flat.data() + at;
      for (int64_t i = 0; i < p.numel(); ++i) values[i] /= total_weight;
      const Tensor averaged = Tensor::from_vector(std::vector<float>(values, values + p.numel()), p.shape());
      if (p.grad().defined()) p.grad().copy_from(averaged);
      else p.impl().grad = averaged.to(p.device()).impl_ptr();
    }
    at += p.numel();
  }
  return {static_cast<double>(flat[static_cast<size_t>(tail)]) / static_cast<double>(total_weight),
          flat[static_cast<size_t>(tail) + 2] > 0.0f};
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
