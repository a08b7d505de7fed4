// The synthetic-task trainer: run-directory files, bit-identical resume, evaluation reproducing
// the logged metric, and the synthetic task generators.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "data/synthetic.h"
#include "same_tensors.h"
#include "test_util.h"
#include "train/loop/checkpoint.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/loop/init_from.h"
#include "train/config/run_config.h"
#include "base/io/safetensors.h"

using namespace urpe;

namespace {

std::string temp_dir(const std::string& name) {
  const std::string dir = std::string("/tmp/urpe_test_trainer_") + std::to_string(::getpid()) + "_" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

Config tiny_config(const std::string& eval_every = "4", const std::string& lr = "0.01",
                   const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets = {"seq_len=8", "vocab=6", "layers=1", "d_model=16", "heads=2", "d_ff=32",
                                   "batch=4", "steps=12", "warmup=3", "eval_every=" + eval_every, "valid_size=16",
                                   "dropout=0.1", "task=etp", "lr=" + lr};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return resolve_config("", "", sets);
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
  const EncoderTrainOutcome outcome = train_encoder(tiny_config(), dir, options);
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
  const EncoderEvalResult again = evaluate_encoder(model, task_from_config(stored), 16, 64);
  CHECK(again.accuracy == outcome.result.metric);
  CHECK(again.loss == doctest::Approx(outcome.final_valid_loss).epsilon(1e-6));
}

TEST_CASE("resume continues bit-identically (dropout on)") {
  const std::string full = temp_dir("full"), split = temp_dir("split");
  TrainOptions options;
  options.quiet = true;
  train_encoder(tiny_config(), full, options);
  options.stop_after_step = 5;  // an "interruption" between evaluations
  const EncoderTrainOutcome first = train_encoder(tiny_config(), split, options);
  CHECK(first.interrupted);
  CHECK(read_checkpoint_info(join_path(split, "model.safetensors")).progress.step == 5);
  TrainOptions resume;
  resume.quiet = true;
  resume.resume = true;
  const EncoderTrainOutcome second = train_encoder(Config(schema_for_model("encoder")), split, resume);
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
  test::check_same_saved_tensors(join_path(full, "model.safetensors"), join_path(split, "model.safetensors"));
}

// model.best.safetensors: the parameters at the evaluation with the highest valid accuracy (the
// first of equals), its metric stored; a resumed run keeps the same best as an uninterrupted one.
TEST_CASE("the best checkpoint: highest valid accuracy, kept across a resume") {
  // Six evaluations; whatever the curve, the best is the first evaluation reaching the maximum
  // (on a plateau: the first of equals, not the last).
  const Config config = tiny_config("2", "0.05");
  const std::string full = temp_dir("best_full"), split = temp_dir("best_split");
  TrainOptions options;
  options.quiet = true;
  train_encoder(config, full, options);
  int64_t best_step = 0;
  double best = -1;
  for (const MetricsRow& r : read_metrics(join_path(full, "metrics.csv")))
    if (r.split == "valid" && r.metric > best) {
      best = r.metric;
      best_step = r.step;
    }
  REQUIRE(best_step > 0);
  const std::string best_path = join_path(full, kBestCheckpointName);
  REQUIRE(path_exists(best_path));
  CHECK(run_checkpoint_path(full, "best") == best_path);
  CHECK(read_checkpoint_info(best_path).progress.step == best_step);
  CHECK(best_checkpoint_metric(best_path) == doctest::Approx(best).epsilon(1e-9));
  // Its parameters score that accuracy again; it carries no optimizer state.
  TransformerEncoder model(encoder_config_from(config), 99);
  load_checkpoint(best_path, model.parameters(), nullptr);
  CHECK(evaluate_encoder(model, task_from_config(config), 16, 64).accuracy == doctest::Approx(best).epsilon(1e-12));
  for (const auto& [name, t] : load_safetensors(best_path).tensors) CHECK(name.rfind("model.", 0) == 0);

  options.stop_after_step = 7;
  train_encoder(config, split, options);
  TrainOptions resume;
  resume.quiet = true;
  resume.resume = true;
  train_encoder(Config(schema_for_model("encoder")), split, resume);
  const std::string split_best = join_path(split, kBestCheckpointName);
  CHECK(read_checkpoint_info(split_best).progress.step == best_step);
  CHECK(best_checkpoint_metric(split_best) == best_checkpoint_metric(best_path));
  test::check_same_saved_tensors(best_path, split_best);

  CHECK_THROWS_WITH_AS(run_checkpoint_path(full, "worst"), doctest::Contains("checkpoint must be best or last"), Error);
  std::remove(best_path.c_str());
  CHECK_THROWS_WITH_AS(run_checkpoint_path(full, "best"), doctest::Contains("has no model.best.safetensors"), Error);
}

// Paper §4.2: URPE with C = 1 is the RPE model it extends, so a URPE run initialised from a
// trained RPE run starts exactly where that run ended.
TEST_CASE("--init-from: a URPE run starts from an RPE run (C = 1), its step-0 validation equals the source's") {
  const std::string rpe = temp_dir("init_rpe"), urpe_dir = temp_dir("init_urpe");
  TrainOptions options;
  options.quiet = true;
  const EncoderTrainOutcome source = train_encoder(tiny_config("4", "0.01", {"pe=rpe"}), rpe, options);

  // The copy itself: every RPE tensor bit for bit, urpe_c left at ones.
  const Config urpe_config = tiny_config("4", "0.01", {"pe=urpe"});
  TransformerEncoder fresh(encoder_config_from(urpe_config), 77);
  const InitFromReport report = init_parameters_from_run(rpe, urpe_config, fresh.parameters());
  CHECK(report.source_step == 12);
  CHECK(report.kept == std::vector<std::string>{"urpe_c"});
  CHECK(report.copied.size() + 1 == fresh.parameters().items().size());
  const TensorFile stored = load_safetensors(join_path(rpe, "model.safetensors"));
  for (const std::string& name : report.copied) {
    INFO(name);
    CHECK(fresh.parameters().find(name).to_vector_f32() == stored.at("model." + name).to_vector_f32());
  }
  for (float c : fresh.parameters().find("urpe_c").to_vector_f32()) CHECK(c == 1.0f);

  // The run: a step-0 validation row equal to the source's last one, then training continues.
  options.init_from = rpe;
  train_encoder(urpe_config, urpe_dir, options);
  const std::vector<MetricsRow> src = read_metrics(join_path(rpe, "metrics.csv"));
  const std::vector<MetricsRow> rows = read_metrics(join_path(urpe_dir, "metrics.csv"));
  REQUIRE(rows.size() == 7);  // step 0 valid, then train + valid at 4, 8, 12
  CHECK(rows[0].step == 0);
  CHECK(rows[0].split == "valid");
  CHECK(rows[0].loss == doctest::Approx(src.back().loss).epsilon(1e-6));
  CHECK(rows[0].loss == doctest::Approx(source.final_valid_loss).epsilon(1e-6));
  CHECK(rows[0].metric == src.back().metric);
  // Without --init-from the URPE run starts from its own random init: a different step-0 loss.
  TransformerEncoder scratch(encoder_config_from(urpe_config), urpe_config.get_int("seed"));
  CHECK(std::fabs(evaluate_encoder(scratch, task_from_config(urpe_config), 16, 64).loss - source.final_valid_loss) > 1e-3);

  // Errors name --init-from, the directory and the tensor.
  TransformerEncoder rpe_model(encoder_config_from(tiny_config("4", "0.01", {"pe=rpe"})), 1);
  CHECK_THROWS_WITH_AS(init_parameters_from_run(urpe_dir, tiny_config("4", "0.01", {"pe=rpe"}), rpe_model.parameters()),
                       doctest::Contains("its parameter 'urpe_c'"), Error);
  const Config bucketed = tiny_config("4", "0.01", {"pe=urpe", "rpe_kind=bucketed", "urpe_kind=bucketed"});
  TransformerEncoder bucketed_model(encoder_config_from(bucketed), 1);
  CHECK_THROWS_WITH_AS(init_parameters_from_run(rpe, bucketed, bucketed_model.parameters()),
                       doctest::Contains("in this model (another configuration?)"), Error);
  TransformerEncoder none_model(encoder_config_from(tiny_config("4", "0.01", {"pe=none"})), 1);
  CHECK_THROWS_WITH_AS(init_parameters_from_run(rpe, tiny_config("4", "0.01", {"pe=none"}), none_model.parameters()),
                       doctest::Contains(("--init-from " + rpe + ": its parameter").c_str()), Error);
  CHECK_THROWS_WITH_AS(init_parameters_from_run(rpe + "_missing", urpe_config, fresh.parameters()),
                       doctest::Contains("does not exist"), Error);
}

TEST_CASE("attention = fused trains like attention = materialized, and a run records its choice") {
  TrainOptions options;
  options.quiet = true;
  std::vector<std::vector<double>> losses;
  for (const char* path : {"materialized", "fused"}) {
    CAPTURE(path);
    const std::string dir = temp_dir(std::string("attention_") + path);
    train_encoder(tiny_config("4", "0.01", {std::string("attention=") + path}), dir, options);
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

TEST_CASE("attention = fused: asking for the attention weights (urpe theory, analyze) gives the materialised A") {
  // A fused model holds relative (2n − 1) maps and stores no A; a caller that wants A gets the
  // materialised path on square maps built from them: the same function, so the same outputs.
  const Config fused_config = tiny_config("4", "0.01", {"attention=fused", "pe=urpe"});
  const Config plain_config = tiny_config("4", "0.01", {"attention=materialized", "pe=urpe"});
  TransformerEncoder fused(encoder_config_from(fused_config), 5), plain(encoder_config_from(plain_config), 5);
  Rng rng(3);
  const SyntheticBatch data = task_from_config(fused_config).sample(3, rng);
  autograd::NoGrad no_grad;
  HiddenStates with_a, plain_a;
  with_a.keep_attention = plain_a.keep_attention = true;
  const std::vector<float> a = fused.forward(data.tokens, false, nullptr, &with_a).to_vector_f32();
  const std::vector<float> b = plain.forward(data.tokens, false, nullptr, &plain_a).to_vector_f32();
  const std::vector<float> c = fused.forward(data.tokens, false, nullptr).to_vector_f32();
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    CHECK(a[k] == doctest::Approx(b[k]).epsilon(1e-5));
    CHECK(c[k] == doctest::Approx(b[k]).epsilon(1e-4));
  }
  REQUIRE(with_a.attention.size() == plain_a.attention.size());
  CHECK(with_a.attention[0].shape() == plain_a.attention[0].shape());
}


TEST_CASE("bad configs give one clear error") {
  const std::string dir = temp_dir("bad");
  TrainOptions options;
  options.quiet = true;
  CHECK_THROWS_WITH_AS(train_encoder(resolve_config("", "", {"seq_len=1"}), dir, options),
                       doctest::Contains("key 'seq_len' expects an integer from 2"), Error);
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
