// docs/architecture.md#add-a-family, followed to the letter: the toy family's folder
// (tests/toy_family/train/families/toy/: keys and typed settings, memory estimate, trainer and
// plots), the page's own toy_family.cpp code block and its two registry lines (put into a copy of
// train/families/registry.cpp by tests/toy_family/recipe.cmake) build into this suite. It checks
// what the page promises: `model = toy` is a key value, `urpe train --help` lists toy's keys,
// `urpe train`, `urpe eval` and `urpe plot` run it, its memory is estimated, its values checked.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "app/cli/command_line.h"
#include "base/io/run_dir.h"
#include "test_util.h"
#include "train/config/run_config.h"
#include "train/families/model_family.h"

using namespace urpe;

namespace {

// `urpe ARGS...` in this process (the toy family is registered here, not in the urpe binary):
// its exit code and what it printed on stdout (fd 1 pointed at a file meanwhile, then put back).
struct Ran {
  int code = -1;
  std::string output;
};
Ran urpe_here(const std::string& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "urpe");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string capture = dir + "/stdout.txt";
  std::fflush(stdout);
  const int saved = dup(1);
  REQUIRE(saved >= 0);
  std::FILE* file = std::fopen(capture.c_str(), "w");
  REQUIRE(file != nullptr);
  dup2(fileno(file), 1);
  struct Restore {
    int saved;
    std::FILE* file;
    ~Restore() {
      std::fflush(stdout);
      dup2(saved, 1);
      close(saved);
      std::fclose(file);
    }
  };
  Ran r;
  {
    const Restore restore{saved, file};
    r.code = cli::run(static_cast<int>(args.size()), argv.data());
  }
  std::ifstream in(capture);
  r.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return r;
}

}  // namespace

TEST_CASE("the family recipe: the toy family is registered by its one table line") {
  CHECK(is_model_family("toy"));
  CHECK(model_family_table().back().name == "toy");
  const ModelFamily& toy = model_family("toy");
  const bool analysed = toy.analysed_model != nullptr;
  CHECK_FALSE(analysed);
  CHECK(toy.not_analysed_because.find("toy run") != std::string::npos);
  const ConfigSchema& schema = schema_for_model("toy");
  REQUIRE(schema.find("width") != nullptr);
  CHECK(schema.find("d_model") == nullptr);  // another family's key is not toy's
  CHECK(run_config_help().find("width") != std::string::npos);
}

TEST_CASE("the family recipe: toy's values are checked and its memory estimated from its keys") {
  CHECK_THROWS_WITH_AS(resolve_config("", "", {"model=toy", "width=0"}), doctest::Contains("width"), Error);
  CHECK_THROWS_WITH_AS(resolve_config("", "", {"model=toy", "d_model=8"}), doctest::Contains("d_model"), Error);
  const Config config = resolve_config("", "", {"model=toy", "width=6", "batch=10"});
  const MemoryEstimate e = model_family("toy").estimate_memory(config);
  CHECK(e.parameter_count() == 7.0);  // six weights and the bias
  REQUIRE(e.largest_activation() != nullptr);
  CHECK(e.largest_activation()->count() == 60.0);
}

TEST_CASE("the family recipe: urpe train, eval and plot run the toy family") {
  const test::TempDir temp("toy_family");
  REQUIRE(!temp.path.empty());
  const std::string dir = temp.path, config = dir + "/toy.txt", out = dir + "/run";
  {
    std::ofstream f(config);
    f << "model = toy\nwidth = 3\nsteps = 60\nbatch = 16\nlr = 0.05\nwarmup = 0\neval_every = 20\nseed = 4\n";
  }
  const Ran trained = urpe_here(dir, {"train", "--config", config, "--out", out, "--quiet"});
  INFO(trained.output);
  REQUIRE(trained.code == 0);
  CHECK(trained.output.find("toy none, valid loss") != std::string::npos);
  for (const char* file : {"config.txt", "metrics.csv", "results.json", "model.safetensors", "model.best.safetensors",
                           "plots/loss.png"})
    CHECK_MESSAGE(std::filesystem::exists(out + "/" + file), file);
  // It learned: the last validation error is well under the first.
  const std::vector<MetricsRow> rows = read_metrics(out + "/metrics.csv");
  std::vector<double> valid;
  for (const MetricsRow& r : rows)
    if (r.split == "valid") valid.push_back(r.loss);
  REQUIRE(valid.size() >= 2);
  CHECK(valid.back() < 0.5 * valid.front());

  const Ran evaluated = urpe_here(dir, {"eval", "--run", out, "--split", "test"});
  INFO(evaluated.output);
  REQUIRE(evaluated.code == 0);
  CHECK(evaluated.output.find("test loss") != std::string::npos);

  std::filesystem::remove(out + "/plots/loss.png");
  const Ran plotted = urpe_here(dir, {"plot", "--run", out});
  INFO(plotted.output);
  CHECK(plotted.code == 0);
  CHECK(std::filesystem::exists(out + "/plots/loss.png"));
}
