// The graphormer family (`model = graphormer`): Graphormer (± URPE) on molecular property
// regression (graphormer_config.h, graphormer_trainer.h), as the registry sees it
// (train/families/model_family.h). It has no analysed_model: a molecule's atoms have no sequence
// positions for theory/analyze to average over.
#include "train/families/graphormer/graphormer_config.h"
#include "train/families/graphormer/graphormer_plots.h"
#include "train/families/graphormer/graphormer_trainer.h"
#include "train/families/model_family.h"

namespace urpe {

namespace {

FamilyTrainResult train(const Config& config, const std::string& out_dir, const TrainOptions& options) {
  const GraphormerTrainOutcome o = train_graphormer(config, out_dir, options);
  if (o.interrupted)
    return {true, printf_text("graphormer %s stopped at step %lld, valid MAE %.4f", o.result.pe.c_str(),
                              static_cast<long long>(o.result.steps), o.valid_mae)};
  return {false, printf_text("graphormer %s, valid MAE %.4f, test MAE %.4f (predict-the-training-mean: %.4f, %.4f) "
                             "after %lld steps, %lld parameters, %.1f s",
                             o.result.pe.c_str(), o.valid_mae, o.test_mae, o.baseline_valid_mae, o.baseline_test_mae,
                             static_cast<long long>(o.result.steps), static_cast<long long>(o.result.params),
                             o.result.seconds)};
}

std::string evaluate(const std::string& dir, const Config& config, const std::string& split, const std::string& which) {
  const GraphormerEval e = evaluate_graphormer_run(dir, config, split, which);
  check_finite_score(dir, which, split, e.mae);
  return printf_text("%s (%s, step %lld): %s MAE %.6f over %lld molecules (predict-the-training-mean: %.6f)",
                     dir.c_str(), which.c_str(), static_cast<long long>(e.step), split.c_str(), e.mae,
                     static_cast<long long>(e.molecules), e.baseline_mae);
}

std::vector<std::string> draw_run_plots(const std::string& run_dir) { return draw_graphormer_run_plots(run_dir); }

}  // namespace

// graphormer_bench_step.cpp
std::unique_ptr<StepModel> make_graphormer_bench_step(const StepModelOptions& options, const Device& device);

ModelFamily graphormer_family() {
  ModelFamily f;
  f.name = "graphormer";
  f.add_keys = add_graphormer_keys;
  f.check_values = check_graphormer_values;
  f.check_paths = check_graphormer_paths;
  f.estimate_memory = estimate_graphormer_memory;
  f.train = train;
  f.evaluate = evaluate;
  f.draw_run_plots = draw_run_plots;
  f.not_analysed_because =
      "is a Graphormer run, which is not supported: a molecule's atoms have no sequence positions (Graphormer "
      "encodes graph distances, and molecules differ in size), so there is no position t to average over";
  f.make_bench_step = make_graphormer_bench_step;
  f.not_captured_because = "";  // cuda_graph = on pads every training batch to one shape (fixed_shapes)
  return f;
}

}  // namespace urpe
