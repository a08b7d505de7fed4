// Bad command-line input, as a table. Every row is one `urpe` invocation that must fail the way
// docs/cli.md#bad-input-one-line-nothing-written promises: exactly one line on stderr, starting with
// "urpe: error:", a non-zero exit, no signal (no crash, no abort), and no file that was there
// before changed (each watched directory is hashed before and after). The rows for the numeric
// config keys are generated from the schema of each family (schema_for_model), so a key added
// later is probed too, and the suite fails until kKeyRules says what its range is.
//
// Every bad input must be refused before training starts, so each row costs one process start
// (~20 ms); rows that are refused only once other branches are merged say so by name (their test
// cases are named after the branch, and each row's comment says which).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "doctest/doctest.h"
#include "file_bytes.h"
#include "base/io/config.h"
#include "base/io/printable.h"
#include "train/config/run_config.h"

namespace {

namespace fs = std::filesystem;

// ---- running urpe ----

struct Outcome {
  bool exited = false;  // false: killed by a signal, or by the time limit
  int code = -1;        // exit status when exited
  int signal = 0;       // the signal that ended it, when it did not exit
  bool timed_out = false;
  std::string err;      // everything on stderr
};

using urpe::test::read_file;
using urpe::test::write_file;

// `urpe args...` without a shell (so arguments may hold any byte), stdout discarded, stderr kept,
// killed after `limit_s` seconds.
Outcome run_urpe(const std::vector<std::string>& args, double limit_s = 20) {
  static int counter = 0;
  const std::string err_path = "/tmp/urpe_test_bad_inputs_" + std::to_string(::getpid()) + "_stderr_" +
                               std::to_string(counter++);
  std::vector<std::string> argv_text = {URPE_BINARY};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(err, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  Outcome o;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      o.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  o.exited = !o.timed_out && WIFEXITED(status);
  o.code = o.exited ? WEXITSTATUS(status) : -1;
  o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  o.err = read_file(err_path);
  std::remove(err_path.c_str());
  return o;
}

// ---- what a directory holds ----

// Relative path → "dir" or the FNV-1a hash and size of the file's bytes; {"": "absent"} when the
// directory does not exist.
using Snapshot = std::map<std::string, std::string>;

Snapshot snapshot(const std::string& dir) {
  if (!fs::exists(dir)) return {{"", "absent"}};
  Snapshot s;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(entry.path(), dir).string();
    if (entry.is_directory()) {
      s[name] = "dir";
      continue;
    }
    const std::string bytes = read_file(entry.path().string());
    uint64_t h = 14695981039346656037ULL;  // the FNV-1a 64 offset basis
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
    s[name] = std::to_string(h) + "/" + std::to_string(bytes.size());
  }
  return s;
}

std::string describe(const Snapshot& s) {
  std::string out;
  for (const auto& [name, what] : s) out += "  " + name + " " + what + "\n";
  return out;
}

// ---- the files the rows use ----

const char* kEncoderTiny[] = {"seq_len=8", "vocab=6",  "layers=1", "d_model=16",   "heads=2",
                              "d_ff=32",   "batch=4",  "steps=6",  "warmup=2",     "eval_every=3",
                              "valid_size=16"};

std::string words(int lines) {
  std::string text;
  for (int k = 0; k < lines; ++k) text += k % 3 ? "the cat sat on the mat .\n" : "a dog ran to the tree .\n";
  return text;
}

// Built once: a real run (`victim`, with a file of the user's beside it, and a pristine copy to
// restore it from when a row damages it), a tiny corpus, and files of the wrong kind.
struct Fixture {
  std::string root, victim, pristine, corpus, png, empty_dir, repro_like;
  Fixture() {
    root = "/tmp/urpe_test_bad_inputs_" + std::to_string(::getpid());
    fs::remove_all(root);
    fs::create_directories(root);
    victim = root + "/victim";
    std::vector<std::string> args = {"train", "--out", victim, "--quiet"};
    for (const char* s : kEncoderTiny) args.insert(args.end(), {"--set", s});
    const Outcome made = run_urpe(args, 120);
    INFO(made.err);
    REQUIRE(made.code == 0);
    write_file(victim + "/notes.txt", "the user's own notes\n");
    pristine = root + "/victim.pristine";
    fs::copy(victim, pristine, fs::copy_options::recursive);
    corpus = root + "/corpus";
    fs::create_directories(corpus);
    for (const char* split : {"train", "valid", "test"}) write_file(corpus + "/" + split + ".txt", words(60));
    png = std::string(URPE_SOURCE_DIR) + "/docs/images/demo_curves_pi.png";
    REQUIRE(fs::exists(png));
    empty_dir = root + "/empty_dir";
    fs::create_directories(empty_dir);
    repro_like = root + "/repro_like";  // what `urpe repro` leaves: results only, no checkpoint
    fs::create_directories(repro_like);
    write_file(repro_like + "/results.json", "[]\n");
    write_file(repro_like + "/results.md", "# results\n");
  }
  ~Fixture() { fs::remove_all(root); }
  // A copy of the run to damage, named `name`.
  std::string run_copy(const std::string& name) const {
    const std::string dir = root + "/" + name;
    fs::remove_all(dir);
    fs::copy(pristine, dir, fs::copy_options::recursive);
    return dir;
  }
  std::string file(const std::string& name, const std::string& bytes) const {
    write_file(root + "/" + name, bytes);
    return root + "/" + name;
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

// ---- one row ----

struct Case {
  Case(std::string what_, std::vector<std::string> args_, std::string expect_, std::vector<std::string> watched_,
       std::string key_ = "")
      : what(std::move(what_)), args(std::move(args_)), expect(std::move(expect_)), watched(std::move(watched_)),
        key(std::move(key_)) {}
  std::string what;                  // what is wrong, shown when the row fails
  std::vector<std::string> args;     // after `urpe`
  std::string expect;                // a piece of the error line ("" = any message)
  std::vector<std::string> watched;  // directories whose files must not change
  std::string key;                   // a config key the message must name ("" = none)
};

// The error names the key the user set: "config: lr must ...", "key 'lr' expects ..." (and not
// only a key derived from it: "config: eval_tgt_len" does not name tgt_len).
bool names_key(const std::string& line, const std::string& key) {
  return line.find("config: " + key + " ") != std::string::npos || line.find("key '" + key + "'") != std::string::npos;
}

std::string joined(const std::vector<std::string>& args) {
  std::string out = "urpe";
  for (const std::string& a : args) out += " " + urpe::printable(a);
  return out;
}

// Checks the promise for one row; returns whether it held (failures are reported by doctest).
bool check_case(const Case& c, double limit_s = 20) {
  std::vector<Snapshot> before;
  for (const std::string& dir : c.watched) before.push_back(snapshot(dir));
  const Outcome o = run_urpe(c.args, limit_s);
  INFO(c.what);
  INFO(joined(c.args));
  INFO("stderr: " << urpe::printable(o.err));
  bool ok = true;
  auto check = [&](bool held, const char* promise) {
    if (!held) {
      ok = false;
      FAIL_CHECK(std::string(promise));
    }
  };
  check(!o.timed_out, "finishes within the time limit");
  check(o.signal == 0, "ends without a signal (no crash or abort)");
  check(o.exited && o.code != 0, "exits with a non-zero status");
  const size_t newline = o.err.find('\n');
  check(newline != std::string::npos && newline + 1 == o.err.size(), "prints exactly one line on stderr");
  check(o.err.rfind("urpe: error: ", 0) == 0, "the line starts with 'urpe: error: '");
  bool raw_control = false;
  for (size_t k = 0; k + 1 < o.err.size(); ++k) {
    const unsigned char byte = static_cast<unsigned char>(o.err[k]);
    raw_control = raw_control || byte < 0x20 || byte == 0x7f;
  }
  check(!raw_control, "echoes no raw control bytes");
  if (!c.expect.empty()) check(o.err.find(c.expect) != std::string::npos, "the message says what was expected");
  if (!c.key.empty()) check(names_key(o.err, c.key), "the message names the key");
  for (size_t k = 0; k < c.watched.size(); ++k) {
    const Snapshot after = snapshot(c.watched[k]);
    INFO("watched " << c.watched[k] << "\nbefore:\n" << describe(before[k]) << "after:\n" << describe(after));
    check(after == before[k], "leaves the files that were there unchanged");
  }
  const Fixture& f = fixture();
  if (snapshot(f.victim) != snapshot(f.pristine)) {  // keep the next rows independent of this one
    fs::remove_all(f.victim);
    fs::copy(f.pristine, f.victim, fs::copy_options::recursive);
  }
  return ok;
}

void check_table(const std::vector<Case>& table, double limit_s = 20) {
  std::string failed;
  int count = 0;
  for (const Case& c : table)
    if (!check_case(c, limit_s)) {
      failed += "\n  " + c.what;
      ++count;
    }
  MESSAGE(table.size() << " rows, " << count << " failed" << failed);
}

// `urpe train --out VICTIM --overwrite --quiet` plus `sets`: with --overwrite, a refused input
// must still leave the run already in the directory as it was.
std::vector<std::string> train_over_victim(const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"train", "--out", fixture().victim, "--overwrite", "--quiet"};
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  return args;
}

// ---- the numeric config keys ----

// What `huge` (2^62 for an int, 1e39 for a float) does to a key.
enum class Huge {
  accepted,  // a valid value (the row is not run: it would train)
  refused,   // refused, naming the key
  sizes,     // refused by the size checks (key ranges, checked products, the memory estimate)
};

struct KeyRule {
  bool negative_refused;  // -1
  bool zero_refused;      // 0
  Huge huge;
};

// Every numeric key of every family; a key missing here fails the suite (see the test case).
// Keys common to all families are listed under "*", and a family's entry overrides them.
const std::map<std::string, std::map<std::string, KeyRule>> kKeyRules = {
    {"*",
     {{"seed", {false, false, Huge::accepted}},
      {"steps", {true, true, Huge::accepted}},
      {"batch", {true, true, Huge::refused}},  // larger than the data (txl, graphormer)
      {"accum_steps", {true, true, Huge::refused}},  // an int32, and must divide batch
      {"lr", {true, true, Huge::refused}},     // 1e39 is no float32
      {"warmup", {true, false, Huge::refused}},  // more than steps
      {"weight_decay", {true, false, Huge::refused}},
      {"clip", {true, false, Huge::refused}},
      {"eval_every", {true, true, Huge::accepted}}}},
    {"encoder",
     {{"batch", {true, true, Huge::sizes}},  // a vector past max_size before the size checks
      {"seq_len", {true, true, Huge::sizes}},  // refused by the size checks
      {"vocab", {true, true, Huge::sizes}},    // SIGSEGV before the size checks
      {"layers", {true, true, Huge::sizes}},   // builds layers until killed before the size checks
      {"d_model", {true, true, Huge::sizes}},  // refused by the size checks
      {"heads", {true, true, Huge::refused}},  // must divide d_model
      {"d_ff", {true, true, Huge::sizes}},     // SIGSEGV before the size checks
      {"dropout", {true, false, Huge::refused}},
      {"attention_dropout", {true, false, Huge::refused}},
      {"init_std", {true, true, Huge::refused}},
      {"shaw_clip", {true, true, Huge::refused}},      // 2·shaw_clip + 1 table rows
      {"mask_prob", {true, true, Huge::refused}},      // a probability in (0, 1), whatever the task
      {"valid_size", {true, true, Huge::accepted}}}},  // a long evaluation, as asked
    {"txl",
     {{"batch", {true, true, Huge::sizes}},  // refused after reading the corpus; the message's token count overflows
      {"layers", {true, true, Huge::sizes}},   // builds layers until killed before the size checks
      {"d_model", {true, true, Huge::sizes}},  // SIGSEGV before the size checks
      {"heads", {true, true, Huge::sizes}},    // SIGFPE before the size checks
      {"d_head", {true, true, Huge::sizes}},   // refused by the size checks
      {"d_inner", {true, true, Huge::sizes}},  // SIGSEGV before the size checks
      {"dropout", {true, false, Huge::refused}},
      {"dropatt", {true, false, Huge::refused}},
      {"tgt_len", {true, true, Huge::sizes}},  // malloc abort before the size checks
      {"mem_len", {true, false, Huge::sizes}},  // SIGSEGV before the size checks
      {"clamp_len", {false, false, Huge::accepted}},      // <= 0: no clamp
      {"eval_tgt_len", {true, false, Huge::accepted}},    // 0: tgt_len; longer than the split: one segment
      {"eval_mem_len", {false, false, Huge::accepted}},   // -1: mem_len (-2 has its own row)
      {"eval_clamp_len", {false, false, Huge::accepted}},
      {"eval_batch", {true, true, Huge::sizes}},  // as batch
      {"max_eval_tokens", {true, false, Huge::accepted}},  // more than the split: all of it
      {"init_std", {true, true, Huge::refused}}}},
    {"graphormer",
     {{"layers", {true, true, Huge::sizes}},  // builds layers until killed before the size checks
      {"d_model", {true, true, Huge::sizes}},  // SIGSEGV before the size checks
      {"d_ffn", {true, true, Huge::sizes}},    // SIGSEGV before the size checks
      {"heads", {true, true, Huge::refused}},  // must divide d_model
      {"dropout", {true, false, Huge::refused}},
      {"attention_dropout", {true, false, Huge::refused}},
      {"input_dropout", {true, false, Huge::refused}},
      {"multi_hop_max_dist", {true, true, Huge::refused}},  // at most the edge-distance table (40)
      {"max_spd", {true, true, Huge::sizes}},  // SIGSEGV before the size checks
      {"init_std", {true, true, Huge::refused}},
      {"end_lr", {true, false, Huge::refused}},
      {"split_seed", {false, false, Huge::accepted}},
      {"train_subset", {true, false, Huge::accepted}},  // more than the split: all of it
      {"max_nodes", {true, true, Huge::refused}},       // an int32
      {"eval_batch", {true, true, Huge::accepted}}}},   // one batch of everything
};

const KeyRule* rule_for(const std::string& family, const std::string& key) {
  for (const std::string& scope : {family, std::string("*")}) {
    const auto& rules = kKeyRules.at(scope);
    const auto it = rules.find(key);
    if (it != rules.end()) return &it->second;
  }
  return nullptr;
}

// Tiny, valid settings of each family: a row replaces one of them with its bad value.
std::vector<std::string> tiny_settings(const std::string& family) {
  if (family == "txl")
    return {"model=txl", "corpus=" + fixture().corpus, "layers=1", "d_model=16", "heads=2", "d_head=8",
            "d_inner=16", "tgt_len=8", "mem_len=8", "batch=4", "steps=4", "warmup=1", "eval_every=2",
            "eval_batch=2", "cutoffs="};
  if (family == "graphormer")
    return {"model=graphormer", "pe=urpe", "layers=1", "d_model=8", "d_ffn=8", "heads=2", "steps=4", "warmup=1",
            "eval_every=2", "batch=8", "eval_batch=512", "multi_hop_max_dist=2"};
  return std::vector<std::string>(std::begin(kEncoderTiny), std::end(kEncoderTiny));
}

std::vector<std::string> with_value(const std::string& family, const std::string& key, const std::string& value) {
  std::vector<std::string> sets;
  for (const std::string& s : tiny_settings(family))
    if (s.substr(0, s.find('=')) != key) sets.push_back(s);
  sets.push_back(key + "=" + value);
  return sets;
}

// The rows for every numeric key of `family`: the values refused now, or (sizes_rows) the huge
// values the size checks refuse.
std::vector<Case> numeric_key_rows(const std::string& family, bool sizes_rows) {
  std::vector<Case> rows;
  for (const urpe::ConfigKey& k : urpe::schema_for_model(family).keys()) {
    const bool is_int = k.type == urpe::ConfigType::integer;
    if (!is_int && k.type != urpe::ConfigType::real) continue;
    const KeyRule* rule = rule_for(family, k.name);
    if (!rule) continue;  // reported by the coverage test case
    auto add = [&](const std::string& value, const std::string& why) {
      // Rows the size checks refuse need not name the key: their message may name
      // the product that overflows.
      rows.push_back({family + ": " + k.name + " = " + value + " (" + why + ")",
                      train_over_victim(with_value(family, k.name, value)), "", {fixture().victim},
                      sizes_rows ? "" : k.name});
    };
    const std::string huge = is_int ? "4611686018427387904" : "1e39";
    if (sizes_rows) {
      if (rule->huge == Huge::sizes) add(huge, "huge");
      continue;
    }
    add("nan", "not a number");
    add("abc", "not a number");
    if (rule->negative_refused) add("-1", "negative");
    if (rule->zero_refused) add("0", "zero");
    if (rule->huge == Huge::refused) add(huge, "huge");
  }
  return rows;
}

}  // namespace

TEST_CASE("every numeric config key of every family has a rule in the table") {
  for (const std::string& family : urpe::model_families()) {
    REQUIRE(kKeyRules.count(family) == 1);
    for (const urpe::ConfigKey& k : urpe::schema_for_model(family).keys()) {
      if (k.type != urpe::ConfigType::integer && k.type != urpe::ConfigType::real) continue;
      INFO(family << ": add '" << k.name << "' to kKeyRules (which of -1, 0, huge it refuses)");
      CHECK(rule_for(family, k.name) != nullptr);
    }
  }
}

TEST_CASE("bad values of every numeric config key: refused before training, naming the key") {
  for (const std::string& family : urpe::model_families()) {
    const std::vector<Case> rows = numeric_key_rows(family, false);
    CHECK(rows.size() > 50);
    MESSAGE(family << ":");
    check_table(rows);
  }
}

TEST_CASE("the config keys the issue named: lr, init_std, tgt_len and mem_len errors name the key set") {
  const Fixture& f = fixture();
  std::vector<Case> rows;
  for (const std::string& family : urpe::model_families())
    for (const char* value : {"-1", "nan", "0"}) {
      rows.push_back({family + ": lr = " + value, train_over_victim(with_value(family, "lr", value)), "",
                      {f.victim}, "lr"});
      rows.push_back({family + ": init_std = " + value, train_over_victim(with_value(family, "init_std", value)),
                      "", {f.victim}, "init_std"});
    }
  rows.push_back({"txl: tgt_len = 0 (its error must not name the derived eval_tgt_len)",
                  train_over_victim(with_value("txl", "tgt_len", "0")), "key 'tgt_len' expects an integer from 1", {f.victim},
                  "tgt_len"});
  rows.push_back({"txl: mem_len = -1 (its error must not name the derived eval_mem_len)",
                  train_over_victim(with_value("txl", "mem_len", "-1")), "key 'mem_len' expects an integer from 0", {f.victim},
                  "mem_len"});
  rows.push_back({"txl: eval_mem_len = -2 (-1 means mem_len)", train_over_victim(with_value("txl", "eval_mem_len", "-2")),
                  "", {f.victim}, "eval_mem_len"});
  rows.push_back({"warmup longer than steps", train_over_victim(with_value("encoder", "warmup", "7")),
                  "must not exceed steps", {f.victim}, "warmup"});
  rows.push_back({"lr below the smallest float32", train_over_victim(with_value("encoder", "lr", "1e-50")), "",
                  {f.victim}, "lr"});
  rows.push_back({"heads not dividing d_model", train_over_victim(with_value("encoder", "heads", "3")),
                  "must divide d_model", {f.victim}, "heads"});
  rows.push_back({"txl: odd d_model", train_over_victim(with_value("txl", "d_model", "15")), "even", {f.victim},
                  "d_model"});
  rows.push_back({"device that is no device", train_over_victim(with_value("encoder", "device", "tpu")),
                  "expected cpu, cuda or cuda:N", {f.victim}, "device"});
  // The other ways a number can be wrong, on one int key and one float key of each family (the
  // parser is the same for every key).
  for (const std::string& family : urpe::model_families()) {
    for (const char* value : {"", "1.5", "99999999999999999999", "-99999999999999999999", "5x", "0x10", " "})
      rows.push_back({family + ": steps = '" + value + "'", train_over_victim(with_value(family, "steps", value)), "",
                      {f.victim}, "steps"});
    for (const char* value : {"", "inf", "-inf", "1e999", "1e-999x", "0.1.2"})
      rows.push_back({family + ": dropout = '" + value + "'", train_over_victim(with_value(family, "dropout", value)),
                      "", {f.victim}, "dropout"});
  }
  rows.push_back({"txl: cutoffs not increasing", train_over_victim(with_value("txl", "cutoffs", "9,5")), "cutoffs",
                  {f.victim}});
  check_table(rows);
}

TEST_CASE("config files: one whitespace rule, escaped echoes, wrong kinds and truncation") {
  const Fixture& f = fixture();
  const std::string fresh = f.root + "/never_created";
  auto with_config = [&](const std::string& path) {
    std::vector<std::string> args = {"train", "--config", path, "--out", fresh, "--quiet"};
    return args;
  };
  // A truncated config.txt of a real run: cut right after "lr ... =", so the last value is empty.
  const std::string config_txt = read_file(f.victim + "/config.txt");
  const size_t lr_line = config_txt.find("\nlr ");
  REQUIRE(lr_line != std::string::npos);
  const std::string truncated = config_txt.substr(0, config_txt.find('=', lr_line) + 1);
  const std::vector<Case> rows = {
      // Before the one rule, "\v" before `model` picked the encoder's keys and tgt_len was "unknown".
      {"vertical tab before 'model = txl'", with_config(f.file("vt.cfg", "\vmodel = txl\ntgt_len = 0\n")),
       "key 'tgt_len' expects an integer from 1", {fresh}, "tgt_len"},
      {"form feed before 'model = txl'", with_config(f.file("ff.cfg", "\fmodel = txl\nmem_len = -1\n")),
       "key 'mem_len' expects an integer from 0", {fresh}, "mem_len"},
      {"a control byte inside a value is echoed escaped", with_config(f.file("ctl.cfg", "steps = 1\v2\n")),
       "'1\\x0b2'", {fresh}, "steps"},
      {"an escape sequence in a --set value is echoed escaped",
       {"train", "--out", fresh, "--set", "task=\x1b[31mred"}, "\\x1b[31mred", {fresh}, "task"},
      {"a newline in a --set value keeps the error on one line", {"train", "--out", fresh, "--set", "task=a\nb"},
       "a\\nb", {fresh}, "task"},
      {"a task_protocol that is not one", {"train", "--out", fresh, "--set", "task_protocol=fairseq"}, "'fairseq'",
       {fresh}, "task_protocol"},
      {"accum_steps that does not divide the batch", {"train", "--out", fresh, "--set", "batch=8", "--set",
       "accum_steps=3"}, "accum_steps (3) must divide batch (8)", {fresh}, "accum_steps"},
      {"bytes that are not UTF-8 are echoed escaped", {"train", "--out", fresh, "--set", "lr=\xff\xfe"}, "\\xff\\xfe",
       {fresh}, "lr"},
      {"a directory as --config", with_config(f.empty_dir), "is a directory", {fresh, f.empty_dir}},
      {"a PNG as --config", with_config(f.png), "not a text file", {fresh}},
      {"a missing --config", with_config(f.root + "/missing.cfg"), "missing.cfg", {fresh}},
      {"a config.txt cut after 'lr ='", with_config(f.file("truncated.cfg", truncated)), "", {fresh}, "lr"},
      {"a config cut inside a quoted value", with_config(f.file("quote.cfg", "corpus = \"abc")),
       "unterminated quoted value", {fresh}},
      {"a config line without '='", with_config(f.file("noeq.cfg", "steps 5\n")), "expected 'key = value'", {fresh}},
      {"an unknown model family", with_config(f.file("family.cfg", "model = xl\n")), "not a model family", {fresh}},
  };
  check_table(rows);
}

TEST_CASE("commands: stray words, options, and the output directory of another run") {
  const Fixture& f = fixture();
  const std::string fresh = f.root + "/never_created";
  const std::string replaced = f.root + "/left_replaced";  // a killed --overwrite's leftovers
  fs::create_directories(replaced + "/.urpe-replaced");
  write_file(replaced + "/.urpe-replaced/results.json", "[]\n");
  std::vector<std::string> tiny;
  for (const char* s : kEncoderTiny) tiny.insert(tiny.end(), {"--set", s});
  auto train_into = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"train", "--out", out, "--quiet"};
    args.insert(args.end(), tiny.begin(), tiny.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const std::vector<Case> rows = {
      {"train: a stray word", train_into(fresh, {"junk"}), "unexpected argument 'junk'", {fresh}},
      {"eval: a stray word", {"eval", "--run", f.victim, "junk"}, "unexpected argument 'junk'", {f.victim}},
      {"plot: a stray word", {"plot", "--run", f.victim, "junk"}, "unexpected argument 'junk'", {f.victim}},
      {"demo: a stray word", {"demo", "--out", fresh, "junk"}, "unexpected argument 'junk'", {fresh}},
      {"repro: a word after the experiment", {"repro", "synthetic", "junk", "--out", fresh},
       "unexpected argument 'junk'", {fresh}},
      {"bench: a word after the benchmark", {"bench", "kernels", "junk"}, "unexpected argument 'junk'", {}},
      {"train: an unknown option", train_into(fresh, {"--bogus"}), "unknown option --bogus", {fresh}},
      {"train: an option without its value", {"train", "--out"}, "needs a value", {}},
      {"train: no --out", {"train", "--set", "steps=3"}, "--out", {}},
      // Another run in --out: refused unless --overwrite, whatever the command.
      {"train into a run", train_into(f.victim, {}), "already holds a run (results.json)", {f.victim}},
      {"train into a run says how to resume it", train_into(f.victim, {}), "--resume", {f.victim}},
      {"train into a repro's directory", train_into(f.repro_like, {}), "pass --overwrite", {f.repro_like}},
      {"demo into a run", {"demo", "--out", f.victim}, "pass --overwrite", {f.victim}},
      {"repro into a run", {"repro", "synthetic", "--out", f.victim}, "pass --overwrite", {f.victim}},
      {"--out names a file", train_into(f.victim + "/notes.txt", {}), "is a file", {f.victim}},
      {"--resume and --overwrite together", {"train", "--resume", f.victim, "--overwrite"}, "--overwrite", {f.victim}},
      {"--resume and --init-from together", {"train", "--resume", f.victim, "--init-from", f.victim}, "drop --init-from",
       {f.victim}},
      {"--init-from the --out directory itself", train_into(f.victim, {"--overwrite", "--init-from", f.victim}),
       "name the same directory", {f.victim}},
      {"--init-from a directory without a run", train_into(fresh, {"--init-from", f.empty_dir}),
       "no model.safetensors", {fresh}},
      {"a replaced run left by a killed --overwrite", train_into(replaced, {"--overwrite"}), ".urpe-replaced",
       {replaced}},
      // With --overwrite, a command that fails leaves the old run as it was.
      {"demo --overwrite on a device that is no device", {"demo", "--out", f.victim, "--overwrite", "--device", "gpu"},
       "device", {f.victim}},
      {"repro --overwrite at an unknown scale", {"repro", "synthetic", "--out", f.victim, "--overwrite", "--scale", "huge"},
       "tiny, small or paper", {f.victim}},
      {"repro: an unknown experiment", {"repro", "everything", "--out", fresh}, "unknown experiment", {fresh}},
      {"repro: --seeds 0", {"repro", "synthetic", "--out", fresh, "--seeds", "0"}, "--seeds", {fresh}},
      {"repro: --finetune outside lm", {"repro", "molecules", "--out", fresh, "--finetune"},
       "--finetune applies to 'repro lm' only", {fresh}},
      {"repro: --seeds abc", {"repro", "synthetic", "--out", fresh, "--seeds", "abc"}, "--seeds", {fresh}},
      {"demo: --seed abc", {"demo", "--out", fresh, "--seed", "abc"}, "--seed", {fresh}},
      {"eval: --split train", {"eval", "--run", f.victim, "--split", "train"}, "--split", {f.victim}},
      {"eval: --device gpu", {"eval", "--run", f.victim, "--device", "gpu"}, "expected cpu, cuda or cuda:N", {f.victim}},
      {"eval: --checkpoint worst", {"eval", "--run", f.victim, "--checkpoint", "worst"},
       "--checkpoint must be last or best", {f.victim}},
      {"eval: no --run", {"eval"}, "--run", {}},
      {"eval: a missing run", {"eval", "--run", fresh}, "does not exist", {fresh}},
      {"plot: a directory without metrics.csv", {"plot", "--run", f.empty_dir}, "metrics.csv", {f.empty_dir}},
      // cuda_graph = on (docs/cuda.md#cuda-graphs): refused where a capture cannot be made, naming why.
      {"cuda_graph on the CPU", train_into(fresh, {"--set", "cuda_graph=on"}), "cuda_graph = on needs device = cuda",
       {fresh}, "cuda_graph"},
      // Graphormer is captured with its batches padded to one shape (fixed_shapes); what a capture
      // cannot hold is still refused for it.
      {"cuda_graph for Graphormer on the CPU",
       {"train", "--out", fresh, "--preset", "graphormer-tiny", "--set", "cuda_graph=on"},
       "cuda_graph = on needs device = cuda", {fresh}, "cuda_graph"},
      {"cuda_graph for Graphormer with accumulation",
       {"train", "--out", fresh, "--preset", "graphormer-tiny", "--set", "device=cuda", "--set", "cuda_graph=on",
        "--set", "batch=8", "--set", "accum_steps=2"},
       "cuda_graph = on needs accum_steps = 1", {fresh}, "cuda_graph"},
      {"cuda_graph for Transformer-XL",
       {"train", "--out", fresh, "--preset", "txl-tiny", "--set", "device=cuda", "--set", "cuda_graph=on"},
       "the txl family carries its memory", {fresh}, "cuda_graph"},
      {"cuda_graph with accumulation",
       train_into(fresh, {"--set", "device=cuda", "--set", "cuda_graph=on", "--set", "accum_steps=2"}),
       "cuda_graph = on needs accum_steps = 1", {fresh}, "cuda_graph"},
      {"profile with cuda_graph",
       {"profile", "--preset", "pi-tiny", "--set", "cuda_graph=on", "--set", "device=cuda", "--out", fresh},
       "the per-op profiler cannot see", {fresh}},
      {"bench step: another key than cuda_graph", {"bench", "step", "--set", "lr=1"},
       "bench step takes --set cuda_graph=on|off only", {}},
      {"bench step: cuda_graph on the CPU", {"bench", "step", "--set", "cuda_graph=on"}, "use --device cuda", {}},
  };
  check_table(rows);
}

TEST_CASE("files of the wrong kind, truncated or corrupted: checkpoints, metrics, corpora, molecules") {
  const Fixture& f = fixture();
  const std::string checkpoint_bytes = read_file(f.pristine + "/model.safetensors");
  REQUIRE(checkpoint_bytes.size() > 1000);
  auto with_checkpoint = [&](const std::string& name, const std::string& bytes) {
    const std::string dir = f.run_copy(name);
    write_file(dir + "/model.safetensors", bytes);
    return dir;
  };
  const std::string as_config = with_checkpoint("config_as_checkpoint", read_file(f.pristine + "/config.txt"));
  const std::string as_png = with_checkpoint("png_as_checkpoint", read_file(f.png));
  const std::string truncated = with_checkpoint("truncated_checkpoint", checkpoint_bytes.substr(0, checkpoint_bytes.size() / 2));
  const std::string header_cut = with_checkpoint("header_cut", checkpoint_bytes.substr(0, 20));
  std::string broken_json = checkpoint_bytes;
  broken_json[8] = 'x';  // the header's opening '{'
  const std::string bad_header = with_checkpoint("bad_header", broken_json);
  // The stored config says steps = x: the header stays valid JSON of the same length.
  std::string bad_config = checkpoint_bytes;
  const size_t steps_at = bad_config.find("steps");
  REQUIRE(steps_at != std::string::npos);
  const size_t digit = bad_config.find_first_of("0123456789", steps_at);
  bad_config[digit] = 'x';
  const std::string bad_stored_config = with_checkpoint("bad_stored_config", bad_config);
  const std::string cut_metrics = f.run_copy("cut_metrics");
  const std::string metrics = read_file(cut_metrics + "/metrics.csv");
  // Its first row cut short with the rows after it kept: not what a crash leaves (a torn last row, which
  // readers skip and --resume drops: test_faults), so refused.
  const size_t first_row = metrics.find('\n') + 1, second_row = metrics.find('\n', first_row) + 1;
  write_file(cut_metrics + "/metrics.csv", metrics.substr(0, first_row + 9) + "\n" + metrics.substr(second_row));

  const std::string corpus_file = f.file("corpus_file.txt", words(10));
  const std::string no_valid = f.root + "/corpus_no_valid";
  fs::create_directories(no_valid);
  write_file(no_valid + "/train.txt", words(60));
  const std::string molecules = f.file("molecules.csv", "smiles,target\nCCO,1.5\nc1ccccc1,0.5\n\"CC,2\n");
  const std::vector<Case> rows = {
      {"eval: a config text as the checkpoint", {"eval", "--run", as_config}, "model.safetensors", {as_config}},
      {"eval: a PNG as the checkpoint", {"eval", "--run", as_png}, "model.safetensors", {as_png}},
      {"eval: a checkpoint cut in half", {"eval", "--run", truncated}, "model.safetensors", {truncated}},
      {"eval: a checkpoint cut inside its header", {"eval", "--run", header_cut}, "model.safetensors", {header_cut}},
      {"eval: a checkpoint whose header is no JSON", {"eval", "--run", bad_header}, "model.safetensors", {bad_header}},
      {"eval: a checkpoint whose stored config is bad", {"eval", "--run", bad_stored_config}, "model.safetensors",
       {bad_stored_config}, "steps"},
      {"plot: a checkpoint cut in half", {"plot", "--run", truncated}, "model.safetensors", {truncated}},
      {"resume: a checkpoint cut in half", {"train", "--resume", truncated, "--quiet"}, "model.safetensors",
       {truncated}},
      {"resume: a checkpoint whose stored config is bad", {"train", "--resume", bad_stored_config, "--quiet"}, "",
       {bad_stored_config}, "steps"},
      {"plot: metrics.csv with a row cut short", {"plot", "--run", cut_metrics}, "metrics.csv", {cut_metrics}},
      {"eval: --run names a file", {"eval", "--run", f.victim + "/notes.txt"}, "model.safetensors", {f.victim}},
      // Data named by the config; with --overwrite the run already in --out must survive.
      {"txl: corpus names a file", train_over_victim(with_value("txl", "corpus", corpus_file)), "is a file",
       {f.victim}, "corpus"},
      {"txl: corpus names a missing directory", train_over_victim(with_value("txl", "corpus", f.root + "/nothing")),
       "does not exist", {f.victim}},
      {"txl: corpus is an empty directory", train_over_victim(with_value("txl", "corpus", f.empty_dir)),
       "train split", {f.victim, f.empty_dir}},
      {"txl: corpus without a valid split", train_over_victim(with_value("txl", "corpus", no_valid)), "valid",
       {f.victim, no_valid}},
      {"txl: corpus names a PNG", train_over_victim(with_value("txl", "corpus", f.png)), "is a file",
       {f.victim}},
      {"graphormer: dataset names a directory", train_over_victim(with_value("graphormer", "dataset", f.empty_dir)),
       "is a directory", {f.victim, f.empty_dir}, "dataset"},
      {"graphormer: dataset names a missing file",
       train_over_victim(with_value("graphormer", "dataset", f.root + "/none.csv")), "does not exist", {f.victim},
       "dataset"},
      {"graphormer: a PNG as the dataset", train_over_victim(with_value("graphormer", "dataset", f.png)), "", {f.victim}},
      {"graphormer: a CSV cut inside a quoted field", train_over_victim(with_value("graphormer", "dataset", molecules)),
       "", {f.victim}},
      {"graphormer: split names a directory", train_over_victim(with_value("graphormer", "split", f.empty_dir)),
       "is a directory", {f.victim, f.empty_dir}, "split"},
  };
  check_table(rows);
}

// Huge model sizes: without the size checks (key ranges, checked products) they crashed, aborted
// or allocated until killed. Each row is cut off after 10 s.
TEST_CASE("huge sizes and counts: refused before anything is allocated") {
  std::vector<Case> rows;
  for (const std::string& family : urpe::model_families()) {
    const std::vector<Case> family_rows = numeric_key_rows(family, true);
    rows.insert(rows.end(), family_rows.begin(), family_rows.end());
  }
  rows.push_back({"bench: --repeats -1", {"bench", "step", "--repeats", "-1"},
                  "--repeats", {}});
  rows.push_back({"bench: --repeats 99999999999999999999",
                  {"bench", "step", "--repeats", "99999999999999999999"}, "--repeats", {}});
  check_table(rows, 10);
}

// Damaged files that used to be read without complaint: a checkpoint with a flipped data bit
// (caught by the CRC-32) and a cut gzip corpus (caught by the gzip checks).
TEST_CASE("damaged data: a flipped checkpoint bit, a cut corpus") {
  const Fixture& f = fixture();
  std::string flipped = read_file(f.pristine + "/model.safetensors");
  flipped[flipped.size() - 3] ^= 0x40;  // a bit of the last tensor's data
  const std::string dir = f.run_copy("flipped_data");
  write_file(dir + "/model.safetensors", flipped);
  // A gzip corpus cut in the middle of its stream.
  const std::string cut_gz = f.root + "/corpus_cut_gz";
  fs::create_directories(cut_gz);
  for (const char* split : {"valid", "test"}) write_file(cut_gz + "/" + split + ".txt", words(60));
  // Words in a seeded order, so the compressed stream is long and its first half already holds
  // every word of valid and test: what is missing is only the end of the training text.
  std::string varied;
  uint64_t state = 12345;
  const char* vocabulary[] = {"the", "cat", "sat", "on", "mat", ".", "a", "dog", "ran", "to", "tree"};
  for (int k = 0; k < 20000; ++k) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    varied += std::string(vocabulary[(state >> 33) % 11]) + (k % 12 == 11 ? "\n" : " ");
  }
  write_file(cut_gz + "/train.txt", varied);
  REQUIRE(std::system(("gzip -f " + cut_gz + "/train.txt").c_str()) == 0);
  const std::string gz = read_file(cut_gz + "/train.txt.gz");
  write_file(cut_gz + "/train.txt.gz", gz.substr(0, gz.size() / 2));
  const std::vector<Case> rows = {
      {"eval: a bit flipped in the tensor data", {"eval", "--run", dir},
       "model.safetensors", {dir}},
      {"txl: a train.txt.gz cut in the middle",
       train_over_victim(with_value("txl", "corpus", cut_gz)), "train.txt.gz", {f.victim, cut_gz}},
  };
  check_table(rows);
}

TEST_CASE("with_thousands_separators groups digits by three, the sign kept outside") {
  using urpe::with_thousands_separators;
  CHECK(with_thousands_separators(0) == "0");
  CHECK(with_thousands_separators(999) == "999");
  CHECK(with_thousands_separators(1000) == "1,000");
  CHECK(with_thousands_separators(1234567) == "1,234,567");
  CHECK(with_thousands_separators(-123) == "-123");
  CHECK(with_thousands_separators(-123456) == "-123,456");
}

TEST_CASE("printable: control and non-UTF-8 bytes escaped, UTF-8 kept, idempotent; one trimming rule") {
  using urpe::printable;
  CHECK(printable("steps = 1\v2") == "steps = 1\\x0b2");
  CHECK(printable("a\tb\nc\rd\x7f") == "a\\tb\\nc\\rd\\x7f");
  CHECK(printable("\x1b[31m") == "\\x1b[31m");
  CHECK(printable("lr ≥ 0, µ") == "lr ≥ 0, µ");                       // UTF-8 stays
  CHECK(printable("\xff\xfe") == "\\xff\\xfe");                        // not UTF-8
  CHECK(printable("\xe2\x89") == "\\xe2\\x89");                        // a cut sequence
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");                        // an overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");               // a surrogate
  CHECK(printable(printable("x\vy\xff")) == printable("x\vy\xff"));
  // Every isspace character around keys and values, for the parser and for the schema choice.
  for (const char* space : {" ", "\t", "\v", "\f", "\r"}) {
    std::string key, value;
    const std::string line = std::string(space) + "model" + space + "=" + space + "txl" + space;
    INFO(urpe::printable(line));
    CHECK(urpe::read_config_line(line, key, value));
    CHECK(key == "model");
    CHECK(value == "txl");
    CHECK(urpe::model_named_in(line + "\n") == "txl");
    CHECK(urpe::config_from_text(line + "\ncorpus = x\n", "t").get_string("model") == "txl");
  }
  std::string key, value;
  CHECK(!urpe::read_config_line("  # model = txl", key, value));
  CHECK(!urpe::read_config_line("model txl", key, value));
  CHECK(urpe::read_config_line("model = \"txl\" # quoted", key, value));
  CHECK(value == "txl");
  CHECK(urpe::model_named_in("model = 'txl'\n") == "'txl'");  // the parser would refuse it too
}
