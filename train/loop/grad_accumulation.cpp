// Micro-batch rows and the weighted gradient sum of gradient accumulation (grad_accumulation.h).
#include "train/loop/grad_accumulation.h"

#include "ops/optimizer_kernels.h"

namespace urpe {

dist::Shard micro_rows(const dist::Shard& rows, const MicroBatch& micro) {
  URPE_CHECK(micro.count >= 1 && micro.index >= 0 && micro.index < micro.count,
             "micro-batch " << micro.index << " of " << micro.count << " does not exist");
  URPE_CHECK(rows.count % micro.count == 0,
             "config: accum_steps (" << micro.count << ") must divide each process's rows of the batch ("
                                     << rows.count << "); choose a batch that is a multiple of accum_steps"
                                     << " (times the number of ranks)");
  const int64_t part = rows.count / micro.count;
  return {rows.begin + micro.index * part, part};
}

void backward_weighted(const Tensor& loss, double weight) {
  loss.backward(Tensor::full(loss.shape(), static_cast<float>(weight), loss.device()));
}

void divide_gradients(const std::vector<Tensor>& parameters, double total_weight) {
  URPE_CHECK(total_weight > 0, "gradient accumulation: the step's total weight must be positive, got " << total_weight);
  std::vector<Tensor> grads;
  grads.reserve(parameters.size());
  for (const Tensor& p : parameters) grads.push_back(p.grad());
  scale_grads(grads, static_cast<float>(1.0 / total_weight));
}

}  // namespace urpe
