// The common settings of every run, typed: the one place the loop's keys are read from a Config.
//
// THE CONFIG BOUNDARY. A Config (base/io/config.h) is the key/value bag that presets, config files,
// --set and a checkpoint's stored config text build; it is resolved and checked in
// train/config/run_config.cpp. Turning it into typed structs is the boundary, and it happens in
// exactly these files:
//   train/config/        the schema, the value checks (config_checks, run_config), the sources of
//                        --dry-run, the memory estimate's generic key walk, and run_settings.cpp
//                        (this struct, parsed once by run_settings_from);
//   train/families/NAME/NAME_config.cpp (and encoder_mlm_config.cpp): the family's keys, their
//                        checks and its typed settings struct (EncoderSettings, TxlSettings,
//                        GraphormerSettings), parsed once by NAME_settings_from;
//   app/cli/, app/repro/: the commands, where configs are built from the command line and from the
//                        paper's grids (they set and read keys by name as a user does).
// Everything else (the loop, trainers, memory estimates, plots, sources, bench steps, analyses)
// takes the structs; tests/test_layout.cpp counts string-keyed reads (`get_int("…")` and friends)
// outside these files and fails on any it does not list as known debt.
//
// Adding a common setting: add_common_keys (run_config.cpp) declares it with its default and
// help, check_common_values checks it (one error naming the key), a field here and one line in
// run_settings_from read it; the loop reads the field.
#pragma once
#include <cstdint>
#include <string>

#include "base/io/config.h"

namespace urpe {

struct RunSettings {
  std::string model;  // the family (train/families/registry.cpp)
  int64_t seed = 1;
  int64_t steps = 0;
  int64_t batch = 0;        // sequences (molecules) per step, over every rank
  int64_t accum_steps = 1;  // micro-batches per step; divides batch
  // Adam and the learning-rate schedule.
  double lr = 0;
  int64_t warmup = 0;
  double weight_decay = 0;
  bool decay_biases_and_norms = true;
  double clip = 0;  // global gradient-norm clip; 0 = off
  int64_t eval_every = 1;
  bool shard_optimizer = false;  // ZeRO-1 under mpirun
  std::string device;            // "cpu", "cuda" or "cuda:N" (parse_device)
  std::string precision;         // "fp32", "tf32" or "bf16" (apply_device_options)
  bool cuda_graph = false;       // capture the steady step as a CUDA graph (train/loop/captured_step.h)
  // Every family has a positional-encoding key `pe`; results.json reports it.
  std::string pe;
};

// The common keys of a resolved config (check_config_values has checked their values).
RunSettings run_settings_from(const Config& config);

}  // namespace urpe
