// docs/cli.md's reference of every command and option is the command table itself
// (app/cli/command_table.cpp), written out as Markdown: a new option, a changed default or a
// renamed command without its line in the page fails here. `make docs` (URPE_WRITE_DOCS=1)
// rewrites the page's generated part; the hand-written text around it stays.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "app/cli/command_table.h"
#include "train/config/run_config.h"

namespace fs = std::filesystem;
using urpe::cli::CommandSpec;
using urpe::cli::OptionSpec;

namespace {

const std::string kBegin =
    "<!-- BEGIN command reference: generated from app/cli/command_table.cpp by `make docs`; "
    "test_cli_reference fails when it differs -->";
const std::string kEnd = "<!-- END command reference -->";

// Text inside a Markdown table cell: pipes escaped, and the characters Markdown would read as
// emphasis or HTML shown as they are.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '*') out += "\\*";
    else if (c == '<') out += "&lt;";
    else out += c;
  }
  return out;
}

void write_option_table(const CommandSpec& c, std::ostream& out) {
  if (c.options.empty()) return;
  out << "| option | meaning | default |\n|---|---|---|\n";
  for (const OptionSpec& o : c.options) {
    std::string def = o.default_value.empty() ? "" : "`" + o.default_value + "`";
    if (o.range.defined()) def += (def.empty() ? "" : "; ") + std::to_string(o.range.min) + " to " + std::to_string(o.range.max);
    out << "| `--" << o.name << (o.value.empty() ? "" : " " + o.value) << "` | " << cell(o.meaning) << " | " << cell(def)
        << " |\n";
  }
  out << "\n";
}

void write_command(const CommandSpec& c, std::ostream& out) {
  out << "### urpe " << c.name << "\n\n```text\nurpe " << c.usage << "\n```\n\n" << c.summary << ".\n\n";
  write_option_table(c, out);
  const bool config_keys = c.name == "train";  // its details are the config keys: their own section
  if (!c.details.empty() && !config_keys) out << "```text\n" << c.details << (c.details.back() == '\n' ? "" : "\n") << "```\n\n";
  for (const CommandSpec& sub : c.subcommands) write_command(sub, out);
}

// The generated part of docs/cli.md: every command (and subcommand) with its usage, summary,
// options and extra help, then the config keys `urpe train --help` lists.
std::string reference() {
  std::ostringstream out;
  out << kBegin << "\n\n";
  for (const CommandSpec& c : urpe::cli::command_table()) write_command(c, out);
  out << "### Config keys\n\nWhat `urpe train --help` prints below its options; `--set key=value` and config files "
         "take these keys.\n\n```text\n"
      << urpe::run_config_help() << "```\n\n"
      << kEnd;
  return out.str();
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first line where `a` and `b` differ, as "line N: page '...' / table '...'".
std::string first_difference(const std::string& page, const std::string& table) {
  std::istringstream a(page), b(table);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(a, la)), hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "";
    if (!ha || !hb || la != lb)
      return "line " + std::to_string(line) + " of the generated part: the page has '" + (ha ? la : "(nothing)") +
             "', the command table gives '" + (hb ? lb : "(nothing)") + "'";
  }
}

}  // namespace

TEST_CASE("docs/cli.md lists every command and option of the command table") {
  const fs::path page = fs::path(URPE_SOURCE_DIR) / "docs/cli.md";
  const std::string text = read_file(page);
  REQUIRE_MESSAGE(!text.empty(), "docs/cli.md is missing or empty");
  const size_t begin = text.find(kBegin), end = text.find(kEnd);
  REQUIRE_MESSAGE((begin != std::string::npos && end != std::string::npos && begin < end),
                  "docs/cli.md has no generated command reference between its markers; run `make docs`");
  const std::string current = text.substr(begin, end + kEnd.size() - begin);
  const std::string wanted = reference();
  const char* write = std::getenv("URPE_WRITE_DOCS");
  if (write && std::string(write) == "1" && current != wanted) {
    const fs::path temp = page.string() + ".tmp" + std::to_string(::getpid());
    std::ofstream(temp, std::ios::binary) << text.substr(0, begin) << wanted << text.substr(end + kEnd.size());
    fs::rename(temp, page);
    MESSAGE("docs/cli.md: command reference rewritten from the command table");
    return;
  }
  INFO(first_difference(current, wanted) << "\nRun `make docs` to rewrite it from app/cli/command_table.cpp.");
  const bool page_matches_table = current == wanted;  // a bool, so a failure prints the line above, not both texts
  CHECK(page_matches_table);
}

TEST_CASE("the generated reference names every option, so a new one changes it") {
  // What the comparison above relies on: each option of each command appears in the text.
  const std::string text = reference();
  int options = 0;
  std::vector<CommandSpec> all = urpe::cli::command_table();
  for (const CommandSpec& c : std::vector<CommandSpec>(all)) all.insert(all.end(), c.subcommands.begin(), c.subcommands.end());
  for (const CommandSpec& c : all) {
    CHECK_MESSAGE(text.find("### urpe " + c.name + "\n") != std::string::npos, c.name);
    for (const OptionSpec& o : c.options) {
      ++options;
      CHECK_MESSAGE(text.find("| `--" + o.name) != std::string::npos, c.name << " --" << o.name);
    }
  }
  CHECK(options >= 60);
}

TEST_CASE("the README's command list names every command") {
  const std::string readme = read_file(fs::path(URPE_SOURCE_DIR) / "README.md");
  for (const CommandSpec& c : urpe::cli::command_table())
    CHECK_MESSAGE(readme.find("urpe " + c.name + " ") != std::string::npos, "README.md does not show `urpe " << c.name << "`");
}
