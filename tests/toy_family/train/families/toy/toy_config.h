// The toy family's keys and settings: the family docs/architecture.md#add-a-family writes, built
// as the recipe says (tests/test_family_recipe.cpp). A linear regression of `width` features: small
// enough to train in a test, and every part a family needs.
#pragma once
#include <cstdint>
#include <string>

#include "base/io/config.h"

namespace urpe {

// The family's keys typed once (the config boundary: only toy_config.cpp reads them by name).
struct ToySettings {
  std::string pe = "none";  // every family has a `pe` key; results.json reports it
  int64_t width = 4;        // features of the regression
};

void add_toy_keys(ConfigSchema& schema);
void check_toy_values(const Config& config);
ToySettings toy_settings_from(const Config& config);

}  // namespace urpe
