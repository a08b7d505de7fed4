// The masked-LM task of Appendix C.4 in small (data/masked_lm.h, train/families/encoder/encoder_mlm_trainer.h): BERT's
// masking counted over many windows, the vocabulary cap, windows independent of batching, the
// errors, and an encoder that learns a patterned corpus far below the unigram loss.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "cli_util.h"
#include "doctest/doctest.h"
#include "scratch_dir.h"
#include "tensor/error.h"
#include "train/loop/checkpoint.h"
#include "train/families/encoder/encoder_trainer.h"
#include "base/io/json.h"
#include "base/io/run_dir.h"
#include "train/families/encoder/encoder_mlm_trainer.h"
#include "train/config/run_config.h"

using namespace urpe;
using data::MaskedLanguageModel;

namespace {

std::vector<int32_t> random_stream(int64_t length, int32_t upper, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(length));
  for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(upper));
  return ids;
}

// A corpus whose every word is fixed by its neighbours: lines "w0 w1 … w9" from a random start,
// so a masked word is predictable from the context and the unigram guess is at chance (1 in 10).
std::string patterned_corpus() {
  const std::string dir = test::make_scratch_dir("mlm_corpus");
  Rng rng(5);
  for (const char* split : {"train", "valid", "test"}) {
    std::ofstream out(dir + "/" + split + ".txt");
    const int lines = std::string(split) == "train" ? 2000 : 200;
    for (int l = 0; l < lines; ++l) {
      const int64_t start = rng.below(10);
      for (int k = 0; k < 12; ++k) out << (k ? " " : "") << "w" << (start + k) % 10;
      out << "\n";
    }
  }
  return dir;
}

// A model 2 CPU cores train in seconds; `schedule` is steps, evaluation cadence and size.
std::vector<std::string> patterned_sets(const std::string& corpus, const std::string& pe,
                                        const std::vector<std::string>& schedule = {"steps=400", "eval_every=100",
                                                                                    "valid_size=40"}) {
  std::vector<std::string> sets = {"task=mlm", "corpus=" + corpus, "pe=" + pe, "vocab=13", "seq_len=24", "layers=2",
                                   "d_model=32", "heads=4", "d_ff=64", "init_std=0.05", "rpe_kind=bucketed", "batch=16",
                                   "warmup=2", "lr=1e-2"};
  sets.insert(sets.end(), schedule.begin(), schedule.end());
  return sets;
}

}  // namespace

TEST_CASE("masking: k distinct positions per window, the originals as targets, BERT's 80/10/10") {
  const MaskedLanguageModel task(50, 40, 0.15);
  CHECK(task.masked_per_sequence() == 6);  // round(0.15 · 40)
  CHECK(task.rare_id() == 48);
  CHECK(task.mask_id() == 49);
  const std::vector<int32_t> stream = random_stream(20000, 48, 1);
  Rng rng(7);
  const data::MaskedBatch batch = task.sample(stream, 500, rng);
  REQUIRE(batch.tokens.shape() == Shape{500, 40});
  const std::vector<int32_t> inputs = batch.tokens.to_vector_i32(), targets = batch.targets.to_vector_i32();
  int64_t masked = 0, kept = 0, random = 0, mask_token = 0;
  for (int64_t b = 0; b < 500; ++b) {
    int64_t scored = 0;
    for (int64_t i = 0; i < 40; ++i) {
      const size_t k = static_cast<size_t>(b * 40 + i);
      if (targets[k] == MaskedLanguageModel::kIgnoreTarget) {
        CHECK(inputs[k] != task.mask_id());  // unselected positions are the text itself
        continue;
      }
      ++scored;
      CHECK(targets[k] >= 0);
      CHECK(targets[k] < 48);  // a text id, never [MASK]
      if (inputs[k] == task.mask_id()) ++mask_token;
      else if (inputs[k] == targets[k]) ++kept;
      else ++random;
      if (inputs[k] != task.mask_id()) CHECK(inputs[k] < task.mask_id());  // random ids are text ids
    }
    CHECK(scored == 6);
    masked += scored;
  }
  REQUIRE(masked == 3000);
  // 80% / 10% / 10% within 4 standard deviations of a binomial over 3,000 draws (a random
  // replacement equal to the original, 1 in 49, counts as kept).
  CHECK(std::fabs(mask_token / 3000.0 - 0.8) < 4 * std::sqrt(0.8 * 0.2 / 3000));
  CHECK(std::fabs(random / 3000.0 - 0.1 * 48.0 / 49.0) < 4 * std::sqrt(0.1 * 0.9 / 3000));
  CHECK(std::fabs(kept / 3000.0 - (0.1 + 0.1 / 49.0)) < 4 * std::sqrt(0.1 * 0.9 / 3000));
  // Every window is a run of the stream at its unmasked positions.
  for (int64_t b = 0; b < 500; b += 97) {
    bool found = false;
    for (size_t start = 0; start + 40 <= stream.size() && !found; ++start) {
      bool match = true;
      for (int64_t i = 0; i < 40 && match; ++i) {
        const size_t k = static_cast<size_t>(b * 40 + i);
        const int32_t original = targets[k] == MaskedLanguageModel::kIgnoreTarget ? inputs[k] : targets[k];
        match = stream[start + static_cast<size_t>(i)] == original;
      }
      found = match;
    }
    CHECK(found);
  }
}

TEST_CASE("the vocabulary cap keeps the most frequent ids and maps the rest to the rare-token id") {
  const MaskedLanguageModel task(6, 4, 0.25);
  CHECK(task.capped({0, 1, 3, 4, 5, 900}) == std::vector<int32_t>{0, 1, 3, 4, 4, 4});
  CHECK_THROWS_WITH_AS(task.capped({2, -1}), doctest::Contains("negative"), Error);
}

TEST_CASE("evaluation windows: the same inputs and masks whatever the batches") {
  const MaskedLanguageModel task(30, 16, 0.15);
  const std::vector<int32_t> stream = random_stream(16 * 10 + 5, 28, 3);
  CHECK(task.window_count(stream) == 10);
  Rng whole_rng(11), part_rng(11);
  const data::MaskedBatch whole = task.windows(stream, 0, 6, whole_rng);
  const data::MaskedBatch first = task.windows(stream, 0, 2, part_rng), rest = task.windows(stream, 2, 4, part_rng);
  std::vector<int32_t> joined = first.tokens.to_vector_i32(), joined_targets = first.targets.to_vector_i32();
  const std::vector<int32_t> rest_tokens = rest.tokens.to_vector_i32(), rest_targets = rest.targets.to_vector_i32();
  joined.insert(joined.end(), rest_tokens.begin(), rest_tokens.end());
  joined_targets.insert(joined_targets.end(), rest_targets.begin(), rest_targets.end());
  CHECK(whole.tokens.to_vector_i32() == joined);
  CHECK(whole.targets.to_vector_i32() == joined_targets);
  // Window w holds ids [w·n, (w + 1)·n) at its unmasked positions.
  const std::vector<int32_t> t = whole.tokens.to_vector_i32(), y = whole.targets.to_vector_i32();
  for (size_t k = 0; k < t.size(); ++k)
    CHECK((y[k] == MaskedLanguageModel::kIgnoreTarget ? t[k] : y[k]) == stream[k]);
  Rng rng(1);
  CHECK_THROWS_WITH_AS(task.windows(stream, 8, 3, rng), doctest::Contains("not in a split of 10 windows"), Error);
}

TEST_CASE("masked-LM values out of range are errors naming them") {
  CHECK_THROWS_WITH_AS(MaskedLanguageModel(2, 8, 0.15), doctest::Contains("vocab must be at least 3"), Error);
  CHECK_THROWS_WITH_AS(MaskedLanguageModel(10, 8, 1.0), doctest::Contains("mask_prob must be in (0, 1)"), Error);
  CHECK_THROWS_WITH_AS(MaskedLanguageModel(10, 1, 0.15), doctest::Contains("seq_len must be at least 2"), Error);
  Rng rng(1);
  CHECK_THROWS_WITH_AS(MaskedLanguageModel(10, 8, 0.15).sample({1, 2, 3}, 2, rng),
                       doctest::Contains("fewer than seq_len 8"), Error);
  // Through the config: the key is named, and a missing corpus fails before anything runs.
  CHECK_THROWS_WITH_AS(resolve_config("mlm-tiny", "", {"mask_prob=0"}), doctest::Contains("config: mask_prob"), Error);
  CHECK_THROWS_WITH_AS(resolve_config("mlm-tiny", "", {"vocab=2"}), doctest::Contains("vocab"), Error);
  CHECK_THROWS_WITH_AS(check_config_paths(resolve_config("mlm-tiny", "", {"corpus=/nonexistent/corpus"})),
                       doctest::Contains("corpus directory '/nonexistent/corpus'"), Error);
  // Commands that read the synthetic tasks' sequences say so for an mlm run.
  CHECK_THROWS_WITH_AS(task_from_config(resolve_config("mlm-tiny", "", {})), doctest::Contains("task = mlm"), Error);
}

TEST_CASE("an encoder trained on masked LM predicts the masked words of a patterned corpus") {
  // Through the command line (which also keeps OpenMP from spinning on a busy machine), then the
  // run's files and checkpoint read back here.
  const std::string corpus = patterned_corpus();
  const std::string out = test::make_scratch_dir("mlm_run") + "/run";
  std::string command = "train --preset mlm-tiny --quiet --out " + out;
  for (const std::string& s : patterned_sets(corpus, "ape+rpe")) command += " --set " + s;
  const test::CliResult r = test::run_urpe(command);
  INFO(r.output);
  REQUIRE(r.code == 0);
  const Config config = config_from_text(read_text_file(join_path(out, "config.txt")), "config.txt");
  const ResultRow result = result_from_json(json::read_file(join_path(out, "results.json")));
  CHECK(result.metric_name == "valid_masked_accuracy");
  // The loss of metrics.csv's last valid row is the final validation loss.
  const std::vector<MetricsRow> rows = read_metrics(join_path(out, "metrics.csv"));
  REQUIRE(!rows.empty());
  CHECK(rows.back().split == "valid");
  const double final_loss = rows.back().loss;
  // Ten words and <eos>: the unigram loss is about ln 11 = 2.4; context makes it near 0.
  INFO("valid MLM loss " << final_loss << ", accuracy " << result.metric);
  CHECK(final_loss < 0.6);
  CHECK(result.metric > 0.8);
  CHECK(rows.back().metric == doctest::Approx(result.metric));
  // `evaluate_masked_lm` on the checkpoint agrees with the run, and `urpe eval` prints it.
  TransformerEncoder model(encoder_config_from(config), 0);
  load_checkpoint(join_path(out, "model.safetensors"), model.parameters(), nullptr);
  const MaskedLmData data = masked_lm_data(config);
  CHECK(data.task.window_count(data.valid) == 2600 / 24);  // 200 lines × (12 words + <eos>) = 2,600 ids
  const MaskedLmEval again = evaluate_masked_lm(model, data.task, data.valid, 40);
  CHECK(again.loss == doctest::Approx(final_loss).epsilon(1e-6));
  CHECK(again.windows == 40);
  CHECK(again.masked == 40 * 4);  // round(0.15 · 24) = 4
  char loss_text[32];
  std::snprintf(loss_text, sizeof loss_text, "valid MLM loss %.4f", again.loss);
  const test::CliResult eval = test::run_urpe("eval --run " + out);
  INFO(eval.output);
  CHECK(eval.code == 0);
  CHECK(eval.output.find(loss_text) != std::string::npos);
  // An untrained model is near chance on the same windows.
  const MaskedLmEval fresh = evaluate_masked_lm(TransformerEncoder(encoder_config_from(config), 9), data.task, data.valid, 40);
  CHECK(fresh.loss > 2.0);
}

TEST_CASE("an mlm run stopped and resumed ends exactly where an uninterrupted one does") {
  const std::string corpus = patterned_corpus();
  const Config config = resolve_config("mlm-tiny", "", patterned_sets(corpus, "urpe", {"steps=6", "eval_every=3", "valid_size=8"}));
  TrainOptions options;
  options.quiet = true;
  options.overwrite = true;
  const std::string whole = test::make_scratch_dir("mlm_whole"), parts = test::make_scratch_dir("mlm_parts");
  const EncoderTrainOutcome uninterrupted = train_masked_lm(config, whole, options);
  TrainOptions stop = options;
  stop.stop_after_step = 2;
  CHECK(train_masked_lm(config, parts, stop).interrupted);
  TrainOptions resume = options;
  resume.resume = true;
  resume.overwrite = false;
  const EncoderTrainOutcome resumed = train_masked_lm(config, parts, resume);
  CHECK(resumed.final_valid_loss == uninterrupted.final_valid_loss);
  CHECK(resumed.result.metric == uninterrupted.result.metric);
}
