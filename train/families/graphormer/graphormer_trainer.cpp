// Graphormer's part of training (shuffled epochs of collated molecule batches, mean L1 loss,
// validation and test MAE beside the predict-the-training-mean baseline) and the molecule data it
// reads. The loop itself is train/loop/training_loop.h.
#include "train/families/graphormer/graphormer_trainer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <cstdio>
#include <sstream>

#include "autograd/node.h"
#include "train/loop/checkpoint.h"
#include "base/io/printable.h"
#include "train/families/graphormer/batch_prefetch.h"
#include "train/families/graphormer/graphormer_config.h"
#include "train/families/graphormer/graphormer_sources.h"
#include "train/config/run_config.h"
#include "base/dist/data_parallel.h"
#include "train/loop/training_loop.h"

namespace urpe {

namespace {


constexpr uint64_t kSubsetSalt = 0x5b5e7ULL;  // the train_subset draw: split_seed's own stream

// A Fisher–Yates permutation of `rows` drawn from `rng` (advances it).
std::vector<int64_t> shuffled(std::vector<int64_t> rows, Rng& rng) {
  for (size_t k = rows.size(); k > 1; --k) std::swap(rows[k - 1], rows[rng.below(static_cast<int64_t>(k))]);
  return rows;
}

}  // namespace

// ---- data ----

GraphormerData load_graphormer_data(const Config& config) {
  return load_graphormer_data(graphormer_settings_from(config));
}

GraphormerData load_graphormer_data(const GraphormerSettings& settings) {
  const std::string& source = settings.dataset;
  const std::string& split_key = settings.split;
  const int64_t max_nodes = settings.max_nodes;
  const uint64_t split_seed = settings.split_seed;
  data::MoleculeCsvOptions csv;
  csv.smiles_column = settings.smiles_column;
  csv.target_column = settings.target_column;
  csv.max_atoms = max_nodes;  // larger molecules are left out below; none of their O(N²) tables is built

  GraphormerData d;
  std::string split_file;
  std::string source_label = source == "embedded" ? "embedded molecules" : source;
  std::optional<data::MoleculeSplit> own_split;  // a graph file's split column
  if (source == "embedded") {
    const std::string dir = data::embedded_molecules_dir();
    d.dataset = data::load_molecule_csv(join_path(dir, "molecules.csv.gz"), csv,
                                        data::AtomVocabulary::load(join_path(dir, "atom_types.txt")));
    if (split_key == "auto") split_file = join_path(dir, "split.csv");
  } else {
    ConfiguredMolecules m = load_configured_molecules(settings);  // graph file, ZINC-250k or CSV
    d.dataset = std::move(m.dataset);
    source_label = m.label;
    if (split_key == "auto" && m.own_split) own_split = std::move(m.own_split);
  }
  URPE_CHECK(d.dataset.size() > 0, d.dataset.source << ": no molecules");
  if (split_key != "auto" && split_key != "seeded") split_file = split_key;
  if (!split_file.empty()) {
    URPE_CHECK(path_exists(split_file), "config: split file '" << split_file << "' does not exist");
    d.split = data::load_split_file(split_file, d.dataset.size());
  } else if (own_split) {
    d.split = std::move(*own_split);
  } else {
    d.split = data::seeded_split(d.dataset.size(), split_seed);
  }

  for (auto* part : {&d.split.train, &d.split.valid, &d.split.test}) {
    const size_t before = part->size();
    part->erase(std::remove_if(part->begin(), part->end(),
                               [&](int64_t row) { return d.dataset.graphs[row].num_nodes > max_nodes; }),
                part->end());
    d.too_large += static_cast<int64_t>(before - part->size());
  }
  const int64_t full_train = static_cast<int64_t>(d.split.train.size());
  const int64_t subset = settings.train_subset;
  URPE_CHECK(subset >= 0, "config: train_subset must be >= 0, got " << subset);
  if (subset > 0 && subset < full_train) {
    Rng rng(split_seed ^ kSubsetSalt);
    std::vector<int64_t> pick = shuffled(d.split.train, rng);
    pick.resize(static_cast<size_t>(subset));
    std::sort(pick.begin(), pick.end());
    d.split.train = pick;
  }
  URPE_CHECK(!d.split.train.empty() && !d.split.valid.empty() && !d.split.test.empty(),
             d.dataset.source << ": the split leaves an empty part (train " << d.split.train.size() << ", valid "
                              << d.split.valid.size() << ", test " << d.split.test.size() << ")");

  const auto count = [](auto n) { return with_thousands_separators(static_cast<int64_t>(n)); };
  std::ostringstream text;
  text << source_label << " (" << count(d.dataset.size()) << " molecules), target " << csv.target_column << "; split "
       << (own_split                                     ? std::string("the graph file's split column")
           : split_file.empty()                          ? "seeded (split_seed " + std::to_string(split_seed) + ")"
           : source == "embedded" && split_key == "auto" ? std::string("split.csv of the embedded set")
                                                         : split_file)
       << ": train " << count(d.split.train.size());
  if (static_cast<int64_t>(d.split.train.size()) < full_train) text << " of " << count(full_train);
  text << " / valid " << count(d.split.valid.size()) << " / test " << count(d.split.test.size());
  if (d.too_large > 0) text << " (" << d.too_large << " molecules over max_nodes left out)";
  d.description = text.str();
  return d;
}

double mean_predictor_mae(const std::vector<float>& targets, const std::vector<int64_t>& fit_rows,
                          const std::vector<int64_t>& eval_rows) {
  URPE_CHECK(!fit_rows.empty() && !eval_rows.empty(), "mean_predictor_mae: empty row list");
  double mean = 0;
  for (int64_t r : fit_rows) mean += targets.at(r);
  mean /= static_cast<double>(fit_rows.size());
  double total = 0;
  for (int64_t r : eval_rows) total += std::fabs(static_cast<double>(targets.at(r)) - mean);
  return total / static_cast<double>(eval_rows.size());
}

// ---- evaluation ----

// The collator also makes the model's host-side maps (data/graph_batch_maps.h): on the prefetch
// thread for training batches, so the training thread only uploads them.
data::CollateOptions with_maps(data::CollateOptions options, const data::GraphMapOptions& maps) {
  options.maps = maps;
  return options;
}

// fixed_shapes (cuda_graph = on: docs/cuda.md#cuda-graphs): the training batches' one shape. n is
// the training split's largest molecule (what max_nodes left in), so no training batch is larger;
// D = min(multi_hop_max_dist, n − 1), at least 1: a graph of N ≤ n atoms has no path of n or more
// hops. Hops past a batch's own D read the model's zero row (models/graphormer.cpp).
data::CollateOptions with_fixed_shapes(data::CollateOptions options, const GraphormerData& data,
                                       const Graphormer& model) {
  int32_t largest = 0;
  for (int64_t row : data.split.train) largest = std::max(largest, data.dataset.graphs[row].num_nodes);
  options.fixed_nodes = std::max<int32_t>(largest, 1);
  options.fixed_hops = std::max<int32_t>(1, std::min<int32_t>(options.multi_hop_max_dist, options.fixed_nodes - 1));
  options.absent_hop_id = model.absent_hop_id();
  options.maps = model.map_options(true);
  return options;
}

std::vector<data::GraphBatch> collate_in_order(const data::MoleculeDataset& dataset,
                                               const std::vector<int64_t>& rows, int64_t batch,
                                               const data::CollateOptions& options) {
  URPE_CHECK(batch > 0, "config: eval_batch must be positive, got " << batch);
  std::vector<data::GraphBatch> batches;
  for (size_t start = 0; start < rows.size(); start += static_cast<size_t>(batch)) {
    const size_t end = std::min(rows.size(), start + static_cast<size_t>(batch));
    batches.push_back(data::collate_graphs(dataset, {rows.begin() + start, rows.begin() + end}, options));
  }
  return batches;
}

double graphormer_mae(const Graphormer& model, const std::vector<data::GraphBatch>& batches) {
  autograd::NoGrad no_grad;
  double total = 0;
  int64_t count = 0;
  for (const data::GraphBatch& b : batches) {
    const std::vector<float> p = model.forward(b, false, nullptr).to_vector_f32();
    const std::vector<float> y = b.y.to_vector_f32();
    for (size_t k = 0; k < p.size(); ++k) total += std::fabs(static_cast<double>(p[k]) - y[k]);
    count += static_cast<int64_t>(p.size());
  }
  URPE_CHECK(count > 0, "graphormer_mae: no molecules to score");
  return total / static_cast<double>(count);
}

GraphormerEval evaluate_graphormer_run(const std::string& run_dir, const Config& config, const std::string& split,
                                     const std::string& which, const GraphormerData* given) {
  URPE_CHECK(split == "valid" || split == "test", "evaluate: split must be valid or test, got '" << split << "'");
  const GraphormerSettings settings = graphormer_settings_from(config);
  Graphormer model(graphormer_config_from(config), 0, parse_device(run_settings_from(config).device));
  const CheckpointInfo info = load_checkpoint(run_checkpoint_path(run_dir, which), model.parameters(), nullptr);
  GraphormerData loaded;
  if (!given) loaded = load_graphormer_data(settings);
  const GraphormerData& data = given ? *given : loaded;
  const std::vector<int64_t>& rows = split == "valid" ? data.split.valid : data.split.test;
  GraphormerEval e;
  e.mae = graphormer_mae(model, collate_in_order(data.dataset, rows, settings.eval_batch,
                                                 collate_options_from(config)));
  e.baseline_mae = mean_predictor_mae(data.dataset.targets, data.split.train, rows);
  e.molecules = static_cast<int64_t>(rows.size());
  e.step = info.progress.step;
  return e;
}

// ---- training ----

namespace {

// Graphormer's adapter to the training loop: shuffled epochs of collated molecule batches, mean
// L1 loss, validation MAE, and at the end a test MAE beside the predict-the-training-mean baseline.
class GraphormerTask final : public TrainingTask {
 public:
  GraphormerTask(const TrainingRun& run, const GraphormerSettings& settings, const GraphormerData& data)
      : data_(data),
        model_(graphormer_config_from(run.config), run.seed, run.device),
        collate_(with_maps(collate_options_from(run.config), model_.map_options())),
        train_collate_(settings.fixed_shapes ? with_fixed_shapes(collate_, data, model_) : collate_),
        prefetch_(data.dataset, train_collate_),
        batch_(run.settings.batch),
        shard_(dist::batch_shard(*run.comm, batch_)),
        eval_batch_(settings.eval_batch),
        end_lr_(static_cast<float>(settings.end_lr)),
        target_column_(settings.target_column),
        label_("[graphormer/" + settings.pe + "]") {
    URPE_CHECK(batch_ > 0, "config: batch must be positive, got " << batch_);
    URPE_CHECK(eval_batch_ > 0, "config: eval_batch must be positive, got " << eval_batch_);
    batches_per_epoch_ = static_cast<int64_t>(data_.split.train.size()) / batch_;
    URPE_CHECK(batches_per_epoch_ > 0, "config: batch = " << batch_ << " is larger than the training split ("
                                                          << data_.split.train.size() << " molecules)");
  }

  const ParameterSet& parameters() const override { return model_.parameters(); }
  std::string progress_label() const override { return label_; }
  void adjust_schedule(LrSchedule& schedule) const override { schedule.end_lr = end_lr_; }

  // The current epoch's order: drawn from a copy of the stream at the epoch's start, which is
  // what the checkpoint stores (progress.data_rng).
  void start(const TrainingProgress& progress, const CheckpointInfo*) override {
    epoch_rng_ = progress.data_rng;
    order_ = shuffled(data_.split.train, epoch_rng_);
  }

  StepOutput step(int64_t step, const MicroBatch& micro, TrainingProgress& progress) override {
    const data::GraphBatch graphs = batch_of(step, micro, progress);
    const Tensor predictions = model_.forward(graphs, true, &progress.dropout_rng);
    const double molecules = static_cast<double>(graphs.x.size(0));
    return {model_.loss(predictions, graphs), molecules, molecules};
  }
  // CUDA graphs: the same step as its host part (the batch, fixed-shape, its ids checked and its
  // maps made, on the host: GraphormerInputs) and its device part (the forward on the static
  // input buffers). A replayed step runs without step_on; inputs_ keeps the last batch's
  // metadata (its shapes are every batch's).
  std::string graph_refusal() const override {
    return train_collate_.fixed_nodes > 0 ? "" : "its training batches are not padded to one shape (fixed_shapes)";
  }
  std::vector<Tensor> draw_batch(int64_t step, TrainingProgress& progress) override {
    inputs_ = model_.inputs(batch_of(step, {}, progress));
    return inputs_.tensors();
  }
  StepOutput step_on(const std::vector<Tensor>& batch, TrainingProgress& progress) override {
    const GraphormerInputs on_device = inputs_.with_tensors(batch);
    const Tensor predictions = model_.forward(on_device, true, &progress.dropout_rng);
    const double molecules = static_cast<double>(on_device.x.size(0));
    return {model_.loss(predictions, on_device), molecules, molecules};
  }
  double train_metric(double mean_train_loss) override { return mean_train_loss; }  // the L1 loss is the MAE

  ValidationReport validate(int64_t step, bool last) override {
    valid_mae_ = valid_split_mae();
    evaluated_ = true;
    reached_end_ = last;
    char text[120];
    std::snprintf(text, sizeof text, "step %lld: valid MAE %.4f", static_cast<long long>(step), valid_mae_);
    char metric[32];
    std::snprintf(metric, sizeof metric, "MAE %.4f", valid_mae_);
    return {valid_mae_, valid_mae_, text, metric};
  }

  Result finish(const Loop& loop) override {
    if (!evaluated_) valid_mae_ = valid_split_mae();  // resumed a finished run (or stopped before any evaluation)
    outcome_.valid_mae = valid_mae_;
    outcome_.baseline_valid_mae = mean_predictor_mae(data_.dataset.targets, data_.split.train, data_.split.valid);
    outcome_.baseline_test_mae = mean_predictor_mae(data_.dataset.targets, data_.split.train, data_.split.test);
    if (!loop.interrupted) {
      outcome_.test_mae =
          graphormer_mae(model_, collate_in_order(data_.dataset, data_.split.test, eval_batch_, collate_));
      if (reached_end_)
        loop.metrics.write(loop.progress.step, "test", outcome_.test_mae, outcome_.test_mae, loop.lr, 0.0,
                           loop.progress.seconds);
    }
    return {target_column_, "graphormer", "valid_mae", valid_mae_};
  }
  GraphormerTrainOutcome& outcome() {
    outcome_.prefetch_hits_by_lead = prefetch_.hits_by_lead();
    outcome_.prefetch_misses = prefetch_.misses();
    return outcome_;
  }

 private:
  // Micro-batch `micro` of step `step`'s batch, collated (on the prefetch threads when they had it).
  data::GraphBatch batch_of(int64_t step, const MicroBatch& micro, TrainingProgress& progress) {
    const int64_t in_epoch = (step - 1) % batches_per_epoch_;
    if (in_epoch == 0 && step > 1 && micro.first()) {  // a new epoch: the stream moves past the last one's shuffle
      progress.data_rng = epoch_rng_;
      order_ = shuffled(data_.split.train, epoch_rng_);
    }
    // This rank's molecules of the global batch (all of them with one process), micro-batch by
    // micro-batch (each collated, so padded, on its own: padding does not change the outputs).
    data::GraphBatch graphs = prefetch_.take(rows_of(in_epoch, micro));
    // The next kBatchesAhead micro-batches' or steps' molecules are collated on background
    // threads while this one runs (not across an epoch's end: the next order is drawn when that
    // epoch starts; batch_prefetch.h).
    std::vector<std::vector<int64_t>> upcoming;
    for (const BatchPosition& next : positions_ahead({in_epoch, micro}, batches_per_epoch_, kBatchesAhead))
      upcoming.push_back(rows_of(next.in_epoch, next.micro));
    prefetch_.prefetch_ahead(upcoming);
    return graphs;
  }

  // This rank's rows of micro-batch `micro` of the epoch's batch `in_epoch`.
  std::vector<int64_t> rows_of(int64_t in_epoch, const MicroBatch& micro) const {
    const dist::Shard part = micro_rows(shard_, micro);
    const auto first = order_.begin() + in_epoch * batch_ + part.begin;
    return {first, first + part.count};
  }

  double valid_split_mae() {
    if (valid_batches_.empty()) valid_batches_ = collate_in_order(data_.dataset, data_.split.valid, eval_batch_, collate_);
    return graphormer_mae(model_, valid_batches_);
  }

  const GraphormerData& data_;
  Graphormer model_;
  const data::CollateOptions collate_;        // evaluation's: each batch padded to its own size
  const data::CollateOptions train_collate_;  // training's: collate_, or fixed shapes (fixed_shapes)
  GraphBatchPrefetch prefetch_;  // reads data_.dataset, which outlives the task
  const int64_t batch_;
  const dist::Shard shard_;
  const int64_t eval_batch_;
  const float end_lr_;
  const std::string target_column_, label_;
  int64_t batches_per_epoch_ = 0;
  Rng epoch_rng_;
  std::vector<int64_t> order_;
  std::vector<data::GraphBatch> valid_batches_;
  double valid_mae_ = 0;
  bool evaluated_ = false, reached_end_ = false;
  GraphormerTrainOutcome outcome_;
  GraphormerInputs inputs_;  // cuda_graph = on: the last batch drawn (draw_batch), on the host
};

}  // namespace

GraphormerTrainOutcome train_graphormer(const Config& config, const std::string& out_dir,
                                      const TrainOptions& options, const GraphormerData* given_data) {
  TrainingRun run = begin_training_run(config, out_dir, options);
  const GraphormerSettings settings = graphormer_settings_from(run.config);
  GraphormerData loaded;
  if (!given_data) loaded = load_graphormer_data(settings);
  GraphormerTask task(run, settings, given_data ? *given_data : loaded);
  const TrainingOutcome trained = run_training(run, task);
  GraphormerTrainOutcome outcome = task.outcome();
  outcome.result = trained.result;
  outcome.interrupted = trained.interrupted;
  return outcome;
}

}  // namespace urpe
