// Data parallelism over a Communicator: which rows of the global batch a rank trains on, and the
// one exchange per step that makes every rank take the same optimizer step (the gradients of the
// global batch, the global loss, and whether any rank was asked to stop): an all-reduce, or for
// ZeRO-1 a reduce-scatter of the gradients and an all-gather of the parameters; on the host (MPI)
// or, with DeviceCollectives, on the GPU (NCCL).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "base/dist/communicator.h"
#include "base/dist/device_collectives.h"

namespace urpe::dist {

// This rank's rows [begin, begin + count) of a global batch of `global` rows. The global batch
// must divide evenly (one error naming the config key and the number of ranks).
struct Shard {
  int64_t begin = 0, count = 0;
};
Shard batch_shard(const Communicator& comm, int64_t global, const std::string& key = "batch");

// The rows [shard.begin, shard.begin + shard.count) of `x` along `axis` (a copy).
Tensor shard_rows(const Tensor& x, const Shard& shard, int axis = 0);

struct StepSync {
  double loss = 0;    // the global batch's loss
  bool stop = false;  // some rank was interrupted: every rank stops after this step
};
// Replaces every parameter's gradient by the gradient of the global batch's loss, where this
// rank's loss `local_loss` is a mean over `weight` targets (tokens, positions, molecules): the
// global loss is sum_r weight_r * loss_r / sum_r weight_r, so each rank's gradient is scaled by
// its weight, the sum taken over the ranks and divided by the total weight. One all-reduce of one
// flat float buffer (the gradients, which parameters have one, then weight * loss, the weight and
// the stop flag). A parameter that only some ranks' batches reached gets the average everywhere.
// With one rank it changes nothing.
//
// With `device` (NCCL, the parameters on a GPU): the flags, loss, weight and stop flag are
// all-reduced first on the host (MPI), then the gradients are packed into one flat buffer on the
// GPU and all-reduced there with each rank's buffer multiplied by weight / total weight (NCCL's
// PreMulSum); the same average up to rounding. It runs with one rank too (the test of this path).
StepSync average_gradients(Communicator& comm, const std::vector<Tensor>& parameters, double local_loss,
                           double weight, bool stop_requested, DeviceCollectives* device = nullptr);

// dst[dst_at, dst_at + n) ← src[src_at, src_at + n): f32 tensors on any devices.
void copy_elements(const Tensor& dst, int64_t dst_at, const Tensor& src, int64_t src_at, int64_t n);

// The number of elements of all `tensors` together: the length of the flat gradient buffer (and
// of the flat parameter vector ZeRO-1 shards).
int64_t total_elements(const std::vector<Tensor>& tensors);

// ---- ZeRO-1: optimizer-state sharding (shard_optimizer = true) ----
// The parameters, concatenated in order, form one flat vector of `total` elements. Rank r owns
// the contiguous range [r·S, min((r+1)·S, total)) with S = ceil(total / K): it alone keeps Adam's
// moments for it and updates it. The last ranks' ranges may be shorter, or empty.
struct FlatRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
FlatRange optimizer_shard(const Communicator& comm, int64_t total);
// S above: the length of every rank's block in the collectives (the ranges padded with zeros).
int64_t optimizer_shard_stride(const Communicator& comm, int64_t total);

struct ShardedStepSync : StepSync {
  // This rank's range of the averaged flat gradient, in its first optimizer_shard(...).size()
  // elements ((S,): the host's or, with NCCL, the parameters' device).
  Tensor gradient;
  std::vector<char> reached;  // per parameter: some rank's backward reached it (else no update)
};
// average_gradients, except that rank r receives only its range of the averaged gradient (one
// small all-reduce of the flags, loss, weight and stop, then one reduce-scatter of the flat
// gradient buffer). On the host, the arithmetic of average_gradients (weighted sum, then ÷ total
// weight), so the values are bit-identical to the range of its result whenever the sums are
// (two ranks); with `device`, NCCL's as in average_gradients.
ShardedStepSync reduce_scatter_gradients(Communicator& comm, const std::vector<Tensor>& parameters,
                                         double local_loss, double weight, bool stop_requested,
                                         DeviceCollectives* device = nullptr);
// After every rank updated its range: `mine` (this rank's range of the flat parameter vector,
// optimizer_shard's size, any device) from every rank, gathered (MPI, or `device`) and copied
// into the parameters.
void all_gather_parameters(Communicator& comm, const std::vector<Tensor>& parameters, const Tensor& mine,
                           DeviceCollectives* device = nullptr);
// The full flat vector from every rank's range (all_gather of the ranges, padding dropped):
// what a checkpoint stores of a sharded optimizer's moments.
std::vector<float> all_gather_ranges(Communicator& comm, int64_t total, const std::vector<float>& mine);

// A fingerprint of what must be identical on every rank (the resolved config and the build);
// a mismatch is one error naming the first rank that differs from rank 0.
void check_same_run(Communicator& comm, const std::string& config_text);

}  // namespace urpe::dist
