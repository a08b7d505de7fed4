// Checkpoints: model parameters, optimizer state, step and random-stream positions in one
// safetensors file (Python users can open it), with the resolved config in its metadata. Written
// atomically; restoring one continues training bit-identically on the same device and build.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/parameters.h"
#include "tensor/rng.h"
#include "train/optim/optimizer.h"
#include "base/io/safetensors.h"

namespace urpe {

struct TrainingProgress {
  int64_t step = 0;    // updates taken
  Rng data_rng;        // where the training-batch stream stands
  Rng dropout_rng;     // where the dropout-seed stream stands
  double seconds = 0;  // training time so far
  // The training-loss window not yet logged (sum and count of step losses since the last
  // metrics row), so a resumed run logs exactly what an uninterrupted one would.
  double pending_loss_sum = 0;
  int64_t pending_loss_count = 0;
  // Which run this is (train/loop/checkpoint_identity.h): drawn when the run starts, kept across
  // --resume; "" in checkpoints written before runs had ids.
  std::string run_id;
};

// What a particular trainer must add to resume exactly (the language-model trainer: its position
// in the ordered token stream and the carried memory). Stored as tensors "state.<name>" and
// metadata "state.<key>".
struct TrainerState {
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> meta;
};

// Tensors: "model.<param name>", the optimizer's state() entries and the trainer state.
// Metadata: format, step, config, config_hash, run_id, rng seeds/offsets, seconds, the trainer
// state. Every tensor must be finite: a NaN or infinity is one error naming the tensor and the
// step, and nothing is written (the file already there, the last good checkpoint, stays).
void save_checkpoint(const std::string& path, const ParameterSet& params, const Adam* optimizer,
                     const TrainingProgress& progress, const std::string& config_text,
                     const TrainerState& state = {});
// The same with the optimizer's state() taken beforehand (a sharded optimizer gathers it from
// every rank, while rank 0 alone writes the file).
void save_checkpoint_with(const std::string& path, const ParameterSet& params,
                          const std::vector<NamedTensor>& optimizer_state, const TrainingProgress& progress,
                          const std::string& config_text, const TrainerState& state = {});

struct CheckpointInfo {
  TrainingProgress progress;
  std::string config_text;
  std::string config_hash;  // as stored (16 hex digits), "" in checkpoints from before run ids
  TrainerState state;  // on the CPU; empty when the trainer stored none
};
// Copies the stored values into `params` (and `optimizer` when given). Every parameter must be
// present with its shape; otherwise one error naming the file, the tensor and what was expected.
CheckpointInfo load_checkpoint(const std::string& path, const ParameterSet& params, Adam* optimizer);
// Refuses a checkpoint with a non-finite parameter or optimizer value (a diverged run saved by an
// older build): evaluating or resuming it would only print NaN.
// Only the metadata (config text, progress) — to rebuild the model before loading the values.
// Both check every metadata value (format, step <= 2^53, random-stream seeds and offsets,
// seconds and the loss window finite and >= 0, ...) and reject a bad one with one error naming
// the file, the key and what was expected.
CheckpointInfo read_checkpoint_info(const std::string& path);

// A run directory holds two checkpoints: the last one (resumable: parameters, Adam, streams) and
// the one with the best validation metric so far (parameters, progress and config, no Adam state;
// its metric as metadata "state.best_metric"). The official Transformer-XL reports test on the
// best; `urpe eval --checkpoint best|last` and the repro commands choose between them.
inline constexpr const char* kLastCheckpointName = "model.safetensors";
inline constexpr const char* kBestCheckpointName = "model.best.safetensors";
inline constexpr const char* kBestMetricKey = "best_metric";
// The path of run directory `dir`'s "last" or "best" checkpoint. Any other `which`, or a missing
// file, is one error naming the directory and what to do.
std::string run_checkpoint_path(const std::string& dir, const std::string& which);
// The validation metric stored in the best checkpoint at `path` (a finite number >= 0).
double best_checkpoint_metric(const std::string& path);

// The trainer-state integer "state.<key>" of the checkpoint at `path`, in [min, max] (min >= 0);
// a missing or bad value is one error naming the file, the key and the range.
int64_t state_integer(const TrainerState& state, const std::string& path, const std::string& key, int64_t min,
                      int64_t max);

}  // namespace urpe
