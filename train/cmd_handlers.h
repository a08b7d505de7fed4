// Entry points of the subcommands (each in its own file), referenced from the command table.
#pragma once
#include "train/cli.h"

namespace urpe::cli {

int run_train(const Args& args);   // cmd_train.cpp
int run_eval(const Args& args);    // cmd_train.cpp
int run_demo(const Args& args);    // cmd_demo.cpp
int run_repro(const Args& args);   // cmd_repro.cpp
int run_plot(const Args& args);    // cmd_plot.cpp

}  // namespace urpe::cli
