// The toy: y = Σ_i a_i·x_i + 1/2 with a_i = (i + 1)/width, x uniform in [−1, 1]^width, learned by one
// Linear(width → 1) under the mean absolute error. The training batches come from the run's data
// stream; the valid and test sets are fixed draws.
#include "train/families/toy/toy_trainer.h"

#include <cstdio>

#include "autograd/node.h"
#include "models/layers.h"
#include "ops/loss.h"
#include "tensor/error.h"
#include "tensor/rng.h"
#include "train/config/run_settings.h"
#include "train/families/run_plots.h"
#include "train/families/toy/toy_config.h"
#include "train/loop/checkpoint.h"
#include "train/loop/training_loop.h"

namespace urpe {

namespace {

constexpr int64_t kHeldOut = 256;  // rows of the valid and of the test set

struct ToyModel {
  ParameterSet params;
  Linear regression;
  ToyModel(int64_t width, uint64_t seed, const Device& device) {
    Rng init(seed);
    regression = Linear(params, "regression", width, 1, InitSpec{0.1f, &init, device});
  }
};

struct Rows {
  Tensor x, y;  // (rows, width), (rows, 1)
};

Rows draw_rows(int64_t rows, int64_t width, Rng& rng, const Device& device) {
  const Tensor x = Tensor::uniform({rows, width}, -1.0f, 1.0f, rng);
  const std::vector<float> xs = x.to_vector_f32();
  std::vector<float> y(static_cast<size_t>(rows), 0.5f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < width; ++i)
      y[r] += static_cast<float>(i + 1) / static_cast<float>(width) * xs[r * width + i];
  return {x.to(device), Tensor::from_vector(y, {rows, 1}).to(device)};
}

Rows held_out(const std::string& split, int64_t width, const Device& device) {
  Rng rng(split == "valid" ? 1001 : 2002);
  return draw_rows(kHeldOut, width, rng, device);
}

double mae(const ToyModel& model, const Rows& rows) {
  const autograd::NoGrad no_grad;
  return l1_loss(model.regression.forward(rows.x), rows.y).item();
}

class ToyTask final : public TrainingTask {
 public:
  ToyTask(const TrainingRun& run, const ToySettings& settings)
      : settings_(settings), model_(settings.width, run.seed, run.device), device_(run.device),
        batch_(run.settings.batch), valid_(held_out("valid", settings.width, run.device)) {}

  const ParameterSet& parameters() const override { return model_.params; }
  std::string progress_label() const override { return "[toy]"; }
  StepOutput step(int64_t, const MicroBatch& micro, TrainingProgress& progress) override {
    const int64_t rows = batch_ / micro.count;
    const Rows batch = draw_rows(rows, settings_.width, progress.data_rng, device_);
    return {l1_loss(model_.regression.forward(batch.x), batch.y), static_cast<double>(rows),
            static_cast<double>(rows)};
  }
  double train_metric(double mean_train_loss) override { return mean_train_loss; }
  ValidationReport validate(int64_t step, bool) override {
    valid_mae_ = mae(model_, valid_);
    char text[80], metric[32];
    std::snprintf(text, sizeof text, "step %lld: valid MAE %.4f", static_cast<long long>(step), valid_mae_);
    std::snprintf(metric, sizeof metric, "MAE %.4f", valid_mae_);
    return {valid_mae_, valid_mae_, text, metric};
  }
  Result finish(const Loop&) override { return {"regression", "toy", "valid_mae", mae(model_, valid_)}; }

 private:
  ToySettings settings_;
  ToyModel model_;
  Device device_;
  int64_t batch_;
  Rows valid_;
  double valid_mae_ = 0;
};

}  // namespace

ToyOutcome train_toy(const Config& config, const std::string& out_dir, const TrainOptions& options) {
  TrainingRun run = begin_training_run(config, out_dir, options);
  ToyTask task(run, toy_settings_from(run.config));
  const TrainingOutcome trained = run_training(run, task);
  return {trained.result, trained.interrupted};
}

double evaluate_toy_run(const std::string& run_dir, const Config& config, const std::string& split,
                        const std::string& which) {
  URPE_CHECK(split == "valid" || split == "test", "evaluate: split must be valid or test, got '" << split << "'");
  const ToySettings settings = toy_settings_from(config);
  const Device device = parse_device(run_settings_from(config).device);
  ToyModel model(settings.width, 0, device);
  load_checkpoint(run_checkpoint_path(run_dir, which), model.params, nullptr);
  return mae(model, held_out(split, settings.width, device));
}

std::vector<std::string> draw_toy_run_plots(const std::string& run_dir) {
  const std::string plots = join_path(run_dir, "plots");
  make_directories(plots);
  const std::vector<MetricsRow> rows = read_metrics(join_path(run_dir, "metrics.csv"));
  if (rows.empty()) return {};
  plot::LineChartSpec loss;
  loss.title = "Toy regression: mean absolute error";
  loss.x_label = "step";
  loss.y_label = "MAE";
  loss.series = {metric_series(rows, "train", true, "training"), metric_series(rows, "valid", true, "validation")};
  const std::string path = join_path(plots, "loss.png");
  plot::line_chart(path, loss);
  return {path};
}

}  // namespace urpe
