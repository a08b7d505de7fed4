// The command-line interface of `urpe` (every command and option: docs/cli.md): subcommands, their options and
// help text, and dispatch to the code that runs them.
#pragma once
#include <cstdint>
#include <cstdio>
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
  // An integer option's value (its range was checked when parsed); errors name the option.
  int64_t get_int(const std::string& name, int64_t fallback) const;
};

// The values an integer option accepts, both ends included. Parsing checks every option that has
// one, so a handler never sees 0 from a count that did not fit in an int, or a negative count.
struct IntRange {
  int64_t min = 1, max = 0;  // min > max: not an integer option
  bool defined() const { return min <= max; }
};

struct OptionSpec {
  std::string name;           // without the leading dashes
  std::string value;          // placeholder ("DIR"), empty for a flag
  std::string default_value;  // shown in help; empty = none
  std::string meaning;
  IntRange range = {};        // integer options: the accepted values (shown in help)
};

// `text` as a decimal integer in `range` (an optional sign, digits only: no spaces, exponents or
// hex), else urpe::Error "option --NAME: expected an integer from MIN to MAX, got 'TEXT'".
int64_t parse_int_option(const std::string& name, const std::string& text, IntRange range);

struct CommandSpec {
  std::string name;
  std::string usage;    // one line after "urpe "
  std::string summary;  // one sentence
  std::vector<OptionSpec> options;
  std::function<int(const Args&)> run;  // empty: the command arrives with a later issue
  std::string pending_note;             // what brings it, when run is empty
  std::string details;                  // extra help text (e.g. the config keys)
  size_t positional = 0;                // words it takes besides options (repro, bench: which one)
  // Subcommands (`urpe theory probe ...`): each a full spec named "theory probe", with its own
  // options and --help. A command with subcommands runs none itself.
  std::vector<CommandSpec> subcommands = {};
};

// All subcommands, in help order. Defined in command_table.cpp; handlers live in their own files.
const std::vector<CommandSpec>& commands();
// Register a handler (and extra help) for a command; called by the files that implement them.
int run(int argc, char** argv);

// Runs `body` and returns its exit code, or writes one `urpe: error: ...` line to `err` and returns
// 1 for a urpe::Error, for running out of memory (std::bad_alloc: a buffer the config checks let
// through that the machine could not give at the time) and for std::length_error (a container
// size past its maximum); 2 for any other exception ("internal error", a bug).
int report_errors(const std::function<int()>& body, std::FILE* err);

// Flushes stdout. When a command that succeeded (`code` 0) could not write it (a full disk,
// `> /dev/full`), writes one `urpe: error:` line to `err` and returns 1; otherwise returns `code`.
int check_stdout_written(int code, std::FILE* err);

}  // namespace urpe::cli
