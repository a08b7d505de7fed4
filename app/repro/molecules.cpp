// Runner of the molecule experiment: one training run per (seed, model), then the summary files.
#include "app/repro/molecules.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "data/molecule_graph.h"
#include "tensor/error.h"
#include "train/families/graphormer/graphormer_plots.h"
#include "train/families/graphormer/graphormer_trainer.h"
#include "base/plot/charts.h"
#include "train/config/run_config.h"
#include "base/io/run_dir.h"
#include "train/loop/run_control.h"
#include "base/io/printable.h"
#include "base/io/safetensors.h"
#include "app/repro/paper_values.h"
#include "app/repro/seed_stats.h"

namespace urpe {

MoleculeRepro molecule_repro_for_scale(const std::string& scale) {
  MoleculeRepro r;
  r.scale = scale;
  if (scale == "tiny") {
    // The graphormer-tiny preset as it is; its schedule is sized for the CPU budget (run_config.cpp).
    r.preset = "graphormer-tiny";
  } else if (scale == "small") {
    r.preset = "graphormer-slim";
    r.overrides = {"batch=64", "steps=20000", "warmup=2000", "eval_every=1000"};
  } else if (scale == "paper") {
    r.preset = "graphormer-slim";           // Appendix C.3.1, ZINC subset
    r.seeds = PaperValues::zinc_seeds;      // §5.3: Tables 2 and 3 average four seeds
  } else {
    URPE_FAIL("--scale '" << scale << "': expected tiny, small or paper");
  }
  return r;
}

namespace {

struct RunSummary {
  std::string pe;
  int64_t seed = 0;
  std::string dir;
  GraphormerTrainOutcome outcome;  // valid_mae, test_mae: of the best-validation checkpoint
  int64_t best_step = 0;
  double wall_seconds = 0;  // training + evaluation + files
};

const char* model_label(const std::string& pe) { return pe == "urpe" ? "Graphormer + URPE" : "Graphormer"; }

std::string format(const char* pattern, double a, double b = 0) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, a, b);
  return text;
}

// Longest finite shortest-path distance over the molecules the runs use (the plots' x range); the
// ones over max_nodes were left out of the split before any O(N²) work was done on them.
int64_t longest_distance(const GraphormerData& data) {
  int32_t longest = 0;
  for (const auto* part : {&data.split.train, &data.split.valid, &data.split.test})
    for (int64_t row : *part)
      longest = std::max(longest, data::shortest_paths(data.dataset.graphs[static_cast<size_t>(row)]).max_distance);
  return longest;
}

std::string results_markdown(const MoleculeRepro& repro, const Config& base, const GraphormerData& data,
                             const std::vector<RunSummary>& runs, double wall_seconds) {
  std::vector<double> valid[2], test[2];
  int64_t params[2] = {0, 0};
  for (const RunSummary& r : runs) {
    const int k = r.pe == "urpe";
    valid[k].push_back(r.outcome.valid_mae);
    test[k].push_back(r.outcome.test_mae);
    params[k] = r.outcome.result.params;
  }
  const GraphormerTrainOutcome& any = runs.front().outcome;
  std::ostringstream md;
  md << "# Molecules: Graphormer vs Graphormer + URPE (paper Table 2)\n\n"
     << "Scale `" << repro.scale << "`: preset `" << repro.preset << "` (" << base.get_int("layers") << " layers, d = "
     << base.get_int("d_model") << ", ffn " << base.get_int("d_ffn") << ", " << base.get_int("heads")
     << " heads, multi-hop " << base.get_int("multi_hop_max_dist") << "), " << base.get_int("steps")
     << " steps of batch " << base.get_int("batch") << ", peak lr " << base.get_string("lr") << " (warm-up "
     << base.get_int("warmup") << ", linear decay to " << base.get_string("end_lr") << "), AdamW wd "
     << base.get_string("weight_decay") << ", dropout " << base.get_string("dropout") << "/"
     << base.get_string("attention_dropout") << "/" << base.get_string("input_dropout") << ".\n"
     << "Data: " << data.description << ".\n"
     << "Both models share every setting but `pe`; " << repro.seeds << " seed(s) ("
     << repro.first_seed << "…" << repro.first_seed + repro.seeds - 1
     << "): " << seed_stats_legend(repro.seeds) << ". MAE on the target's scale ("
     << base.get_string("target_column") << "; lower is better) of each run's best-validation checkpoint "
     << "(model.best.safetensors), as the official code reports; the per-seed table gives its step.\n"
     << overrides_markdown_line(repro.extra) << "\n"
     << "| model | parameters | valid MAE | test MAE |\n|---|---|---|---|\n"
     << "| predict the training mean | 0 | " << format("%.4f", any.baseline_valid_mae) << " | "
     << format("%.4f", any.baseline_test_mae) << " |\n";
  for (int k = 0; k < 2; ++k) {
    if (valid[k].empty()) continue;
    
    md << "| " << model_label(k ? "urpe" : "none") << " | " << with_thousands_separators(params[k]);
    if (k == 1 && params[0] > 0)
      md << " (+" << with_thousands_separators(params[1] - params[0]) << ", "
         << format("+%.2f%%", 100.0 * static_cast<double>(params[1] - params[0]) / static_cast<double>(params[0]))
         << ")";
    md << " | " << format_seed_stats(seed_stats(valid[k]), 4) << " | " << format_seed_stats(seed_stats(test[k]), 4)
       << " |\n";
  }
  // Per seed, and URPE − Graphormer on the same seed.
  md << "\n| seed | Graphormer valid / test (best step) | + URPE valid / test (best step) | URPE − Graphormer (test) |\n"
     << "|---|---|---|---|\n";
  std::vector<double> differences;
  for (int64_t seed = repro.first_seed; seed < repro.first_seed + repro.seeds; ++seed) {
    const RunSummary *plain = nullptr, *urpe = nullptr;
    for (const RunSummary& r : runs)
      if (r.seed == seed) (r.pe == "urpe" ? urpe : plain) = &r;
    md << "| " << seed << " | "
       << (plain ? format("%.4f / %.4f", plain->outcome.valid_mae, plain->outcome.test_mae) +
                       " (" + std::to_string(plain->best_step) + ")"
                 : "–")
       << " | "
       << (urpe ? format("%.4f / %.4f", urpe->outcome.valid_mae, urpe->outcome.test_mae) +
                      " (" + std::to_string(urpe->best_step) + ")"
                : "–")
       << " | ";
    if (plain && urpe) {
      differences.push_back(urpe->outcome.test_mae - plain->outcome.test_mae);
      md << format("%+.4f", differences.back());
    } else {
      md << "–";
    }
    md << " |\n";
  }
  if (!differences.empty()) {
    const SeedStats d = seed_stats(differences);
    md << "\nURPE − Graphormer test MAE: " << format_seed_stats(d, 4, true) << " ("
       << (d.mean < 0 ? "URPE lower" : "URPE not lower") << " on average over " << differences.size()
       << " seed(s)).\n";
  }
  double train_seconds = 0;
  for (const RunSummary& r : runs) train_seconds += r.outcome.result.seconds;
  md << "\nWall time " << static_cast<int64_t>(wall_seconds + 0.5) << " s for " << runs.size()
     << " runs (training steps alone " << static_cast<int64_t>(train_seconds + 0.5) << " s) on "
     << runs.front().outcome.result.device << ".\n"
     << "\nPlots: plots/curves.png (validation MAE against step), plots/mae.png (valid and test MAE), "
        "plots/spatial_bias.png and plots/urpe_spatial_bias.png (learned spatial bias per head), "
        "plots/urpe_c.png (learned C per head against distance).\n";

  auto mean_of = [](const std::vector<double>& v) -> std::optional<double> {
    if (v.empty()) return std::nullopt;
    return seed_stats(v).mean;
  };
  std::vector<PaperComparison> rows =
      molecule_paper_rows(repro.preset, {mean_of(valid[0]), mean_of(valid[1]), mean_of(test[0]), mean_of(test[1])});
  PaperComparison count;
  count.quantity = "parameters (paper Table 2: ZINC)";
  count.paper_base = static_cast<double>(PaperValues::zinc_base_params);
  count.paper_urpe = static_cast<double>(PaperValues::zinc_urpe_params);
  if (params[0] > 0 && params[1] > 0) {
    count.ours_base = static_cast<double>(params[0]);
    count.ours_urpe = static_cast<double>(params[1]);
  }
  count.decimals = 0;
  rows.push_back(count);
  md << paper_comparison_markdown(
      rows, "Graphormer",
      "scale `" + repro.scale + "` (preset `" + repro.preset + "`, " + std::to_string(base.get_int("steps")) +
          " steps) on " + data.description + " (a ZINC stand-in unless the config names ZINC itself), mean over " +
          std::to_string(repro.seeds) + " seed(s), the best-validation checkpoint; the paper: 4 seeds at the "
          "full schedules of Appendix C.3.1 (ZINC) and C.3.2 (PCQM4M).");
  return md.str();
}

std::vector<std::string> draw_repro_plots(const std::string& out_dir, const std::vector<RunSummary>& runs,
                                          const GraphormerData& data, int64_t max_distance, double baseline_valid_mae,
                                          double baseline_test_mae) {
  const std::string plots = join_path(out_dir, "plots");
  make_directories(plots);
  std::vector<std::string> written;
  plot::LineChartSpec curves;
  curves.title = "Validation MAE during training";
  curves.x_label = "step";
  curves.y_label = "validation MAE";
  for (const RunSummary& r : runs) {
    plot::Series s;
    s.name = std::string(model_label(r.pe)) + ", seed " + std::to_string(r.seed);
    for (const MetricsRow& m : read_metrics(join_path(r.dir, "metrics.csv")))
      if (m.split == "valid") {
        s.x.push_back(static_cast<double>(m.step));
        s.y.push_back(m.metric);
      }
    curves.series.push_back(s);
  }
  written.push_back(join_path(plots, "curves.png"));
  plot::line_chart(written.back(), curves);

  plot::BarChartSpec bars;
  bars.title = "MAE, mean over seeds (lower is better)";
  bars.y_label = "MAE";
  bars.groups = {"validation", "test"};
  bars.decimals = 3;
  bars.series.push_back({"predict the training mean", {baseline_valid_mae, baseline_test_mae}});
  for (const std::string pe : {"none", "urpe"}) {
    std::vector<double> valid, test;
    for (const RunSummary& r : runs)
      if (r.pe == pe) {
        valid.push_back(r.outcome.valid_mae);
        test.push_back(r.outcome.test_mae);
      }
    if (!valid.empty()) bars.series.push_back({model_label(pe), {seed_stats(valid).mean, seed_stats(test).mean}});
  }
  written.push_back(join_path(plots, "mae.png"));
  plot::bar_chart(written.back(), bars);

  for (const std::string pe : {"none", "urpe"}) {
    const RunSummary* first = nullptr;
    for (const RunSummary& r : runs)
      if (r.pe == pe && (!first || r.seed < first->seed)) first = &r;
    if (!first) continue;
    const TensorFile file = load_safetensors(join_path(first->dir, "model.safetensors"));
    const std::string who = std::string(model_label(pe)) + ", seed " + std::to_string(first->seed);
    plot::LineChartSpec bias;
    bias.title = "Spatial bias per head (" + who + ")";
    bias.x_label = "shortest-path distance";
    bias.y_label = "bias added to the logits";
    bias.series = spatial_bias_series(file, max_distance);
    written.push_back(join_path(plots, pe == "urpe" ? "urpe_spatial_bias.png" : "spatial_bias.png"));
    plot::line_chart(written.back(), bias);
    if (pe == "urpe") {
      const Config run_config = config_from_text(file.meta("config"), file.path + " (config)");
      const plot::LineChartSpec c = urpe_c_chart("URPE C per head (" + who + ")", urpe_c_series(file, max_distance),
                                                 training_bucket_counts(data, run_config.get_int("max_spd")));
      written.push_back(join_path(plots, "urpe_c.png"));
      plot::line_chart(written.back(), c);
    }
  }
  return written;
}

}  // namespace

std::vector<std::string> molecule_run_sets(const MoleculeRepro& repro, const std::string& pe, int64_t seed) {
  std::vector<std::string> sets = {"pe=" + pe, "seed=" + std::to_string(seed), "device=" + repro.device};
  sets.insert(sets.end(), repro.overrides.begin(), repro.overrides.end());
  sets.insert(sets.end(), repro.extra.sets.begin(), repro.extra.sets.end());
  return sets;
}

std::string molecule_run_name(const std::string& pe, int64_t seed) {
  return std::string(pe == "urpe" ? "graphormer-urpe" : "graphormer") + "-s" + std::to_string(seed);
}

Config molecule_repro_config(const MoleculeRepro& repro, const std::string& pe, int64_t seed) {
  return resolve_config(repro.preset, "", molecule_run_sets(repro, pe, seed));
}

std::vector<PaperComparison> molecule_paper_rows(const std::string& preset, const MoleculeMeans& ours) {
  const bool pcqm4m = preset.find("pcqm4m") != std::string::npos;
  const bool full = preset.find("-full") != std::string::npos;
  auto spread = [](double base, double urpe) { return format("± %.3f → ± %.3f over 4 seeds", base, urpe); };
  PaperComparison subset, zinc_full, pcq;
  subset.quantity = "test MAE (paper Table 2: ZINC subset)";
  subset.paper_base = PaperValues::zinc_base_test_mae;
  subset.paper_urpe = PaperValues::zinc_urpe_test_mae;
  subset.paper_note = spread(PaperValues::zinc_base_test_mae_std, PaperValues::zinc_urpe_test_mae_std);
  zinc_full.quantity = "test MAE (paper Table 2: ZINC full)";
  zinc_full.paper_base = PaperValues::zinc_full_base_test_mae;
  zinc_full.paper_urpe = PaperValues::zinc_full_urpe_test_mae;
  zinc_full.paper_note = spread(PaperValues::zinc_full_base_test_mae_std, PaperValues::zinc_full_urpe_test_mae_std);
  pcq.quantity = "valid MAE (paper Table 3: PCQM4M)";
  pcq.paper_base = PaperValues::pcqm4m_base_valid_mae;
  pcq.paper_urpe = PaperValues::pcqm4m_urpe_valid_mae;
  for (PaperComparison* c : {&subset, &zinc_full, &pcq}) {
    c->decimals = 4;
    c->paper_decimals = c == &pcq ? 4 : 3;
  }
  PaperComparison& mine = pcqm4m ? pcq : full ? zinc_full : subset;
  mine.ours_base = pcqm4m ? ours.base_valid : ours.base_test;
  mine.ours_urpe = pcqm4m ? ours.urpe_valid : ours.urpe_test;
  return {subset, zinc_full, pcq};
}

std::vector<ResultRow> run_molecule_repro(const MoleculeRepro& repro, const std::string& out_dir,
                                          const GridContinuation& continuation) {
  URPE_CHECK(repro.seeds >= 1, "repro molecules: seeds must be at least 1, got " << repro.seeds);
  make_directories(out_dir);
  // Ctrl-C or SIGTERM, during a run or between two, stops the grid after the run saves.
  const StopOnInterrupt interrupt;
  std::string stopped_run;
  int64_t stopped_step = 0, run_steps = 0;
  const auto start = std::chrono::steady_clock::now();
  auto config_for = [&](const std::string& pe, int64_t seed) { return molecule_repro_config(repro, pe, seed); };
  const Config base = config_for("none", repro.first_seed);
  const GraphormerData data = load_graphormer_data(base);  // the same molecules and split for every run
  std::printf("%s\n", data.description.c_str());
  std::fflush(stdout);

  std::vector<RunSummary> runs;
  const int64_t total = 2 * repro.seeds;
  GridProgress progress(total);
  for (int64_t seed = repro.first_seed; seed < repro.first_seed + repro.seeds; ++seed)
    for (const std::string pe : {"none", "urpe"}) {
      if (interrupt.requested()) continue;  // stopped: the remaining runs never start
      RunSummary run;
      run.pe = pe;
      run.seed = seed;
      const std::string name = molecule_run_name(pe, seed);
      run.dir = join_path(join_path(out_dir, "runs"), name);
      TrainOptions options;
      options.overwrite = true;
      options.experiment = "molecules";
      options.grid = &progress;
      options.tf32 = repro.extra.tf32;
      progress.begin_run(name);
      const auto run_start = std::chrono::steady_clock::now();
      const Config config = config_for(pe, seed);
      const GridCellStart cell = grid_cell_start(run.dir, config, continuation.continuing);
      apply_cell_start(cell, options);
      if (cell.kind == GridCellStart::finished) {
        run.outcome.result = cell.result;  // the baselines come from the evaluations below
      } else {
        run.outcome = train_graphormer(config, run.dir, options, &data);
      }
      if (run.outcome.interrupted) {  // its checkpoint is saved; the grid stops here
        progress.end_run();
        stopped_run = name;
        stopped_step = run.outcome.result.steps;
        run_steps = config.get_int("steps");
        continue;
      }
      // As the official code reports: valid and test of the checkpoint with the best valid MAE.
      const GraphormerEval best_valid = evaluate_graphormer_run(run.dir, config, "valid", "best", &data);
      run.outcome.valid_mae = best_valid.mae;
      const GraphormerEval best_test = evaluate_graphormer_run(run.dir, config, "test", "best", &data);
      run.outcome.test_mae = best_test.mae;
      if (cell.kind == GridCellStart::finished) {  // a reused run: its baselines as train_graphormer gives them
        run.outcome.baseline_valid_mae = best_valid.baseline_mae;
        run.outcome.baseline_test_mae = best_test.baseline_mae;
      }
      run.best_step = best_test.step;
      run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
      progress.end_run();
      std::printf("[%lld/%lld] %-20s best (step %lld) valid MAE %.4f  test MAE %.4f  (%lld params, %lld steps, "
                  "%.0f s)\n",
                  static_cast<long long>(progress.run()), static_cast<long long>(total), name.c_str(),
                  static_cast<long long>(run.best_step), run.outcome.valid_mae,
                  run.outcome.test_mae, static_cast<long long>(run.outcome.result.params),
                  static_cast<long long>(run.outcome.result.steps), run.wall_seconds);
      std::fflush(stdout);
      runs.push_back(run);
    }
  // Stopped before its first run saved a checkpoint, a grid that replaces an old one writes nothing:
  // the old grid comes back (base/io/run_dir.h).
  if (interrupt.requested() && old_run_restorable(out_dir)) return {};
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string note;
  if (interrupt.requested()) {
    note = grid_interruption_note(stop_signal(), static_cast<int64_t>(runs.size()), total, stopped_run, stopped_step,
                                  run_steps, continuation.command);
    std::printf("\n%s\n", note.c_str());
    if (runs.empty()) return {};  // nothing finished: no summary to write
    note += "\n\n";
  }

  std::vector<ResultRow> rows;
  for (const RunSummary& r : runs) {
    ResultRow row = r.outcome.result;  // valid_mae, of the best checkpoint like test_mae
    row.metric = r.outcome.valid_mae;
    rows.push_back(row);
    row.metric_name = "test_mae";
    row.metric = r.outcome.test_mae;
    rows.push_back(row);
  }
  ResultRow baseline;
  baseline.experiment = "molecules";
  baseline.task = base.get_string("target_column");
  baseline.model = kMeanPredictorModel;
  baseline.pe = "none";
  baseline.device = runs.front().outcome.result.device;
  baseline.metric_name = "valid_mae";
  baseline.metric = runs.front().outcome.baseline_valid_mae;
  rows.push_back(baseline);
  baseline.metric_name = "test_mae";
  baseline.metric = runs.front().outcome.baseline_test_mae;
  rows.push_back(baseline);

  json::Value list = json::Value::array();
  for (const ResultRow& r : rows) list.push(result_to_json(r));
  write_text_atomic(join_path(out_dir, "results.json"), list.dump(2) + "\n");
  write_text_atomic(join_path(out_dir, "results.md"), note + results_markdown(repro, base, data, runs, wall));
  draw_repro_plots(out_dir, runs, data, longest_distance(data), runs.front().outcome.baseline_valid_mae,
                   runs.front().outcome.baseline_test_mae);
  return rows;
}

}  // namespace urpe
