// `urpe repro`: the paper's experiments as single commands (docs/reproduce.md). Every option, --set
// and --tf32 included, is checked and every run's config resolved before the --out directory is
// taken through an OutputClaim (another run there is refused unless --overwrite), so a mistake
// writes nothing; or reopened by --resume to continue a grid that a signal stopped
// (cli/grid_output.h).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "app/bench/bench_kernels.h"
#include "models/encoder.h"
#include "tensor/error.h"
#include "app/analysis/analysis_model.h"
#include "app/analysis/probe.h"
#include "app/analysis/run_summary.h"
#include "app/cli/grid_output.h"
#include "app/cli/handlers.h"
#include "app/repro/lm.h"
#include "app/repro/molecule_grid.h"
#include "app/repro/molecules.h"
#include "app/repro/planned_runs.h"
#include "app/repro/pretrain.h"
#include "app/repro/repro_overrides.h"
#include "app/repro/synthetic.h"
#include "app/repro/table5.h"
#include "train/config/run_config.h"
#include "train/families/graphormer/graphormer_config.h"
#include "base/io/run_dir.h"

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


// --data and --corpus name existing paths, checked the way `urpe train` checks the same keys
// ("embedded" names the stand-in urpe ships: allowed at every scale, said so at paper scale).
void check_repro_data_paths(const Args& args) {
  if (args.has("data") && args.get("data") != "embedded") {
    const std::string data = args.get("data");
    URPE_CHECK(path_exists(data), "urpe repro: --data '" << data << "' does not exist (expected a graph-file directory "
                                                         << "from tools/zinc_to_urpe.py or a CSV; docs/data.md)");
  }
  if (args.has("corpus") && args.get("corpus") != "embedded") {
    const std::string corpus = args.get("corpus");
    URPE_CHECK(is_directory(corpus), "urpe repro: --corpus '" << corpus << "' is not a directory (expected a WikiText "
                                                              << "directory holding wiki.train.tokens, wiki.valid.tokens "
                                                              << "and wiki.test.tokens; docs/data.md)");
  }
}

// What the user's --set and --tf32 ask for every run (device= becomes the device: it decides
// where the grid runs and what results.md says it ran on).
struct ReproRequest {
  std::string experiment, scale, device, out;
  long seeds = 1;
  ReproOverrides extra;
};

ReproRequest read_request(const Args& args) {
  ReproRequest r;
  r.experiment = args.positional[0];
  r.out = args.has("dry-run") && args.get("out").empty() ? "" : normal_directory(args.get("out"));
  r.seeds = args.get_int("seeds", 1);
  r.scale = args.get("scale", "tiny");
  r.device = args.get("device", "cpu");
  r.extra.tf32 = args.has("tf32");
  for (const std::string& s : args.all("set")) {
    if (override_key(s) != "device") {
      r.extra.sets.push_back(s);
      continue;
    }
    std::string device = s.substr(s.find('=') + 1);
    device.erase(0, device.find_first_not_of(" \t"));
    device.erase(device.find_last_not_of(" \t") + 1);
    URPE_CHECK(!args.has("device") || args.get("device") == device,
               "urpe repro: --device " << args.get("device") << " and --set " << s << " name different devices");
    r.device = device;
  }
  const bool cuda = r.device.rfind("cuda", 0) == 0;
  URPE_CHECK(!r.extra.tf32 || cuda, "urpe repro: --tf32 is a mode of the GPU's tensor cores; it needs --device cuda "
                                    "(or --set device=cuda), got device " << r.device);
  bench::require_cuda_device("urpe repro " + r.experiment, r.device);  // before --out is claimed
  return r;
}

// Whether the user named the experiment's data: its option (--data, --corpus) or a --set of its key.
bool names_data(const ReproRequest& r, const Args& args, const char* option, const char* key) {
  if (args.has(option)) return true;
  for (const std::string& s : r.extra.sets)
    if (override_key(s) == key) return true;
  return false;
}

// Paper scale never trains on a stand-in silently: without the dataset named, one error saying
// which dataset the paper used, where docs/data.md says how to get it, and how to train on urpe's
// stand-in anyway (then results.md says so in its first line: stand_in_note).
void refuse_paper_scale_without_data(const ReproRequest& r, const Args& args, const char* option, const char* key,
                                     const std::string& what) {
  if (r.scale != "paper" || names_data(r, args, option, key)) return;
  URPE_FAIL("urpe repro " << r.experiment << " --scale paper: " << what << " Pass --" << option << " DIR, or --"
                          << option << " embedded to train on urpe's stand-in anyway (results.md then says so).");
}

// The paper's dataset of each molecule preset, and docs/data.md's section on it.
std::string molecule_dataset_text(const std::string& preset) {
  if (preset.find("pcqm4m") != std::string::npos)
    return "Table 3 trains on OGB-LSC PCQM4M (v1, the paper's; docs/data.md#pcqm4m: tools/pcqm4m_to_urpe.py, then "
           "--data DIR/molecules.csv --set dataset_format=ogb --set target_column=homolumogap --set "
           "split=DIR/split.csv), and no --data names it: the embedded molecules are 9,997 ZINC-like compounds.";
  const std::string which = preset.find("-full") != std::string::npos ? "ZINC full (250K graphs)" : "the ZINC subset (12K graphs)";
  return "Table 2 trains on " + which + " of benchmarking-GNNs (docs/data.md#zinc-benchmarking-gnns-layout: "
         "tools/zinc_to_urpe.py), and no --data names it: the embedded molecules are 9,997 screening compounds "
         "standing in for it.";
}

// The plans of the experiments, from the request and the experiment's own options; building one
// checks every run's config (unknown keys, values, paths), so a mistake stops before --out is claimed.
SyntheticGrid synthetic_plan(const ReproRequest& r, const Args& args) {
  refuse_owned_keys(r.extra, {{"pe", "use --pes"}, {"vocab", "the scale sweeps V (paper: 10, 1000, 10000)"},
                              {"seed", "use --seeds"}, {"task", "use --tasks"}, {"seq_len", "use --lengths"}},
                    "synthetic");
  SyntheticGrid grid = synthetic_grid_for_scale(r.scale);
  grid.seeds = r.seeds;
  grid.device = r.device;
  grid.extra = r.extra;
  if (args.has("pes")) grid.pes = parse_pes(args.get("pes"));
  if (args.has("lengths")) grid.lengths = parse_lengths(args.get("lengths"));
  if (args.has("tasks")) grid.tasks = parse_tasks(args.get("tasks"));
  for (const std::string& task : grid.tasks) {
    std::vector<std::string> sets = {"device=" + grid.device};
    sets.insert(sets.end(), grid.extra.sets.begin(), grid.extra.sets.end());
    resolve_config(task + "-" + grid.scale, "", sets);
  }
  return grid;
}

LmReproPlan lm_plan(const ReproRequest& r, const Args& args) {
  LmReproPlan plan = lm_plan_for_scale(r.scale);
  std::vector<OwnedKey> owned = {{"pe", "it compares rpe with urpe"}, {"seed", "use --seeds"}};
  if (!plan.layers.empty()) owned.push_back({"layers", "--scale paper runs L = 4, 8 and 16 (Table 4)"});
  refuse_owned_keys(r.extra, owned, "lm");
  plan.seeds = r.seeds;
  plan.device = r.device;
  plan.extra = r.extra;
  refuse_paper_scale_without_data(r, args, "corpus", "corpus",
                                  "Tables 1 and 4 train on WikiText-103 (docs/data.md#wikitext-103), and no --corpus "
                                  "names it; the embedded corpus (1.6M words of Austen and the King James Bible) is a "
                                  "stand-in.");
  if (args.has("corpus")) plan.overrides.push_back("corpus=" + args.get("corpus"));  // e.g. wikitext-103
  std::vector<std::string> sets = {"device=" + plan.device};
  sets.insert(sets.end(), plan.overrides.begin(), plan.overrides.end());
  sets.insert(sets.end(), plan.extra.sets.begin(), plan.extra.sets.end());
  check_config_paths(resolve_config(plan.preset, "", sets));
  return plan;
}

MoleculeRepro molecule_plan(const ReproRequest& r, const Args& args) {
  refuse_owned_keys(r.extra, {{"pe", "it compares pe = none with pe = urpe"}, {"seed", "use --seeds"}}, "molecules");
  MoleculeRepro repro = molecule_repro_for_scale(r.scale);
  if (args.has("seeds")) repro.seeds = r.seeds;  // else the scale's own (paper: 4)
  repro.device = r.device;
  repro.extra = r.extra;
  if (args.has("data")) repro.overrides.push_back("dataset=" + args.get("data"));  // graph file or CSV
  if (args.has("preset")) {
    repro.preset = args.get("preset");
    URPE_CHECK(is_graphormer_config(resolve_config(repro.preset, "", {})),
               "urpe repro molecules: --preset " << repro.preset << " is not a Graphormer preset (e.g. graphormer-slim, "
                                                 << "graphormer-slim-full, graphormer-pcqm4m)");
  }
  refuse_paper_scale_without_data(r, args, "data", "dataset", molecule_dataset_text(repro.preset));
  check_config_paths(molecule_repro_config(repro, "none", repro.first_seed));
  return repro;
}

PretrainPlan pretrain_plan(const ReproRequest& r, const Args& args) {
  refuse_owned_keys(r.extra, {{"pe", "it compares ape+rpe, rpe and urpe"}, {"seed", "use --seeds"},
                              {"task", "pre-training is task = mlm"}},
                    "pretrain");
  PretrainPlan plan = pretrain_plan_for_scale(r.scale);
  plan.seeds = r.seeds;
  plan.device = r.device;
  plan.extra = r.extra;
  refuse_paper_scale_without_data(r, args, "corpus", "corpus",
                                  "C.4 pre-trains BERT-base on BERT's corpus (BooksCorpus and English Wikipedia, which "
                                  "urpe does not ship; docs/data.md#pre-training-corpus-appendix-c4), and no --corpus "
                                  "names one; the embedded corpus (1.6M words) is a stand-in.");
  if (args.has("corpus")) plan.overrides.push_back("corpus=" + args.get("corpus"));
  check_config_paths(resolve_config(plan.preset, "", pretrain_run_sets(plan, plan.pes.front(), plan.first_seed)));
  return plan;
}

// The first line of results.md at paper scale when the runs read urpe's embedded stand-in.
void note_stand_in(const std::string& out, const std::string& scale, const std::vector<PlannedRun>& runs) {
  if (scale != "paper" || runs.empty()) return;
  const Config config = runs.front().config();
  const char* key = config.schema().find("dataset") ? "dataset" : "corpus";
  if (!config.schema().find(key) || config.get_string(key) != "embedded") return;
  const std::string path = join_path(out, "results.md");
  const std::string what = std::string(key) == "dataset" ? "the embedded molecules (9,997 screening compounds)"
                                                         : "the embedded corpus (1.6M words of Austen and the Bible)";
  write_text_atomic(path, "**Stand-in data: these paper-scale runs trained on " + what +
                              ", not on the paper's dataset (" + key +
                              " = embedded was asked for); their numbers are not comparable with the paper's.**\n\n" +
                              read_text_file(path));
}

// results.md ends with every value of the runs and its source (the table --dry-run prints).
void append_sources(const std::string& out, const std::vector<PlannedRun>& runs) {
  const std::string path = join_path(out, "results.md");
  if (!path_exists(path)) return;
  write_text_atomic(path, read_text_file(path) + "\n" + planned_runs_markdown(runs));
}

// --dry-run: every run's configuration with its sources, then nothing else happens.
int print_dry_run(const std::string& command, const std::vector<PlannedRun>& runs) {
  std::printf("%s --dry-run: %zu run%s (nothing is trained or written)\n\n%s", command.c_str(), runs.size(),
              runs.size() == 1 ? "" : "s", planned_runs_text(runs).c_str());
  return 0;
}

// table5 has no config keys; its options, with their sources.
int print_table5_dry_run(const Table5Options& o, const Args& args) {
  auto list = [](const std::vector<int64_t>& values) {
    std::string text;
    for (int64_t v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
    return text;
  };
  auto given = [&](const char* option, const std::string& paper) {
    return args.has(option) ? std::string("--") + option + " (yours)" : paper;
  };
  const std::vector<ValueSource> rows = {
      {"model", "encoder, RPE against URPE", "paper §5.4: the vanilla Transformer with RPE and with URPE (Table 5)"},
      {"layers", std::to_string(o.layers), given("layers", "paper §5.4: 12 layers")},
      {"d_model", std::to_string(o.d_model), "paper §5.4: hidden dimension 768"},
      {"heads", std::to_string(o.heads), "paper §5.4: 12 attention heads"},
      {"d_ff", std::to_string(o.d_ff), "urpe: RoBERTa base's 3,072 (§5.4 gives no feed-forward width)"},
      {"batch", std::to_string(o.batch), given("batch", "paper §5.4: batch size 32")},
      {"lengths", list(o.lengths), given("lengths", "paper §5.4: N from {128, 256, 512}")},
      {"vocab", std::to_string(o.vocab), "urpe: random token ids from 1,000 (timing does not depend on it)"},
      {"mode", "inference", "paper §5.4: inference speed and memory, after Combiner"},
      {"repeats", std::to_string(o.repeats), given("repeats", "urpe: the median of 3 timed forwards")},
      {"device", o.device, args.has("device") ? "--device (yours)" : "default: cpu (the paper: a 16 GB V100)"},
      {"tf32", o.tf32 ? "on" : "off", o.tf32 ? "--tf32 (yours)" : "default: off (full FP32)"},
  };
  std::printf("urpe repro table5 --dry-run: the timed model (nothing is run or written)\n\n%s",
              sources_text(rows).c_str());
  return 0;
}

void print_results(const std::string& out) {
  std::printf("\n%s\nwrote %s/results.md, %s/results.json and %s/plots/\n",
              read_text_file(join_path(out, "results.md")).c_str(), out.c_str(), out.c_str(), out.c_str());
}

}  // namespace

int run_repro(const Args& args) {
  URPE_CHECK(args.positional.size() == 1,
             "urpe repro: name one experiment: synthetic, lm, molecules, pretrain or table5 (see 'urpe repro --help')");
  const std::string experiment = args.positional[0];
  const bool dry_run = args.has("dry-run");
  URPE_CHECK(dry_run || !args.get("out").empty(), "urpe repro: --out DIR is required (or --dry-run)");
  const long seeds = args.get_int("seeds", 1);
  URPE_CHECK(seeds >= 1 && seeds <= 100, "urpe repro: --seeds must be between 1 and 100, got " << seeds);
  const std::string scale = args.get("scale", "tiny");
  URPE_CHECK(scale == "tiny" || scale == "small" || scale == "paper",
             "urpe repro: --scale '" << scale << "': expected tiny, small or paper");
  URPE_CHECK(experiment == "synthetic" || experiment == "lm" || experiment == "molecules" || experiment == "pretrain" ||
                 experiment == "table5",
             "urpe repro: unknown experiment '" << experiment << "' (expected synthetic, lm, molecules, pretrain or table5)");
  URPE_CHECK(experiment == "synthetic" || (!args.has("pes") && !args.has("tasks")),
             "urpe repro: --pes and --tasks apply to 'urpe repro synthetic' only");
  URPE_CHECK(experiment == "synthetic" || experiment == "table5" || !args.has("lengths"),
             "urpe repro: --lengths applies to 'urpe repro synthetic' and 'urpe repro table5' only");
  URPE_CHECK(experiment == "table5" || (!args.has("batch") && !args.has("layers") && !args.has("repeats")),
             "urpe repro: --batch, --layers and --repeats apply to 'urpe repro table5' only");
  URPE_CHECK(!args.has("data") || experiment == "molecules",
             "urpe repro: --data applies to 'repro molecules' only (lm takes --corpus)");
  URPE_CHECK(!args.has("corpus") || experiment == "lm" || experiment == "pretrain",
             "urpe repro: --corpus applies to 'repro lm' and 'repro pretrain' only (molecules take --data)");
  check_repro_data_paths(args);  // a missing dataset or corpus fails before --out is claimed
  URPE_CHECK(!args.has("finetune") || experiment == "lm",
             "urpe repro: --finetune applies to 'repro lm' only (RPE continued vs URPE fine-tuned)");
  URPE_CHECK(experiment == "molecules" || (!args.has("grid") && !args.has("preset")),
             "urpe repro: --grid and --preset apply to 'urpe repro molecules' only (the one experiment whose appendix "
             "section, C.3.1, gives sets to select from)");
  URPE_CHECK(!args.has("resume") || (experiment != "pretrain" && !args.has("grid")),
             "urpe repro: --resume continues the synthetic, lm and molecules grids; 'repro pretrain' and "
             "'repro molecules --grid' start afresh (run them again with --overwrite)");
  const ReproRequest request = read_request(args);
  const std::string& out = request.out;
  if (experiment == "table5") {
    URPE_CHECK(!args.has("resume"), "urpe repro table5: --resume continues a grid of training runs; table5 times "
                                    "forward passes and has none (run it again)");
    URPE_CHECK(request.extra.sets.empty(),
               "urpe repro table5: --set applies to the training experiments; table5 takes --batch, --layers, "
               "--lengths, --repeats and --device");
    Table5Options options;
    options.device = request.device;
    options.tf32 = request.extra.tf32;
    if (args.has("lengths")) options.lengths = urpe::parse_lengths(args.get("lengths"));
    options.batch = args.get_int("batch", options.batch);
    options.layers = args.get_int("layers", options.layers);
    options.repeats = static_cast<int>(args.get_int("repeats", options.repeats));
    if (dry_run) return print_table5_dry_run(options, args);
    OutputClaim claim(out, "--out", args.has("overwrite"));
    run_table5(options, out);
    if (stop_signal() != 0) return stop_exit_code();  // the claim keeps or puts back as it ends
    print_results(out);
    claim.done();
    return 0;
  }
  if (experiment == "synthetic") {
    SyntheticGrid grid = synthetic_plan(request, args);
    const std::vector<PlannedRun> runs = planned_synthetic_runs(grid);
    if (dry_run) return print_dry_run("urpe repro synthetic --scale " + request.scale, runs);
    grid.probe = [](const std::string& dir) { return grid_probe(dir, "urpe repro synthetic"); };
    GridOutput output(args, out);
    run_synthetic_grid(grid, out, "synthetic", output.continuation());
    if (output.old_run_comes_back()) return output.finish();
    append_sources(out, runs);
    print_results(out);
    std::printf("All on one page: %s\n", draw_grid_summary(out).c_str());
    return output.finish();
  } else if (experiment == "lm") {
    LmReproPlan plan = lm_plan(request, args);
    const std::vector<PlannedRun> runs = planned_lm_runs(plan);
    if (dry_run) return print_dry_run("urpe repro lm --scale " + request.scale, runs);
    // --finetune: half the preset's steps again, RPE continued vs URPE fine-tuned (paper §4.2).
    if (args.has("finetune")) {
      std::vector<std::string> sets = {"device=" + plan.device};
      sets.insert(sets.end(), plan.extra.sets.begin(), plan.extra.sets.end());
      plan.finetune_steps = std::max<int64_t>(1, resolve_config(plan.preset, "", sets).get_int("steps") / 2);
    }
    GridOutput output(args, out);
    run_lm_repro(plan, out, output.continuation());
    if (output.old_run_comes_back()) return output.finish();
    note_stand_in(out, request.scale, runs);
    append_sources(out, runs);
    print_results(out);
    return output.finish();
  } else if (experiment == "molecules") {
    const MoleculeRepro repro = molecule_plan(request, args);
    const std::vector<GridAxis> axes = parse_grid_options(args.all("grid"), repro.preset);
    for (const GridAxis& axis : axes)
      for (const std::string& s : repro.extra.sets)
        URPE_CHECK(override_key(s) != axis.key,
                   "urpe repro molecules: --set " << s << " and --grid both set " << axis.key << "; pass one of them");
    const std::vector<PlannedRun> runs = planned_molecule_runs(repro, grid_points(axes));
    for (const PlannedRun& run : runs) run.config();  // every setting's config, before --out
    if (dry_run) return print_dry_run("urpe repro molecules --scale " + request.scale, runs);
    GridOutput output(args, out);
    if (axes.empty()) run_molecule_repro(repro, out, output.continuation());
    else run_molecule_grid(repro, axes, out);
    if (output.old_run_comes_back()) return output.finish();
    note_stand_in(out, request.scale, runs);
    append_sources(out, runs);
    print_results(out);
    return output.finish();
  } else {
    const PretrainPlan plan = pretrain_plan(request, args);
    const std::vector<PlannedRun> runs = planned_pretrain_runs(plan);
    if (dry_run) return print_dry_run("urpe repro pretrain --scale " + request.scale, runs);
    OutputClaim claim(out, "--out", args.has("overwrite"));
    run_pretrain_repro(plan, out);
    if (stop_signal() != 0 && old_run_restorable(out)) return stop_exit_code();  // the old run comes back
    note_stand_in(out, request.scale, runs);
    append_sources(out, runs);
    print_results(out);
    if (stop_signal() != 0) return stop_exit_code();  // the claim keeps the runs that saved a checkpoint
    claim.done();
  }
  return 0;
}

}  // namespace urpe::cli
