// Data parallelism over a Communicator: which rows of the global batch a rank trains on, and the
// one exchange per step that makes every rank take the same optimizer step (the gradients of the
// global batch, the global loss, and whether any rank was asked to stop).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "train/dist/communicator.h"

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
StepSync average_gradients(Communicator& comm, const std::vector<Tensor>& parameters, double local_loss,
                           double weight, bool stop_requested);

// A fingerprint of what must be identical on every rank (the resolved config and the build);
// a mismatch is one error naming the first rank that differs from rank 0.
void check_same_run(Communicator& comm, const std::string& config_text);

}  // namespace urpe::dist
