// Entry points of the subcommands (each in its own file), referenced from the command table.
#pragma once
#include "app/cli/command_line.h"
#include "base/io/config.h"
#include "train/loop/train_options.h"

namespace urpe::cli {

int run_train(const Args& args);   // train.cpp
int run_eval(const Args& args);    // eval.cpp
int run_demo(const Args& args);    // demo.cpp
int run_repro(const Args& args);   // repro.cpp
int run_plot(const Args& args);    // plot.cpp
int run_bench(const Args& args);   // bench.cpp
int run_theory_probe(const Args& args);         // theory.cpp
int run_theory_construction(const Args& args);  // theory.cpp
int run_theory_rowsums(const Args& args);       // theory.cpp
int run_theory_denominator(const Args& args);   // theory.cpp
int run_analyze(const Args& args);              // analyze.cpp
int run_profile(const Args& args);              // profile.cpp

// Trains `config` into `out` with the trainer of its family and prints its summary; returns the
// exit code (train.cpp; `urpe profile` trains its window this way too).
int train_config(const Config& config, const std::string& out, const TrainOptions& options);

}  // namespace urpe::cli
