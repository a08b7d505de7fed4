// Run-directory opening, and Adam and the schedule from the common keys.
#include "train/loop/run_control.h"

#include "train/loop/checkpoint.h"
#include "train/loop/checkpoint_identity.h"
#include "train/config/run_config.h"
#include "base/io/run_dir.h"

namespace urpe {

std::string open_run_directory(const std::string& out_dir, const TrainOptions& options, Config& config) {
  make_directories(out_dir);
  const std::string checkpoint_path = join_path(out_dir, "model.safetensors");
  URPE_CHECK(options.resume || options.overwrite || !path_exists(checkpoint_path),
             "'" << out_dir << "' already holds a run (model.safetensors); continue it with --resume "
                 << out_dir << " or choose another --out");
  if (options.resume) {
    URPE_CHECK(path_exists(checkpoint_path),
               "cannot resume: no checkpoint at '" << checkpoint_path << "' (is this a run directory?)");
    config = resumed_config(out_dir, options.resume_overrides);
    check_resume_identity(out_dir, config);
  }
  return checkpoint_path;
}

Config stored_run_config(const std::string& dir) {
  URPE_CHECK(path_exists(dir), "run directory '" << dir << "' does not exist");
  const std::string checkpoint = join_path(dir, "model.safetensors");
  URPE_CHECK(path_exists(checkpoint), "'" << dir << "' has no model.safetensors (not a run directory, or the "
                                          "run never reached its first checkpoint)");
  return config_from_text(read_checkpoint_info(checkpoint).config_text, checkpoint + " (config)");
}

AdamConfig adam_config_from(const RunSettings& settings) {
  AdamConfig adam;
  adam.weight_decay = static_cast<float>(settings.weight_decay);
  adam.clip_norm = static_cast<float>(settings.clip);
  adam.decay_biases_and_norms = settings.decay_biases_and_norms;
  return adam;
}

LrSchedule lr_schedule_from(const RunSettings& settings, int64_t steps) {
  LrSchedule schedule;
  schedule.peak_lr = static_cast<float>(settings.lr);
  schedule.warmup = settings.warmup;
  schedule.total = steps;
  return schedule;
}

}  // namespace urpe
