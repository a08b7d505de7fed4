// The one training loop. It owns everything that is the same for every model family: the run
// directory, Adam and the learning-rate schedule, stepping (zero_grad → backward → step), the
// finite-loss check, the eval-and-checkpoint cadence, Ctrl-C, resume, the progress line,
// metrics.csv and results.json. A model family supplies a TrainingTask: a small adapter that makes
// a batch and computes its loss, evaluates, and describes its metric. The encoder, Transformer-XL
// and Graphormer trainers (the *_trainer.cpp files under train/families/) are such adapters.
//
// A resumed run is bit-identical to an uninterrupted one because the loop keeps every stream's
// position in TrainingProgress (and the task keeps the rest in its TrainerState), saves them in
// every checkpoint, and consumes random numbers in the same order whether or not it was stopped.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "models/parameters.h"
#include "tensor/device.h"
#include "tensor/tensor.h"
#include "train/loop/checkpoint.h"
#include "base/dist/communicator.h"
#include "train/loop/grad_accumulation.h"
#include "base/io/config.h"
#include "train/loop/profiling.h"
#include "base/io/run_dir.h"
#include "base/io/run_lock.h"
#include "train/config/run_settings.h"
#include "train/loop/schedule.h"
#include "train/loop/train_options.h"

namespace urpe {

// A run about to train: its resolved config (on resume, the one stored in the checkpoint), where
// it writes, and the keys every family shares (steps, eval_every, seed, device). `comm` is the
// run's processes (docs/distributed.md): each trains on its shard of
// every global batch (dist::batch_shard), and only its rank 0 writes files and prints progress.
struct TrainingRun {
  Config config;          // saved in config.txt and every checkpoint; the families parse their settings from it
  RunSettings settings;   // the common keys of `config`, typed (train/config/run_settings.h)
  std::string out_dir, checkpoint_path;
  TrainOptions options;
  int64_t steps = 0, eval_every = 0;
  uint64_t seed = 0;
  Device device;
  ProfileWindow profile;
  dist::Communicator* comm = nullptr;
  // The run directory's exclusive lock (rank 0), held while the run exists.
  std::shared_ptr<RunDirectoryLock> directory_lock;
};

// Opens (or reopens, with options.resume) the run directory and reads the shared keys. Refuses
// to overwrite another run (errors name the directory and what to do). Call it before building
// the model: on resume the config comes from the checkpoint.
TrainingRun begin_training_run(const Config& config, const std::string& out_dir, const TrainOptions& options);

// What a step hands back to the loop: the loss to backpropagate and what the step processed
// (tokens, molecules), for the throughput column. `weight` is the number of targets the loss is a
// mean over: micro-batches (train/loop/grad_accumulation.h) and data-parallel ranks weigh their
// gradients by it (the same for every part when the parts are alike, as in every family today).
struct StepOutput {
  Tensor loss;
  double units = 0;
  double weight = 1;
};

// What one validation pass reports: its loss and metric (the "valid" row of metrics.csv), the
// line the progress display prints, and the metric in a few characters for the progress line.
struct ValidationReport {
  double loss = 0, metric = 0;
  std::string message;
  std::string short_metric;  // e.g. "acc 93.20%", "ppl 568.99", "MAE 1.3995"
};

// A model family's part of training.
class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  virtual const ParameterSet& parameters() const = 0;
  // Prefix of the progress lines, e.g. "[pi/urpe]".
  virtual std::string progress_label() const = 0;
  // The seeds of the data and dropout streams derived from the run's seed.
  virtual uint64_t data_seed(uint64_t seed) const { return seed * 2 + 1; }
  virtual uint64_t dropout_seed(uint64_t seed) const { return seed * 2 + 2; }
  // The family's own schedule keys (decay kind, end_lr) on top of the shared ones.
  virtual void adjust_schedule(LrSchedule& schedule) const {}
  // Called once before the first step, with the progress the run starts from (fresh or
  // resumed) and, on resume, the checkpoint it was read from (with the state the task saved).
  virtual void start(const TrainingProgress& progress, const CheckpointInfo* restored) {}
  // What the task must add to a checkpoint to resume exactly (beyond parameters and progress).
  // Called on every rank of a data-parallel run (it may gather the ranks' state); rank 0 saves.
  virtual TrainerState state() const { return {}; }
  // Computes the loss of micro-batch `micro` of step `step`'s batch, in training mode. The first
  // micro-batch draws the step's batch (from progress's streams); with accum_steps = A > 1 the
  // loop then asks for micro-batches 1 … A − 1 of the same batch (micro_rows) before its one
  // optimizer step (train/loop/grad_accumulation.h). Without accumulation `micro` is {0, 1}.
  virtual StepOutput step(int64_t step, const MicroBatch& micro, TrainingProgress& progress) = 0;
  // ---- CUDA graphs (cuda_graph = on; train/loop/captured_step.h) ----
  // A family whose step can be captured splits step() (one micro-batch, one rank) in two:
  // draw_batch is the host's part (draws step `step`'s batch from progress's streams, as host
  // tensors of the same shapes every step) and step_on the device's (the loss of that batch,
  // given on the device, in training mode: no host reads, no uploads, no new shapes); step_on of
  // draw_batch's tensors moved to the device equals step(step, {}, progress). graph_refusal is
  // why the task cannot (empty: it can), for the switch's error.
  virtual std::string graph_refusal() const { return "its training step is not split for a capture yet"; }
  virtual std::vector<Tensor> draw_batch(int64_t step, TrainingProgress& progress);
  virtual StepOutput step_on(const std::vector<Tensor>& batch, TrainingProgress& progress);
  // The train metric logged on evaluation steps, from the mean loss of the window (and, if the
  // task wants, the batch of the step just taken).
  virtual double train_metric(double mean_train_loss) = 0;
  // The validation pass after step `step` (`last` is true at the final step).
  virtual ValidationReport validate(int64_t step, bool last) = 0;
  // Which way ValidationReport::metric improves (accuracy up; perplexity and MAE down): the loop
  // keeps the checkpoint of the best one as model.best.safetensors (train/loop/checkpoint.h).
  virtual bool metric_higher_is_better() const { return false; }

  // After the last step (or the stop): the run's result. The task evaluates again if its last
  // validation does not stand for the run, and may add rows (a test score) to metrics.csv.
  struct Loop {
    const TrainingProgress& progress;
    bool interrupted;   // stopped by Ctrl-C or options.stop_after_step (a checkpoint was saved)
    float lr;           // the schedule's lr at the last step taken
    MetricsLog& metrics;
  };
  struct Result {
    std::string task, model, metric_name;
    double metric = 0;
  };
  virtual Result finish(const Loop& loop) = 0;
};

struct TrainingOutcome {
  ResultRow result;  // as written to results.json
  TrainingProgress progress;
  bool interrupted = false;
};

// Trains `task` from where `run` stands to run.steps, then writes results.json (one row) and the
// run's plots. Writes config.txt (a fresh run), metrics.csv, model.safetensors (the last
// checkpoint) and model.best.safetensors (the best validation metric so far) on the way.
TrainingOutcome run_training(TrainingRun& run, TrainingTask& task);

}  // namespace urpe
