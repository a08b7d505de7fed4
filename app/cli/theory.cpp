// `urpe theory probe|construction|rowsums|denominator`: the paper's statements as commands that
// print numbers and draw pictures (app/analysis/). This file only turns options into calls and
// says where the files went.
#include <cstdio>
#include <sstream>

#include "tensor/error.h"
#include "app/analysis/analysis_model.h"
#include "app/analysis/construction.h"
#include "app/analysis/denominator.h"
#include "app/analysis/probe.h"
#include "app/analysis/rowsums.h"
#include "app/cli/handlers.h"
#include "base/io/run_dir.h"

namespace urpe::cli {

namespace {

const std::vector<std::string> kProbeFamilies = {"encoder", "txl"};

int64_t positive(const Args& args, const std::string& name, long fallback, long most) {
  const long value = args.get_int(name, fallback);
  URPE_CHECK(value >= 1 && value <= most, "urpe " << args.command << ": --" << name << " must be between 1 and "
                                                  << most << ", got " << value);
  return value;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

// The output folder and its plots/ subfolder.
std::string prepare_out(const Args& args) {
  const std::string out = args.get("out", "runs/theory");
  make_directories(join_path(out, "plots"));
  return out;
}

}  // namespace

int run_theory_probe(const Args& args) {
  const std::string command = "urpe theory probe";
  URPE_CHECK(args.has("run") || args.has("repro") || args.has("preset"),
             command << ": name the models: --run DIR, --repro DIR or --preset NAME (see 'urpe theory probe --help')");
  URPE_CHECK(args.has("preset") || (!args.has("set") && !args.has("pe")),
             command << ": --set and --pe apply to the model of --preset NAME");
  ProbeOptions options;
  options.max_tokens = positive(args, "tokens", 64, 100000);
  options.seed = static_cast<uint64_t>(args.get_int("seed", 1));

  // Check every source before the (slower) probing starts.
  std::vector<std::string> dirs = args.all("run");
  for (const std::string& repro : args.all("repro"))
    for (const std::string& dir : repro_run_dirs(repro, command)) dirs.push_back(dir);
  std::vector<std::string> pes = split_list(args.get("pe"));
  if (args.has("preset") && pes.empty()) pes.push_back("");  // the preset's own pe
  for (const std::string& s : args.all("set"))
    URPE_CHECK(pes.size() <= 1 || pes[0].empty() || s.rfind("pe=", 0) != 0,
               command << ": --set " << s << " and --pe both set pe; use one");

  std::vector<ProbeRun> runs;
  for (const std::string& dir : dirs)
    runs.push_back(probe_identical_tokens(load_run_model(dir, command, kProbeFamilies), options));
  for (const std::string& pe : pes) {
    std::vector<std::string> sets = args.all("set");
    if (!pe.empty()) sets.push_back("pe=" + pe);
    runs.push_back(probe_identical_tokens(fresh_model(args.get("preset"), sets, command, kProbeFamilies), options));
  }

  const std::string out = prepare_out(args);
  std::printf("%s", probe_report(runs).c_str());
  json::write_file(join_path(out, "probe.json"), probe_to_json(runs));
  const std::string plot = join_path(join_path(out, "plots"), "probe_spread.png");
  draw_probe_plot(plot, runs);
  std::printf("\nwrote %s and %s\n", join_path(out, "probe.json").c_str(), plot.c_str());
  return 0;
}

int run_theory_construction(const Args& args) {
  const int64_t n = args.get_int("n", 8);
  const ToeplitzC c = parse_toeplitz_c(args.get("c", "upper"), n, "urpe theory construction");
  const ConstructionResult r = proposition4_construction(n, &c);
  const std::string out = prepare_out(args);
  std::printf("%s", construction_report(r).c_str());
  json::write_file(join_path(out, "construction.json"), construction_to_json(r));
  const std::string plot = join_path(join_path(out, "plots"), "construction.png");
  draw_construction_plot(plot, r);
  std::printf("\nwrote %s and %s\n", join_path(out, "construction.json").c_str(), plot.c_str());
  return 0;
}

int run_theory_rowsums(const Args& args) {
  const std::string command = "urpe theory rowsums";
  URPE_CHECK(args.has("run") != args.has("c"),
             command << ": name a trained model with --run DIR (an encoder with pe = urpe) or a C of your own with --c SPEC"
                     << (args.has("run") ? ", not both" : ""));
  URPE_CHECK(!args.has("n") || args.has("c"), command << ": --n goes with --c (a run has its own n)");
  if (args.has("c")) {  // C alone: what its row sums would be under a uniform softmax
    const int64_t n = args.get_int("n", 32);
    const ToeplitzC c = parse_toeplitz_c(args.get("c"), n, command);
    const RowSumsResult r = c_only_row_sums("C = " + c.spec, c.values, n);
    const std::string out = prepare_out(args);
    std::printf("%s", c_only_rowsums_report(r, c.description).c_str());
    json::write_file(join_path(out, "rowsums.json"), rowsums_to_json(r));
    const std::string window = join_path(join_path(out, "plots"), "c_window.png");
    render_c_window_page(r).save_png(window);
    std::printf("\nwrote %s and %s\n", join_path(out, "rowsums.json").c_str(), window.c_str());
    return 0;
  }
  RowSumsOptions options;
  options.max_tokens = positive(args, "tokens", 64, 100000);
  options.real_sequences = positive(args, "sequences", 256, 1000000);
  options.seed = static_cast<uint64_t>(args.get_int("seed", 1));
  const AnalysisModel model = load_run_model(args.get("run"), command, {"encoder"});
  const RowSumsResult r = learned_row_sums(model, options);
  const std::string out = prepare_out(args);
  std::printf("%s", rowsums_report(r).c_str());
  json::write_file(join_path(out, "rowsums.json"), rowsums_to_json(r));
  const std::vector<std::string> plots = draw_rowsums_plots(join_path(out, "plots"), r);
  std::printf("\nwrote %s, %s … %s and %s\n", join_path(out, "rowsums.json").c_str(), plots.front().c_str(),
              plots[plots.size() - 2].c_str(), plots.back().c_str());
  return 0;
}

int run_theory_denominator(const Args& args) {
  DenominatorPlan plan;
  plan.preset = args.get("preset", "pi-tiny");
  plan.seeds = positive(args, "seeds", 3, 100);
  plan.overrides = args.all("set");
  plan.quiet = args.has("quiet");
  const std::string out = args.get("out", "runs/theory/denominator");
  const std::vector<DenominatorRun> runs = run_denominator(plan, out);
  std::printf("\n%s\nwrote %s/denominator.md, %s/denominator.json and %s/plots/denominator_loss.png\n",
              denominator_markdown(runs, plan).c_str(), out.c_str(), out.c_str(), out.c_str());
  return 0;
}

}  // namespace urpe::cli
