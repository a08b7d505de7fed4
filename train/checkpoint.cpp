// Checkpoint layout on top of safetensors (train/safetensors.h).
#include "train/checkpoint.h"

#include <cstdio>
#include <map>

#include "train/io/safetensors.h"

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
  std::vector<NamedTensor> tensors;
  for (const auto& [name, t] : params.items()) tensors.emplace_back("model." + name, t);
  if (optimizer)
    for (const auto& entry : optimizer->state()) tensors.push_back(entry);
  for (const auto& [name, t] : state.tensors) tensors.emplace_back("state." + name, t);
  std::map<std::string, std::string> meta = {
      {"format", kFormat},
      {"step", std::to_string(progress.step)},
      {"config", config_text},
      {"data_rng_seed", std::to_string(progress.data_rng.seed())},
      {"data_rng_offset", std::to_string(progress.data_rng.offset())},
      {"dropout_rng_seed", std::to_string(progress.dropout_rng.seed())},
      {"dropout_rng_offset", std::to_string(progress.dropout_rng.offset())},
      {"seconds", std::to_string(progress.seconds)},
      {"pending_loss_sum", exact_text(progress.pending_loss_sum)},
      {"pending_loss_count", std::to_string(progress.pending_loss_count)},
  };
  for (const auto& [key, value] : state.meta) meta["state." + key] = value;
  save_safetensors(path, tensors, meta);
}

static uint64_t meta_u64(const TensorFile& file, const std::string& key) {
  const std::string& text = file.meta(key);
  try {
    size_t used = 0;
    const unsigned long long v = std::stoull(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  URPE_FAIL(file.path << ": metadata '" << key << "' should be an unsigned integer, got '" << text << "'");
}

static CheckpointInfo info_from(const TensorFile& file) {
  URPE_CHECK(file.meta("format") == kFormat,
             file.path << ": not a urpe checkpoint (format '" << file.meta("format") << "', expected '"
                       << kFormat << "')");
  CheckpointInfo info;
  info.config_text = file.meta("config");
  info.progress.step = static_cast<int64_t>(meta_u64(file, "step"));
  info.progress.data_rng = Rng(meta_u64(file, "data_rng_seed"), meta_u64(file, "data_rng_offset"));
  info.progress.dropout_rng = Rng(meta_u64(file, "dropout_rng_seed"), meta_u64(file, "dropout_rng_offset"));
  info.progress.seconds = std::stod(file.meta("seconds"));
  info.progress.pending_loss_sum = std::stod(file.meta("pending_loss_sum"));
  info.progress.pending_loss_count = static_cast<int64_t>(meta_u64(file, "pending_loss_count"));
  const std::string prefix = "state.";
  for (const auto& [key, value] : file.metadata)
    if (key.rfind(prefix, 0) == 0) info.state.meta[key.substr(prefix.size())] = value;
  for (const auto& [name, t] : file.tensors)
    if (name.rfind(prefix, 0) == 0) info.state.tensors.emplace_back(name.substr(prefix.size()), t);
  return info;
}

CheckpointInfo read_checkpoint_info(const std::string& path) { return info_from(load_safetensors(path)); }

CheckpointInfo load_checkpoint(const std::string& path, const ParameterSet& params, Adam* optimizer) {
  const TensorFile file = load_safetensors(path);
  CheckpointInfo info = info_from(file);
  for (const auto& [name, t] : params.items()) {
    const Tensor& stored = file.at("model." + name);
    URPE_CHECK(stored.shape() == t.shape() && stored.dtype() == t.dtype(),
               path << ": tensor 'model." << name << "' is " << stored.describe() << ", the model expects "
                    << dtype_name(t.dtype()) << " " << shape_str(t.shape())
                    << " (was the checkpoint made with another config?)");
    t.copy_from(stored);
  }
  if (optimizer) {
    std::vector<std::pair<std::string, Tensor>> state;
    for (const auto& [name, t] : optimizer->state()) state.emplace_back(name, file.at(name));
    optimizer->load_state(state);
  }
  return info;
}

}  // namespace urpe
