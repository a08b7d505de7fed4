// The layout's rules, checked on the sources (docs/architecture.md draws them):
//  1. Folders are the layers. A source file's layer is its top-level folder (base/io/json.h is in
//     base), with no exceptions, and a layer may include only itself and the layers it lists in
//     layers() below, every one of them lower in that bottom-up list: no include runs up a layer,
//     so a newcomer can read the project bottom-up and no low layer ever needs a high one.
//     Inside one layer, subfolders may include each other only in the acyclic order their
//     CMake libraries are linked in (CMakeLists.txt, urpe_upper_libraries: base/io ← base/plot ←
//     base/profile, base/dist alone; app/bench ← app/repro, app/analysis, app/cli on top), so a
//     reverse dependency there is a link error; train/ is one library (the loop reaches the
//     families through the registry and the families build on the loop).
//  2. Nothing outside train/families/ branches on a model family's name (`model == "txl"`): it
//     asks the family through the registry (train/families/model_family.h).
//  3. A folder whose subfolders hold code is a table of contents: at most 5 files at its root.
//  4. Configs are typed below the config boundary (train/config/run_settings.h draws it): outside
//     the boundary's files no code reads a config key by its name (`config.get_int("steps")`); it
//     takes the typed settings (RunSettings, a family's NAME_settings_from).
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "train/families/model_family.h"

namespace fs = std::filesystem;

namespace {

// The layers from the bottom up, one line per top-level folder: the layers each may include
// besides itself. "stb" is third_party/stb (included as "stb/…"), not a folder of the project.
struct Layer {
  std::string folder;
  std::set<std::string> may_include;
};
const std::vector<Layer>& layers() {
  static const std::vector<Layer> list = {
      {"stb", {}},
      {"tensor", {}},
      {"autograd", {"tensor"}},
      {"ops", {"tensor", "autograd"}},
      {"data", {"tensor"}},
      {"models", {"tensor", "autograd", "ops", "data"}},
      {"base", {"tensor", "stb"}},  // files, pictures, ranks, the profiler: they know no model
      {"train", {"tensor", "autograd", "ops", "data", "models", "base"}},
      {"app", {"tensor", "autograd", "ops", "data", "models", "base", "train"}},
  };
  return list;
}

// The layer of a source folder: its top-level folder ("train/families/txl" → "train"), or ""
// when that is not a layer.
std::string layer_of(const std::string& folder) {
  const std::string top = folder.substr(0, folder.find('/'));
  for (const Layer& layer : layers())
    if (layer.folder == top) return top;
  return "";
}

// "base/io/json.h" → "base/io"; "ops/matmul.h" → "ops".
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
  if (from == to) return "";
  for (const Layer& layer : layers())
    if (layer.folder == from && layer.may_include.count(to) == 1) return "";
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
  for (const Layer& layer : layers()) {
    if (layer.folder == "stb") continue;  // third_party's, not ours
    for (const auto& entry : fs::recursive_directory_iterator(root / layer.folder)) {
      if (!entry.is_regular_file() || !is_source(entry.path())) continue;
      files.emplace_back(entry.path(), fs::relative(entry.path().parent_path(), root).generic_string());
    }
  }
  return files;
}

// The folders under `root`/<layer> that have a subfolder holding source files and more than
// `most` files at their own root, each as "folder (N files)".
std::vector<std::string> crowded_roots(const fs::path& root, int most) {
  std::vector<std::string> crowded;
  const auto holds_sources = [](const fs::path& folder) {
    for (const auto& entry : fs::recursive_directory_iterator(folder))
      if (entry.is_regular_file() && is_source(entry.path())) return true;
    return false;
  };
  const auto visit = [&](const fs::path& folder) {
    int files = 0;
    bool has_code_below = false;
    for (const auto& entry : fs::directory_iterator(folder)) {
      if (entry.is_regular_file()) ++files;
      if (entry.is_directory() && holds_sources(entry.path())) has_code_below = true;
    }
    if (has_code_below && files > most)
      crowded.push_back(fs::relative(folder, root).generic_string() + " (" + std::to_string(files) + " files)");
  };
  for (const Layer& layer : layers()) {
    const fs::path top = root / layer.folder;
    if (!fs::is_directory(top)) continue;
    visit(top);
    for (const auto& entry : fs::recursive_directory_iterator(top))
      if (entry.is_directory()) visit(entry.path());
  }
  return crowded;
}


// ---- rule 4: string-keyed config reads below the config boundary ----

// How many string-keyed config reads a line holds: get_int/get_float/get_bool/get_string called
// with a literal key.
int string_keyed_reads(const std::string& line) {
  static const std::regex read(R"(\bget_(int|float|bool|string)\(\s*")");
  if (line.find("get_") == std::string::npos) return 0;  // the common case, fast
  return static_cast<int>(std::distance(std::sregex_iterator(line.begin(), line.end(), read), std::sregex_iterator()));
}

// The files that are the config boundary or above it (train/config/run_settings.h): they may read
// keys by name.
bool reads_keys_by_name(const std::string& folder, const std::string& file) {
  if (folder == "train/config") return true;  // the schema, the checks, RunSettings
  // A family's NAME_config.cpp: its keys, their checks and its typed settings.
  if (folder.rfind("train/families/", 0) == 0 && file.size() > 11 && file.compare(file.size() - 11, 11, "_config.cpp") == 0)
    return true;
  // Above the boundary: the commands build configs from the command line and the paper's grids.
  return folder == "app/cli" || folder == "app/repro";
}

// Known debt: files below the boundary that still read keys by name, with how many reads. The
// count must match exactly, so a new read fails and a removed one shrinks the list. Each entry is
// to be converted to the typed settings (and then deleted from here).
const std::map<std::string, int>& string_read_debt() {
  static const std::map<std::string, int> debt = {
  };
  return debt;
}

// Every file under `root`'s layers (outside the boundary) with string-keyed reads, and how many.
std::map<std::string, int> string_reads_below_boundary(const fs::path& root) {
  std::map<std::string, int> found;
  for (const Layer& layer : layers()) {
    if (layer.folder == "stb" || !fs::is_directory(root / layer.folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / layer.folder)) {
      if (!entry.is_regular_file() || !is_source(entry.path())) continue;
      const std::string folder = fs::relative(entry.path().parent_path(), root).generic_string();
      const std::string file = entry.path().filename().string();
      if (reads_keys_by_name(folder, file)) continue;
      std::ifstream in(entry.path());
      std::string line;
      int reads = 0;
      while (std::getline(in, line)) reads += string_keyed_reads(line);
      if (reads > 0) found[folder + "/" + file] = reads;
    }
  }
  return found;
}

}  // namespace

TEST_CASE("the layers are listed bottom-up: each includes only layers listed before it") {
  std::set<std::string> below;
  for (const Layer& layer : layers()) {
    for (const std::string& lower : layer.may_include)
      CHECK_MESSAGE(below.count(lower) == 1, layer.folder << " may include " << lower << ", which is not below it");
    below.insert(layer.folder);
  }
  // Every top-level folder with source files is a layer (but tests/ and third_party/).
  for (const auto& entry : fs::directory_iterator(URPE_SOURCE_DIR)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name[0] == '.' || name == "tests" || name == "third_party") continue;
    // a build directory or a Python environment made here is not the project's
    if (fs::exists(entry.path() / "CMakeCache.txt") || fs::exists(entry.path() / "pyvenv.cfg")) continue;
    bool sources = false;
    for (const auto& file : fs::recursive_directory_iterator(entry.path()))
      sources = sources || (file.is_regular_file() && is_source(file.path()));
    const bool has_layer = !layer_of(name).empty();
    CHECK_MESSAGE((has_layer || !sources), "top-level folder " << name << " holds C++ but is no layer");
  }
}

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

// Covers every folder of the layers that has a subfolder holding C++ sources (today base/,
// train/, train/families/ and app/): such a folder is a table of contents, its root keeps only
// what binds its subfolders together. Leaf folders (tensor/, ops/, models/, data/ and the others,
// whose code is all at their root; data/assets/ holds no code) are where the code lives and are
// exempt: their size is a matter of files a person reads in one sitting, not of this rule.
TEST_CASE("at most 5 files at the root of each source folder that has subfolders") {
  const std::vector<std::string> crowded = crowded_roots(URPE_SOURCE_DIR, 5);
  CHECK_MESSAGE(crowded.empty(), "group these folders' root files into subfolders: " << [&] {
    std::string list;
    for (const std::string& c : crowded) list += c + "; ";
    return list;
  }());
}

TEST_CASE("the rules are checked: an upward include, a family branch and a crowded root are reported") {
  // Each check above must be able to fail.
  CHECK(!upward_include("models", "train/loop/training_loop.h").empty());
  CHECK(!upward_include("ops", "models/encoder.h").empty());
  CHECK(!upward_include("data", "ops/matmul.h").empty());                         // data knows only tensors
  CHECK(!upward_include("base/io", "train/config/run_config.h").empty());
  CHECK(!upward_include("base/profile", "train/loop/training_loop.h").empty());  // the profiler knows no trainer
  CHECK(!upward_include("base/plot", "models/encoder.h").empty());
  CHECK(!upward_include("train/loop", "app/bench/process_memory.h").empty());   // bench sits on the core
  CHECK(!upward_include("train/families/txl", "app/cli/handlers.h").empty());
  CHECK(!upward_include("train/optim", "app/repro/table5.h").empty());
  CHECK(!upward_include("newfolder", "tensor/tensor.h").empty());               // every folder has a layer
  CHECK(upward_include("app/repro", "app/bench/process_memory.h").empty());
  CHECK(upward_include("app/cli", "app/bench/bench_step.h").empty());
  CHECK(upward_include("app/bench", "base/profile/op_recorder.h").empty());
  CHECK(upward_include("base/plot", "stb/stb_image_write.h").empty());
  CHECK(upward_include("train/families/graphormer", "train/loop/training_loop.h").empty());
  CHECK(upward_include("train/loop", "train/families/model_family.h").empty());
  CHECK(layer_of("train/families/txl") == "train");
  CHECK(layer_of("base/io") == "base");
  CHECK(layer_of("newfolder").empty());
  CHECK(family_branch("  if (config.get_string(\"model\") == \"txl\") {") == "txl");
  CHECK(family_branch("URPE_CHECK(model != \"graphormer\", ...)") == "graphormer");
  CHECK(family_branch("if (\"encoder\" == family.name)") == "encoder");
  CHECK(family_branch("s.add_choice(\"model\", model_families(), \"encoder\",").empty());
  CHECK(folder_of("app/cli/command_line.h") == "app/cli");

  // A made-up tree: app/ with 6 files beside a subfolder of code is crowded; the same beside a
  // subfolder of data (like data/assets/), or 5 files, is not.
  char dir_template[] = "/tmp/urpe_test_layout_XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  const fs::path root = dir_template;
  const auto touch = [](const fs::path& path) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << "// a file\n";
  };
  for (int i = 0; i < 6; ++i) touch(root / "data" / ("f" + std::to_string(i) + ".cpp"));
  touch(root / "data" / "assets" / "corpus.txt");
  for (int i = 0; i < 5; ++i) touch(root / "base" / ("f" + std::to_string(i) + ".h"));
  touch(root / "base" / "io" / "json.cpp");
  CHECK(crowded_roots(root, 5).empty());
  for (int i = 0; i < 6; ++i) touch(root / "app" / ("f" + std::to_string(i) + ".cpp"));
  touch(root / "app" / "cli" / "deeper" / "main.cpp");
  const std::vector<std::string> crowded = crowded_roots(root, 5);
  CHECK(crowded == std::vector<std::string>{"app (6 files)"});
  fs::remove_all(root);
}

TEST_CASE("no config key is read by name below the config boundary") {
  const std::map<std::string, int> found = string_reads_below_boundary(URPE_SOURCE_DIR);
  for (const auto& [file, reads] : found) {
    const auto debt = string_read_debt().find(file);
    CHECK_MESSAGE(debt != string_read_debt().end(),
                  file << " reads " << reads << " config key(s) by name (get_int(\"...\") and friends): take the typed "
                       << "settings (RunSettings, the family's NAME_settings_from; train/config/run_settings.h)");
    if (debt != string_read_debt().end())
      CHECK_MESSAGE(debt->second == reads, file << " reads " << reads << " config key(s) by name; the debt list in "
                                                << "tests/test_layout.cpp says " << debt->second << ": update it");
  }
  for (const auto& [file, reads] : string_read_debt())
    CHECK_MESSAGE(found.count(file) == 1, file << " is in the debt list but reads no key by name: delete its entry");
}

TEST_CASE("the config boundary rule is checked: a read below it is found") {
  CHECK(string_keyed_reads("  const int64_t steps = config.get_int(\"steps\");") == 1);
  CHECK(string_keyed_reads("c.get_string( \"pe\") + c.get_float(\"lr\")") == 2);
  CHECK(string_keyed_reads("config.get_int(key)") == 0);  // a key passed in: the checks' helpers
  CHECK(string_keyed_reads("budget_get_int(\"x\")") == 0);
  CHECK(reads_keys_by_name("train/config", "run_settings.cpp"));
  CHECK(reads_keys_by_name("train/families/txl", "txl_config.cpp"));
  CHECK(reads_keys_by_name("app/cli", "train.cpp"));
  CHECK(!reads_keys_by_name("train/families/txl", "txl_trainer.cpp"));
  CHECK(!reads_keys_by_name("train/loop", "training_loop.cpp"));
  CHECK(!reads_keys_by_name("app/analysis", "probe.cpp"));

  char dir_template[] = "/tmp/urpe_test_layout_reads_XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  const fs::path root = dir_template;
  const auto write = [](const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  };
  write(root / "train" / "loop" / "training_loop.cpp", "int64_t s = c.get_int(\"steps\");\nint64_t b = c.get_int(\"batch\");\n");
  write(root / "train" / "config" / "settings.cpp", "s.steps = c.get_int(\"steps\");\n");
  write(root / "train" / "families" / "toy" / "toy_config.cpp", "s.width = c.get_int(\"width\");\n");
  write(root / "train" / "families" / "toy" / "toy_trainer.cpp", "const int64_t w = settings.width;\n");
  const std::map<std::string, int> found = string_reads_below_boundary(root);
  CHECK(found == std::map<std::string, int>{{"train/loop/training_loop.cpp", 2}});
  fs::remove_all(root);
}
