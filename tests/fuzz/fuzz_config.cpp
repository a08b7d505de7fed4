// Fuzz target: config files and --set overrides (base/io/config), against a schema with a key of
// every type. Text that applies must round-trip: to_text() parses again to the same values and
// writes the same text (config.txt of a run directory is read back by `urpe train --resume` and
// `urpe eval`). The first line is also tried as a `--set key=value` override.
#include "tensor/error.h"
#include "tests/fuzz/fuzz_common.h"
#include "base/io/config.h"

using namespace urpe;

namespace {

const ConfigSchema& schema() {
  static const ConfigSchema s = [] {
    ConfigSchema k;
    k.add_choice("model", {"encoder", "txl", "graphormer"}, "encoder", "model family")
        .add_choice("pe", {"none", "ape", "rpe", "urpe"}, "urpe", "positional encoding")
        .add_int("steps", 2000, "training steps")
        .add_int("seed", -1, "random seed")
        .add_float("lr", 3e-4, "peak learning rate")
        .add_float("dropout", 0.1, "dropout # a hash in the help")
        .add_bool("tf32", false, "TF32 matmuls")
        .add_string("corpus", "embedded", "corpus directory")
        .add_string("note", "", "free text\nover two lines")
        .add_string("cutoffs", "20000,40000", "adaptive softmax cutoffs");
    return k;
  }();
  return s;
}

// Writes the config, parses the text again, and checks that values and text survive.
void check_round_trip(const Config& config) {
  for (bool with_help : {true, false}) {
    const std::string text = config.to_text(with_help);
    Config back(schema());
    try {
      back.apply_text(text, "config.txt");
    } catch (const Error& e) {
      FUZZ_CHECK(false, "to_text() wrote a config that does not parse: " << e.what() << "\n" << text);
    }
    for (const ConfigKey& key : schema().keys())
      FUZZ_CHECK(back.get_string(key.name) == config.get_string(key.name),
                 "key '" << key.name << "' changed through to_text: '" << config.get_string(key.name) << "' → '"
                         << back.get_string(key.name) << "'");
    FUZZ_CHECK(back.to_text(with_help) == text, "to_text() is not stable:\n" << text << "\n---\n" << back.to_text(with_help));
  }
  // Typed getters agree with the canonical text.
  (void)config.get_int("steps");
  (void)config.get_float("lr");
  (void)config.get_bool("tf32");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::bytes_of(data, size);
  Config config(schema());
  try {
    config.apply_text(text, "fuzz.cfg");
    check_round_trip(config);
  } catch (const Error& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("fuzz.cfg:", 0) == 0, "an error not naming the file and line: " << e.what());
  }

  Config overridden(schema());
  const std::string assignment = text.substr(0, text.find('\n'));
  try {
    overridden.apply_override(assignment);
  } catch (const Error& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("--set ", 0) == 0, "an override error not naming the --set: " << e.what());
    return 0;
  }
  check_round_trip(overridden);
  return 0;
}
