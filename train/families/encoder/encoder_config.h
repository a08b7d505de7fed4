// The keys of the encoder family (`model = encoder`: the synthetic tasks PI and ETP,
// docs/synthetic_encoder.md, and masked language modelling, encoder_mlm_config.h) and their checks.
#pragma once
#include "base/io/config.h"

namespace urpe {

// Adds the family's keys (the registry's add_keys for "encoder").
void add_encoder_keys(ConfigSchema& schema);
// Ranges and combinations of the family's keys; one error naming the key.
void check_encoder_values(const Config& config);
// Whether `config` is one of this family's (the commands that read encoder runs only).
bool is_encoder_config(const Config& config);

}  // namespace urpe
