// `urpe analyze --run DIR | --compare DIR... --out OUT`: where position lives in a trained model's
// hidden states (app/analysis/analyze_run.h). This file only turns options into calls, checks
// the sources before the work starts, and says where the files went.
#include <cstdio>

#include "tensor/error.h"
#include "app/analysis/analysis_model.h"
#include "app/analysis/analyze_files.h"
#include "app/analysis/analyze_run.h"
#include "train/loop/checkpoint.h"
#include "app/cli/handlers.h"
#include "train/config/run_config.h"
#include "train/families/model_family.h"
#include "base/io/run_dir.h"
#include "base/io/run_lock.h"

namespace urpe::cli {

namespace {

const std::string kCommand = "urpe analyze";

// A family without a token model to analyse (Graphormer) gets its own reason rather than the
// generic family error.
void refuse_unanalysable(const std::string& dir) {
  const std::string checkpoint = join_path(dir, "model.safetensors");
  if (!path_exists(checkpoint)) return;  // load_run_model names what is missing
  const Config config = config_from_text(read_checkpoint_info(checkpoint).config_text, checkpoint + " (config)");
  const ModelFamily& family = family_of(config);
  std::string readable;
  for (const std::string& name : analyze_families())
    readable += (readable.empty() ? "" : name == analyze_families().back() ? " and " : ", ") + name;
  URPE_CHECK(family.analysed_model != nullptr,
             kCommand << ": '" << dir << "' " << family.not_analysed_because << "; analyze reads " << readable << " runs");
}

RunAnalysis analyze_dir(const std::string& dir, const AnalyzeOptions& options) {
  refuse_unanalysable(dir);
  return analyze_run(load_run_model(dir, kCommand, analyze_families()), options);
}

// A --compare source: an analyze output (analysis.json), a run directory, or a repro directory.
std::vector<RunAnalysis> compare_source(const std::string& dir, const AnalyzeOptions& options) {
  URPE_CHECK(path_exists(dir), kCommand << ": '" << dir << "' does not exist");
  const std::string saved = join_path(dir, "analysis.json");
  if (path_exists(saved)) return analysis_from_json(json::read_file(saved), saved);
  if (path_exists(join_path(dir, "model.safetensors"))) return {analyze_dir(dir, options)};
  URPE_CHECK(is_directory(join_path(dir, "runs")),
             kCommand << ": '" << dir << "' holds no analysis.json, model.safetensors or runs/ folder (expected an "
                      << "'urpe analyze' output, a run directory or a repro directory)");
  std::vector<RunAnalysis> runs;
  for (const std::string& run : repro_run_dirs(dir, kCommand)) runs.push_back(analyze_dir(run, options));
  return runs;
}

}  // namespace

int run_analyze(const Args& args) {
  const bool compare = args.has("compare");
  URPE_CHECK(compare != args.has("run"), kCommand << ": give either --run DIR or --compare DIR... (see 'urpe analyze --help')");
  URPE_CHECK(compare || args.positional.empty(),
             kCommand << ": unexpected argument '" << args.positional.front() << "' (only --compare takes several directories)");
  URPE_CHECK(args.has("out"), kCommand << ": --out DIR is required");
  AnalyzeOptions options;
  options.contexts = args.get_int("contexts", options.contexts);
  options.split = args.get("split", options.split);
  options.seed = static_cast<uint64_t>(args.get_int("seed", 1));
  options.data = args.get("data", options.data);
  URPE_CHECK(options.data == "split" || options.data == "random",
             kCommand << ": --data must be split or random, got '" << options.data << "'");
  if (args.has("layers")) options.layers = parse_layer_list(args.get("layers"), kCommand + ": --layers");
  options.keep_hidden = args.has("save-hidden");
  URPE_CHECK(options.split == "train" || options.split == "valid" || options.split == "test",
             kCommand << ": --split must be train, valid or test, got '" << options.split << "'");
  const std::string solver = args.get("solver", have_lapack() ? "lapack" : "jacobi");
  URPE_CHECK(solver == "lapack" || solver == "jacobi", kCommand << ": --solver must be lapack or jacobi, got '" << solver << "'");
  URPE_CHECK(solver == "jacobi" || have_lapack(),
             kCommand << ": --solver lapack: this build has no LAPACK (built without OpenBLAS); use --solver jacobi");
  options.solver = solver == "lapack" ? EigenSolver::lapack : EigenSolver::jacobi;

  const std::string out = args.get("out");
  const std::string json_path = join_path(out, "analysis.json"), md_path = join_path(out, "analysis.md");
  URPE_CHECK(args.has("overwrite") ||
                 (!path_exists(json_path) && !path_exists(md_path) && !path_exists(join_path(out, "decomposition.safetensors"))),
             kCommand << ": --out " << out << " already holds an analysis (analysis.json); choose another directory "
                      << "or pass --overwrite");

  std::vector<RunAnalysis> runs;
  // Sources are read beside a run that may still be training (base/io/run_lock.h: readers take no lock).
  if (compare) {
    std::vector<std::string> dirs = args.all("compare");
    dirs.insert(dirs.end(), args.positional.begin(), args.positional.end());
    for (const std::string& dir : dirs)  // check every source before the slower analysis starts
      URPE_CHECK(path_exists(dir), kCommand << ": '" << dir << "' does not exist");
    for (const std::string& dir : dirs) check_readable_run(dir, "--compare");
    for (const std::string& dir : dirs)
      for (RunAnalysis& r : compare_source(dir, options)) runs.push_back(std::move(r));
  } else {
    check_readable_run(args.get("run"), "--run");
    runs.push_back(analyze_dir(args.get("run"), options));
  }
  // Runs of the same name (the same grid in two repro directories) would share plot files and
  // chart legends: number the repeats.
  for (size_t k = 0; k < runs.size(); ++k) {
    int repeat = 1;
    for (size_t j = 0; j < k; ++j) repeat += runs[j].run == runs[k].run || runs[j].run.rfind(runs[k].run + " (", 0) == 0;
    if (repeat > 1) runs[k].run += " (" + std::to_string(repeat) + ")";
  }

  const std::string plots = join_path(out, "plots");
  make_directories(plots);
  const RunDirectoryLock out_lock(out, LockMode::exclusive, "--out");
  const std::string markdown = analysis_markdown(runs);
  std::vector<std::string> drawn;
  if (compare) drawn = draw_compare_plots(plots, runs);
  for (const RunAnalysis& r : runs)  // a run read back from analysis.json has no Gram matrix to draw
    for (const std::string& p : draw_analysis_plots(plots, r)) drawn.push_back(p);
  // The tensors of every run analysed now (one read back from analysis.json has none):
  // decomposition.safetensors (and hidden.safetensors) for --run, <name>_<run>.safetensors for --compare.
  std::vector<std::string> tensor_files;
  for (const RunAnalysis& r : runs) {
    if (r.parts.empty()) continue;
    const std::string suffix = compare ? "_" + analysis_file_stem(r.run) + ".safetensors" : ".safetensors";
    tensor_files.push_back(join_path(out, "decomposition" + suffix));
    save_decomposition(tensor_files.back(), r);
    if (options.keep_hidden) {
      tensor_files.push_back(join_path(out, "hidden" + suffix));
      save_hidden_states(tensor_files.back(), r);
    }
  }
  json::write_file(json_path, analysis_to_json(runs));
  write_text_atomic(md_path, "# urpe analyze\n\n" + markdown);
  std::printf("%s", markdown.c_str());  // after the files: an error above stays the only output
  std::printf("\nwrote %s, %s", json_path.c_str(), md_path.c_str());
  for (const std::string& f : tensor_files) std::printf(", %s", f.c_str());
  std::printf(" and %zu plots in %s\n", drawn.size(), plots.c_str());
  return 0;
}

}  // namespace urpe::cli
