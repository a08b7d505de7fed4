// Training and evaluation of Graphormer (± URPE) on molecular property regression: the loop behind
// `urpe train` for model = graphormer, `urpe eval` of such runs, and `urpe repro molecules`.
//
// Data: the config's dataset and split (train/families/graphormer/graphormer_config.h); molecules with more than
// max_nodes atoms are removed from every split part up front, so every batch and every baseline
// sees the same molecules. Training batches: shuffled epochs over the training rows, one
// permutation per epoch drawn from the run's data stream; the last partial batch of an epoch is
// dropped (every step has `batch` molecules). The checkpoint's data_rng is the stream position at
// the start of the current epoch; the position inside the epoch follows from the step, so a
// resumed run sees the same batches. With fixed_shapes (always under cuda_graph = on) every
// training batch is padded to one shape (docs/graphormer.md#collation-and-padding), and the step
// splits into a host part and a device part for the capture (train/loop/captured_step.h).
// Evaluation: valid/test rows in split order, eval_batch
// molecules per batch, no dropout.
//
// Metric: mean absolute error on the target's own scale (embedded default: the normalised
// penalized logP of Benchmarking-GNNs ZINC). metrics.csv rows: `train` (loss = metric = mean L1 of
// the training batches since the last row, with dropout), `valid` every eval_every steps and at
// the end, and one `test` row at the last step; tokens_per_s holds molecules per second.
// results.json (one row): metric_name "valid_mae", metric = the final validation MAE.
#pragma once
#include <string>
#include <vector>

#include "data/molecule_dataset.h"
#include "models/graphormer.h"
#include "base/io/config.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/families/graphormer/graphormer_config.h"
#include "base/io/run_dir.h"

namespace urpe {

struct GraphormerData {
  data::MoleculeDataset dataset;
  data::MoleculeSplit split;  // rows used: train (after train_subset), valid, test
  int64_t too_large = 0;      // molecules removed from the split for having > max_nodes atoms
  std::string description;    // one line: source, target, split and sizes
};

// Loads the dataset and split a config names (dataset, smiles_column, target_column, split,
// split_seed, train_subset, max_nodes). Errors name the file, line or key.
GraphormerData load_graphormer_data(const Config& config);
GraphormerData load_graphormer_data(const GraphormerSettings& settings);

// MAE of predicting the mean target of `fit_rows` for every row of `eval_rows`.
double mean_predictor_mae(const std::vector<float>& targets, const std::vector<int64_t>& fit_rows,
                          const std::vector<int64_t>& eval_rows);

// `rows` in order, `batch` at a time, collated once (evaluation reuses them).
std::vector<data::GraphBatch> collate_in_order(const data::MoleculeDataset& dataset,
                                               const std::vector<int64_t>& rows, int64_t batch,
                                               const data::CollateOptions& options);
// MAE of the model (no dropout) over the batches' molecules.
double graphormer_mae(const Graphormer& model, const std::vector<data::GraphBatch>& batches);

struct GraphormerTrainOutcome {
  ResultRow result;  // metric_name "valid_mae"
  double valid_mae = 0, test_mae = 0;  // test_mae: 0 when interrupted (scored only at the end)
  double baseline_valid_mae = 0, baseline_test_mae = 0;  // predict the training mean
  bool interrupted = false;  // stopped by Ctrl-C (a checkpoint was saved)
  // The training batches' collation (batch_prefetch.h): [k] = batches collated in the background
  // k steps (micro-batches) before they were used; misses = collated on the training thread.
  std::vector<int64_t> prefetch_hits_by_lead;
  int64_t prefetch_misses = 0;
};

// Trains per `config` into `out_dir` (config.txt, metrics.csv, model.safetensors, results.json,
// plots/). `data`, when given, must be load_graphormer_data(config) (repro loads it once).
GraphormerTrainOutcome train_graphormer(const Config& config, const std::string& out_dir,
                                      const TrainOptions& options, const GraphormerData* data = nullptr);

struct GraphormerEval {
  double mae = 0;           // the model from the run's checkpoint
  double baseline_mae = 0;  // predict the training mean
  int64_t molecules = 0, step = 0;
};
// Rebuilds a run's model from its checkpoint (config = its stored config) and scores `split`
// ("valid" or "test") exactly as training did: the same rows, batches and order.
// `checkpoint`: "last" or "best" (train/loop/checkpoint.h).
// `data`, when given, must be what load_graphormer_data(config) reads (saves reading it again).
GraphormerEval evaluate_graphormer_run(const std::string& run_dir, const Config& config, const std::string& split,
                                     const std::string& checkpoint = "last", const GraphormerData* data = nullptr);

}  // namespace urpe
