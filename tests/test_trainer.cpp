// The synthetic-task trainer: run-directory files, bit-identical resume, evaluation reproducing
// the logged metric, and the synthetic task generators.
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "data/synthetic.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/encoder_trainer.h"
#include "train/run_config.h"
#include "train/io/safetensors.h"

using namespace urpe;

namespace {

std::string temp_dir(const std::string& name) {
  const std::string dir = std::string("/tmp/urpe_test_trainer_") + std::to_string(::getpid()) + "_" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

Config tiny_config(const std::string& extra = "") {
  std::vector<std::string> overrides{"seq_len=8", "vocab=6", "layers=1", "d_model=16", "heads=2", "d_ff=32",
                                     "batch=4", "steps=12", "warmup=3", "eval_every=4", "valid_size=16",
                                     "dropout=0.1", "task=etp", "lr=0.01"};
  if (!extra.empty()) overrides.push_back(extra);
  return resolve_config("", "", overrides);
}

}  // namespace

TEST_CASE("synthetic tasks: targets follow docs/synthetic_encoder.md#tasks") {
  Rng rng(3);
  SyntheticTask pi(SyntheticKind::position_identification, 6, 10);
  const SyntheticBatch b = pi.sample(2, rng);
  CHECK(b.targets.to_vector_i32() == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5});
  CHECK(pi.num_classes() == 6);
  SyntheticTask etp(SyntheticKind::even_token_prediction, 6, 10);
  const SyntheticBatch e = etp.sample(3, rng);
  const std::vector<int32_t> tok = e.tokens.to_vector_i32(), tgt = e.targets.to_vector_i32();
  for (int s = 0; s < 3; ++s)
    for (int k = 0; k < 6; ++k) {
      CHECK(tok[s * 6 + k] >= 0);
      CHECK(tok[s * 6 + k] < 10);
      CHECK(tgt[s * 6 + k] == (k < 3 ? tok[s * 6 + 2 * k + 1] : 10));
    }
  CHECK(etp.num_classes() == 11);
  CHECK_THROWS_WITH_AS(SyntheticTask(SyntheticKind::even_token_prediction, 1, 10), doctest::Contains("seq_len"), Error);
}

TEST_CASE("a run writes its directory, and eval reproduces the logged accuracy") {
  const std::string dir = temp_dir("files");
  TrainOptions options;
  options.quiet = true;
  const TrainOutcome outcome = train_encoder(tiny_config(), dir, options);
  for (const char* file : {"config.txt", "metrics.csv", "results.json", "model.safetensors",
                           "plots/curves.png", "plots/rpe_bias.png", "plots/urpe_c.png"}) {
    INFO(file);
    CHECK(path_exists(join_path(dir, file)));
  }
  CHECK(outcome.result.steps == 12);
  const std::vector<MetricsRow> rows = read_metrics(join_path(dir, "metrics.csv"));
  REQUIRE(rows.size() == 6);  // train + valid at steps 4, 8, 12
  CHECK(rows.back().split == "valid");
  CHECK(rows.back().metric == doctest::Approx(outcome.result.metric));
  // Rebuild from the checkpoint alone and score again: the same number.
  const Config stored = config_from_text(read_checkpoint_info(join_path(dir, "model.safetensors")).config_text, "checkpoint");
  TransformerEncoder model(encoder_config_from(stored), 99);
  load_checkpoint(join_path(dir, "model.safetensors"), model.parameters(), nullptr);
  const EvalResult again = evaluate_encoder(model, task_from_config(stored), 16, 64);
  CHECK(again.accuracy == outcome.result.metric);
  CHECK(again.loss == doctest::Approx(outcome.final_valid_loss).epsilon(1e-6));
}

TEST_CASE("resume continues bit-identically (dropout on)") {
  const std::string full = temp_dir("full"), split = temp_dir("split");
  TrainOptions options;
  options.quiet = true;
  train_encoder(tiny_config(), full, options);
  options.stop_after_step = 5;  // an "interruption" between evaluations
  const TrainOutcome first = train_encoder(tiny_config(), split, options);
  CHECK(first.interrupted);
  CHECK(read_checkpoint_info(join_path(split, "model.safetensors")).progress.step == 5);
  TrainOptions resume;
  resume.quiet = true;
  resume.resume = true;
  const TrainOutcome second = train_encoder(Config(schema_for_model("encoder")), split, resume);
  CHECK_FALSE(second.interrupted);
  CHECK(second.result.steps == 12);

  // Same losses at every logged step after the resume point, and the same final weights.
  const std::vector<MetricsRow> a = read_metrics(join_path(full, "metrics.csv"));
  const std::vector<MetricsRow> b = read_metrics(join_path(split, "metrics.csv"));
  std::vector<double> la, lb;
  for (const MetricsRow& r : a) if (r.step > 5) la.push_back(r.loss);
  for (const MetricsRow& r : b) if (r.step > 5) lb.push_back(r.loss);
  CHECK(la.size() == 4);
  CHECK(la == lb);
  const TensorFile fa = load_safetensors(join_path(full, "model.safetensors"));
  const TensorFile fb = load_safetensors(join_path(split, "model.safetensors"));
  REQUIRE(fa.tensors.size() == fb.tensors.size());
  for (size_t k = 0; k < fa.tensors.size(); ++k) {
    INFO(fa.tensors[k].first);
    const Tensor& x = fa.tensors[k].second;
    const Tensor& y = fb.at(fa.tensors[k].first);
    REQUIRE(x.numel() == y.numel());
    CHECK(std::memcmp(x.impl().storage->data, y.impl().storage->data, x.numel() * 4) == 0);
  }
}

TEST_CASE("attention = fused trains like attention = materialized, and a run records its choice") {
  TrainOptions options;
  options.quiet = true;
  std::vector<std::vector<double>> losses;
  for (const char* path : {"materialized", "fused"}) {
    CAPTURE(path);
    const std::string dir = temp_dir(std::string("attention_") + path);
    train_encoder(tiny_config(std::string("attention=") + path), dir, options);
    const Config stored = config_from_text(read_checkpoint_info(join_path(dir, "model.safetensors")).config_text, "checkpoint");
    CHECK(stored.get_string("attention") == path);
    std::vector<double> l;
    for (const MetricsRow& r : read_metrics(join_path(dir, "metrics.csv"))) l.push_back(r.loss);
    losses.push_back(l);
  }
  REQUIRE(losses[0].size() == losses[1].size());
  for (size_t k = 0; k < losses[0].size(); ++k) CHECK(losses[1][k] == doctest::Approx(losses[0][k]).epsilon(1e-4));
  CHECK_THROWS_WITH_AS(resolve_config("", "", {"attention=flash"}), doctest::Contains("attention"), Error);
}

TEST_CASE("bad configs give one clear error") {
  const std::string dir = temp_dir("bad");
  TrainOptions options;
  options.quiet = true;
  CHECK_THROWS_WITH_AS(train_encoder(resolve_config("", "", {"seq_len=1"}), dir, options),
                       doctest::Contains("seq_len must be > 1"), Error);
  CHECK_THROWS_WITH_AS(train_encoder(resolve_config("", "", {"heads=5"}), dir, options),
                       doctest::Contains("must divide d_model"), Error);
  CHECK_THROWS_WITH_AS(resolve_config("", "", {"lr_rate=1"}), doctest::Contains("did you mean 'lr'"), Error);
  CHECK_THROWS_WITH_AS(resolve_config("", "", {"steps=abc"}), doctest::Contains("steps"), Error);
  CHECK_THROWS_WITH_AS(resolve_config("no-such-preset", "", {}), doctest::Contains("pi-tiny"), Error);
  TrainOptions resume = options;
  resume.resume = true;
  CHECK_THROWS_WITH_AS(train_encoder(Config(schema_for_model("encoder")), dir + "_missing", resume),
                       doctest::Contains("no checkpoint"), Error);
}
