// Config files and --set overrides: parsing, typed getters, defaults, every error message, the
// round trip through to_text(), and the help listing.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "doctest/doctest.h"
#include "tensor/error.h"
#include "data/molecule_dataset.h"
#include "data/smiles.h"
#include "models/encoder.h"
#include "models/graphormer.h"
#include "train/families/encoder/encoder_trainer.h"
#include "base/io/config.h"
#include "train/families/txl/txl_config.h"
#include "ops/linear_cross_entropy.h"
#include "train/config/memory_estimate.h"
#include "train/families/graphormer/graphormer_config.h"
#include "train/config/run_config.h"

using namespace urpe;

namespace {

ConfigSchema test_schema() {
  ConfigSchema s;
  s.add_choice("model", {"urpe", "rpe", "ape", "none"}, "urpe", "positional encoding")
      .add_int("steps", 2000, "training steps")
      .add_int("batch_size", 32, "sequences per batch")
      .add_int("layers", 2, "transformer layers")
      .add_float("lr", 3e-4, "peak learning rate")
      .add_float("dropout", 0.1, "dropout probability")
      .add_bool("causal", true, "causal attention")
      .add_string("task", "copy", "synthetic task name")
      .add_string("note", "", "free text kept with the run")
      .add_int("seed", 1, "random seed");
  return s;
}

std::string write_temp(const std::string& text) {
  static int counter = 0;
  const std::string path = "/tmp/urpe_test_config_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++) + ".cfg";
  std::ofstream(path) << text;
  return path;
}

// Parses `text` as a file called "run.cfg" and returns the error message ("" if none).
std::string error_of(const std::string& text) {
  Config c(test_schema());
  try {
    c.apply_text(text, "run.cfg");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string override_error(const std::string& assignment, const std::string& file_text = "") {
  Config c(test_schema());
  try {
    c.apply_text(file_text, "run.cfg");
    c.apply_override(assignment);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("config: defaults and typed getters") {
  const Config c(test_schema());
  CHECK(c.get_string("model") == "urpe");
  CHECK(c.get_int("steps") == 2000);
  CHECK(c.get_float("lr") == 3e-4);
  CHECK(c.get_float("steps") == 2000.0);  // ints read as floats too
  CHECK(c.get_bool("causal"));
  CHECK(c.get_string("note").empty());
  CHECK(c.get_string("lr") == "0.0003");  // canonical text
  CHECK_FALSE(c.is_set("steps"));
  CHECK_THROWS_WITH_AS(c.get_int("lr"), "config: key 'lr' is a float, not an int", Error);
  CHECK_THROWS_WITH_AS(c.get_bool("task"), "config: key 'task' is a string, not a bool", Error);
  CHECK_THROWS_WITH_AS(c.get_float("model"), "config: key 'model' is a choice, not a float", Error);
  CHECK_THROWS_WITH_AS(c.get_int("nope"), "config: no key 'nope' in the schema", Error);
}

TEST_CASE("config: parsing a file with comments, blank lines, quotes and spacing") {
  const std::string path = write_temp(
      "# a run of the copy task\n"
      "\n"
      "model = rpe\n"
      "   steps=500   # fewer steps\n"
      "lr = 1e-3\n"
      "dropout = 0\n"
      "causal = no\n"
      "task = associative_recall\r\n"
      "note = \"keep # this, and \\\"quotes\\\"\"  # comment\n"
      "seed = -7");  // no final newline
  const Config c = Config::from_file(test_schema(), path);
  CHECK(c.get_string("model") == "rpe");
  CHECK(c.get_int("steps") == 500);
  CHECK(c.get_float("lr") == 1e-3);
  CHECK(c.get_float("dropout") == 0.0);
  CHECK_FALSE(c.get_bool("causal"));
  CHECK(c.get_string("task") == "associative_recall");
  CHECK(c.get_string("note") == "keep # this, and \"quotes\"");
  CHECK(c.get_int("seed") == -7);
  CHECK(c.is_set("steps"));
  CHECK_FALSE(c.is_set("batch_size"));
  CHECK(c.get_int("batch_size") == 32);
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(Config::from_file(test_schema(), "/tmp/urpe_no_such_config.cfg"),
                       doctest::Contains("/tmp/urpe_no_such_config.cfg: cannot open"), Error);
}

TEST_CASE("config: every parse error is one line with file, line and what was expected") {
  CHECK(error_of("steps = 10\nlr_rate = 0.1\n") == "run.cfg:2: unknown key 'lr_rate' (did you mean 'lr'?)");
  CHECK(error_of("step = 10") == "run.cfg:1: unknown key 'step' (did you mean 'steps'?)");
  CHECK(error_of("batchsize = 10") == "run.cfg:1: unknown key 'batchsize' (did you mean 'batch_size'?)");
  CHECK(error_of("Seed = 3") == "run.cfg:1: unknown key 'Seed' (did you mean 'seed'?)");
  CHECK(error_of("zzzzzzzz = 3") ==
        "run.cfg:1: unknown key 'zzzzzzzz' (see 'urpe train --help' for the keys)");
  CHECK(error_of("\n\nsteps = abc") == "run.cfg:3: key 'steps' expects an integer, got 'abc'");
  CHECK(error_of("steps = 1.5") == "run.cfg:1: key 'steps' expects an integer, got '1.5'");
  CHECK(error_of("steps =") == "run.cfg:1: key 'steps' expects an integer, got ''");
  CHECK(error_of("steps = 99999999999999999999") ==
        "run.cfg:1: key 'steps' expects an integer, got '99999999999999999999' (out of range)");
  CHECK(error_of("lr = fast") == "run.cfg:1: key 'lr' expects a number, got 'fast'");
  CHECK(error_of("lr = 1e-3x") == "run.cfg:1: key 'lr' expects a number, got '1e-3x'");
  CHECK(error_of("lr = inf") == "run.cfg:1: key 'lr' expects a finite number, got 'inf'");
  CHECK(error_of("causal = maybe") == "run.cfg:1: key 'causal' expects true or false, got 'maybe'");
  CHECK(error_of("model = xl") == "run.cfg:1: key 'model' expects one of urpe, rpe, ape, none; got 'xl'");
  CHECK(error_of("model = URPE") == "run.cfg:1: key 'model' expects one of urpe, rpe, ape, none; got 'URPE'");
  CHECK(error_of("lr = 0.1\n# x\nlr = 0.2") == "run.cfg:3: duplicate key 'lr' (first set on line 1)");
  CHECK(error_of("steps 100") == "run.cfg:1: expected 'key = value', got 'steps 100'");
  CHECK(error_of("steps # = 100") == "run.cfg:1: expected 'key = value', got 'steps # = 100'");
  CHECK(error_of("= 100") ==
        "run.cfg:1: expected 'key = value' with a key of letters, digits and _ before '=', got '= 100'");
  CHECK(error_of("my key = 1") ==
        "run.cfg:1: expected 'key = value' with a key of letters, digits and _ before '=', got 'my key = 1'");
  CHECK(error_of("note = \"open") == "run.cfg:1: unterminated quoted value");
  CHECK(error_of("note = \"a\" b") == "run.cfg:1: unexpected text 'b' after the quoted value");
  CHECK(error_of("# only comments\n\n   \n") == "");
}

TEST_CASE("config: --set overrides apply after the file with the same checks") {
  Config c(test_schema());
  c.apply_text("steps = 100\nlr = 0.01\n", "run.cfg");
  c.apply_override("steps=250");
  c.apply_override("model = ape");
  c.apply_override("note=hello world");
  CHECK(c.get_int("steps") == 250);
  CHECK(c.get_string("model") == "ape");
  CHECK(c.get_float("lr") == 0.01);
  CHECK(c.get_string("note") == "hello world");

  CHECK(override_error("lr_rate=3") == "--set lr_rate=3: unknown key 'lr_rate' (did you mean 'lr'?)");
  CHECK(override_error("steps=abc", "steps = 5") == "--set steps=abc: key 'steps' expects an integer, got 'abc'");
  CHECK(override_error("model=gpt") == "--set model=gpt: key 'model' expects one of urpe, rpe, ape, none; got 'gpt'");
  CHECK(override_error("steps") == "--set steps: expected key=value");
  CHECK(override_error("=3") == "--set =3: expected key=value with a key before '='");
  CHECK(override_error("causal=perhaps") == "--set causal=perhaps: key 'causal' expects true or false, got 'perhaps'");

  Config twice(test_schema());
  twice.apply_override("lr=1");
  CHECK_THROWS_WITH_AS(twice.apply_override("lr=2"),
                       "--set lr=2: duplicate key 'lr' (already set by --set lr=1)", Error);
}

TEST_CASE("config: to_text round-trips every value") {
  Config c(test_schema());
  c.apply_text("model = none\nsteps = 12\nlr = 0.1\ndropout = 3.0000000000000001e-05\ncausal = off\n"
               "task = sort\n", "run.cfg");
  c.apply_override("note= tricky # \"value\" \\ with spaces ");
  // The override's value is cut at '#', as in a file; quote it to keep one.
  CHECK(c.get_string("note") == "tricky");
  Config d(test_schema());
  d.apply_override("note=\" tricky # \\\"value\\\" \\\\ \"");
  CHECK(d.get_string("note") == " tricky # \"value\" \\ ");

  for (const Config* original : {&c, &d}) {
    for (bool with_help : {true, false}) {
      const std::string text = original->to_text(with_help);
      Config back(test_schema());
      back.apply_text(text, "config.txt");
      const ConfigSchema schema = test_schema();
      for (const ConfigKey& k : schema.keys()) {
        INFO("key " << k.name << " in\n" << text);
        CHECK(back.get_string(k.name) == original->get_string(k.name));
      }
      CHECK(back.to_text(with_help) == text);
    }
  }
  const std::string text = c.to_text();
  CHECK(text.find("model      = none") == 0);  // aligned on the longest key
  CHECK(text.find("dropout    = 3e-05") != std::string::npos);
  CHECK(text.find("causal     = false") != std::string::npos);
  CHECK(text.find("# peak learning rate") != std::string::npos);
  CHECK(c.to_text(false).find('#') == std::string::npos);
  CHECK(test_schema().keys().size() == 10);
  // Defaults written and read back give the defaults.
  Config defaults(test_schema());
  CHECK(defaults.to_text().find("note       = \"\"") != std::string::npos);
}

TEST_CASE("config: schema help lists every key with type, default and meaning") {
  const std::string help = test_schema().help_text();
  CHECK(help.find("key         type    default  meaning") != std::string::npos);
  CHECK(help.find("  model       choice  urpe     positional encoding (one of: urpe, rpe, ape, none)\n") !=
        std::string::npos);
  CHECK(help.find("  lr          float   0.0003   peak learning rate\n") != std::string::npos);
  CHECK(help.find("  causal      bool    true     causal attention\n") != std::string::npos);
  CHECK(help.find("  note        string  \"\"       free text") != std::string::npos);
  const ConfigSchema schema = test_schema();
  for (const ConfigKey& k : schema.keys()) CHECK(help.find("  " + k.name + " ") != std::string::npos);

  ConfigSchema bad;
  bad.add_int("a", 1, "x");
  CHECK_THROWS_WITH_AS(bad.add_int("a", 2, "y"), "config schema: key 'a' declared twice", Error);
  CHECK_THROWS_WITH_AS(bad.add_choice("m", {"x", "y"}, "z", "h"),
                       "config schema: bad default: key 'm' expects one of x, y; got 'z'", Error);
  CHECK_THROWS_WITH_AS(bad.add_choice("m", {}, "", "h"), "config schema: key 'm' has no choices", Error);
  CHECK_THROWS_WITH_AS(bad.add_bool("bad name", true, "h"), "config schema: invalid key name 'bad name'", Error);
}

TEST_CASE("config: edit distance") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("lr", "") == 2);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("steps", "step") == 1);
  CHECK(edit_distance("abc", "abc") == 0);
}

// ---- ranges of the run keys and the memory estimate (train/config/config_limits.h, memory_estimate.h) ----

namespace {

// The message of resolve_config(preset, "", sets), or "" when it resolves.
std::string resolve_error(const std::string& preset, const std::vector<std::string>& sets) {
  try {
    resolve_config(preset, "", sets);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string estimate_error(const Config& config, const MemoryEstimate& estimate, double bound_bytes) {
  try {
    check_memory_estimate(config, estimate, {bound_bytes, "the test bound"});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A preset with --set overrides, without resolve_config's check against this machine's memory
// (the tests below check against bounds of their own).
Config unchecked(const std::string& preset, const std::vector<std::string>& sets) {
  Config config(schema_for_model(model_named_in(find_preset(preset).text)));
  config.apply_text(find_preset(preset).text, "preset " + preset);
  for (const std::string& s : sets) config.apply_override(s);
  return config;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TEST_CASE("config: numeric run keys are range-checked where they are set, naming the key and the range") {
  // Token ids are int32: a vocabulary of 2^31 or more is refused at once (it became a 2^31 × 64
  // table and an out-of-memory error, and 2^58 wrapped the table's size to 0 bytes).
  std::string m = resolve_error("", {"vocab=2147483648"});
  CHECK(m == "--set vocab=2147483648: key 'vocab' expects an integer from 2 to 2147483647 (token ids are int32), "
             "got '2147483648'");
  CHECK(resolve_error("", {"vocab=288230376151711744"}).find("key 'vocab'") != std::string::npos);
  CHECK(resolve_error("", {"batch=0"}) == "--set batch=0: key 'batch' expects an integer from 1 to 2147483647, got '0'");
  CHECK(resolve_error("", {"batch=100000000000"}).find("key 'batch' expects an integer from 1 to 2147483647") !=
        std::string::npos);
  CHECK(resolve_error("", {"batch=1e11"}).find("key 'batch' expects an integer") != std::string::npos);
  CHECK(resolve_error("", {"d_model=1099511627776"}).find("key 'd_model'") != std::string::npos);
  CHECK(resolve_error("", {"seed=-1"}).find("key 'seed' expects an integer from 0 to 4294967295") != std::string::npos);
  CHECK(resolve_error("", {"warmup=-5"}).find("key 'warmup'") != std::string::npos);
  CHECK(resolve_error("", {"init_std=-1"}) == "--set init_std=-1: key 'init_std' expects a finite number > 0, got '-1'");
  CHECK(resolve_error("", {"dropout=1"}) == "--set dropout=1: key 'dropout' expects a number in [0, 1), got '1'");
  CHECK(resolve_error("", {"lr=-1"}).find("key 'lr' expects a finite number ≥ 0") != std::string::npos);
  for (const char* bad : {"lr=nan", "lr=inf", "lr=-inf", "lr=1e999", "clip=NaN"}) {
    INFO(bad);
    CHECK(resolve_error("", {bad}).find("expects a finite number") != std::string::npos);
  }
  CHECK(resolve_error("", {"weight_decay=1e-999"}).empty());  // underflow to 0 is a fine 0
  CHECK(resolve_error("txl-tiny", {"mem_len=-1"}).find("key 'mem_len'") != std::string::npos);
  CHECK(resolve_error("txl-tiny", {"eval_mem_len=-2"}).find("key 'eval_mem_len'") != std::string::npos);
  CHECK(resolve_error("txl-tiny", {"eval_mem_len=-1"}).empty());
  CHECK(resolve_error("graphormer-tiny", {"multi_hop_max_dist=41"})
            .find("key 'multi_hop_max_dist' expects an integer from 1 to 40") != std::string::npos);
  CHECK(resolve_error("graphormer-tiny", {"max_nodes=4294967297"}).find("key 'max_nodes'") != std::string::npos);
  // A config file gets the same check, with its line.
  const std::string path = write_temp("batch = -3\n");
  try {
    resolve_config("", path, {});
    FAIL("a negative batch in a file resolved");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == path + ":1: key 'batch' expects an integer from 1 to 2147483647, got '-3'");
  }
  std::remove(path.c_str());

  // The schema API: limits on a default outside them, or on a non-numeric key, are programming errors.
  ConfigSchema s;
  s.add_int("n", 0, "x").add_string("name", "a", "y").add_float("p", 0.5, "z");
  CHECK_THROWS_AS(s.limit_int("n", 1, 10), Error);
  CHECK_THROWS_AS(s.limit_int("name", 1, 10), Error);
  CHECK_THROWS_AS(s.limit_float("p", 0.6, false, 1, false), Error);
  s.limit_float("p", 0, false, 1, true);
  CHECK(describe_limits(*s.find("p")) == "a number in [0, 1)");
}

TEST_CASE("config: a size no machine holds is refused from the estimate, naming the key responsible") {
  // Before the estimate these allocated until the host ran out ("out of host memory allocating ...",
  // "internal error: std::bad_alloc"), or ran for minutes first.
  std::string m = resolve_error("", {"seq_len=100000000"});
  CHECK(m.rfind("config: seq_len = 100000000 needs attention scores of ", 0) == 0);
  CHECK(m.find("(evaluation batch 64 × heads 4 × seq_len 100000000² × 4 bytes); more than ") != std::string::npos);
  m = resolve_error("", {"batch=2147483647"});
  CHECK(m.rfind("config: batch = 2147483647 needs ", 0) == 0);
  m = resolve_error("", {"d_model=1073741824"});
  CHECK(m.rfind("config: d_model = 1073741824 needs ", 0) == 0);
  CHECK(m.find("parameters with their gradients and Adam moments") != std::string::npos);
  CHECK(resolve_error("", {"vocab=2147483647"}).rfind("config: vocab = 2147483647 needs ", 0) == 0);
  CHECK(resolve_error("txl-tiny", {"tgt_len=10000000"}).rfind("config: tgt_len = 10000000 needs attention scores", 0) == 0);
  CHECK(resolve_error("txl-tiny", {"mem_len=2000000000"}).rfind("config: mem_len = 2000000000 needs ", 0) == 0);
  CHECK(resolve_error("txl-tiny", {"eval_batch=2000000000"}).rfind("config: eval_batch = 2000000000 needs ", 0) == 0);
  CHECK(resolve_error("graphormer-tiny", {"batch=2000000000"})
            .rfind("config: batch = 2000000000 needs multi-hop edge features", 0) == 0);
  // max_nodes only bounds the molecules the data may hold: a large one ("no limit") is not refused.
  CHECK(resolve_error("graphormer-tiny", {"max_nodes=2000000"}).empty());
  CHECK(resolve_error("graphormer-tiny", {"heads=2000000", "d_model=2000000"}).rfind("config: heads = 2000000 needs ", 0) == 0);

  // Against a fixed bound: exact sizes and the wording.
  const Config pi = unchecked("pi-tiny", {"seq_len=16384"});
  m = estimate_error(pi, estimate_encoder_memory(pi), 1.0 * kGiB);
  CHECK(m == "config: seq_len = 16384 needs attention scores of 256.0 GiB (evaluation batch 64 × heads 4 × "
             "seq_len 16384² × 4 bytes); more than the test bound (1.0 GiB)");
  CHECK(estimate_error(pi, estimate_encoder_memory(pi), 512.0 * kGiB).empty());
  // Fused attention holds per-row statistics, not the n² scores, and position identification's
  // head one row chunk of logits at a time: the same length fits 2 GiB (its largest tensor is now the
  // feed-forward hidden layer, 64 × 16384 × 256 floats = 1 GiB).
  const Config fused = unchecked("pi-tiny", {"seq_len=16384", "attention=fused"});
  const MemoryEstimate fused_estimate = estimate_encoder_memory(fused);
  CHECK(fused_estimate.activations.at(0).what == "attention row statistics (fused)");
  CHECK(fused_estimate.activations.at(0).count() == 64.0 * 4 * 16384);
  CHECK(fused_estimate.activations.at(2).what == "logits of one row chunk (the head fused with its loss)");
  CHECK(fused_estimate.activations.at(2).count() == double(kLinearCrossEntropyChunkFloats));  // 256 rows of 16384
  CHECK(estimate_error(fused, fused_estimate, 2.0 * kGiB).empty());
  CHECK(!estimate_error(pi, estimate_encoder_memory(pi), 2.0 * kGiB).empty());
  // A bound that cannot be told (a GPU of a CPU-only build) still refuses past 2^62 bytes.
  CHECK(estimate_error(pi, estimate_encoder_memory(pi), 0).empty());
  const Config huge = unchecked("pi-tiny", {"seq_len=2000000000"});
  CHECK(estimate_error(huge, estimate_encoder_memory(huge), 0).find("more than any machine's memory") != std::string::npos);

  // Transformer-XL: once the corpus is read, its vocabulary joins the estimate.
  const Config txl = unchecked("txl-tiny", {"cutoffs="});
  CHECK(estimate_txl_memory(txl, 0).parameter_count() < estimate_txl_memory(txl, 100000).parameter_count());
  m = estimate_error(txl, estimate_txl_memory(txl, 2000000000), 1.0 * kGiB);
  INFO(m);
  CHECK(m.rfind("config: corpus vocabulary 2000000000 needs 3.7 TiB for about 2.56e+11 parameters", 0) == 0);
  CHECK(m.find("the token embedding, is corpus vocabulary 2000000000 × d_model 128") != std::string::npos);
  const Config longer = unchecked("txl-tiny", {"cutoffs=", "tgt_len=64"});  // now the logits are larger
  m = estimate_error(longer, estimate_txl_memory(longer, 200000000), 1.0 * kGiB);
  CHECK(m.rfind("config: corpus vocabulary 200000000 needs logits of 762.9 GiB (batch 16 × tgt_len 64 × "
                "corpus vocabulary 200000000 × 4 bytes)", 0) == 0);
  CHECK_NOTHROW(txl_config_from(txl, 12000));
}

TEST_CASE("config: every preset validates, the paper-scale ones within a 8 GiB bound") {
  // The paper presets are meant for a GPU; what is refused is only one tensor, or the parameters'
  // training state, beyond the bound, and none of them comes near 8 GiB (largest below).
  for (const Preset& preset : presets()) {
    INFO(preset.name);
    const Config config = resolve_config(preset.name, "", {});
    MemoryEstimate e = estimate_memory(config);
    if (config.get_string("model") == "txl") e = estimate_txl_memory(config, 267735);  // WikiText-103's vocabulary
    CHECK(estimate_error(config, e, 8.0 * kGiB).empty());
    CHECK(e.largest_activation()->bytes() < 1.0 * kGiB);  // txl-base's head logits: 0.67 GiB
    CHECK(e.training_state_bytes() < 3.0 * kGiB);         // txl-base: 2.2 GiB
  }
  // The estimate follows the model's shapes: pi-paper's attention scores are B·H·n² floats.
  const Config paper = resolve_config("pi-paper", "", {});
  const MemoryEstimate e = estimate_encoder_memory(paper);
  CHECK(e.activations.front().what == "attention scores");
  CHECK(e.activations.front().bytes() == 128.0 * 12 * 128 * 128 * 4);
}

TEST_CASE("config: the estimate counts each encoding's own tables as the model builds them") {
  // The positional parameters: estimate(pe) − estimate(none) is exactly model(pe) − model(none) for
  // every encoder `pe`, also with T5 buckets, another Shaw clip and more layers (Shaw's a^K, a^V are
  // per layer), so no encoding's tables are left out of the training state.
  auto model_count = [](const Config& c) {
    return static_cast<double>(TransformerEncoder(encoder_config_from(c), 1).parameters().count());
  };
  const std::vector<std::vector<std::string>> variants = {
      {}, {"rpe_kind=bucketed", "urpe_kind=bucketed"}, {"shaw_clip=3"}, {"layers=3", "shaw_clip=40"}};
  for (const std::vector<std::string>& extra : variants)
    for (const std::string& pe : positional_spec_names()) {
      std::vector<std::string> sets = extra, none_sets = extra;
      sets.push_back("pe=" + pe);
      none_sets.push_back("pe=none");
      const Config with = resolve_config("pi-tiny", "", sets), without = resolve_config("pi-tiny", "", none_sets);
      INFO(pe << " " << (extra.empty() ? "" : extra.front()));
      CHECK(estimate_encoder_memory(with).parameter_count() - estimate_encoder_memory(without).parameter_count() ==
            model_count(with) - model_count(without));
    }
  // Shaw's share: layers × 2 tables × (2·shaw_clip + 1) rows × head dim (64 / 4).
  auto shaw_params = [](const std::vector<std::string>& sets) {
    std::vector<std::string> all = sets;
    all.push_back("pe=shaw");
    return estimate_encoder_memory(resolve_config("pi-tiny", "", all)).parameter_count();
  };
  CHECK(shaw_params({"shaw_clip=8"}) - shaw_params({"shaw_clip=4"}) == 2 * 2 * (17 - 9) * 16);
  CHECK(shaw_params({"layers=3"}) - shaw_params({"layers=2"}) - (shaw_params({"layers=3", "shaw_clip=1"}) -
                                                                  shaw_params({"layers=2", "shaw_clip=1"})) ==
        2 * (33 - 3) * 16);
  // A clip no machine holds the tables of is refused, naming shaw_clip.
  const std::string m = resolve_error("", {"pe=shaw", "shaw_clip=1048576", "layers=100000"});
  INFO(m);
  CHECK(m.rfind("config: shaw_clip = 1048576 needs ", 0) == 0);
  CHECK(m.find("the largest part, Shaw's relative embeddings a^K, a^V, is layers 100000 × 2 × (2·shaw_clip + 1) "
               "distances 2097153 × head dim (d_model / heads) 16") != std::string::npos);

  // Fixed tables (no gradient, no Adam state): ALiBi's bias table and map, the rotary and sinusoid
  // tables; none for pe = none.
  auto fixed = [](const std::string& pe, const std::vector<std::string>& sets = {}) {
    std::vector<std::string> all = sets;
    all.push_back("pe=" + pe);
    return estimate_encoder_memory(resolve_config("pi-tiny", "", all)).fixed_table_count();
  };
  CHECK(fixed("none") == 0);
  CHECK(fixed("alibi") == 4 * 63 + 32 * 32);
  CHECK(fixed("alibi", {"attention=fused"}) == 4 * 63 + 63);  // the fused path keeps relative maps
  CHECK(fixed("rope") == 32 * 16);
  CHECK(fixed("sinusoidal") == 32 * 64);
  CHECK(fixed("urpe") == 2 * 32 * 32);  // the B and C maps
  CHECK(fixed("shaw") == 32 * 32);
  // Shaw's gathered (n, n, dh) embeddings are an activation that grows with n² (not with the clip).
  const MemoryEstimate shaw = estimate_encoder_memory(resolve_config("pi-tiny", "", {"pe=shaw", "seq_len=512"}));
  bool gathered = false;
  for (const SizeTerm& t : shaw.activations) gathered |= t.what.rfind("Shaw's gathered", 0) == 0 && t.count() == 512.0 * 512 * 16;
  CHECK(gathered);

  // The paper's Figure 3 lengths (`repro synthetic --lengths 256,512`) pass for every encoding at
  // tiny scale; the largest tensor is still the attention scores (evaluation batch 64 × 4 heads × n²).
  for (const std::string& pe : positional_spec_names())
    for (const int n : {256, 512}) {
      INFO(pe << " n = " << n);
      const Config c = resolve_config("pi-tiny", "", {"pe=" + pe, "seq_len=" + std::to_string(n)});
      const MemoryEstimate e = estimate_encoder_memory(c);
      CHECK(estimate_error(c, e, 8.0 * kGiB).empty());
      CHECK(e.largest_tensor()->what == "attention scores");
      CHECK(e.largest_tensor()->bytes() == 64.0 * 4 * n * n * 4);
    }

  // Transformer-XL: ALiBi has no r_net and no v; estimate and model differ from rpe by the same count.
  auto txl_count = [](const std::string& pe) {
    const Config c = unchecked("txl-tiny", {"pe=" + pe, "cutoffs="});
    const double model = static_cast<double>(TransformerXL(txl_config_from(c, 500), 1).parameters().count());
    return std::make_pair(estimate_txl_memory(c, 500).parameter_count(), model);
  };
  const auto rpe = txl_count("rpe");
  for (const std::string pe : {"urpe", "alibi", "alibi+urpe"}) {
    INFO(pe);
    const auto other = txl_count(pe);
    CHECK(other.first - rpe.first == other.second - rpe.second);
  }
  CHECK(txl_count("alibi").second < rpe.second);
}

TEST_CASE("config: Graphormer's estimate counts its own tables as the model builds them") {
  // Parameters: the estimate is the model's count exactly, so estimate(a) − estimate(b) is
  // model(a) − model(b) for any two settings: URPE's C table (max_spd), the spatial, edge and
  // degree tables, the multi-hop weights (heads²), per-layer LayerNorms and biases.
  auto counts = [](const std::vector<std::string>& sets) {
    const Config c = unchecked("graphormer-tiny", sets);
    const double model = static_cast<double>(Graphormer(graphormer_config_from(c), 1).parameters().count());
    return std::make_pair(estimate_graphormer_memory(c).parameter_count(), model);
  };
  const std::vector<std::vector<std::string>> variants = {
      {}, {"pe=urpe"}, {"pe=urpe", "max_spd=10"}, {"layers=5"}, {"heads=8"}, {"d_model=48", "d_ffn=20", "heads=3"},
      {"pe=urpe", "multi_hop_max_dist=12", "layers=1"}};
  const auto base = counts({});
  for (const std::vector<std::string>& sets : variants) {
    INFO((sets.empty() ? std::string("preset") : sets.back()));
    const auto other = counts(sets);
    CHECK(other.first == other.second);
    CHECK(other.first - base.first == other.second - base.second);
  }
  CHECK(counts({"pe=urpe"}).first - base.first == 4 * (38 + 4));  // heads × (max_spd + 4) buckets
  CHECK(counts({"pe=urpe", "max_spd=10"}).first - counts({"pe=urpe"}).first == 4 * (10 - 38));

  // Per-batch tables, against the model's own for a batch of molecules of max_nodes atoms (the size
  // the estimate assumes): the dense bias, the multi-hop edge input, and with URPE the C map.
  data::MoleculeDataset d;
  d.vocabulary = data::AtomVocabulary::zinc();
  for (int k = 0; k < 3; ++k) {
    d.smiles.push_back("CCCCCCCC");
    d.graphs.push_back(data::molecule_graph(data::parse_smiles(d.smiles.back()), d.vocabulary));
    d.targets.push_back(static_cast<float>(k));
  }
  auto term = [](const MemoryEstimate& e, const std::string& what) {
    for (const SizeTerm& t : e.activations)
      if (t.what == what) return t.count();
    FAIL("no activation term '" << what << "'");
    return 0.0;
  };
  auto activation_total = [](const MemoryEstimate& e) {
    double n = 0;
    for (const SizeTerm& t : e.activations) n += t.count();
    return n;
  };
  const std::vector<std::string> batch_sets = {"max_nodes=8", "batch=3", "eval_batch=2", "multi_hop_max_dist=5"};
  std::vector<std::string> urpe_sets = batch_sets;
  urpe_sets.push_back("pe=urpe");
  const Config plain = unchecked("graphormer-tiny", batch_sets), with_urpe = unchecked("graphormer-tiny", urpe_sets);
  const data::GraphBatch batch = data::collate_graphs(d, {0, 1, 2}, collate_options_from(plain));
  const Graphormer model(graphormer_config_from(with_urpe), 1);
  const MemoryEstimate e = estimate_graphormer_memory(with_urpe), e_plain = estimate_graphormer_memory(plain);
  CHECK(term(e, "the attention bias (spatial, edge and graph-token terms)") == model.attention_bias(batch).numel());
  CHECK(term(e, "attention scores") == model.attention_bias(batch).numel());
  CHECK(term(e, "the batch's multi-hop edge input") == batch.edge_input.numel());
  CHECK(term(e, "the URPE C map") == model.urpe_c_map(batch).numel());
  CHECK(activation_total(e) - activation_total(e_plain) == model.urpe_c_map(batch).numel());
}
