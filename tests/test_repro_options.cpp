// What every `urpe repro` experiment takes besides its scale (app/repro/repro_overrides.h,
// molecule_grid.h, pretrain.h): --set reaching every run and results.md, the keys a grid sets
// itself refused, --tf32 and --grid checked before --out is claimed (nothing written on an error),
// the molecule grid's selection, and `urpe repro pretrain` end to end at tiny scale.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_util.h"
#include "doctest/doctest.h"
#include "scratch_dir.h"
#include "tensor/cuda_backend.h"
#include "tensor/error.h"
#include "base/io/json.h"
#include "base/io/run_dir.h"
#include "app/repro/molecule_grid.h"
#include "app/repro/pretrain.h"
#include "app/repro/repro_overrides.h"
#include "train/config/run_config.h"

using namespace urpe;

namespace {

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// `urpe repro ARGS --out DIR` fails with one line holding `expected`, and DIR is never created.
void check_refused(const std::string& arguments, const std::string& expected) {
  const std::string out = test::make_scratch_dir("repro_refused") + "/out";
  const test::CliResult r = test::run_urpe("repro " + arguments + " --out " + out);
  INFO("urpe repro " << arguments);
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK(lines(r.output) == 1);
  CHECK(r.output.find(expected) != std::string::npos);
  CHECK(!std::filesystem::exists(out));
}

// The toy molecules of test_graphormer_trainer: chains, alcohols, amines and phenyl chains.
std::string toy_molecules() {
  const std::string path = test::make_scratch_dir("grid_molecules") + "/toy.csv";
  std::ofstream csv(path);
  csv << "name,smiles,y\n";
  for (int k = 1; k <= 10; ++k) {
    const std::string chain(static_cast<size_t>(k), 'C');
    csv << "a" << k << "," << chain << "," << 0.3 * k << "\n"
        << "b" << k << "," << chain << "O," << 0.3 * k - 1.0 << "\n"
        << "c" << k << "," << chain << "N," << 0.3 * k + 0.5 << "\n"
        << "d" << k << ",c1ccccc1" << chain << "," << 0.2 * k + 1.0 << "\n";
  }
  return path;
}

// A run directory's resolved config (its config.txt).
Config run_config_of(const std::string& dir) {
  return config_from_text(read_text_file(dir + "/config.txt"), dir + "/config.txt");
}

ResultRow mae_row(const std::string& pe, const std::string& metric, double value) {
  ResultRow r;
  r.model = "graphormer";
  r.pe = pe;
  r.metric_name = metric;
  r.metric = value;
  return r;
}

}  // namespace

TEST_CASE("repro --set and --tf32: the results.md line and the command text") {
  ReproOverrides none;
  CHECK(overrides_markdown_line(none) == "Every run: the scale's settings (no --set); TF32 off (full FP32 GEMMs).\n");
  CHECK(overrides_command_text(none).empty());
  ReproOverrides some{{"attention=fused", "accum_steps=2"}, true};
  CHECK(overrides_markdown_line(some) == "Every run: `--set attention=fused` `--set accum_steps=2` after the scale's "
                                         "settings; TF32 tensor-core GEMMs on (`--tf32`).\n");
  CHECK(overrides_command_text(some) == " --set attention=fused --set accum_steps=2 --tf32");
  CHECK(override_key(" lr =1e-3") == "lr");
  CHECK_THROWS_WITH_AS(override_key("lr"), doctest::Contains("expected key=value"), Error);
  CHECK_THROWS_WITH_AS(refuse_owned_keys(some, {{"attention", "use --pes"}}, "synthetic"),
                       doctest::Contains("urpe repro synthetic: --set attention=fused: the experiment sets attention "
                                         "for each run itself; use --pes"),
                       Error);
}

TEST_CASE("repro --set reaches every run's config and is recorded in results.md and its command") {
  const std::string out = test::make_scratch_dir("repro_set") + "/out";
  const test::CliResult r = test::run_urpe(
      "repro synthetic --scale tiny --tasks pi --pes rpe,urpe --set steps=3 --set warmup=1 --set eval_every=3 "
      "--set valid_size=8 --set batch=4 --set attention=fused --out " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  for (const char* run : {"pi-V100-rpe-s1", "pi-V100-urpe-s1"}) {
    const Config config = run_config_of(out + "/runs/" + run);
    CHECK(config.get_string("attention") == "fused");
    CHECK(config.get_int("steps") == 3);
  }
  const std::string md = read_text_file(out + "/results.md");
  INFO(md);
  CHECK(md.find("Every run: `--set steps=3` `--set warmup=1` `--set eval_every=3` `--set valid_size=8` `--set batch=4` "
                "`--set attention=fused` after the scale's settings; TF32 off") != std::string::npos);
  CHECK(md.find("--pes rpe,urpe --set steps=3 --set warmup=1") != std::string::npos);  // the command line
}

TEST_CASE("repro options that cannot run are one line each, and --out is never created") {
  check_refused("synthetic --set atention=fused", "did you mean 'attention'");
  check_refused("synthetic --set steps=0", "steps");
  check_refused("synthetic --set pe=ape", "sets pe for each run itself; use --pes");
  check_refused("synthetic --set vocab=10", "sets vocab for each run itself");
  check_refused("lm --set pe=rpe", "it compares rpe with urpe");
  check_refused("lm --scale paper --set layers=2", "Table 4");
  check_refused("lm --set corpus=/nonexistent/wikitext", "/nonexistent/wikitext");
  check_refused("molecules --set seed=3", "use --seeds");
  check_refused("pretrain --set task=pi", "pre-training is task = mlm");
  check_refused("pretrain --set corpus=/nonexistent/corpus", "/nonexistent/corpus");
  check_refused("table5 --set batch=2", "table5 takes --batch");
  check_refused("synthetic --tf32", "--tf32 is a mode of the GPU's tensor cores");
  check_refused("pretrain --set device=cuda --device cpu", "name different devices");
  check_refused("synthetic --grid paper", "--grid and --preset apply to 'urpe repro molecules' only");
  check_refused("molecules --grid paper --preset graphormer-pcqm4m", "gives no set to select from");
  check_refused("molecules --grid lr=1e-3,", "an empty value");
  check_refused("molecules --grid pe=none,urpe", "sets pe per run itself");
  check_refused("molecules --grid lr=1e-3 --grid lr=2e-3", "--grid names lr twice");
  check_refused("molecules --set lr=1e-3 --grid lr=1e-3,2e-3", "both set lr");
  check_refused("molecules --grid batch=0,8", "batch");  // every setting's config, before --out
  check_refused("molecules --preset pi-paper", "not a Graphormer preset");
  if (cuda::device_count() == 0)  // no GPU here: refused before anything is written, for every experiment
    for (const char* experiment : {"synthetic", "lm", "molecules", "pretrain", "table5"})
      check_refused(std::string(experiment) + " --set device=cuda", "urpe repro " + std::string(experiment) + " --device cuda");
}

TEST_CASE("molecule grid: the setting with the lowest mean validation MAE is selected per model") {
  std::vector<GridPointResult> points(3);
  points[0].rows = {mae_row("none", "valid_mae", 0.5), mae_row("none", "valid_mae", 0.7), mae_row("urpe", "valid_mae", 0.2)};
  points[1].rows = {mae_row("none", "valid_mae", 0.55), mae_row("none", "valid_mae", 0.55), mae_row("urpe", "valid_mae", 0.3)};
  points[2].rows = {mae_row("none", "test_mae", 0.01), mae_row("urpe", "valid_mae", 0.2)};
  CHECK(selected_point(points, "none") == 1);  // mean 0.55 < 0.6; a test MAE never selects
  CHECK(selected_point(points, "urpe") == 0);  // ties keep the first
  CHECK(selected_point(points, "alibi") == -1);
}

TEST_CASE("repro molecules --grid: every setting runs, each model's selection goes beside the paper") {
  const std::string out = test::make_scratch_dir("repro_grid") + "/out";
  MoleculeRepro repro = molecule_repro_for_scale("tiny");
  repro.overrides = {"dataset=" + toy_molecules(), "target_column=y", "layers=1", "d_model=8", "d_ffn=8", "heads=2",
                     "multi_hop_max_dist=3", "max_spd=6", "batch=8", "steps=4", "warmup=1", "eval_every=2",
                     "eval_batch=8"};
  const std::vector<GridAxis> axes = parse_grid_options({"lr=3e-3,1e-2"}, repro.preset);
  const std::vector<GridPointResult> points = run_molecule_grid(repro, axes, out);
  REQUIRE(points.size() == 2);
  for (const GridPointResult& p : points) {
    CHECK(p.rows.size() == 6);  // 2 models × (valid, test) + the mean predictor's two
    CHECK(std::filesystem::exists(p.dir + "/results.md"));
    for (const char* run : {"graphormer-s1", "graphormer-urpe-s1"})
      CHECK(run_config_of(p.dir + "/runs/" + run).get_float("lr") == doctest::Approx(std::stod(p.point[0].substr(3))));
  }
  CHECK(points[0].dir == out + "/grid/lr3e-3");
  const std::string md = read_text_file(out + "/results.md");
  INFO(md);
  CHECK(md.find("Grid: lr ∈ {3e-3, 1e-2} (2 settings") != std::string::npos);
  CHECK(md.find("**(selected)**") != std::string::npos);
  CHECK(md.find("| test MAE (paper Table 2: ZINC subset) | 0.122 → 0.086") != std::string::npos);
  CHECK(md.find("| test MAE (paper Table 2: ZINC full) | 0.052 → 0.028") != std::string::npos);
  CHECK(md.find("| valid MAE (paper Table 3: PCQM4M) | 0.1264 → 0.1238") != std::string::npos);
  // results.json: every run's rows with their setting; the selected setting's rows marked, per model.
  const json::Value rows = json::read_file(out + "/results.json");
  REQUIRE(rows.items().size() == 12);
  int selected = 0;
  for (const json::Value& row : rows.items()) {
    CHECK(row.at("grid").as_string().rfind("lr=", 0) == 0);
    selected += row.at("selected").as_bool();
  }
  CHECK(selected == 4);  // valid and test of each model's selected setting
  CHECK(std::filesystem::exists(out + "/plots/grid.png"));
}

TEST_CASE("`urpe repro pretrain` end to end at tiny scale: three encodings, the paper's C.4 losses beside") {
  const std::string out = test::make_scratch_dir("repro_pretrain") + "/out";
  const test::CliResult r = test::run_urpe(
      "repro pretrain --scale tiny --set seq_len=32 --set steps=8 --set warmup=2 --set eval_every=4 "
      "--set valid_size=16 --out " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  const std::string md = read_text_file(out + "/results.md");
  INFO(md);
  for (const char* text : {"# Pre-training: APE+RPE vs RPE vs URPE (paper Appendix C.4)", "| APE+RPE (`ape+rpe`) |",
                           "| RPE (`rpe`) |", "| URPE (`urpe`) |", "| 1.86 |", "| 1.94 |", "| 1.87 |",
                           "paper APE+RPE 1.86 < URPE 1.87 < RPE 1.94",
                           "`--set seq_len=32` `--set steps=8`", "windows of 32 tokens, 5 positions masked",
                           "| valid MLM loss (C.4) | 1.94 → 1.87 | -3.6% |"}) {
    INFO(text);
    CHECK(md.find(text) != std::string::npos);
  }
  const json::Value rows = json::read_file(out + "/results.json");
  REQUIRE(rows.items().size() == 9);  // 3 encodings × (valid loss, test loss, valid accuracy)
  for (const json::Value& row : rows.items()) {
    CHECK(row.at("experiment").as_string() == "pretrain");
    CHECK(row.at("steps").as_number() == 8);
  }
  for (const char* pe : {"ape+rpe", "rpe", "urpe"}) {
    const Config config = run_config_of(out + "/runs/" + std::string(pe) + "-s1");
    CHECK(config.get_string("pe") == pe);
    CHECK(config.get_string("task") == "mlm");
    CHECK(config.get_int("seq_len") == 32);
  }
  for (const char* plot : {"plots/curves.png", "plots/loss.png"}) CHECK(std::filesystem::exists(out + "/" + plot));
  CHECK(paper_pretrain_loss("ape+rpe") == 1.86);
  CHECK(paper_pretrain_loss("rope") < 0);
}

// ---- paper scale: stand-in data refused, --dry-run (docs/reproduce.md#every-value-and-its-source) ----

namespace {
// The first line of `text` starting with `start` ("" when none).
std::string line_of(const std::string& text, const std::string& start) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(start, 0) == 0) return line;
  return "";
}
}  // namespace

TEST_CASE("repro --scale paper without the paper's dataset is refused, naming it and docs/data.md's section") {
  check_refused("molecules --scale paper", "docs/data.md#zinc-benchmarking-gnns-layout");
  check_refused("molecules --scale paper", "--data embedded to train on urpe's stand-in anyway");
  check_refused("molecules --scale paper --preset graphormer-slim-full", "ZINC full");
  check_refused("molecules --scale paper --preset graphormer-pcqm4m", "docs/data.md#pcqm4m");
  check_refused("lm --scale paper", "WikiText-103 (docs/data.md#wikitext-103)");
  check_refused("lm --scale paper", "--corpus embedded");
  check_refused("pretrain --scale paper", "docs/data.md#pre-training-corpus-appendix-c4");
  // The owned keys are still refused first; tiny and small keep the embedded stand-ins.
  check_refused("lm --scale paper --set layers=2", "Table 4");
  const test::CliResult tiny = test::run_urpe("repro molecules --scale tiny --dry-run");
  CHECK(tiny.code == 0);
}

TEST_CASE("repro --dry-run prints every run's config with its sources and writes nothing") {
  const std::string out = test::make_scratch_dir("repro_dry_run") + "/out";
  const test::CliResult synthetic = test::run_urpe("repro synthetic --scale paper --dry-run --out " + out);
  INFO(synthetic.output);
  REQUIRE(synthetic.code == 0);
  CHECK(synthetic.output.find("urpe repro synthetic --scale paper --dry-run: 18 runs") != std::string::npos);
  CHECK(synthetic.output.find("run 1/18 pi-V10-none-s1 (preset pi-paper):") != std::string::npos);
  CHECK(synthetic.output.find("paper C.1: peak learning rate 7e-5") != std::string::npos);
  CHECK(synthetic.output.find("script simulate_URPE.sh: --rel-pos-unique") != std::string::npos);
  CHECK(synthetic.output.find("run 2/18 pi-V10-rpe-s1: as run 1 except pe = rpe (repro synthetic: one run per "
                              "encoding") != std::string::npos);
  CHECK(!std::filesystem::exists(out));
  // Every key line of run 1 has a value and a source: as many lines as the encoder family has keys.
  const Config pi = resolve_config("pi-paper", "", {});
  size_t keys = 0;
  std::istringstream text(synthetic.output);
  for (std::string line; std::getline(text, line);)
    if (line.rfind("  ", 0) == 0 && line.find(" = ") != std::string::npos) ++keys;
  CHECK(keys == pi.schema().keys().size());

  const test::CliResult molecules = test::run_urpe("repro molecules --scale paper --data embedded --dry-run");
  INFO(molecules.output);
  REQUIRE(molecules.code == 0);
  CHECK(molecules.output.find("8 runs") != std::string::npos);
  CHECK(molecules.output.find("max_spd") != std::string::npos);
  CHECK(line_of(molecules.output, "  dataset ").find("= embedded") != std::string::npos);
  CHECK(line_of(molecules.output, "  dataset ").find("repro molecules: --data") != std::string::npos);
  const test::CliResult lm = test::run_urpe("repro lm --scale paper --corpus embedded --dry-run");
  CHECK(lm.code == 0);
  CHECK(lm.output.find("run 6/6 L16-urpe-s1: as run 1 except") != std::string::npos);
  const test::CliResult pretrain = test::run_urpe("repro pretrain --scale paper --corpus embedded --dry-run");
  CHECK(pretrain.code == 0);
  CHECK(pretrain.output.find("script optimization.py: clip_by_global_norm") != std::string::npos);
  const test::CliResult table5 = test::run_urpe("repro table5 --dry-run --batch 4");
  CHECK(table5.code == 0);
  CHECK(table5.output.find("--batch (yours)") != std::string::npos);
  CHECK(table5.output.find("paper §5.4: 12 layers") != std::string::npos);
  // urpe train and urpe profile take it too.
  const test::CliResult train = test::run_urpe("train --preset graphormer-slim --set lr=5e-4 --dry-run");
  CHECK(train.code == 0);
  CHECK(train.output.find("--set lr=5e-4 (yours)") != std::string::npos);
  CHECK(train.output.find("urpe: C.3.1 prints 32 heads") != std::string::npos);
  const test::CliResult profile = test::run_urpe("profile --preset pi-paper --steps 2:3 --dry-run");
  CHECK(profile.code == 0);
  CHECK(profile.output.find("profile: trains the window's last step") != std::string::npos);
}

TEST_CASE("repro --scale paper --data embedded trains on the stand-in and results.md says so first") {
  const std::string out = test::make_scratch_dir("repro_stand_in") + "/out";
  const test::CliResult r = test::run_urpe(
      "repro molecules --scale paper --data embedded --seeds 1 --set steps=2 --set warmup=1 --set batch=4 "
      "--set eval_every=2 --set layers=1 --set eval_batch=256 --out " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  const std::string md = read_text_file(out + "/results.md");
  CHECK(md.rfind("**Stand-in data: these paper-scale runs trained on the embedded molecules", 0) == 0);
  CHECK(md.find("## Every value and its source") != std::string::npos);
  CHECK(md.find("| layers | `1` | --set layers=1 (yours) |") != std::string::npos);
  CHECK(md.find("| heads | `8` | urpe: C.3.1 prints 32 heads") != std::string::npos);
  CHECK(md.find("- `graphormer-urpe-s1`: pe = urpe") != std::string::npos);
}
