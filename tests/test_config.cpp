// Config files and --set overrides: parsing, typed getters, defaults, every error message, the
// round trip through to_text(), and the help listing.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "doctest/doctest.h"
#include "tensor/error.h"
#include "train/io/config.h"

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
