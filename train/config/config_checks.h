// Range checks of config values, each error naming the key the user sets ("config: lr must be
// > 0, got -1"), so that a bad value stops `urpe train` before any data is read, any directory
// is touched or any model is built, instead of surfacing later under an internal name (the
// schedule's peak_lr, a derived eval_* key) or not at all (a negative init_std trained).
// The families' checks (run_config.cpp, txl_config.cpp, graphormer_config.cpp) are written with
// these; check_config_values in run_config.h runs them.
#pragma once
#include <cstdint>
#include <string>

#include "base/io/config.h"

namespace urpe::config_check {

// An int key ≥ min (and ≤ max).
void int_at_least(const Config& config, const std::string& key, int64_t min);
void int_between(const Config& config, const std::string& key, int64_t min, int64_t max);
// A float key > 0 (as the float32 the model uses: 1e-50 is 0 there).
void positive(const Config& config, const std::string& key);
// A float key ≥ 0.
void non_negative(const Config& config, const std::string& key);
// A float key in [0, 1): a dropout probability.
void probability(const Config& config, const std::string& key);
// Every float key of the config fits a float32 (1e39 would become inf in the model).
void every_float_fits_float32(const Config& config);
// `heads` divides `width` (d_model).
void heads_divide(const Config& config, const std::string& heads, const std::string& width);
// `device` reads as cpu, cuda or cuda:N.
void device_name(const Config& config, const std::string& key);

}  // namespace urpe::config_check
