// The language-model trainer (Transformer-XL, model = txl): perplexity as
// docs/transformer_xl.md#evaluation-protocol defines it
// (hand values), the run directory, `urpe eval` reproducing the logged perplexity, bit-identical
// resume across an epoch boundary with the memory in the checkpoint, memory changing the score,
// the presets, the repro summary, and one clear error per bad input. Everything runs on a tiny
// generated corpus in a temp directory.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "data/lm_batches.h"
#include "cli_util.h"
#include "same_tensors.h"
#include "test_util.h"
#include "train/loop/checkpoint.h"
#include "train/families/txl/txl_trainer.h"
#include "app/repro/lm.h"
#include "train/config/run_config.h"
#include "base/io/safetensors.h"

using namespace urpe;
namespace fs = std::filesystem;

namespace {

// Directories under /tmp named per process and test, removed when the suite exits.
struct TempDirs {
  std::vector<std::string> paths;
  ~TempDirs() {
    std::error_code ignored;
    for (const std::string& p : paths) fs::remove_all(p, ignored);
  }
};
TempDirs temp_dirs;

std::string temp_dir(const std::string& name) {
  const std::string dir = "/tmp/urpe_test_lm_" + std::to_string(::getpid()) + "_" + name;
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  temp_dirs.paths.push_back(dir);
  return dir;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

// Sentences of a tiny grammar ("the cat sat on the mat ."), drawn from a seeded stream: local
// structure a model learns within a few steps, so context (and memory) changes the score.
std::string sentences(int lines, uint64_t seed) {
  const char* subjects[] = {"the cat", "a dog", "the bird", "my friend"};
  const char* verbs[] = {"sat on", "ran to", "looked at", "slept by"};
  const char* objects[] = {"the mat", "a tree", "the house", "the river"};
  Rng rng(seed);
  std::string text;
  for (int k = 0; k < lines; ++k) {
    text += std::string(subjects[rng.below(4)]) + " " + verbs[rng.below(4)] + " " + objects[rng.below(4)] + " .";
    if (rng.below(3) == 0) text += std::string(" then ") + subjects[rng.below(4)] + " slept .";
    text += "\n";
  }
  return text;
}

// A WikiText-format corpus directory: train (a few epochs' worth for the tiny runs), valid, test.
std::string make_corpus(const std::string& name, int train_lines = 60) {
  const std::string dir = temp_dir(name);
  fs::create_directories(dir);
  write_text(dir + "/train.txt", sentences(train_lines, 1));
  write_text(dir + "/valid.txt", sentences(12, 2));
  write_text(dir + "/test.txt", sentences(12, 3));
  return dir;
}

std::vector<std::string> tiny_sets(const std::string& corpus) {
  return {"model=txl", "corpus=" + corpus, "layers=1", "d_model=16", "heads=2", "d_head=8", "d_inner=32",
          "tgt_len=6", "mem_len=6", "batch=4", "steps=30", "warmup=2", "eval_every=10", "lr=0.02",
          "dropout=0.1", "eval_batch=3", "eval_tgt_len=5", "eval_mem_len=10", "init_std=0.1", "clip=0.25",
          "cutoffs=", "max_eval_tokens=0"};
}

// The tiny settings with `extra` key=value pairs replacing (or adding to) them.
Config tiny_config(const std::string& corpus, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets;
  auto key_of = [](const std::string& s) { return s.substr(0, s.find('=')); };
  for (const std::string& s : tiny_sets(corpus)) {
    bool replaced = false;
    for (const std::string& e : extra) replaced = replaced || key_of(e) == key_of(s);
    if (!replaced) sets.push_back(s);
  }
  sets.insert(sets.end(), extra.begin(), extra.end());
  return resolve_config("", "", sets);
}

TrainOptions quiet() {
  TrainOptions o;
  o.quiet = true;
  return o;
}

}  // namespace

// ---- perplexity ----

TEST_CASE("perplexity: Σ L·mean NLL over Σ L, then exp (docs/transformer_xl.md#evaluation-protocol)") {
  PerplexityMeter meter;
  meter.add(3, 2.0);  // 3 rows of mean NLL 2
  meter.add(1, 6.0);  // a short last segment
  CHECK(meter.length() == 4);
  CHECK(meter.loss() == doctest::Approx(3.0));  // (3·2 + 1·6) / 4, not the mean of segment means (4)
  CHECK(meter.perplexity() == doctest::Approx(std::exp(3.0)));
  CHECK_THROWS_WITH_AS(PerplexityMeter().loss(), doctest::Contains("no segment"), Error);
  CHECK_THROWS_WITH_AS(meter.add(0, 1.0), doctest::Contains("at least one row"), Error);
}

TEST_CASE("evaluate_txl: a model that predicts the train unigram distribution scores its hand value") {
  // Every parameter 0 except the output bias = log p(w): LayerNorm gains of 0 make every hidden
  // state 0, so each prediction is p whatever the context or memory.
  const std::vector<int32_t> stream = {0, 1, 2, 1, 1, 3, 0, 2, 1, 1, 2, 3, 3, 1, 0, 1, 2, 2, 1, 0, 3, 1, 1};
  const std::vector<double> p = {0.1, 0.4, 0.3, 0.2};
  TransformerXLConfig c;
  c.vocab = 4;
  c.layers = 1;
  c.d_model = 4;
  c.heads = 1;
  c.d_head = 2;
  c.d_inner = 4;
  c.tgt_len = 3;
  c.mem_len = 3;
  TransformerXL model(c, 1);
  for (const auto& [name, t] : model.parameters().items()) t.copy_from(Tensor::zeros(t.shape()));
  std::vector<float> log_p;
  for (double x : p) log_p.push_back(static_cast<float>(std::log(x)));
  model.parameters().find("out_bias").copy_from(Tensor::from_vector(log_p, {4}));

  TxlEvalSettings s;
  s.batch = 3;  // 23 tokens: 7 rows per column, the last 2 tokens dropped
  s.tgt_len = 4;  // segments of 4 and 2 rows
  s.mem_len = 5;
  s.clamp_len = -1;
  s.same_length = false;
  // By hand: each column b holds stream[7b .. 7b+6]; its first token is never predicted.
  double nll = 0;
  int count = 0;
  for (int b = 0; b < 3; ++b)
    for (int t = 1; t < 7; ++t, ++count) nll -= std::log(p[stream[7 * b + t]]);
  const TxlEvalResult r = evaluate_txl(model, stream, s);
  CHECK(r.predicted == 18);
  CHECK(count == 18);
  CHECK(r.loss == doctest::Approx(nll / count).epsilon(1e-6));
  CHECK(r.perplexity == doctest::Approx(std::exp(nll / count)).epsilon(1e-6));
  // max_tokens keeps only the head of the split: 12 tokens → 4 rows per column.
  s.max_tokens = 12;
  CHECK(evaluate_txl(model, stream, s).predicted == 9);
  CHECK(model.config().mem_len == 3);  // the model's own memory options are restored
}

// ---- training, evaluation, resume ----

TEST_CASE("a txl run writes its directory; eval reproduces the logged perplexity; memory matters") {
  const std::string corpus = make_corpus("files");
  const std::string dir = temp_dir("files_run");
  const TxlTrainOutcome outcome = train_txl(tiny_config(corpus), dir, quiet());
  for (const char* file : {"config.txt", "metrics.csv", "results.json", "model.safetensors", "plots/perplexity.png",
                           "plots/urpe_c.png"}) {
    INFO(file);
    CHECK(fs::exists(join_path(dir, file)));
  }
  CHECK(outcome.result.steps == 30);
  CHECK(outcome.result.metric_name == "valid_ppl");
  CHECK(outcome.result.pe == "urpe");
  const std::vector<MetricsRow> rows = read_metrics(join_path(dir, "metrics.csv"));
  REQUIRE(rows.size() == 6);  // train + valid at steps 10, 20, 30
  CHECK(rows.back().split == "valid");
  CHECK(rows.back().metric == doctest::Approx(outcome.result.metric).epsilon(1e-8));
  CHECK(rows.back().metric == doctest::Approx(std::exp(rows.back().loss)).epsilon(1e-8));
  const json::Value stored = json::Value::parse(read_text_file(join_path(dir, "results.json")));
  CHECK(stored.at("metric").as_number() == outcome.result.metric);

  // It learned: far below the unigram perplexity of the corpus.
  const data::Corpus c = data::load_corpus(corpus);
  const double unigram = data::unigram_perplexity(c.train.ids, c.valid.ids);
  CHECK(outcome.result.metric < 0.8 * unigram);

  // The checkpoint alone reproduces the number.
  const TxlRunEval again = evaluate_txl_run(dir, "valid");
  CHECK(again.step == 30);
  CHECK(again.result.perplexity == doctest::Approx(outcome.result.metric).epsilon(1e-9));
  CHECK(again.settings.tgt_len == 5);
  CHECK(again.settings.mem_len == 10);
  const TxlRunEval test = evaluate_txl_run(dir, "test");
  CHECK(test.result.perplexity != again.result.perplexity);
  CHECK(std::isfinite(test.result.perplexity));

  // Without memory the same checkpoint scores differently (the first tokens of each segment lose
  // their context).
  TxlEvalSettings no_memory = again.settings;
  no_memory.mem_len = 0;
  const TxlRunEval forgetful = evaluate_txl_run(dir, "valid", &no_memory);
  CHECK(forgetful.result.predicted == again.result.predicted);
  CHECK(std::fabs(forgetful.result.perplexity - again.result.perplexity) > 1e-3);
}

TEST_CASE("pe = alibi and alibi+urpe: a txl run trains, learns, and its checkpoint reproduces the number") {
  const std::string corpus = make_corpus("alibi");
  const data::Corpus c = data::load_corpus(corpus);
  const double unigram = data::unigram_perplexity(c.train.ids, c.valid.ids);
  for (const std::string pe : {"alibi", "alibi+urpe"}) {
    INFO(pe);
    const std::string dir = temp_dir("alibi_run_" + std::string(pe == "alibi" ? "plain" : "urpe"));
    const TxlTrainOutcome outcome = train_txl(tiny_config(corpus, {"pe=" + pe}), dir, quiet());
    CHECK(outcome.result.pe == pe);
    CHECK(outcome.result.metric < 0.8 * unigram);
    CHECK(fs::exists(join_path(dir, "plots/urpe_c.png")) == (pe == "alibi+urpe"));
    const TxlRunEval again = evaluate_txl_run(dir, "valid");
    CHECK(again.result.perplexity == doctest::Approx(outcome.result.metric).epsilon(1e-9));
  }
}

TEST_CASE("resume continues bit-identically across an epoch boundary (dropout on, memory carried)") {
  // 40 lines ≈ 400 tokens: 4 columns of ~100 rows, ~17 segments of 6; 40 steps cross epochs.
  const std::string corpus = make_corpus("resume", 40);
  const Config config = tiny_config(corpus, {"steps=40", "eval_every=10"});
  const data::Corpus c = data::load_corpus(corpus);
  const int64_t segments = data::LMOrderedBatches(c.train.ids, 4, 6).num_segments();
  REQUIRE(segments < 40);
  REQUIRE(segments > 13);
  const std::string full = temp_dir("resume_full"), split = temp_dir("resume_split");
  train_txl(config, full, quiet());
  TrainOptions stop = quiet();
  stop.stop_after_step = 13;  // between evaluations, in the middle of the first epoch
  CHECK(train_txl(config, split, stop).interrupted);
  const CheckpointInfo info = read_checkpoint_info(join_path(split, "model.safetensors"));
  CHECK(info.progress.step == 13);
  CHECK(info.state.meta.at("epoch") == "0");
  CHECK(info.state.meta.at("segment") == "13");
  CHECK(info.state.tensors.size() == 2);  // the memory: layers + 1 tensors (B, mem_len, d)
  CHECK(info.state.tensors[0].second.shape() == (Shape{4, 6, 16}));

  TrainOptions resume = quiet();
  resume.resume = true;
  const TxlTrainOutcome second = train_txl(Config(schema_for_model("txl")), split, resume);
  CHECK_FALSE(second.interrupted);
  CHECK(second.result.steps == 40);
  // Step t trains segment (t − 1) mod segments of epoch (t − 1) / segments.
  CHECK(read_checkpoint_info(join_path(split, "model.safetensors")).state.meta.at("epoch") ==
        std::to_string(39 / segments));
  CHECK(read_checkpoint_info(join_path(split, "model.safetensors")).state.meta.at("segment") ==
        std::to_string(39 % segments + 1));
  const std::vector<MetricsRow> a = read_metrics(join_path(full, "metrics.csv"));
  const std::vector<MetricsRow> b = read_metrics(join_path(split, "metrics.csv"));
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    CHECK(a[k].step == b[k].step);
    CHECK(a[k].loss == b[k].loss);
    CHECK(a[k].metric == b[k].metric);
  }
  test::check_same_saved_tensors(join_path(full, "model.safetensors"), join_path(split, "model.safetensors"));
}

TEST_CASE("resume: a stream position that does not fit the run is one error naming the checkpoint and the key") {
  const std::string corpus = make_corpus("badpos", 40);
  const Config config = tiny_config(corpus, {"steps=40", "eval_every=10"});
  const data::Corpus c = data::load_corpus(corpus);
  const int64_t segments = data::LMOrderedBatches(c.train.ids, 4, 6).num_segments();
  const std::string dir = temp_dir("badpos_run");
  TrainOptions stop = quiet();
  stop.stop_after_step = 13;
  train_txl(config, dir, stop);
  const std::string path = join_path(dir, "model.safetensors");
  const TensorFile original = load_safetensors(path);
  TrainOptions resume = quiet();
  resume.resume = true;
  auto resume_fails_with = [&](const std::string& expected) {
    CHECK_THROWS_WITH_AS(train_txl(Config(schema_for_model("txl")), dir, resume),
                         doctest::Contains((path + ": " + expected).c_str()), Error);
  };

  const std::string n = std::to_string(segments), too_far = std::to_string(segments + 1);
  struct Bad { std::string key, value, expected; };
  const Bad bad_meta[] = {
      {"state.epoch", "x", "metadata 'state.epoch' should be an integer from 0 to 13, got 'x'"},
      {"state.epoch", "-1", "metadata 'state.epoch' should be an integer from 0 to 13, got '-1'"},
      {"state.epoch", "14", "metadata 'state.epoch' should be an integer from 0 to 13, got '14'"},
      {"state.segment", "nan", "metadata 'state.segment' should be an integer from 0 to " + n + ", got 'nan'"},
      {"state.segment", "-3", "metadata 'state.segment' should be an integer from 0 to " + n + ", got '-3'"},
      {"state.segment", too_far, "metadata 'state.segment' should be an integer from 0 to " + n + ", got '" + too_far},
      {"state.mems", "many", "metadata 'state.mems' should be an integer from 0 to 2, got 'many'"},
      {"state.mems", "3", "metadata 'state.mems' should be an integer from 0 to 2, got '3'"},
      {"state.mems", "1", "metadata 'state.mems' should be 0 or 2 (one memory tensor per layer input"},
  };
  for (const Bad& bad : bad_meta) {
    INFO(bad.key << " = " << bad.value);
    std::map<std::string, std::string> meta = original.metadata;
    meta[bad.key] = bad.value;
    save_safetensors(path, original.tensors, meta);
    resume_fails_with(bad.expected);
  }
  {
    std::map<std::string, std::string> meta = original.metadata;
    meta.erase("state.segment");
    save_safetensors(path, original.tensors, meta);
    resume_fails_with("no metadata key 'state.segment'");
  }

  // The memory tensors: present, f32 (batch 4, L, d_model 16) with one L in [1, mem_len 6] for all.
  const std::vector<std::pair<Tensor, std::string>> bad_memory = {
      {Tensor::zeros({4, 5, 16}), "the memory tensor 'state.mems.1' is f32 (4, 5, 16), expected f32 (batch 4, L, d_model 16) with the same L from 1 to mem_len 6 in every layer"},
      {Tensor::zeros({4, 6, 8}), "the memory tensor 'state.mems.1' is f32 (4, 6, 8)"},
      {Tensor::zeros({3, 6, 16}), "the memory tensor 'state.mems.1' is f32 (3, 6, 16)"},
      {Tensor::zeros({4, 6}), "the memory tensor 'state.mems.1' is f32 (4, 6)"},
      {Tensor::from_vector(std::vector<int32_t>(4 * 6 * 16, 0), {4, 6, 16}), "the memory tensor 'state.mems.1' is i32"},
      {Tensor(), "the memory tensor 'state.mems.1' is missing"},
  };
  for (const auto& [replacement, expected] : bad_memory) {
    INFO(expected);
    std::vector<NamedTensor> tensors;
    for (const auto& [name, t] : original.tensors) {
      if (name != "state.mems.1") tensors.emplace_back(name, t);
      else if (replacement.defined()) tensors.emplace_back(name, replacement);
    }
    save_safetensors(path, tensors, original.metadata);
    resume_fails_with(expected);
  }
  // Memory longer than mem_len, in every layer.
  {
    std::vector<NamedTensor> tensors;
    for (const auto& [name, t] : original.tensors)
      tensors.emplace_back(name, name.rfind("state.mems.", 0) == 0 ? Tensor::zeros({4, 7, 16}) : t);
    save_safetensors(path, tensors, original.metadata);
    resume_fails_with("the memory tensor 'state.mems.0' is f32 (4, 7, 16)");
  }

  // The checkpoint as written resumes (nothing above changed the run directory).
  save_safetensors(path, original.tensors, original.metadata);
  CHECK(train_txl(Config(schema_for_model("txl")), dir, resume).result.steps == 40);
}

TEST_CASE("urpe train and urpe eval on a txl run print the same valid perplexity") {
  const std::string corpus = make_corpus("cli");
  const std::string dir = temp_dir("cli_run");
  std::string command = std::string(URPE_BINARY) + " train --preset txl-tiny --out " + dir + " --quiet";
  for (const std::string& s : tiny_sets(corpus)) command += " --set " + s;
  auto run = [](const std::string& cmd) {
    const test::CliResult r = test::run_command(cmd);
    INFO(r.output);
    CHECK(r.code == 0);
    return r.output;
  };
  auto number_after = [](const std::string& text, const std::string& key) {
    const size_t at = text.find(key);
    REQUIRE(at != std::string::npos);
    return std::stod(text.substr(at + key.size()));
  };
  const std::string trained = run(command);
  const std::string evaluated = run(std::string(URPE_BINARY) + " eval --run " + dir + " --split valid");
  CHECK(number_after(evaluated, "valid perplexity ") == number_after(trained, "valid perplexity "));
  const std::string tested = run(std::string(URPE_BINARY) + " eval --run " + dir + " --split test");
  CHECK(tested.find("test perplexity") != std::string::npos);
}

// ---- configuration ----

TEST_CASE("txl presets: txl-base is the paper's WikiText-103 base (docs/transformer_xl.md#presets)") {
  const Config base = resolve_config("txl-base", "", {});
  CHECK(base.get_string("model") == "txl");
  CHECK(base.get_int("layers") == 16);
  CHECK(base.get_int("d_model") == 410);
  CHECK(base.get_int("heads") == 10);
  CHECK(base.get_int("d_head") == 41);
  CHECK(base.get_int("d_inner") == 2100);
  CHECK(base.get_float("dropout") == doctest::Approx(0.1));
  CHECK(base.get_float("dropatt") == 0.0);
  CHECK(base.get_int("tgt_len") == 150);
  CHECK(base.get_int("mem_len") == 150);
  CHECK(base.get_int("batch") == 60);
  CHECK(base.get_float("lr") == doctest::Approx(2.5e-4));
  CHECK(base.get_string("schedule") == "cosine");
  CHECK(base.get_int("warmup") == 0);
  CHECK(base.get_int("steps") == 200000);
  CHECK(base.get_float("clip") == doctest::Approx(0.25));
  CHECK(parse_cutoffs(base.get_string("cutoffs")) == std::vector<int64_t>{20000, 40000, 200000});
  CHECK(base.get_int("seed") == 1111);
  const TxlEvalSettings e = eval_settings_from(base);
  CHECK(e.batch == 10);
  CHECK(e.tgt_len == 64);
  CHECK(e.mem_len == 640);
  CHECK(e.clamp_len == 400);
  CHECK(e.same_length);
  for (const char* name : {"txl-tiny", "txl-small"}) {
    INFO(name);
    const Config c = resolve_config(name, "", {});
    CHECK(c.get_string("corpus") == "embedded");
    CHECK(c.get_int("steps") > 0);
  }
  // Defaults: evaluation follows training unless told otherwise.
  const Config d = resolve_config("", "", {"model=txl", "tgt_len=20", "mem_len=30"});
  CHECK(eval_settings_from(d).tgt_len == 20);
  CHECK(eval_settings_from(d).mem_len == 30);
  CHECK(parse_cutoffs("").empty());
  CHECK(parse_cutoffs("5, 9") == std::vector<int64_t>{5, 9});
  CHECK_THROWS_WITH_AS(parse_cutoffs("9,5"), doctest::Contains("increase"), Error);
  CHECK_THROWS_WITH_AS(parse_cutoffs("9,x"), doctest::Contains("'x'"), Error);
}

TEST_CASE("bad inputs give one clear error") {
  const std::string corpus = make_corpus("bad");
  const std::string dir = temp_dir("bad_run");
  CHECK_THROWS_WITH_AS(train_txl(tiny_config(corpus + "_missing"), dir, quiet()),
                       doctest::Contains((corpus + "_missing").c_str()), Error);
  // A valid token that train never saw.
  const std::string oov = make_corpus("bad_oov");
  write_text(oov + "/valid.txt", "the cat sat on the zeppelin .\n");
  CHECK_THROWS_WITH_AS(train_txl(tiny_config(oov), dir, quiet()), doctest::Contains("zeppelin"), Error);
  CHECK_THROWS_WITH_AS(train_txl(tiny_config(corpus, {"cutoffs=5,500"}), dir, quiet()),
                       doctest::Contains("cutoffs"), Error);
  CHECK_THROWS_WITH_AS(train_txl(tiny_config(corpus, {"same_length=true", "eval_mem_len=0"}), dir, quiet()),
                       doctest::Contains("same_length"), Error);
  CHECK_THROWS_WITH_AS(train_txl(tiny_config(corpus, {"d_model=15"}), dir, quiet()),
                       doctest::Contains("even"), Error);
  CHECK_THROWS_WITH_AS(resolve_config("", "", {"model=txl", "pe=none"}), doctest::Contains("pe"), Error);
  CHECK_THROWS_WITH_AS(resolve_config("", "", {"model=txl", "mem_lenn=3"}), doctest::Contains("did you mean 'mem_len'"),
                       Error);
  CHECK_THROWS_WITH_AS(evaluate_txl_run(dir + "_none", "valid"), doctest::Contains("no model.safetensors"), Error);
  CHECK_THROWS_WITH_AS(lm_plan_for_scale("huge"), doctest::Contains("tiny, small or paper"), Error);
}

// ---- repro ----

TEST_CASE("repro lm: both models over seeds, results.json rows, the table and the plots") {
  const std::string corpus = make_corpus("repro");
  const std::string out = temp_dir("repro_out");
  LmReproPlan plan = lm_plan_for_scale("tiny");
  plan.seeds = 2;
  plan.overrides = tiny_sets(corpus);
  plan.finetune_steps = 4;  // --finetune
  const LmReproSummary summary = run_lm_repro(plan, out);
  REQUIRE(summary.runs.size() == 4);
  // --finetune: each RPE run continued as RPE and as URPE (C = 1); the URPE continuation starts
  // exactly where its RPE source ended (its step-0 validation is the source's last one).
  REQUIRE(summary.finetune.size() == 2);
  for (const LmFinetuneRecord& f : summary.finetune) {
    CAPTURE(f.urpe_dir);
    const std::vector<MetricsRow> source = read_metrics(join_path(f.source_dir, "metrics.csv"));
    const std::vector<MetricsRow> urpe_rows = read_metrics(join_path(f.urpe_dir, "metrics.csv"));
    const std::vector<MetricsRow> rpe_rows = read_metrics(join_path(f.rpe_dir, "metrics.csv"));
    REQUIRE(!urpe_rows.empty());
    CHECK(urpe_rows[0].step == 0);
    CHECK(urpe_rows[0].loss == doctest::Approx(source.back().loss).epsilon(1e-5));
    CHECK(rpe_rows[0].loss == doctest::Approx(source.back().loss).epsilon(1e-5));
    CHECK(read_checkpoint_info(join_path(f.urpe_dir, "model.safetensors")).progress.step == 4);
    CHECK(f.urpe_valid_ppl > 0);
    CHECK(f.rpe_test_ppl > 0);
  }
  for (const LmRunRecord& r : summary.runs) {
    CHECK(r.valid_ppl < summary.unigram_valid_ppl);
    CHECK(r.valid_ppl_no_memory != r.valid_ppl);
    CHECK(r.eval_mem_len == 10);
  }
  CHECK(summary.runs[2].params - summary.runs[0].params == 2 * 12);  // URPE: heads × (tgt_len + mem_len)
  const json::Value rows = json::Value::parse(read_text_file(join_path(out, "results.json")));
  CHECK(rows.size() == 2 + 4 * 3);  // unigram valid/test + (valid, test, valid without memory) per run
  const std::string md = read_text_file(join_path(out, "results.md"));
  for (const char* text : {"Unigram perplexity", "Transformer-XL + URPE", "+24 (", "URPE − baseline", "eval_mem_len = 0",
                           "## Fine-tuning RPE into URPE (paper §4.2)", "continued for 4 more steps"})
    CHECK(md.find(text) != std::string::npos);
  for (const char* file : {"plots/curves_L1.png", "plots/perplexity.png", "plots/urpe_c_L1.png",
                           "runs/L1-rpe-s1/model.safetensors", "runs/L1-urpe-s2/metrics.csv"}) {
    INFO(file);
    CHECK(fs::exists(join_path(out, file)));
  }

  // The table from known numbers: mean ± half-range, and the per-seed URPE − baseline difference.
  LmReproSummary s;
  s.corpus = "x";
  s.token_mode = "word";
  s.vocab = 10;
  s.unigram_valid_ppl = 9.5;
  s.unigram_test_ppl = 9.75;
  auto record = [](const std::string& pe, int64_t seed, double valid, int64_t params) {
    LmRunRecord r;
    r.layers = 1;
    r.pe = pe;
    r.seed = seed;
    r.params = params;
    r.valid_ppl = valid;
    r.test_ppl = valid + 1;
    r.valid_ppl_no_memory = valid * 1.1;
    r.eval_mem_len = 10;
    return r;
  };
  s.runs = {record("rpe", 1, 5.0, 1000), record("rpe", 2, 6.0, 1000), record("urpe", 1, 4.0, 1010),
            record("urpe", 2, 4.5, 1010)};
  const std::string table = lm_results_markdown(s, plan);
  CHECK(table.find("| 1 | Transformer-XL | 1000 | 5.50 ± 0.50 | 6.50 ± 0.50 |") != std::string::npos);
  CHECK(table.find("| 1 | Transformer-XL + URPE | 1010 | 4.25 ± 0.25 |") != std::string::npos);
  CHECK(table.find("| 1 | +10 (+1.000%) | -1.25 ± 0.25 | -1.25 ± 0.25 |") != std::string::npos);
  CHECK(table.find("10.0% to 10.0% higher") != std::string::npos);
  CHECK(table.find("valid 9.50, test 9.75") != std::string::npos);
  // Beside the paper's base numbers, with both relative changes.
  CHECK(table.find("| valid perplexity, ours L = 1 (paper Tables 1 and 4, L = 16: Transformer-XL base, WikiText-103) | 23.1 → 22.4 | "
                   "-3.0% | 5.50 → 4.25 | -22.7% |") != std::string::npos);
  CHECK(table.find("| 24.0 → 23.2 | -3.3% | 6.50 → 5.25 | -19.2% |") != std::string::npos);
}

TEST_CASE("repro lm at paper scale: txl-base at L = 4, 8, 16 (Table 4), here shrunk to a tiny corpus") {
  const LmReproPlan paper = lm_plan_for_scale("paper");
  CHECK(paper.preset == "txl-base-paper");
  CHECK(resolve_config(paper.preset, "", {}).get_float("weight_decay") == 0.01);
  CHECK(paper.layers == std::vector<int64_t>{4, 8, 16});
  const std::string corpus = make_corpus("paper");
  const std::string out = temp_dir("paper_out");
  LmReproPlan plan = paper;
  for (const std::string& s : tiny_sets(corpus))  // the plan sets the depth; 3 steps per run
    if (s.rfind("layers=", 0) != 0 && s.rfind("steps=", 0) != 0) plan.overrides.push_back(s);
  plan.overrides.push_back("steps=3");
  const LmReproSummary summary = run_lm_repro(plan, out);
  REQUIRE(summary.runs.size() == 6);
  CHECK(summary.runs[0].layers == 4);
  CHECK(summary.runs[5].layers == 16);
  CHECK(summary.runs[5].pe == "urpe");
  // The URPE table is shared by all layers: the same overhead at every depth.
  CHECK(summary.runs[1].params - summary.runs[0].params == summary.runs[5].params - summary.runs[4].params);
  const std::string md = read_text_file(join_path(out, "results.md"));
  for (const char* row : {"| 4 | Transformer-XL |", "| 8 | Transformer-XL + URPE |", "| 16 | Transformer-XL |"})
    CHECK(md.find(row) != std::string::npos);
  // Each depth beside the paper's Table 4 (valid); test is Table 1's, at L = 16 only, and the other
  // depths say so.
  for (const char* row : {"| valid perplexity, ours L = 4 (paper Table 4, L = 4, WikiText-103) | 29.6 → 28.7 | -3.0% |",
                          "| valid perplexity, ours L = 8 (paper Table 4, L = 8, WikiText-103) | 26.0 → 25.2 | -3.1% |",
                          "| valid perplexity, ours L = 16 (paper Tables 1 and 4, L = 16: Transformer-XL base, WikiText-103) | "
                          "23.1 → 22.4 | -3.0% |",
                          "| test perplexity, ours L = 4 | not printed: Table 4 gives validation perplexity only",
                          "| test perplexity, ours L = 16 (paper Table 1: Transformer-XL base, L = 16, WikiText-103) | "
                          "24.0 → 23.2 | -3.3% |"}) {
    INFO(row);
    CHECK(md.find(row) != std::string::npos);
  }
  for (const char* file : {"plots/curves_L4.png", "plots/curves_L8.png", "plots/curves_L16.png", "runs/L16-urpe-s1/results.json"}) {
    INFO(file);
    CHECK(fs::exists(join_path(out, file)));
  }
}
