// Checkpoint layout on top of safetensors (base/io/safetensors.h).
#include "train/loop/checkpoint.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>

#include "train/config/run_config.h"
#include "train/loop/checkpoint_identity.h"
#include "train/loop/finite_check.h"
#include "base/io/run_dir.h"
#include "base/io/safetensors.h"

namespace urpe {

static const char* kFormat = "urpe-checkpoint-1";

// A double printed with enough digits to read back the same bits.
static std::string exact_text(double value) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

void save_checkpoint(const std::string& path, const ParameterSet& params, const Adam* optimizer,
                     const TrainingProgress& progress, const std::string& config_text,
                     const TrainerState& state) {
  save_checkpoint_with(path, params, optimizer ? optimizer->state() : std::vector<NamedTensor>{}, progress,
                       config_text, state);
}

void save_checkpoint_with(const std::string& path, const ParameterSet& params,
                          const std::vector<NamedTensor>& optimizer_state, const TrainingProgress& progress,
                          const std::string& config_text, const TrainerState& state) {
  std::vector<NamedTensor> tensors;
  for (const auto& [name, t] : params.items()) tensors.emplace_back("model." + name, t);
  for (const auto& entry : optimizer_state) tensors.push_back(entry);
  for (const auto& [name, t] : state.tensors) tensors.emplace_back("state." + name, t);
  const NonFiniteValue bad = first_non_finite(tensors);
  URPE_CHECK(!bad.found, "training diverged: at step " << progress.step << " " << bad.describe()
                             << ", so it is not saved; " << path << " keeps the last finite state"
                             << "; try a smaller lr, a longer warmup or clip > 0");
  std::map<std::string, std::string> meta = {
      {"format", kFormat},
      {"step", std::to_string(progress.step)},
      {"config", config_text},
      {"config_hash", config_text_hash(config_text)},
      {"data_rng_seed", std::to_string(progress.data_rng.seed())},
      {"data_rng_offset", std::to_string(progress.data_rng.offset())},
      {"dropout_rng_seed", std::to_string(progress.dropout_rng.seed())},
      {"dropout_rng_offset", std::to_string(progress.dropout_rng.offset())},
      {"seconds", std::to_string(progress.seconds)},
      {"pending_loss_sum", exact_text(progress.pending_loss_sum)},
      {"pending_loss_count", std::to_string(progress.pending_loss_count)},
  };
  if (!progress.run_id.empty()) meta["run_id"] = progress.run_id;
  for (const auto& [key, value] : state.meta) meta["state." + key] = value;
  save_safetensors(path, tensors, meta);
}

// ---- reading: every metadata value is checked, and a bad one is one error naming the file, the
// key and what was expected (never an "internal error" from a number parser) ----

// A value as quoted in an error: at most 40 characters of it.
static std::string shown(const std::string& text) {
  return "'" + (text.size() > 40 ? text.substr(0, 40) + "..." : text) + "'";
}

// Plain decimal digits (no sign, space or exponent) with a value in [0, max].
static bool parse_decimal(const std::string& text, uint64_t max, uint64_t& value) {
  if (text.empty() || text.size() > 20) return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > max / 10) return false;
    value *= 10;
    if (digit > max - value) return false;
    value += digit;
  }
  return true;
}

static uint64_t integer_in(const std::string& path, const std::string& key, const std::string& text,
                           uint64_t min, uint64_t max, const std::string& what = "") {
  uint64_t value = 0;
  URPE_CHECK(parse_decimal(text, max, value) && value >= min,
             path << ": metadata '" << key << "' should be an integer from " << min << " to " << max << what
                  << ", got " << shown(text));
  return value;
}

// The largest step a checkpoint may hold, 2^53: far beyond any run, exact as a double (the step
// reaches metrics.csv and results.json), and the training loop's step + 1 cannot overflow.
static const uint64_t kMaxStep = uint64_t{1} << 53;

static int64_t meta_count(const TensorFile& file, const std::string& key, uint64_t max,
                          const std::string& what = "") {
  return static_cast<int64_t>(integer_in(file.path, key, file.meta(key), 0, max, what));
}

// A random stream's seed (any 64-bit value) and offset (whole Philox blocks of 4: Rng::reserve).
static Rng meta_rng(const TensorFile& file, const std::string& name) {
  const uint64_t seed =
      integer_in(file.path, name + "_seed", file.meta(name + "_seed"), 0, std::numeric_limits<uint64_t>::max());
  const std::string key = name + "_offset";
  const uint64_t offset = integer_in(file.path, key, file.meta(key), 0, std::numeric_limits<uint64_t>::max());
  URPE_CHECK(offset % 4 == 0, file.path << ": metadata '" << key
                                        << "' should be a multiple of 4 (the stream advances in whole Philox "
                                           "blocks), got "
                                        << shown(file.meta(key)));
  return Rng(seed, offset);
}

// A finite number >= 0 in the form strtod reads (what exact_text and std::to_string write).
static double meta_non_negative(const TensorFile& file, const std::string& key) {
  const std::string& text = file.meta(key);
  const char* begin = text.c_str();
  char* end = nullptr;
  const bool starts_well = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.' ||
                                             text[0] == '-' || text[0] == '+');
  const double value = starts_well ? std::strtod(begin, &end) : 0.0;
  URPE_CHECK(starts_well && end == begin + text.size() && std::isfinite(value) && value >= 0,
             file.path << ": metadata '" << key << "' should be a finite number >= 0, got " << shown(text));
  return value;
}

static CheckpointInfo info_from(const TensorFile& file) {
  URPE_CHECK(file.meta("format") == kFormat,
             file.path << ": not a urpe checkpoint (format " << shown(file.meta("format")) << ", expected '"
                       << kFormat << "')");
  CheckpointInfo info;
  info.config_text = file.meta("config");
  // Both written since run ids exist; older checkpoints have neither. The hash is checked on every
  // read (eval, plot, --resume, --init-from): the tensor data has its CRC-32, the stored config this
  // hash, so a bit flipped in either is an error, never a run rebuilt from another config.
  if (file.metadata.count("config_hash")) {
    URPE_CHECK(is_run_id(file.meta("config_hash")),
               file.path << ": metadata 'config_hash' should be 16 hex digits, got " << shown(file.meta("config_hash")));
    info.config_hash = file.meta("config_hash");
    const std::string actual = config_text_hash(info.config_text);
    // A value that is not what its key takes is named first (config_from_text throws naming the key).
    if (info.config_hash != actual) config_from_text(info.config_text, file.path + " (config)");
    URPE_CHECK(info.config_hash == actual,
               file.path << ": the config stored in it is not the one it was saved with (metadata config_hash "
                         << info.config_hash << ", the config's hash " << actual
                         << "): the checkpoint was edited after urpe wrote it, or is corrupt; a resumed run may "
                            "change steps, eval_every, device or precision with --resume --set, anything else is a new run");
  }
  if (file.metadata.count("run_id")) {
    URPE_CHECK(is_run_id(file.meta("run_id")),
               file.path << ": metadata 'run_id' should be 16 hex digits, got " << shown(file.meta("run_id")));
    info.progress.run_id = file.meta("run_id");
  }
  TrainingProgress& p = info.progress;
  p.step = meta_count(file, "step", kMaxStep);
  p.data_rng = meta_rng(file, "data_rng");
  p.dropout_rng = meta_rng(file, "dropout_rng");
  p.seconds = meta_non_negative(file, "seconds");
  // The unlogged window: at most one loss per step taken; the losses (cross-entropy, L1) are >= 0.
  p.pending_loss_count = meta_count(file, "pending_loss_count", static_cast<uint64_t>(p.step),
                                    " (the step, " + std::to_string(p.step) + ")");
  p.pending_loss_sum = meta_non_negative(file, "pending_loss_sum");
  URPE_CHECK(p.pending_loss_count > 0 || p.pending_loss_sum == 0,
             file.path << ": metadata 'pending_loss_sum' should be 0 when 'pending_loss_count' is 0, got "
                       << shown(file.meta("pending_loss_sum")));
  const std::string prefix = "state.";
  for (const auto& [key, value] : file.metadata)
    if (key.rfind(prefix, 0) == 0) info.state.meta[key.substr(prefix.size())] = value;
  for (const auto& [name, t] : file.tensors)
    if (name.rfind(prefix, 0) == 0) info.state.tensors.emplace_back(name.substr(prefix.size()), t);
  return info;
}

int64_t state_integer(const TrainerState& state, const std::string& path, const std::string& key, int64_t min,
                      int64_t max) {
  URPE_CHECK(min >= 0 && min <= max, "state_integer: bad range [" << min << ", " << max << "]");
  auto it = state.meta.find(key);
  URPE_CHECK(it != state.meta.end(), path << ": no metadata key 'state." << key
                                          << "' (was the checkpoint written by another model family?)");
  return static_cast<int64_t>(integer_in(path, "state." + key, it->second, static_cast<uint64_t>(min),
                                         static_cast<uint64_t>(max)));
}

CheckpointInfo read_checkpoint_info(const std::string& path) { return info_from(load_safetensors(path)); }

std::string run_checkpoint_path(const std::string& dir, const std::string& which) {
  URPE_CHECK(which == "last" || which == "best", "checkpoint must be best or last, got '" << which << "'");
  const bool best = which == "best";
  const std::string path = join_path(dir, best ? kBestCheckpointName : kLastCheckpointName);
  URPE_CHECK(path_exists(path), "'" << dir << "' has no " << (best ? kBestCheckpointName : kLastCheckpointName)
                    << (best ? " (the run never reached an evaluation, or was trained before best checkpoints "
                               "were kept: use --checkpoint last)"
                             : " (not a run directory, or the run never reached its first checkpoint)"));
  return path;
}

double best_checkpoint_metric(const std::string& path) {
  const TensorFile file = load_safetensors(path);
  info_from(file);  // a urpe checkpoint at all
  const std::string key = std::string("state.") + kBestMetricKey;
  URPE_CHECK(file.metadata.count(key), path << ": no metadata key '" << key << "' (not a best checkpoint?)");
  return meta_non_negative(file, key);
}

CheckpointInfo load_checkpoint(const std::string& path, const ParameterSet& params, Adam* optimizer) {
  const TensorFile file = load_safetensors(path);
  CheckpointInfo info = info_from(file);
  std::vector<NamedTensor> loaded;
  for (const auto& [name, t] : params.items()) {
    const Tensor& stored = file.at("model." + name);
    URPE_CHECK(stored.shape() == t.shape() && stored.dtype() == t.dtype(),
               path << ": tensor 'model." << name << "' is " << stored.describe() << ", the model expects "
                    << dtype_name(t.dtype()) << " " << shape_str(t.shape())
                    << " (was the checkpoint made with another config?)");
    loaded.emplace_back("model." + name, stored);
  }
  if (optimizer)
    for (const std::string& name : optimizer->state_keys()) loaded.emplace_back(name, file.at(name));
  const NonFiniteValue bad = first_non_finite(loaded);
  URPE_CHECK(!bad.found, path << ": " << bad.describe() << " (the run diverged before step " << info.progress.step
                              << " was saved); it cannot be evaluated or resumed: train again with a smaller lr, a "
                                 "longer warmup or clip > 0");
  for (const auto& [name, t] : params.items()) t.copy_from(file.at("model." + name));
  if (optimizer) {
    std::vector<std::pair<std::string, Tensor>> state;
    for (const std::string& name : optimizer->state_keys()) state.emplace_back(name, file.at(name));
    optimizer->load_state(state);
  }
  return info;
}

}  // namespace urpe
