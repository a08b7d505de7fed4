// `urpe repro`: the paper's experiments as single commands. The --out directory is taken through
// an OutputClaim: another run there is refused unless --overwrite.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "bench/bench_kernels.h"
#include "models/encoder.h"
#include "tensor/error.h"
#include "train/analysis/analysis_model.h"
#include "train/analysis/probe.h"
#include "train/analysis/run_summary.h"
#include "train/cli/handlers.h"
#include "train/repro/molecules.h"
#include "train/repro/lm.h"
#include "train/repro/synthetic.h"
#include "train/repro/table5.h"
#include "train/run_config.h"
#include "train/io/run_dir.h"

namespace urpe::cli {

namespace {

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(item);
  return items;
}

// --pes: accepted `pe` values, no repeats (each is a column of the table).
std::vector<std::string> parse_pes(const std::string& text) {
  std::string accepted;
  for (const std::string& name : positional_spec_names()) accepted += (accepted.empty() ? "" : ", ") + name;
  const std::vector<std::string> pes = comma_list(text);
  URPE_CHECK(!pes.empty(), "urpe repro: --pes is empty: expected a comma-separated list of " << accepted);
  for (size_t k = 0; k < pes.size(); ++k) {
    const auto& names = positional_spec_names();
    URPE_CHECK(std::find(names.begin(), names.end(), pes[k]) != names.end(),
               "urpe repro: --pes '" << pes[k] << "': expected some of " << accepted);
    URPE_CHECK(std::find(pes.begin(), pes.begin() + k, pes[k]) == pes.begin() + k,
               "urpe repro: --pes names '" << pes[k] << "' twice");
  }
  return pes;
}

// --lengths: sequence lengths n, 2 ≤ n ≤ 4096, no repeats.
std::vector<int64_t> parse_lengths(const std::string& text) {
  std::vector<int64_t> lengths;
  for (const std::string& item : comma_list(text)) {
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    URPE_CHECK(!item.empty() && used == item.size() && n >= 2 && n <= 4096,
               "urpe repro: --lengths '" << item << "': expected whole numbers between 2 and 4096, e.g. 256,512");
    URPE_CHECK(std::find(lengths.begin(), lengths.end(), n) == lengths.end(),
               "urpe repro: --lengths names " << n << " twice");
    lengths.push_back(n);
  }
  URPE_CHECK(!lengths.empty(), "urpe repro: --lengths is empty: expected e.g. 256,512");
  return lengths;
}

// --tasks: pi and/or etp.
std::vector<std::string> parse_tasks(const std::string& text) {
  const std::vector<std::string> tasks = comma_list(text);
  URPE_CHECK(!tasks.empty(), "urpe repro: --tasks is empty: expected pi, etp or pi,etp");
  for (size_t k = 0; k < tasks.size(); ++k) {
    URPE_CHECK(tasks[k] == "pi" || tasks[k] == "etp",
               "urpe repro: --tasks '" << tasks[k] << "': expected pi, etp or pi,etp");
    URPE_CHECK(std::find(tasks.begin(), tasks.begin() + k, tasks[k]) == tasks.begin() + k,
               "urpe repro: --tasks names '" << tasks[k] << "' twice");
  }
  return tasks;
}

// Theorem 2's probe of one finished run: its largest spread over layers.
double run_probe_spread(const std::string& dir) {
  const ProbeRun run = probe_identical_tokens(load_run_model(dir, "urpe repro synthetic", {"encoder"}), ProbeOptions{});
  double spread = 0;
  for (const ProbeLayer& layer : run.layers) spread = std::max(spread, layer.spread);
  return spread;
}

}  // namespace

// One of the built experiments at `scale` into `out` (already claimed).
static void run_experiment(const std::string& experiment, const std::string& scale, long seeds,
                           const std::string& device, const std::string& out, const Args& args) {
  const bool finetune = args.has("finetune");
  if (experiment == "synthetic") {
    SyntheticGrid grid = synthetic_grid_for_scale(scale);
    grid.seeds = seeds;
    grid.device = device;
    if (args.has("pes")) grid.pes = parse_pes(args.get("pes"));
    if (args.has("lengths")) grid.lengths = parse_lengths(args.get("lengths"));
    if (args.has("tasks")) grid.tasks = parse_tasks(args.get("tasks"));
    grid.probe_spread = run_probe_spread;
    run_synthetic_grid(grid, out, "synthetic");
    std::printf("\nAll on one page: %s\n", draw_grid_summary(out).c_str());
  } else if (experiment == "lm") {
    LmReproPlan plan = lm_plan_for_scale(scale);
    plan.seeds = seeds;
    plan.device = device;
    // --finetune: half the preset's steps again, RPE continued vs URPE fine-tuned (paper §4.2).
    if (finetune) plan.finetune_steps = std::max<int64_t>(1, resolve_config(plan.preset, "", {}).get_int("steps") / 2);
    run_lm_repro(plan, out);
  } else {
    MoleculeRepro repro = molecule_repro_for_scale(scale);
    if (args.has("seeds")) repro.seeds = seeds;  // else the scale's own (paper: 4)
    repro.device = device;
    run_molecule_repro(repro, out);
  }
  std::printf("\n%s\nwrote %s/results.md, %s/results.json and %s/plots/\n",
              read_text_file(join_path(out, "results.md")).c_str(), out.c_str(), out.c_str(), out.c_str());
}

int run_repro(const Args& args) {
  URPE_CHECK(args.positional.size() == 1,
             "urpe repro: name one experiment: synthetic, lm, molecules or table5 (see 'urpe repro --help')");
  const std::string experiment = args.positional[0];
  const std::string out = args.get("out");
  URPE_CHECK(!out.empty(), "urpe repro: --out DIR is required");
  const long seeds = args.get_int("seeds", 1);
  URPE_CHECK(seeds >= 1 && seeds <= 100, "urpe repro: --seeds must be between 1 and 100, got " << seeds);
  const std::string scale = args.get("scale", "tiny");
  URPE_CHECK(scale == "tiny" || scale == "small" || scale == "paper",
             "urpe repro: --scale '" << scale << "': expected tiny, small or paper");
  URPE_CHECK(experiment == "synthetic" || experiment == "lm" || experiment == "molecules" || experiment == "table5",
             "urpe repro: unknown experiment '" << experiment << "' (expected synthetic, lm, molecules or table5)");
  URPE_CHECK(experiment == "synthetic" || (!args.has("pes") && !args.has("tasks")),
             "urpe repro: --pes and --tasks apply to 'urpe repro synthetic' only");
  URPE_CHECK(experiment == "synthetic" || experiment == "table5" || !args.has("lengths"),
             "urpe repro: --lengths applies to 'urpe repro synthetic' and 'urpe repro table5' only");
  URPE_CHECK(experiment == "table5" || (!args.has("batch") && !args.has("layers") && !args.has("repeats")),
             "urpe repro: --batch, --layers and --repeats apply to 'urpe repro table5' only");
  if (experiment == "synthetic") {  // a bad list fails before the output directory is claimed
    if (args.has("pes")) parse_pes(args.get("pes"));
    if (args.has("lengths")) parse_lengths(args.get("lengths"));
    if (args.has("tasks")) parse_tasks(args.get("tasks"));
  }
  URPE_CHECK(!args.has("finetune") || experiment == "lm",
             "urpe repro: --finetune applies to 'repro lm' only (RPE continued vs URPE fine-tuned)");
  if (experiment == "table5") {
    Table5Options options;
    options.device = args.get("device", "cpu");
    bench::require_cuda_device("repro table5", options.device);
    if (args.has("lengths")) options.lengths = urpe::parse_lengths(args.get("lengths"));
    options.batch = args.get_int("batch", options.batch);
    options.layers = args.get_int("layers", options.layers);
    options.repeats = static_cast<int>(args.get_int("repeats", options.repeats));
    OutputClaim claim(out, "--out", args.has("overwrite"));
    run_table5(options, out);
    std::printf("\n%s\nwrote %s/results.md, %s/results.json and %s/plots/\n",
                read_text_file(join_path(out, "results.md")).c_str(), out.c_str(), out.c_str(), out.c_str());
    claim.done();
    return 0;
  }
  OutputClaim claim(out, "--out", args.has("overwrite"));
  run_experiment(experiment, scale, seeds, args.get("device", "cpu"), out, args);
  claim.done();
  return 0;
}

}  // namespace urpe::cli
