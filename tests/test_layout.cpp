// The layout's rules, checked on the sources (docs/architecture.md draws them):
//  1. Dependencies run one way. Every source folder belongs to one layer, and a layer may include
//     only the layers below it, so a newcomer can read the project bottom-up and no low layer ever
//     needs a high one. From the bottom:
//       tensor ← autograd ← ops ← models ← train (its core: loop/, optim/, config/, families/)
//       ← bench ← repro ← cli, with data beside autograd (tensor only), io, plot, dist and
//       profile below the core (they know no trainer) and analysis on the core.
//     The per-folder libraries make most breaches a link error too; this test names the file and
//     the include.
//  2. Nothing outside train/families/ branches on a model family's name (`model == "txl"`): it
//     asks the family through the registry (train/families/model_family.h).
//  3. train/'s root holds at most 10 files: the rest is grouped by concern.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "train/families/model_family.h"

namespace fs = std::filesystem;

namespace {

// The layers from the bottom up; each may include itself and the layers it lists.
const std::map<std::string, std::set<std::string>>& allowed_layers() {
  static const std::map<std::string, std::set<std::string>> rules = [] {
    const std::set<std::string> core_below = {"tensor", "autograd", "ops", "data", "models",
                                              "io", "plot", "dist", "profile"};
    std::map<std::string, std::set<std::string>> r = {
        {"tensor", {}},
        {"autograd", {"tensor"}},
        {"ops", {"tensor", "autograd"}},
        {"data", {"tensor"}},
        {"models", {"tensor", "autograd", "ops", "data"}},
        {"io", {"tensor"}},
        {"plot", {"tensor", "io", "stb"}},
        {"dist", {"tensor"}},
        {"profile", {"tensor", "io", "plot"}},
        {"train", core_below},
    };
    r["bench"] = core_below;
    r["bench"].insert("train");
    r["analysis"] = r["bench"];  // the theory commands read the core's models and runs
    r["repro"] = r["bench"];
    r["repro"].insert("bench");  // the process's memory, as the benchmarks report it
    r["cli"] = r["repro"];
    r["cli"].insert({"analysis", "repro"});
    return r;
  }();
  return rules;
}

// The layer of a source folder ("train/families/txl" → "train"); "" when it has none.
std::string layer_of(const std::string& folder) {
  static const std::map<std::string, std::string> folders = {
      {"tensor", "tensor"},         {"autograd", "autograd"},     {"ops", "ops"},
      {"data", "data"},             {"models", "models"},         {"train/io", "io"},
      {"train/plot", "plot"},       {"train/dist", "dist"},       {"train/profile", "profile"},
      {"train", "train"},           {"train/loop", "train"},      {"train/optim", "train"},
      {"train/config", "train"},    {"train/families", "train"},  {"bench", "bench"},
      {"train/repro", "repro"},     {"train/analysis", "analysis"}, {"train/cli", "cli"},
      {"stb", "stb"},
  };
  const auto found = folders.find(folder);
  if (found != folders.end()) return found->second;
  if (folder.rfind("train/families/", 0) == 0) return "train";  // one folder per family
  return "";
}

// "train/io/json.h" → "train/io"; "ops/matmul.h" → "ops".
std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// Why `from_folder` may not include `target` (a path as written in #include), or "" when it may.
std::string upward_include(const std::string& from_folder, const std::string& target) {
  const std::string to_folder = folder_of(target);
  if (to_folder.empty()) return "";  // a file beside it
  const std::string from = layer_of(from_folder), to = layer_of(to_folder);
  if (from.empty()) return "folder " + from_folder + " belongs to no layer (add it to tests/test_layout.cpp)";
  if (to.empty()) return to_folder + " belongs to no layer";
  if (from == to || allowed_layers().at(from).count(to) == 1) return "";
  return from_folder + " (layer " + from + ") may not depend on " + to_folder + " (layer " + to + ")";
}

// A comparison of a string with a family's name ("model == \"txl\"", "\"txl\" != m"), or "".
std::string family_branch(const std::string& line) {
  static const std::vector<std::pair<std::string, std::regex>> branches = [] {
    std::vector<std::pair<std::string, std::regex>> list;
    for (const urpe::ModelFamily& family : urpe::model_family_table()) {
      const std::string name = "\"" + family.name + "\"";
      list.emplace_back(family.name, std::regex("(==|!=)\\s*" + name + "|" + name + "\\s*(==|!=)"));
    }
    return list;
  }();
  if (line.find('"') == std::string::npos || line.find('=') == std::string::npos) return "";  // the common case, fast
  for (const auto& [name, branch] : branches)
    if (std::regex_search(line, branch)) return name;
  return "";
}

bool is_source(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".cuh";
}

// Every source file of the layered folders, with its folder relative to the root.
std::vector<std::pair<fs::path, std::string>> layered_sources() {
  const fs::path root = URPE_SOURCE_DIR;
  std::vector<std::pair<fs::path, std::string>> files;
  for (const char* top : {"tensor", "autograd", "ops", "data", "models", "train", "bench"})
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      if (!entry.is_regular_file() || !is_source(entry.path())) continue;
      files.emplace_back(entry.path(), fs::relative(entry.path().parent_path(), root).generic_string());
    }
  return files;
}

}  // namespace

TEST_CASE("every #include points down the layers") {
  const std::regex include_line(R"re(^\s*#\s*include\s+"([^"]+)")re");
  int files = 0;
  for (const auto& [path, folder] : layered_sources()) {
    ++files;
    std::ifstream in(path);
    std::string line;
    int line_number = 0;
    while (std::getline(in, line)) {
      ++line_number;
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string why = upward_include(folder, m[1].str());
      CHECK_MESSAGE(why.empty(), folder << "/" << path.filename().string() << ":" << line_number << " includes \""
                                        << m[1].str() << "\": " << why);
    }
  }
  CHECK(files > 200);  // the walk really read the sources
}

TEST_CASE("nothing outside train/families/ branches on a family's name") {
  REQUIRE(urpe::model_family_table().size() >= 3);
  int files = 0;
  for (const auto& [path, folder] : layered_sources()) {
    if (folder == "train/families" || folder.rfind("train/families/", 0) == 0) continue;
    ++files;
    std::ifstream in(path);
    std::string line;
    int line_number = 0;
    while (std::getline(in, line)) {
      ++line_number;
      const std::string family = family_branch(line);
      CHECK_MESSAGE(family.empty(), folder << "/" << path.filename().string() << ":" << line_number
                                           << " compares with the family name \"" << family << "\": ask the family "
                                           << "through the registry (train/families/model_family.h) instead");
    }
  }
  CHECK(files > 150);
}

TEST_CASE("train/'s root holds at most 10 files") {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(URPE_SOURCE_DIR) / "train"))
    files += entry.is_regular_file();
  CHECK(files <= 10);
}

TEST_CASE("the rules are checked: an upward include and a family branch are reported") {
  // Each check above must be able to fail.
  CHECK(!upward_include("models", "train/loop/training_loop.h").empty());
  CHECK(!upward_include("ops", "models/encoder.h").empty());
  CHECK(!upward_include("train/io", "train/config/run_config.h").empty());
  CHECK(!upward_include("train/loop", "bench/process_memory.h").empty());  // bench sits on the core
  CHECK(!upward_include("train/families/txl", "train/cli/handlers.h").empty());
  CHECK(!upward_include("bench", "train/cli/handlers.h").empty());
  CHECK(!upward_include("bench", "train/repro/table5.h").empty());
  CHECK(!upward_include("train/analysis", "train/repro/lm.h").empty());
  CHECK(!upward_include("train/profile", "train/loop/training_loop.h").empty());  // the profiler knows no trainer
  CHECK(!upward_include("train/newfolder", "tensor/tensor.h").empty());           // every folder has a layer
  CHECK(upward_include("train/repro", "bench/process_memory.h").empty());
  CHECK(upward_include("train/cli", "bench/bench_step.h").empty());
  CHECK(upward_include("train/families/graphormer", "train/loop/training_loop.h").empty());
  CHECK(upward_include("train/loop", "train/families/model_family.h").empty());
  CHECK(family_branch("  if (config.get_string(\"model\") == \"txl\") {") == "txl");
  CHECK(family_branch("URPE_CHECK(model != \"graphormer\", ...)") == "graphormer");
  CHECK(family_branch("if (\"encoder\" == family.name)") == "encoder");
  CHECK(family_branch("s.add_choice(\"model\", model_families(), \"encoder\",").empty());
  CHECK(folder_of("train/cli/command_line.h") == "train/cli");
}
