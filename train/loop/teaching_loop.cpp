// The teaching loop (see teaching_loop.h). Read it top to bottom: model, optimizer, the loop,
// the evaluation.
#include "train/loop/teaching_loop.h"

#include "autograd/node.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "tensor/rng.h"
#include "train/optim/optimizer.h"

namespace urpe {

// logits: (B, n, classes), targets: (B, n) → the mean cross-entropy over the scored positions
// (a target equal to `ignore` is not scored).
static Tensor sequence_loss(const Tensor& logits, const Tensor& targets, int32_t ignore) {
  const int64_t rows = logits.numel() / logits.size(-1);
  return cross_entropy(reshape(logits, {rows, logits.size(-1)}), reshape(targets, {rows}), ignore);
}

TeachingResult teaching_loop(const SyntheticTask& task, const EncoderConfig& model_config,
                             const TeachingOptions& options) {
  TransformerEncoder model(model_config, options.seed, Device::cpu());
  Adam adam(model.parameters().tensors());
  Rng data_rng(options.seed), dropout_rng(options.seed + 1);
  TeachingResult result;
  for (int64_t step = 1; step <= options.steps; ++step) {
    const SyntheticBatch batch = task.sample(options.batch, data_rng);           // tokens, targets: (B, n)
    const Tensor logits = model.forward(batch.tokens, true, &dropout_rng);       // (B, n, classes)
    const Tensor loss = sequence_loss(logits, batch.targets, task.ignore_index());  // scalar
    adam.zero_grad();
    loss.backward();  // every parameter's .grad = ∂loss/∂parameter
    adam.step(options.lr);
    result.losses.push_back(loss.item());
  }
  // One evaluation on sequences the model never saw, without recording a graph.
  autograd::NoGrad no_grad;
  Rng eval_rng(options.seed + 0x5eed);
  const SyntheticBatch held_out = task.sample(options.eval_sequences, eval_rng);
  const Tensor logits = model.forward(held_out.tokens, false, nullptr);
  result.valid_loss = sequence_loss(logits, held_out.targets, task.ignore_index()).item();
  const std::vector<float> scores = logits.to_vector_f32();
  const std::vector<int32_t> targets = held_out.targets.to_vector_i32();
  const int64_t classes = logits.size(-1);
  int64_t correct = 0, scored = 0;
  for (size_t row = 0; row < targets.size(); ++row) {
    if (targets[row] == task.ignore_index()) continue;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (scores[row * classes + c] > scores[row * classes + best]) best = c;
    correct += best == targets[row];
    ++scored;
  }
  result.valid_accuracy = scored == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(scored);
  return result;
}

}  // namespace urpe
