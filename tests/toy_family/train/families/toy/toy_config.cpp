// The toy family's keys, their checks and its settings (see toy_config.h).
#include "train/families/toy/toy_config.h"

#include "train/config/config_checks.h"

namespace urpe {

void add_toy_keys(ConfigSchema& s) {
  s.add_choice("pe", {"none"}, "none", "the toy has no positions (every family has the key)");
  s.add_int("width", 4, "features of the toy's linear regression");
}

void check_toy_values(const Config& config) { config_check::int_at_least(config, "width", 1); }

ToySettings toy_settings_from(const Config& config) {
  ToySettings s;
  s.pe = config.get_string("pe");
  s.width = config.get_int("width");
  return s;
}

}  // namespace urpe
