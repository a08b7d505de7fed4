// Run configuration: files of `key = value` lines, checked against a schema.
//
//   # comments start with '#', anywhere outside quotes; blank lines are ignored
//   model = urpe          # a choice
//   lr    = 3e-4          # a float
//   steps = 2000          # an int
//   note  = "a # inside quotes"
//
// A ConfigSchema lists every key with its type, default and meaning; a Config holds one value per
// key (the default until a file or a `--set key=value` changes it). Every mistake is one line
// naming where it happened and what was expected:
//   run.cfg:4: unknown key 'lr_rate' (did you mean 'lr'?)
//   run.cfg:7: key 'steps' expects an integer, got 'abc'
//   --set model=xl: key 'model' expects one of urpe, rpe, ape, none; got 'xl'
// `to_text()` writes the resolved config back in the same format (it parses to the same values),
// which is what a run directory's config.txt holds.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/io/printable.h"  // error messages here echo user text through printable()

namespace urpe {

enum class ConfigType { integer, real, string, boolean, choice };
const char* config_type_name(ConfigType type);  // "int", "float", "string", "bool", "choice"

// The values an int or float key accepts, checked on every assignment (a file line, a --set, a
// preset) so that a size that cannot be meant (a negative batch, a vocabulary past int32) is
// refused where it was written, naming the key and the range.
struct ConfigLimits {
  bool set = false;
  int64_t int_min = 0, int_max = 0;   // int keys, both ends included
  double min = 0, max = 0;            // float keys
  bool min_open = false, max_open = false;
  std::string why;                    // optional reason shown with the range ("token ids are int32")
};

struct ConfigKey {
  std::string name;
  ConfigType type = ConfigType::string;
  std::string default_value;         // canonical text (as to_text writes it)
  std::string help;
  std::vector<std::string> choices;  // for ConfigType::choice
  ConfigLimits limits = {};          // int and float keys; unset: any value of the type
};

class ConfigSchema {
 public:
  // Each returns *this so a schema reads as one chained declaration. A repeated name, a bad
  // default or an empty choice list is a programming error and throws urpe::Error.
  ConfigSchema& add_int(const std::string& name, int64_t default_value, const std::string& help);
  ConfigSchema& add_float(const std::string& name, double default_value, const std::string& help);
  ConfigSchema& add_string(const std::string& name, const std::string& default_value,
                           const std::string& help);
  ConfigSchema& add_bool(const std::string& name, bool default_value, const std::string& help);
  ConfigSchema& add_choice(const std::string& name, const std::vector<std::string>& choices,
                           const std::string& default_value, const std::string& help);

  // Limits an existing int key to [min, max] / a float key to min..max (open or closed ends).
  // The key's default must lie inside (else urpe::Error: a programming error).
  ConfigSchema& limit_int(const std::string& name, int64_t min, int64_t max, const std::string& why = "");
  ConfigSchema& limit_float(const std::string& name, double min, bool min_open, double max, bool max_open,
                            const std::string& why = "");

  const std::vector<ConfigKey>& keys() const { return keys_; }
  const ConfigKey* find(const std::string& name) const;  // nullptr when unknown
  // The valid key nearest to `name` by edit distance, or "" when none is plausibly meant.
  std::string closest(const std::string& name) const;
  // Every key with its type, default and meaning, aligned in columns (for `urpe train --help`).
  std::string help_text() const;

 private:
  ConfigSchema& add(ConfigKey key);
  std::vector<ConfigKey> keys_;
};

class Config {
 public:
  explicit Config(const ConfigSchema& schema);  // every key at its default

  // Reads a config file; errors name `path` and the line.
  static Config from_file(const ConfigSchema& schema, const std::string& path);
  // Applies `key = value` lines from `text`; `source` names it in errors ("run.cfg").
  void apply_text(const std::string& text, const std::string& source);
  // Applies one `--set key=value` override; errors name the --set. A key may be set once per
  // file and once more by --set; setting it twice in the same place is an error.
  void apply_override(const std::string& assignment);

  // Typed getters. Asking for an unknown key, or an int from a string key, throws urpe::Error.
  // get_float also reads int keys; get_string reads every key as its canonical text.
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  // Whether a file or --set gave the key a value (false: it holds its default).
  bool is_set(const std::string& key) const;
  // Where the key's value was set: "<source>:<line>" for a line of text applied with apply_text
  // ("preset pi-paper:4", "run.cfg:7"), "--set key=value" for an override, "" for the default.
  std::string origin(const std::string& key) const;

  // Every key in schema order as `key = value`; with_help adds each key's meaning as a comment.
  std::string to_text(bool with_help = true) const;
  const ConfigSchema& schema() const { return schema_; }

 private:
  // Checks `raw` against the key's type and stores its canonical text; `where` prefixes errors.
  void assign(const std::string& key, const std::string& raw, const std::string& where,
              const std::string& origin);
  const ConfigKey& key_spec(const std::string& key) const;

  ConfigSchema schema_;
  std::map<std::string, std::string> values_;  // canonical text of every key
  std::map<std::string, std::string> origin_;  // where an explicitly set key was set
};

// "an integer from 1 to 2147483647", "a number in [0, 1)", "a number > 0": what a key accepts.
std::string describe_limits(const ConfigKey& key);

// Levenshtein distance (exposed for tests).
size_t edit_distance(const std::string& a, const std::string& b);

// The one whitespace rule of config text: every character std::isspace accepts (space, \t, \n,
// \v, \f, \r) is trimmed around keys and values. Every reader of config text uses it, so a line
// such as "\vmodel = txl" means the same thing to the schema choice (run_config.cpp) as to the
// parser (a rule with fewer characters once picked the wrong family's keys).
std::string trim_config_space(const std::string& text);
// What one config line sets, read exactly as Config::apply_text reads it: true with the key and
// its value (quotes and a trailing comment removed), false for a blank or comment line or one
// apply_text would refuse (it reports those).
bool read_config_line(const std::string& line, std::string& key, std::string& value);

}  // namespace urpe
