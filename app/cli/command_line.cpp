// Argument parsing, help text and dispatch for `urpe`. Each subcommand's work lives elsewhere
// (the other files of app/cli/); this file only knows their names, options and help.
#include "app/cli/command_line.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>

#include "tensor/error.h"
#include "app/cli/command_table.h"
#include "base/io/printable.h"

namespace urpe::cli {

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = options.find(name);
  return it == options.end() ? fallback : it->second;
}

std::vector<std::string> Args::all(const std::string& name) const {
  std::vector<std::string> values;
  auto range = options.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) values.push_back(it->second);
  return values;
}

int64_t parse_int_option(const std::string& name, const std::string& text, IntRange range) {
  // strtoll alone would take " 5", and clamp "99999999999999999999" to LLONG_MAX without a word.
  const size_t first = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  bool valid = first < text.size() && text.find_first_not_of("0123456789", first) == std::string::npos;
  long long value = 0;
  if (valid) {
    errno = 0;
    value = std::strtoll(text.c_str(), nullptr, 10);
    valid = errno != ERANGE;
  }
  const bool limited = range.defined();
  URPE_CHECK(valid && (!limited || (value >= range.min && value <= range.max)),
             "option --" << name << ": expected an integer"
                         << (limited ? " from " + std::to_string(range.min) + " to " + std::to_string(range.max) : "")
                         << ", got '" << text << "'");
  return value;
}

int64_t Args::get_int(const std::string& name, int64_t fallback) const {
  if (!has(name)) return fallback;
  return parse_int_option(name, get(name), IntRange{});
}

const std::vector<CommandSpec>& commands() {
  static const std::vector<CommandSpec> specs = command_table();
  return specs;
}

static const CommandSpec* find_command(const std::string& name) {
  for (const CommandSpec& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

static void print_overview(std::ostream& out) {
  out << "urpe — a from-scratch engine reproducing \"Your Transformer May Not be as Powerful as\n"
         "You Expect\" (Luo et al., NeurIPS 2022): URPE attention softmax(QKᵀ/√d + B) ⊙ C.\n\n"
         "Usage: urpe COMMAND [OPTIONS]\n\nCommands:\n";
  for (const CommandSpec& c : commands()) {
    out << "  " << c.name << std::string(c.name.size() < 8 ? 8 - c.name.size() : 1, ' ')
        << c.summary << (c.run || !c.subcommands.empty() ? "" : " [not built yet]") << "\n";
  }
  out << "\nRun 'urpe COMMAND --help' for every option of a command, its default and meaning.\n";
}

static void print_command_help(const CommandSpec& c, std::ostream& out) {
  out << "Usage: urpe " << c.usage << "\n\n" << c.summary << "\n";
  if (!c.run && c.subcommands.empty()) out << "\nNot built yet: " << c.pending_note << "\n";
  if (!c.options.empty()) {
    out << "\nOptions:\n";
    for (const OptionSpec& o : c.options) {
      std::string left = "--" + o.name + (o.value.empty() ? "" : " " + o.value);
      out << "  " << left << std::string(left.size() < 24 ? 24 - left.size() : 1, ' ') << o.meaning;
      if (!o.default_value.empty() || o.range.defined()) {
        out << " (";
        if (!o.default_value.empty()) out << "default: " << o.default_value << (o.range.defined() ? "; " : "");
        if (o.range.defined()) out << o.range.min << " to " << o.range.max;
        out << ")";
      }
      out << "\n";
    }
  }
  out << "  --help" << std::string(18, ' ') << "show this help\n";
  if (!c.subcommands.empty()) {
    out << "\nSubcommands (each has --help):\n";
    for (const CommandSpec& sub : c.subcommands) out << "  urpe " << sub.usage << "\n      " << sub.summary << "\n";
  }
  if (!c.details.empty()) out << "\n" << c.details;
}

// `urpe theory probe ...`: the subcommand's spec, or null (after printing the reason) when argv[2]
// names none.
static const CommandSpec* find_subcommand(const CommandSpec& parent, int argc, char** argv) {
  std::string names;
  for (size_t k = 0; k < parent.subcommands.size(); ++k)
    names += (k == 0 ? "" : k + 1 == parent.subcommands.size() ? " or " : ", ") +
             parent.subcommands[k].name.substr(parent.name.size() + 1);
  if (argc < 3 || std::string(argv[2]).rfind("-", 0) == 0) {
    std::cerr << "urpe: error: 'urpe " << parent.name << "' needs a subcommand: " << names << " (see 'urpe "
              << parent.name << " --help')\n";
    return nullptr;
  }
  for (const CommandSpec& sub : parent.subcommands)
    if (sub.name == parent.name + " " + argv[2]) return &sub;
  std::cerr << "urpe: error: unknown subcommand '" << argv[2] << "' for 'urpe " << parent.name << "' (expected "
            << names << ")\n";
  return nullptr;
}

// Splits argv after the command into options and positional words, checking every option
// against the command's spec.
static Args parse(const CommandSpec& spec, int argc, char** argv, int first) {
  Args args;
  args.command = spec.name;
  for (int i = first; i < argc; ++i) {
    std::string word = argv[i];
    if (word.rfind("--", 0) != 0) {
      args.positional.push_back(word);
      continue;
    }
    std::string name = word.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const OptionSpec* option = nullptr;
    for (const OptionSpec& o : spec.options)
      if (o.name == name) option = &o;
    URPE_CHECK(option != nullptr, "unknown option --" << name << " for 'urpe " << spec.name
                                                      << "' (see 'urpe " << spec.name << " --help')");
    if (!option->value.empty() && !inline_value) {
      URPE_CHECK(i + 1 < argc, "option --" << name << " needs a value " << option->value
                                           << " (see 'urpe " << spec.name << " --help')");
      value = argv[++i];
    }
    if (option->range.defined()) parse_int_option(name, value, option->range);
    args.options.emplace(name, value);
  }
  // A stray word is refused rather than ignored: it is usually a mistyped option or a value whose
  // option was forgotten, and silently running without it would not be what was asked for.
  if (args.positional.size() > spec.positional) {
    const std::string& extra = args.positional[spec.positional];
    URPE_FAIL("unexpected argument '" << extra << "' for 'urpe " << spec.name << "'"
                                      << (spec.positional ? " after '" + args.positional[0] + "'" : std::string())
                                      << " (options start with --; see 'urpe " << spec.name << " --help')");
  }
  return args;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    print_overview(std::cerr);
    return 1;
  }
  const std::string name = argv[1];
  if (name == "help" || name == "--help" || name == "-h") {
    if (argc >= 3 && find_command(argv[2])) print_command_help(*find_command(argv[2]), std::cout);
    else print_overview(std::cout);
    return 0;
  }
  const CommandSpec* spec = find_command(name);
  if (!spec) {
    std::cerr << "urpe: error: unknown command '" << printable(name) << "' (run 'urpe --help' to list the commands)\n";
    return 1;
  }
  int first = 2;
  if (!spec->subcommands.empty()) {
    const bool help_first = argc >= 3 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h");
    if (help_first) {
      print_command_help(*spec, std::cout);
      return 0;
    }
    spec = find_subcommand(*spec, argc, argv);
    if (!spec) return 1;
    first = 3;
  }
  for (int i = first; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--help" || word == "-h") {
      print_command_help(*spec, std::cout);
      return 0;
    }
  }
  if (!spec->run) {
    std::cerr << "urpe: error: 'urpe " << spec->name << "' is not built yet: " << spec->pending_note << "\n";
    return 3;
  }
  Args args;
  try {
    args = parse(*spec, argc, argv, first);
  } catch (const Error& e) {
    std::cerr << "urpe: error: " << printable(e.what()) << "\n";
    return 1;
  }
  return spec->run(args);
}

int report_errors(const std::function<int()>& body, std::FILE* err) {
  try {
    return body();
  } catch (const Error& e) {
    // printable: one line whatever the message echoes (a file name with a newline, binary bytes).
    // A path of thousands of characters keeps its two ends (shorten_long_words).
    std::fprintf(err, "urpe: error: %s\n", shorten_long_words(printable(e.what())).c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(err, "urpe: error: out of memory: this machine could not allocate a buffer the run needs "
                      "(try a smaller batch, sequence length or model)\n");
    return 1;
  } catch (const std::length_error& e) {
    std::fprintf(err, "urpe: error: a size too large to allocate (%s); try a smaller batch, sequence length "
                      "or model\n", printable(e.what()).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(err, "urpe: internal error: %s\n", printable(e.what()).c_str());
    return 2;
  }
}

// Whether stdout is a pipe (or socket) whose reading end is closed: poll() reports POLLERR then.
static bool stdout_reader_gone() {
  struct stat st;
  if (::fstat(STDOUT_FILENO, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return false;
  struct pollfd p = {STDOUT_FILENO, POLLOUT, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP)) != 0;
}

int check_stdout_written(int code, std::FILE* err) {
  errno = 0;
  std::cout.flush();  // synchronised with stdio: this flushes stdout too
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (code != 0 || (flushed && !std::ferror(stdout))) return code;  // a failure has its own one line
  // `urpe train | head`: the reader left on purpose (SIGPIPE is ignored, base/io/stop_signals.h).
  // The command did its work; what it printed after that had nobody to read it.
  if (error == EPIPE || stdout_reader_gone()) return code;
  std::fprintf(err, "urpe: error: cannot write the standard output: %s\n",
               error != 0 ? std::strerror(error) : "a write failed (disk full?)");
  return code == 0 ? 1 : code;
}

}  // namespace urpe::cli
