// The smallest loop that trains a model, for reading (docs/walkthrough.md): the encoder on a
// synthetic task with forward, loss, backward and Adam, then one evaluation. Nothing else: no run
// directory, schedule, checkpoints, resume, data parallelism or profiling. Those are what the
// production loop (training_loop.h, `urpe train`) adds around the same four lines.
#pragma once
#include <cstdint>
#include <vector>

#include "data/synthetic.h"
#include "models/encoder.h"

namespace urpe {

struct TeachingOptions {
  int64_t steps = 300;
  int64_t batch = 32;
  float lr = 2e-3f;   // constant: no warm-up, no decay
  uint64_t seed = 1;  // initialisation and training data
  int64_t eval_sequences = 256;  // held-out sequences, drawn from their own seed
};

struct TeachingResult {
  std::vector<double> losses;  // the training loss of every step
  double valid_loss = 0;       // mean cross-entropy over the scored held-out positions
  double valid_accuracy = 0;   // fraction of scored held-out positions whose argmax is the target
};

// Trains a fresh TransformerEncoder(model) on batches of `task` on the CPU.
TeachingResult teaching_loop(const SyntheticTask& task, const EncoderConfig& model, const TeachingOptions& options);

}  // namespace urpe
