// What `urpe train --resume DIR` checks before it trusts DIR (docs/runs.md#resume-checks): that
// the checkpoint, the best checkpoint and config.txt belong to one run. Every fresh run draws a
// random run id, which config.txt (as its first comment line) and every checkpoint it writes carry
// (metadata "run_id", beside "config_hash": the FNV-1a hash of the stored config text). A
// checkpoint copied in from another run (or family) has another id; a config.txt edited by hand
// differs from the checkpoint's config. Either is refused, naming the file and the keys that
// differ, instead of resuming a mixture.
//
// A run may still change a few keys on purpose: `urpe train --resume DIR --set steps=N` (the keys
// of resumable_keys(): the run's length, how often it evaluates, the device and the precision:
// the checkpoint is FP32 whatever the precision, docs/cuda.md#mixed-precision). They do not
// change what was learned so far; every other key does, and is refused.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "train/loop/checkpoint.h"
#include "base/io/config.h"

namespace urpe {

// 16 lower-case hex digits from the system's random source.
std::string new_run_id();
bool is_run_id(const std::string& text);
// FNV-1a 64 of `text`, as 16 lower-case hex digits.
std::string config_text_hash(const std::string& text);

// config.txt: the run id as its first line ("# run_id = <id>"), then the resolved config.
std::string config_file_text(const std::string& run_id, const std::string& config_text);
// The run id config.txt's first line names, or "" (a run directory written before run ids).
std::string run_id_in_config_file(const std::string& text);

struct ConfigDifference {
  std::string key, first, second;  // a value is "(none)" where the config has no such key
};
// The keys whose values differ, `a`'s keys in its order, then the keys only `b` has.
std::vector<ConfigDifference> config_differences(const Config& a, const Config& b);
// "steps (config.txt 20, checkpoint 10), lr (config.txt 0.1, checkpoint 0.002)".
std::string describe_differences(const std::vector<ConfigDifference>& differences, const std::string& first_name,
                                 const std::string& second_name);

// The keys `--resume DIR --set key=value` may change: steps, eval_every, device, precision.
const std::vector<std::string>& resumable_keys();

// The config a resumed run continues with: the one stored in DIR's checkpoint, with `overrides`
// (each "key=value", a resumable key only; steps not below the checkpoint's step) applied. Errors
// name the --set, the key and the keys that may change.
Config resumed_config(const std::string& dir, const std::vector<std::string>& overrides);

// The checks of --resume DIR (before anything is loaded or written): the checkpoint's stored
// config has the hash it was saved with (it was not edited in place), DIR/config.txt and
// DIR/model.best.safetensors belong to the run of DIR/model.safetensors (same run id, where both
// carry one), config.txt's values equal the checkpoint's config (or, for a key this resume's
// --set changes, the new value: `resumed` is resumed_config's result), and the best checkpoint's
// config differs from the last one's in resumable keys only. One error naming the file, the
// differing keys and what to do.
void check_resume_identity(const std::string& dir, const Config& resumed);

}  // namespace urpe
