// The command-line interface of `urpe` (pinned in README.md#command-line): subcommands, their options and
// help text, and dispatch to the code that runs them.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace urpe::cli {

// Parsed `--name value` / `--flag` options of one subcommand, plus positional words.
struct Args {
  std::string command;
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;  // --set may repeat

  bool has(const std::string& name) const { return options.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> all(const std::string& name) const;
  long get_int(const std::string& name, long fallback) const;  // errors name the option
};

struct OptionSpec {
  std::string name;           // without the leading dashes
  std::string value;          // placeholder ("DIR"), empty for a flag
  std::string default_value;  // shown in help; empty = none
  std::string meaning;
};

struct CommandSpec {
  std::string name;
  std::string usage;    // one line after "urpe "
  std::string summary;  // one sentence
  std::vector<OptionSpec> options;
  std::function<int(const Args&)> run;  // empty: the command arrives with a later issue
  std::string pending_note;             // what brings it, when run is empty
  std::string details;                  // extra help text (e.g. the config keys)
  // Subcommands (`urpe theory probe ...`): each a full spec named "theory probe", with its own
  // options and --help. A command with subcommands runs none itself.
  std::vector<CommandSpec> subcommands = {};
};

// All subcommands, in help order. Defined in command_table.cpp; handlers live in their own files.
const std::vector<CommandSpec>& commands();
// Register a handler (and extra help) for a command; called by the files that implement them.
int run(int argc, char** argv);

}  // namespace urpe::cli
