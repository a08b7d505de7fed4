// The configuration of a training run: every key `urpe train` accepts (with type, default and
// meaning), the built-in presets, and resolution of preset / file / --set overrides.
// Keys are pinned: presets, docs, tests and external scripts rely on their names.
#pragma once
#include <string>
#include <vector>

#include "train/config.h"

namespace urpe {

const ConfigSchema& run_schema();

struct Preset {
  std::string name;
  std::string description;
  std::string text;  // 'key = value' lines applied over the defaults
};
const std::vector<Preset>& presets();
const Preset& find_preset(const std::string& name);  // error lists the valid names

// Defaults, then the preset (if any), then the file (if any), then each --set in order.
Config resolve_config(const std::string& preset, const std::string& config_file,
                      const std::vector<std::string>& overrides);

// Help text for `urpe train --help`: every key with type, default and meaning, then the presets.
std::string run_config_help();

}  // namespace urpe
