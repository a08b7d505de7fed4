// The Graphormer training loop: shuffled epochs of collated molecule batches, mean L1 loss,
// AdamW with warm-up + linear decay to end_lr, periodic validation MAE, checkpoints, Ctrl-C saves
// and stops, a final test MAE beside the predict-the-training-mean baseline.
#include "train/molecule_trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "autograd/node.h"
#include "train/checkpoint.h"
#include "train/molecule_config.h"
#include "train/progress.h"
#include "train/run_control.h"
#include "train/run_config.h"
#include "train/schedule.h"

namespace urpe {

namespace {


constexpr uint64_t kSubsetSalt = 0x5b5e7ULL;  // the train_subset draw: split_seed's own stream

struct Streams {
  static uint64_t data_seed(uint64_t seed) { return seed * 2 + 1; }
  static uint64_t dropout_seed(uint64_t seed) { return seed * 2 + 2; }
};

// A Fisher–Yates permutation of `rows` drawn from `rng` (advances it).
std::vector<int64_t> shuffled(std::vector<int64_t> rows, Rng& rng) {
  for (size_t k = rows.size(); k > 1; --k) std::swap(rows[k - 1], rows[rng.below(static_cast<int64_t>(k))]);
  return rows;
}

std::string thousands(int64_t value) {
  std::string digits = std::to_string(value), out;
  for (size_t k = 0; k < digits.size(); ++k) {
    if (k > 0 && (digits.size() - k) % 3 == 0) out += ',';
    out += digits[k];
  }
  return out;
}

}  // namespace

// ---- data ----

MoleculeData load_molecule_data(const Config& config) {
  const std::string source = config.get_string("dataset");
  const std::string split_key = config.get_string("split");
  const int64_t max_nodes = config.get_int("max_nodes");
  const uint64_t split_seed = static_cast<uint64_t>(config.get_int("split_seed"));
  data::MoleculeCsvOptions csv;
  csv.smiles_column = config.get_string("smiles_column");
  csv.target_column = config.get_string("target_column");

  MoleculeData d;
  std::string split_file;
  if (source == "embedded") {
    const std::string dir = data::embedded_molecules_dir();
    d.dataset = data::load_molecule_csv(join_path(dir, "molecules.csv.gz"), csv,
                                        data::AtomVocabulary::load(join_path(dir, "atom_types.txt")));
    if (split_key == "auto") split_file = join_path(dir, "split.csv");
  } else {
    URPE_CHECK(path_exists(source), "config: dataset '" << source
                                                        << "' does not exist (expected 'embedded' or a CSV file)");
    csv.grow_vocabulary = true;  // atom types beyond ZINC's 28 get new ids (the model checks its table)
    d.dataset = data::load_molecule_csv(source, csv);
  }
  URPE_CHECK(d.dataset.size() > 0, d.dataset.source << ": no molecules");
  if (split_key != "auto" && split_key != "seeded") split_file = split_key;
  if (!split_file.empty()) {
    URPE_CHECK(path_exists(split_file), "config: split file '" << split_file << "' does not exist");
    d.split = data::load_split_file(split_file, d.dataset.size());
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
  const int64_t subset = config.get_int("train_subset");
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

  std::ostringstream text;
  text << (source == "embedded" ? "embedded molecules" : source) << " (" << thousands(d.dataset.size())
       << " molecules), target " << csv.target_column << "; split "
       << (split_file.empty()                        ? "seeded (split_seed " + std::to_string(split_seed) + ")"
           : source == "embedded" && split_key == "auto" ? std::string("split.csv of the embedded set")
                                                         : split_file)
       << ": train " << thousands(d.split.train.size());
  if (static_cast<int64_t>(d.split.train.size()) < full_train) text << " of " << thousands(full_train);
  text << " / valid " << thousands(d.split.valid.size()) << " / test " << thousands(d.split.test.size());
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

MoleculeEval evaluate_graphormer_run(const std::string& run_dir, const Config& config, const std::string& split) {
  URPE_CHECK(split == "valid" || split == "test", "evaluate: split must be valid or test, got '" << split << "'");
  Graphormer model(graphormer_config_from(config), 0, parse_device(config.get_string("device")));
  const CheckpointInfo info = load_checkpoint(join_path(run_dir, "model.safetensors"), model.parameters(), nullptr);
  const MoleculeData data = load_molecule_data(config);
  const std::vector<int64_t>& rows = split == "valid" ? data.split.valid : data.split.test;
  MoleculeEval e;
  e.mae = graphormer_mae(model, collate_in_order(data.dataset, rows, config.get_int("eval_batch"),
                                                 collate_options_from(config)));
  e.baseline_mae = mean_predictor_mae(data.dataset.targets, data.split.train, rows);
  e.molecules = static_cast<int64_t>(rows.size());
  e.step = info.progress.step;
  return e;
}

// ---- training ----

MoleculeTrainOutcome train_graphormer(const Config& config_in, const std::string& out_dir,
                                      const TrainOptions& options, const MoleculeData* given_data) {
  Config config = config_in;
  const std::string checkpoint_path = open_run_directory(out_dir, options, config);
  const int64_t steps = config.get_int("steps"), batch = config.get_int("batch");
  const int64_t eval_every = config.get_int("eval_every"), eval_batch = config.get_int("eval_batch");
  const uint64_t seed = static_cast<uint64_t>(config.get_int("seed"));
  URPE_CHECK(steps > 0 && batch > 0 && eval_every > 0 && eval_batch > 0,
             "config: steps, batch, eval_every and eval_batch must be positive");
  const data::CollateOptions collate = collate_options_from(config);
  const Device device = parse_device(config.get_string("device"));
  ProfileWindow profile = apply_device_options(options, device, steps);
  Graphormer model(graphormer_config_from(config), seed, device);

  MoleculeData loaded;
  if (!given_data) loaded = load_molecule_data(config);
  const MoleculeData& data = given_data ? *given_data : loaded;
  const std::vector<int64_t>& train_rows = data.split.train;
  const int64_t batches_per_epoch = static_cast<int64_t>(train_rows.size()) / batch;
  URPE_CHECK(batches_per_epoch > 0, "config: batch = " << batch << " is larger than the training split ("
                                                       << train_rows.size() << " molecules)");

  Adam optimizer(model.parameters().tensors(), adam_config_from(config));
  LrSchedule schedule = lr_schedule_from(config, steps);
  schedule.end_lr = static_cast<float>(config.get_float("end_lr"));
  schedule.validate();

  TrainingProgress progress;
  progress.data_rng = Rng(Streams::data_seed(seed));
  progress.dropout_rng = Rng(Streams::dropout_seed(seed));
  if (options.resume) {
    progress = load_checkpoint(checkpoint_path, model.parameters(), &optimizer).progress;
  } else {
    write_text_atomic(join_path(out_dir, "config.txt"), config.to_text());
  }
  MetricsLog metrics(join_path(out_dir, "metrics.csv"), options.resume, progress.step);
  ProgressLine line(options.label.empty() ? "[graphormer/" + config.get_string("pe") + "]" : options.label,
                    steps, progress.step, options.quiet);
  const std::string config_text = config.to_text();
  auto save = [&] { save_checkpoint(checkpoint_path, model.parameters(), &optimizer, progress, config_text); };

  // The current epoch's order: drawn from a copy of the stream at the epoch's start, which is
  // what the checkpoint stores (progress.data_rng).
  Rng epoch_rng = progress.data_rng;
  std::vector<int64_t> order = shuffled(train_rows, epoch_rng);

  std::vector<data::GraphBatch> valid_batches;
  auto valid_split_mae = [&]() {
    if (valid_batches.empty()) valid_batches = collate_in_order(data.dataset, data.split.valid, eval_batch, collate);
    return graphormer_mae(model, valid_batches);
  };

  MoleculeTrainOutcome outcome;
  double valid_mae = 0;
  bool evaluated = false, reached_end = false;
  StepMeter meter;
  EvalCadence cadence(steps, eval_every, options, out_dir, progress, metrics, line, meter, save);

  for (int64_t step = progress.step + 1; step <= steps; ++step) {
    meter.begin_step();
    profile.before_step(step);
    const int64_t in_epoch = (step - 1) % batches_per_epoch;
    if (in_epoch == 0 && step > 1) {  // a new epoch: the stream moves past the last one's shuffle
      progress.data_rng = epoch_rng;
      order = shuffled(train_rows, epoch_rng);
    }
    const std::vector<int64_t> rows(order.begin() + in_epoch * batch, order.begin() + (in_epoch + 1) * batch);
    const data::GraphBatch graphs = data::collate_graphs(data.dataset, rows, collate);
    const Tensor predictions = model.forward(graphs, true, &progress.dropout_rng);
    const Tensor loss = model.loss(predictions, graphs);
    optimizer.zero_grad();
    loss.backward();
    const float lr = schedule.at(step);
    optimizer.step(lr);
    profile.after_step(step);
    const double loss_value = loss.item();
    const double graphs_per_s = meter.end_step(step, loss_value, static_cast<double>(batch), progress);
    line.update(step, loss_value, lr, graphs_per_s);

    auto train_mae = [](double mean_loss) { return mean_loss; };  // the L1 loss is the MAE
    auto validate = [&] {
      valid_mae = valid_split_mae();
      evaluated = true;
      reached_end = step == steps;
      char text[120];
      std::snprintf(text, sizeof text, "step %lld: valid MAE %.4f", static_cast<long long>(step), valid_mae);
      return ValidationReport{valid_mae, valid_mae, text};
    };
    if (cadence.after_step(step, lr, graphs_per_s, train_mae, validate)) {
      outcome.interrupted = true;
      break;
    }
  }
  line.finish();
  if (!evaluated) valid_mae = valid_split_mae();  // resumed a finished run (or stopped before any evaluation)

  outcome.valid_mae = valid_mae;
  outcome.baseline_valid_mae = mean_predictor_mae(data.dataset.targets, train_rows, data.split.valid);
  outcome.baseline_test_mae = mean_predictor_mae(data.dataset.targets, train_rows, data.split.test);
  if (!outcome.interrupted) {
    outcome.test_mae = graphormer_mae(model, collate_in_order(data.dataset, data.split.test, eval_batch, collate));
    if (reached_end)
      metrics.write(progress.step, "test", outcome.test_mae, outcome.test_mae, schedule.at(progress.step), 0.0,
                    progress.seconds);
  }

  ResultRow& r = outcome.result;
  r = run_result_row(options, config, progress, model.parameters().count(), device);
  r.task = config.get_string("target_column");
  r.model = "graphormer";
  r.metric_name = "valid_mae";
  r.metric = valid_mae;
  write_run_result(out_dir, r);
  return outcome;
}

}  // namespace urpe
