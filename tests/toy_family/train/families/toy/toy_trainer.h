// The toy family's training task, its evaluation and its pictures (see toy_config.h): the family
// recipe of docs/architecture.md#add-a-family, followed by tests/test_family_recipe.cpp.
#pragma once
#include <string>
#include <vector>

#include "base/io/config.h"
#include "base/io/run_dir.h"
#include "train/loop/train_options.h"

namespace urpe {

struct ToyOutcome {
  ResultRow result;  // as results.json holds it
  bool interrupted = false;
};

// Trains the config's toy regression into out_dir through the one training loop.
ToyOutcome train_toy(const Config& config, const std::string& out_dir, const TrainOptions& options);
// The mean absolute error of the run's `which` (last|best) checkpoint on `split` (valid|test).
double evaluate_toy_run(const std::string& run_dir, const Config& config, const std::string& split,
                        const std::string& which);
// plots/loss.png: the training and validation loss against step.
std::vector<std::string> draw_toy_run_plots(const std::string& run_dir);

}  // namespace urpe
