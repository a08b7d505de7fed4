// What every `urpe repro` experiment takes on top of its scale (docs/reproduce.md#options-every-experiment-takes):
// `--set key=value` (repeatable), applied to every run of the grid after the scale's own settings,
// so a user changes attention, accum_steps, a data path, ... without writing a config; and
// `--tf32`, TF32 tensor-core GEMMs on CUDA for every run. Both are recorded in results.md.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace urpe {

struct ReproOverrides {
  std::vector<std::string> sets;  // "key=value", in the order given
  bool tf32 = false;
};

// The key of "key=value" (trimmed); an assignment without '=' or without a key is an error naming --set.
std::string override_key(const std::string& assignment);

// A key the experiment sets per run itself, and the option that chooses it instead.
struct OwnedKey {
  std::string key, instead;
};
// Refuses a --set of an owned key: "urpe repro lm: --set pe=... : repro lm sets pe per run (it
// compares rpe with urpe); <instead>".
void refuse_owned_keys(const ReproOverrides& overrides, const std::vector<OwnedKey>& owned, const std::string& experiment);

// The results.md line: "Every run: --set a=b --set c=d; TF32 on (--tf32)." or
// "Every run: the scale's settings (no --set); TF32 off (full FP32)."
std::string overrides_markdown_line(const ReproOverrides& overrides);

// The options as they go on a command line (" --set a=b --tf32"), for the command results.md shows.
std::string overrides_command_text(const ReproOverrides& overrides);

}  // namespace urpe
