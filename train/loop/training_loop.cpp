// The one training loop and what it needs around it: the step meter (finite loss, throughput),
// the eval-and-checkpoint cadence and the results row.
#include "train/loop/training_loop.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <utility>

#include "ops/dropout.h"
#include "train/loop/captured_step.h"
#include "tensor/cuda_backend.h"
#include "train/loop/checkpoint_identity.h"
#include "base/dist/data_parallel.h"
#include "base/dist/device_collectives.h"
#include "train/loop/finite_check.h"
#include "train/loop/init_from.h"
#include "base/io/run_dir.h"
#include "train/optim/optimizer.h"
#include "train/loop/progress.h"
#include "train/loop/run_control.h"
#include "train/families/run_plots.h"

namespace urpe {

namespace {

// The bookkeeping after every optimizer step: the loss must be finite (else one error suggesting
// a smaller lr or clipping), it joins the unlogged loss window (progress.pending_loss_*), the
// step's time joins progress.seconds, and throughput is measured over the window since the last
// restart (evaluations restart it, so they don't count).
class StepMeter {
 public:
  StepMeter() : window_start_(std::chrono::steady_clock::now()) {}
  void begin_step() { step_start_ = std::chrono::steady_clock::now(); }
  // Records step `step`; `units` is what it processed. Returns units per second over the window.
  double end_step(int64_t step, double loss, double units, TrainingProgress& progress) {
    URPE_CHECK(std::isfinite(loss), "training diverged at step " << step << " (loss " << loss
                                        << "); try a smaller lr or clip > 0");
    const auto now = std::chrono::steady_clock::now();
    progress.pending_loss_sum += loss;
    ++progress.pending_loss_count;
    progress.step = step;
    progress.seconds += std::chrono::duration<double>(now - step_start_).count();
    window_units_ += units;
    const double window = std::chrono::duration<double>(now - window_start_).count();
    return window > 0 ? window_units_ / window : 0.0;
  }
  void restart_window() {
    window_start_ = std::chrono::steady_clock::now();
    window_units_ = 0;
  }

 private:
  std::chrono::steady_clock::time_point window_start_, step_start_;
  double window_units_ = 0;
};

// ---- data parallelism (base/dist): the loop's hooks ----

// Rank 0 locks the run directory (base/io/run_lock.h: held until the run ends) and opens or
// reopens it, checking on resume that its files belong together (train/loop/checkpoint_identity.h);
// the other ranks write nothing and, on resume, read the stored config from the same checkpoint
// (a shared file system). A failure on any rank is one error on rank 0, and every rank stops.
std::string open_run_directory_on(dist::Communicator& comm, const std::string& out_dir, const TrainOptions& options,
                                  Config& config, std::shared_ptr<RunDirectoryLock>& lock) {
  std::string checkpoint_path, error;
  try {
    if (comm.is_root()) {
      make_directories(out_dir);
      lock = std::make_shared<RunDirectoryLock>(out_dir, LockMode::exclusive, options.resume ? "--resume" : "--out");
      checkpoint_path = open_run_directory(out_dir, options, config);
    } else {
      checkpoint_path = join_path(out_dir, "model.safetensors");
      if (options.resume) config = resumed_config(out_dir, options.resume_overrides);
    }
  } catch (const Error& e) {
    error = e.what();
  }
  dist::check_collective(comm, error.empty(), error);
  return checkpoint_path;
}

// Before a checkpoint is saved: the parameters and the optimizer's state must be finite on every
// rank. A diverged update (a too large lr) makes them NaN or infinite one step before the loss
// shows it; the run then stops with one error naming the step and the first bad tensor, and the
// checkpoints already on disk (the last good one and the best one) stay as they are.
void check_finite_before_saving(dist::Communicator& comm, const ParameterSet& params,
                                const std::vector<NamedTensor>& optimizer_state, int64_t step,
                                int64_t last_saved_step, const std::string& out_dir) {
  std::vector<NamedTensor> tensors;
  for (const auto& [name, t] : params.items()) tensors.emplace_back("model." + name, t);
  tensors.insert(tensors.end(), optimizer_state.begin(), optimizer_state.end());
  const NonFiniteValue bad = first_non_finite(tensors);
  std::string message;
  if (bad.found)
    message = "training diverged at step " + std::to_string(step) + ": " + bad.describe() + " after the update; " +
              (last_saved_step > 0 ? join_path(out_dir, kLastCheckpointName) + " (step " +
                                         std::to_string(last_saved_step) + ") and the best checkpoint are kept"
                                   : std::string("no checkpoint was saved before it")) +
              "; try a smaller lr, a longer warmup or clip > 0";
  dist::check_collective(comm, !bad.found, message);
}

// Every rank trains the same config with the same build, on an equal shard of the global batch.
void check_data_parallel_run(dist::Communicator& comm, const Config& config, const RunSettings& settings) {
  if (comm.size() == 1) return;
  dist::check_same_run(comm, config.to_text());
  const int64_t batch = settings.batch;
  dist::check_collective(comm, batch % comm.size() == 0,
                         "config: batch = " + std::to_string(batch) + " is the global batch and must divide evenly "
                         "across the " + std::to_string(comm.size()) + " ranks (mpirun -np " +
                         std::to_string(comm.size()) + "); use a multiple of " + std::to_string(comm.size()));
  // Each rank splits its rows into the micro-batches of gradient accumulation.
  const int64_t accum = settings.accum_steps;
  dist::check_collective(comm, batch / comm.size() % accum == 0,
                         "config: accum_steps = " + std::to_string(accum) + " must divide each rank's " +
                             std::to_string(batch / comm.size()) + " rows of the batch (batch " + std::to_string(batch) +
                             " over " + std::to_string(comm.size()) + " ranks); use a batch that is a multiple of " +
                             std::to_string(accum * comm.size()));
}

// device = cuda (no index) on several ranks: each rank takes GPU local_rank % (visible GPUs), the
// usual one-rank-per-GPU mapping (docs/distributed.md#gpus); an explicit
// cuda:N is used as given (e.g. with a CUDA_VISIBLE_DEVICES per rank).
std::string rank_device_name(const dist::Communicator& comm, const std::string& name) {
  if (name != "cuda" || comm.size() == 1) return name;
  const int count = cuda::device_count();
  if (count <= 0) return name;
  return "cuda:" + std::to_string(dist::launcher_local_rank() % count);
}

// Rank r > 0 draws its own dropout masks: rank 0's stream with another seed at the same offset
// (every rank draws alike per step, so the offsets stay equal and a resume continues exactly).
Rng rank_dropout_stream(const dist::Communicator& comm, const Rng& rank0) {
  if (comm.rank() == 0) return rank0;
  return Rng(rank0.seed() ^ (0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(comm.rank())), rank0.offset());
}

// The optimizer: Adam, sharded over the ranks when shard_optimizer = true (ZeRO-1: each rank
// keeps the moments of its 1/K of the parameters), which the run's log reports.
Adam make_optimizer(const TrainingRun& run, dist::Communicator& comm, const std::vector<Tensor>& parameters,
                   dist::DeviceCollectives* device) {
  if (!run.settings.shard_optimizer) return Adam(parameters, adam_config_from(run.settings));
  Adam optimizer(parameters, adam_config_from(run.settings), comm, device);
  if (comm.is_root() && !run.options.quiet) {
    const int64_t total = dist::total_elements(parameters);
    std::printf("shard_optimizer: Adam's moments of %lld of the %lld parameters per rank (%d rank%s)\n",
                static_cast<long long>(optimizer.moment_elements() / 2), static_cast<long long>(total), comm.size(),
                comm.size() == 1 ? "" : "s");
  }
  return optimizer;
}

// The optimizer step of the global batch on every rank: the gradients averaged over the ranks
// (all-reduce: MPI, or NCCL with `device`), then Adam; or, sharded, the reduce-scatter / update /
// all-gather of Adam::step_sharded. The global loss, and a stop requested on any rank, come back.
dist::StepSync optimizer_step(dist::Communicator& comm, dist::DeviceCollectives* device, Adam& optimizer,
                              const std::vector<Tensor>& parameters, double local_loss, double weight,
                              bool stop_requested, float lr) {
  if (optimizer.sharded()) return optimizer.step_sharded(lr, local_loss, weight, stop_requested);
  const dist::StepSync synced =
      dist::average_gradients(comm, parameters, local_loss, weight, stop_requested, device);
  optimizer.step(lr);
  return synced;
}

// model.best.safetensors: the parameters of the evaluation with the best validation metric so far
// (strictly better replaces it, as the official Transformer-XL's `val_loss < best_val_loss`). It
// is written before the last checkpoint of the same step, so a crash between the two leaves a
// best no older than the last; a resumed run re-reads the best metric from the file.
class BestCheckpoint {
 public:
  BestCheckpoint(std::string path, bool higher_is_better, bool resume)
      : path_(std::move(path)), higher_is_better_(higher_is_better) {
    if (resume && path_exists(path_)) {
      best_ = best_checkpoint_metric(path_);
      have_ = true;
    }
  }
  void offer(double metric, const ParameterSet& params, const TrainingProgress& progress,
             const std::string& config_text) {
    if (!std::isfinite(metric)) return;
    if (have_ && !(higher_is_better_ ? metric > best_ : metric < best_)) return;
    TrainerState state;
    state.meta[kBestMetricKey] = exact_number(metric);
    save_checkpoint(path_, params, nullptr, progress, config_text, state);
    best_ = metric;
    have_ = true;
  }

 private:
  static std::string exact_number(double value) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
  }
  const std::string path_;
  const bool higher_is_better_;
  double best_ = 0;
  bool have_ = false;
};

// One step's forward and backward: the task's batch in one piece, or in `accum_steps`
// micro-batches whose target-weighted gradients add up to the whole batch's
// (train/loop/grad_accumulation.h). Returns the batch's loss, what it processed and its weight.
// `unread`: the loss tensor, not yet read, when the caller reads it itself (read_loss false).
struct StepTotals {
  double loss = 0, units = 0, weight = 0;
  Tensor unread;
};
StepTotals forward_backward(TrainingTask& task, int64_t step, int64_t accum_steps, TrainingProgress& progress,
                            const std::vector<Tensor>& parameters, bool read_loss) {
  if (accum_steps == 1) {
    const StepOutput out = task.step(step, MicroBatch{}, progress);
    out.loss.backward();
    if (!read_loss) return {0.0, out.units, out.weight, out.loss};
    return {out.loss.item(), out.units, out.weight, Tensor()};
  }
  StepTotals totals;
  double weighted_loss = 0;
  for (int64_t m = 0; m < accum_steps; ++m) {
    const StepOutput out = task.step(step, MicroBatch{m, accum_steps}, progress);
    backward_weighted(out.loss, out.weight);
    weighted_loss += out.weight * out.loss.item();
    totals.units += out.units;
    totals.weight += out.weight;
  }
  divide_gradients(parameters, totals.weight);
  totals.loss = weighted_loss / totals.weight;
  return totals;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::vector<Tensor> TrainingTask::draw_batch(int64_t, TrainingProgress&) {
  URPE_FAIL("TrainingTask::draw_batch: " << graph_refusal() << " (internal error)");
}
StepOutput TrainingTask::step_on(const std::vector<Tensor>&, TrainingProgress&) {
  URPE_FAIL("TrainingTask::step_on: " << graph_refusal() << " (internal error)");
}

namespace {

// cuda_graph = on: what this run must be for a capture (the config's checks refused the CPU, the
// families that cannot and accumulation already; here what only the run knows).
std::unique_ptr<CapturedSteps> captured_steps_for(const TrainingRun& run, TrainingTask& task, Adam& optimizer,
                                                  const dist::Communicator& comm) {
  if (!run.settings.cuda_graph) return nullptr;
  const std::string refusal = task.graph_refusal();
  URPE_CHECK(refusal.empty(), "config: cuda_graph = on: this task cannot be captured: " << refusal);
  URPE_CHECK(comm.size() == 1, "config: cuda_graph = on: one process only (a captured step would hold the "
                               "gradients' exchange between the ranks); run without mpirun or with cuda_graph = off");
  URPE_CHECK(run.settings.accum_steps == 1, "config: cuda_graph = on needs accum_steps = 1 (got "
                                                << run.settings.accum_steps << "): the capture holds one micro-batch");
  URPE_CHECK(!run.profile.records_ops(),
             "--trace with cuda_graph = on: the per-op recorder times each op as the host launches it, and a replayed "
             "CUDA graph launches none; trace with cuda_graph = off");
  return std::make_unique<CapturedSteps>(task, optimizer, run.device);
}

}  // namespace

TrainingRun begin_training_run(const Config& config_in, const std::string& out_dir, const TrainOptions& options) {
  Config config = config_in;
  dist::Communicator& comm = dist::world();
  std::shared_ptr<RunDirectoryLock> lock;
  std::string checkpoint_path = open_run_directory_on(comm, out_dir, options, config, lock);
  RunSettings settings = run_settings_from(config);
  check_data_parallel_run(comm, config, settings);
  const int64_t steps = settings.steps, eval_every = settings.eval_every;
  URPE_CHECK(steps > 0, "config: steps must be positive, got " << steps);
  URPE_CHECK(eval_every > 0, "config: eval_every must be positive, got " << eval_every);
  const uint64_t seed = static_cast<uint64_t>(settings.seed);
  const Device device = parse_device(rank_device_name(comm, settings.device));
  ProfileWindow profile = apply_device_options(options, device, steps, settings.precision);
  return TrainingRun{std::move(config), std::move(settings), out_dir, std::move(checkpoint_path), options, steps, eval_every,
                     seed,              device,  std::move(profile),         &comm,           std::move(lock)};
}

TrainingOutcome run_training(TrainingRun& run, TrainingTask& task) {
  const TrainOptions& options = run.options;
  dist::Communicator& comm = run.comm ? *run.comm : dist::world();
  const bool root = comm.is_root();
  // Several ranks on GPUs, with NCCL in the build: the gradients never leave the GPUs.
  const std::unique_ptr<dist::DeviceCollectives> device_collectives =
      comm.size() > 1 ? dist::nccl_collectives(comm, run.device) : nullptr;
  if (device_collectives && root && !options.quiet)
    std::printf("data parallel: %d ranks, gradients exchanged on the GPUs by %s\n", comm.size(),
                device_collectives->describe().c_str());
  Adam optimizer = make_optimizer(run, comm, task.parameters().tensors(), device_collectives.get());
  LrSchedule schedule = lr_schedule_from(run.settings, run.steps);
  task.adjust_schedule(schedule);
  schedule.validate();

  // From here a signal only sets the stop flag, polled after every step: the first file below may
  // move an --overwrite's old run aside (base/io/run_dir.h), which a stop must be able to put back.
  const StopOnInterrupt interrupt;
  // A resume that fails before its first checkpoint leaves the directory as it was.
  ResumeRollback resume_rollback(root && options.resume ? run.out_dir : "");
  // An --overwrite stopped before the new run's first checkpoint puts the old run back: the loop
  // then stops without saving (decided by rank 0, which holds the claim, for every rank).
  std::string replacing = root && !options.resume && old_run_restorable(run.out_dir) ? "1" : "0";
  if (comm.size() > 1) comm.broadcast(replacing);
  const bool stop_restores_old_run = replacing == "1";

  TrainingProgress progress;
  progress.data_rng = Rng(task.data_seed(run.seed));
  progress.dropout_rng = Rng(task.dropout_seed(run.seed));
  if (options.resume) {
    const CheckpointInfo info = load_checkpoint(run.checkpoint_path, task.parameters(), &optimizer);
    progress = info.progress;
    // A run directory from before run ids gets one now (its config.txt is rewritten with it).
    if (progress.run_id.empty()) progress.run_id = new_run_id();
    // config.txt again: the same values, or the keys this resume's --set changed.
    if (root)
      write_text_atomic(join_path(run.out_dir, "config.txt"), config_file_text(progress.run_id, run.config.to_text()));
    progress.dropout_rng = rank_dropout_stream(comm, progress.dropout_rng);
    task.start(progress, &info);
  } else {
    progress.run_id = new_run_id();  // rank 0's is the one saved
    if (!options.init_from.empty()) {
      const InitFromReport init = init_parameters_from_run(options.init_from, run.config, task.parameters());
      if (!options.quiet && root)
        std::printf("initialised %zu parameter tensors from %s (step %lld)%s%s\n", init.copied.size(),
                    init.checkpoint.c_str(), static_cast<long long>(init.source_step),
                    init.kept.empty() ? "" : "; at their initial value: ", join_names(init.kept).c_str());
    }
    if (root)
      write_text_atomic(join_path(run.out_dir, "config.txt"), config_file_text(progress.run_id, run.config.to_text()));
    progress.dropout_rng = rank_dropout_stream(comm, progress.dropout_rng);
    task.start(progress, nullptr);
  }
  MetricsLog metrics(root ? join_path(run.out_dir, "metrics.csv") : "", options.resume, progress.step);
  ProgressLine line(options.label.empty() ? task.progress_label() : options.label, run.steps, progress.step,
                    options.quiet || !root, options.grid);
  if (!options.resume && !options.init_from.empty()) {
    // Where a fine-tuned run starts: URPE initialised from RPE (C = 1) scores what its source did.
    const ValidationReport start = task.validate(0, false);
    metrics.write(0, "valid", start.loss, start.metric, 0.0, 0.0, 0.0);
    line.validation(start.message, start.short_metric);
  }
  const std::string config_text = run.config.to_text();
  int64_t last_saved_step = options.resume ? progress.step : 0;
  // Before the validation pass of an evaluation step (it would only score NaN) and before a save.
  auto check_finite = [&](const std::vector<NamedTensor>& optimizer_state) {
    check_finite_before_saving(comm, task.parameters(), optimizer_state, progress.step, last_saved_step, run.out_dir);
  };
  auto save_checkpoint_now = [&] {
    // On every rank: the task may gather the ranks' parts, a sharded optimizer its moments.
    const TrainerState state = task.state();
    const std::vector<NamedTensor> optimizer_state = optimizer.state();
    check_finite(optimizer_state);
    last_saved_step = progress.step;
    if (!root) return;
    // The checkpoint holds rank 0's dropout stream (its offset is every rank's).
    save_checkpoint_with(run.checkpoint_path, task.parameters(), optimizer_state, progress, config_text, state);
    // The run is resumable from here: what a failure would have put back is no longer needed.
    resume_rollback.commit();
    new_run_saved(run.out_dir);
  };
  BestCheckpoint best(join_path(run.out_dir, kBestCheckpointName), task.metric_higher_is_better(), options.resume);

  const std::vector<Tensor> parameter_tensors = task.parameters().tensors();
  const int64_t accum_steps = run.settings.accum_steps;
  // cuda_graph = on: warm-up, one capture, replays (train/loop/captured_step.h).
  const std::unique_ptr<CapturedSteps> captured = captured_steps_for(run, task, optimizer, comm);
  StepMeter meter;
  bool interrupted = false, saved_nothing = false;
  for (int64_t step = progress.step + 1; step <= run.steps; ++step) {
    meter.begin_step();
    run.profile.before_step(step);
    optimizer.zero_grad();
    // The dropout stream's place at the step's start, on the device (ops/dropout.h): a CUDA
    // dropout reads its seed from there plus a constant delta, as a captured step would.
    mark_dropout_step(progress.dropout_rng, run.device);
    // One rank: the loss is read after the optimizer's update is queued, so that the GPU runs the
    // update while the host waits for the read (read before it, the stream ran dry for the read's
    // round trip and the update's launch: 0.65 ms of a 34 ms ZINC step on the H200). Several
    // ranks (or ZeRO) average the loss with the gradients, before the update.
    const bool read_after_update = comm.size() == 1 && !device_collectives && !optimizer.sharded();
    const float lr = schedule.at(step);
    StepTotals out;
    dist::StepSync synced;
    if (captured) {
      const bool was_replaying = captured->replaying();
      const CapturedSteps::Result r = captured->run(step, lr, progress);
      synced.loss = out.loss = r.loss;
      out.units = r.units;
      synced.stop = interrupt.requested() || step == options.stop_after_step;
      if (!was_replaying && captured->replaying()) {
        char text[160];
        std::snprintf(text, sizeof text, "cuda_graph: step %lld captured (graph pool %.1f MiB), replayed from here on",
                      static_cast<long long>(step), static_cast<double>(captured->pool_bytes()) / (1024.0 * 1024.0));
        line.message(text);
      }
    } else {
      out = forward_backward(task, step, accum_steps, progress, parameter_tensors, !read_after_update);
      // With several ranks: the global batch's gradients and loss on every rank, and a stop on one
      // rank (Ctrl-C) is a stop on all, at the same step.
      synced = optimizer_step(comm, device_collectives.get(), optimizer, parameter_tensors, out.loss, out.weight,
                              interrupt.requested() || step == options.stop_after_step, lr);
      if (out.unread.defined()) synced.loss = out.loss = out.unread.item();
    }
    run.profile.after_step(step);
    const double loss_value = synced.loss;
    if (options.on_step) options.on_step(step, loss_value);
    const double units_per_s = meter.end_step(step, loss_value, out.units * comm.size(), progress);
    line.update(step, loss_value, lr, units_per_s);

    // The eval-and-checkpoint cadence:
    //  - every `eval_every` steps and at the last step: write the "train" row of metrics.csv (the
    //    mean loss of the window since the last evaluation, and the train metric), run the
    //    validation pass and write its row, print its line, save a checkpoint, and restart the
    //    throughput window (so evaluations don't count in tokens/s);
    //  - on Ctrl-C or at options.stop_after_step: save a checkpoint unless this step's evaluation
    //    just did (between evaluations it also holds the unlogged loss window, so a resumed run
    //    logs what an uninterrupted one would), print how to resume, and stop.
    const bool stop = synced.stop;
    if (stop && stop_restores_old_run && last_saved_step == 0) {
      line.message("interrupted at step " + std::to_string(step) + ", before the run's first checkpoint: nothing of "
                   "it is kept, and the run " + run.out_dir + " held before is put back");
      interrupted = saved_nothing = true;
      break;
    }
    const bool evaluate_now = step % run.eval_every == 0 || step == run.steps;
    if (stop && !evaluate_now) save_checkpoint_now();
    if (evaluate_now) {
      check_finite({});  // the parameters, before they are scored and offered as the best
      const double train_loss = progress.pending_loss_sum / static_cast<double>(progress.pending_loss_count);
      metrics.write(step, "train", train_loss, task.train_metric(train_loss), lr, units_per_s, progress.seconds);
      progress.pending_loss_sum = 0;
      progress.pending_loss_count = 0;
      const ValidationReport valid = task.validate(step, step == run.steps);
      URPE_CHECK(std::isfinite(valid.loss),
                 "training diverged at step " << step << ": the validation loss is " << valid.loss
                     << " although every parameter is finite; "
                     << (last_saved_step > 0 ? join_path(run.out_dir, kLastCheckpointName) + " (step " +
                                                   std::to_string(last_saved_step) + ") and the best checkpoint are kept"
                                             : std::string("no checkpoint was saved before it"))
                     << "; try a smaller lr, a longer warmup or clip > 0");
      metrics.write(step, "valid", valid.loss, valid.metric, lr, units_per_s, progress.seconds);
      line.validation(valid.message, valid.short_metric);
      if (root) best.offer(valid.metric, task.parameters(), progress, config_text);  // before the last: see BestCheckpoint
      save_checkpoint_now();
      meter.restart_window();
    }
    if (stop) {
      line.message("interrupted: checkpoint saved at step " + std::to_string(step) +
                   "; continue with: urpe train --resume " + run.out_dir);
      interrupted = true;
      break;
    }
  }
  line.finish();

  const TrainingTask::Result final =
      task.finish(TrainingTask::Loop{progress, interrupted, schedule.at(progress.step), metrics});
  TrainingOutcome outcome;
  outcome.progress = progress;
  outcome.interrupted = interrupted;
  ResultRow& r = outcome.result;
  r.experiment = options.experiment;
  r.task = final.task;
  r.model = final.model;
  r.pe = run.settings.pe;
  r.seed = run.settings.seed;
  r.metric_name = final.metric_name;
  r.metric = final.metric;
  r.params = task.parameters().count();
  r.steps = progress.step;
  r.seconds = progress.seconds;
  r.device = run.device.name();
  if (root && !saved_nothing) {
    write_text_atomic(join_path(run.out_dir, "results.json"), result_to_json(r).dump(2) + "\n");
    draw_run_plots(run.out_dir);
  }
  resume_rollback.commit();  // a resume of a finished run saves no checkpoint, and succeeded all the same
  return outcome;
}

}  // namespace urpe
