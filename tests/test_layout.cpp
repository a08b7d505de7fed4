// The layout's one rule, checked on the sources: dependencies run one way. Each folder may
// include only the folders below it (README "The engine"), so a newcomer can read the project
// bottom-up and no low layer ever needs a high one. The per-folder libraries make most breaches
// a link error too; this test names the file and the include.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "doctest/doctest.h"

namespace fs = std::filesystem;

namespace {

// Folder → the folders its files may include (itself is always allowed).
const std::map<std::string, std::set<std::string>>& allowed_includes() {
  static const std::map<std::string, std::set<std::string>> rules = {
      {"tensor", {}},
      {"autograd", {"tensor"}},
      {"ops", {"tensor", "autograd"}},
      {"data", {"tensor"}},
      {"models", {"tensor", "autograd", "ops", "data"}},
      {"train/io", {"tensor"}},
      {"train/plot", {"tensor", "train/io", "stb"}},
      {"train/dist", {"tensor"}},
      {"train/profile", {"tensor", "train/io", "train/plot"}},
      {"train",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer"}},
      {"train/loop",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer"}},
      {"train/optim",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer"}},
      {"train/config",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer"}},
      {"train/families",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer"}},
      {"train/families/encoder",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer"}},
      {"train/families/txl",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer"}},
      {"train/families/graphormer",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer"}},
      {"bench",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer"}},
      {"train/repro",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer", "bench"}},
      {"train/analysis",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer"}},
      {"train/cli",
       {"tensor", "autograd", "ops", "data", "models", "train/io", "train/plot", "train/dist", "train/profile", "train", "train/loop", "train/optim", "train/config", "train/families", "train/families/encoder", "train/families/txl", "train/families/graphormer",
        "bench", "train/repro", "train/analysis"}},
  };
  return rules;
}

// "train/io/json.h" → "train/io"; "ops/matmul.h" → "ops".
std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

}  // namespace

TEST_CASE("every #include points down the layers") {
  const fs::path root = URPE_SOURCE_DIR;
  const std::regex include_line(R"re(^\s*#\s*include\s+"([^"]+)")re");
  int files = 0;
  for (const auto& [folder, allowed] : allowed_includes()) {
    REQUIRE_MESSAGE(fs::is_directory(root / folder), "folder " << folder << " is missing");
    for (const auto& entry : fs::directory_iterator(root / folder)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh") continue;
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      int line_number = 0;
      while (std::getline(in, line)) {
        ++line_number;
        std::smatch m;
        if (!std::regex_search(line, m, include_line)) continue;
        const std::string target = folder_of(m[1].str());
        if (target.empty() || target == folder) continue;
        CHECK_MESSAGE(allowed.count(target) == 1, folder << "/" << entry.path().filename().string() << ":"
                                                         << line_number << " includes \"" << m[1].str()
                                                         << "\": " << folder << " may not depend on " << target);
      }
    }
  }
  CHECK(files > 100);  // the walk really read the sources
}

TEST_CASE("the rule is checked: an upward include is reported") {
  // The check above must be able to fail: a models file including the trainer is refused.
  const auto& rules = allowed_includes();
  CHECK(rules.at("models").count("train") == 0);
  CHECK(rules.at("train/io").count("train") == 0);
  CHECK(rules.at("bench").count("train/cli") == 0);
  CHECK(rules.at("train/analysis").count("train/cli") == 0);
  CHECK(rules.at("train/analysis").count("train/repro") == 0);
  CHECK(rules.at("train/dist").count("train") == 0);
  CHECK(rules.at("train/profile").count("train") == 0);  // the profiler knows no trainer
  CHECK(folder_of("train/cli/command_line.h") == "train/cli");
}
