// The configuration of a training run: every key `urpe train` accepts (with type, default and
// meaning), the built-in presets, and resolution of preset / file / --set overrides.
//
// Keys come in two layers: the common keys of every run (model, seed, steps, batch, lr, ...) and
// the keys of the model family the `model` key picks (each family adds its own through the
// registry, train/families/model_family.h). Keys are pinned: presets, docs, tests and external
// scripts rely on their names.
#pragma once
#include <string>
#include <vector>

#include "base/io/config.h"
#include "tensor/dtype.h"

namespace urpe {

// The model families `model = ...` may name, in help order.
const std::vector<std::string>& model_families();
// Common keys + the family's keys. An unknown family is an error listing the known ones.
const ConfigSchema& schema_for_model(const std::string& model);

struct Preset {
  std::string name;
  std::string description;
  std::string text;  // 'key = value' lines applied over the defaults (may set `model`)
};
const std::vector<Preset>& presets();
const Preset& find_preset(const std::string& name);  // error lists the valid names

// The `model` a config text names ("encoder" when it names none), without parsing the rest.
std::string model_named_in(const std::string& text);

// Defaults, then the preset (if any), then the file (if any), then each --set in order; the
// schema is the one of the model family the last of them names.
Config resolve_config(const std::string& preset, const std::string& config_file,
                      const std::vector<std::string>& overrides);
// A resolved config text (config.txt, a checkpoint's metadata) read back with its family's schema.
Config config_from_text(const std::string& text, const std::string& source);

// Every value checked against what its key means (lr > 0, dropout in [0, 1), warmup <= steps,
// heads dividing d_model, ...) for the config's family: one error naming the key the user sets.
// resolve_config and config_from_text run it, so a bad value stops a command before any data is
// read or directory touched.
void check_config_values(const Config& config);
// The files and directories the config names exist and are of the right kind (txl: `corpus` a
// directory; graphormer: `dataset` and a `split` path files); one error naming the key.
void check_config_paths(const Config& config);

// The dtype the linear layers multiply in under the config's `precision` key: bf16 for bf16, f32
// for fp32 and tf32 (TF32 is a mode of cuBLAS's f32 GEMMs, switched on the CUDA context).
DType linear_dtype_of(const Config& config);

// Help text for `urpe train --help`: the keys of every family with type, default and meaning,
// then the presets.
std::string run_config_help();

}  // namespace urpe
