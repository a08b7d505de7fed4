// Grid runner for the synthetic tasks: one training run per cell, then the summary files.
#include "train/repro/synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "train/encoder_trainer.h"
#include "train/run_config.h"
#include "train/run_plots.h"
#include "train/repro/paper_values.h"
#include "train/repro/seed_stats.h"

namespace urpe {

SyntheticGrid synthetic_grid_for_scale(const std::string& scale) {
  SyntheticGrid g;
  g.scale = scale;
  g.tasks = {"pi", "etp"};
  g.pes = {"none", "rpe", "urpe"};
  // tiny: one V so that 2 seeds × 2 tasks × 3 encodings fit in 20 minutes on 2 CPU cores.
  if (scale == "tiny") g.vocabs = {100};
  else if (scale == "small") g.vocabs = {10, 100, 1000};
  else if (scale == "paper") g.vocabs = {10, 1000, 10000};
  else URPE_FAIL("--scale '" << scale << "': expected tiny, small or paper");
  return g;
}

static std::string run_name(const std::string& task, int64_t vocab, const std::string& pe, int64_t seed) {
  return task + "-V" + std::to_string(vocab) + "-" + pe + "-s" + std::to_string(seed);
}

std::vector<ResultRow> run_synthetic_grid(const SyntheticGrid& grid, const std::string& out_dir,
                                          const std::string& experiment) {
  make_directories(out_dir);
  std::vector<ResultRow> rows;
  std::vector<RunCurve> curves;
  const int64_t total = static_cast<int64_t>(grid.tasks.size() * grid.vocabs.size() * grid.pes.size()) * grid.seeds;
  GridProgress progress(total);
  for (const std::string& task : grid.tasks)
    for (int64_t vocab : grid.vocabs)
      for (const std::string& pe : grid.pes)
        for (int64_t seed = grid.first_seed; seed < grid.first_seed + grid.seeds; ++seed) {
          std::vector<std::string> sets = {"pe=" + pe, "vocab=" + std::to_string(vocab),
                                           "seed=" + std::to_string(seed), "device=" + grid.device};
          sets.insert(sets.end(), grid.overrides.begin(), grid.overrides.end());
          const Config config = resolve_config(task + "-" + grid.scale, "", sets);
          const std::string name = run_name(task, vocab, pe, seed);
          const std::string dir = join_path(join_path(out_dir, "runs"), name);
          TrainOptions options;
          options.overwrite = true;
          options.experiment = experiment;
          options.grid = &progress;
          progress.begin_run(name);
          const TrainOutcome outcome = train_encoder(config, dir, options);
          progress.end_run();
          std::printf("[%lld/%lld] %-22s valid accuracy %6.2f%%  (%lld steps, %.1f s)\n",
                      static_cast<long long>(progress.run()), static_cast<long long>(total), name.c_str(),
                      100.0 * outcome.result.metric, static_cast<long long>(outcome.result.steps),
                      outcome.result.seconds);
          std::fflush(stdout);
          rows.push_back(outcome.result);
          curves.push_back({name, task, vocab, pe, seed - grid.first_seed + 1, dir});
        }
  json::Value list = json::Value::array();
  for (const ResultRow& r : rows) list.push(result_to_json(r));
  write_text_atomic(join_path(out_dir, "results.json"), list.dump(2) + "\n");
  write_text_atomic(join_path(out_dir, "results.md"), synthetic_results_markdown(rows, grid));
  draw_grid_plots(out_dir, rows, curves);
  return rows;
}

std::string synthetic_results_markdown(const std::vector<ResultRow>& rows, const SyntheticGrid& grid) {
  // (task, V, pe) → accuracies over seeds; V is recovered from the run order.
  std::map<std::string, std::vector<double>> cells;
  size_t k = 0;
  for (const std::string& task : grid.tasks)
    for (int64_t vocab : grid.vocabs)
      for (const std::string& pe : grid.pes)
        for (int64_t s = 0; s < grid.seeds && k < rows.size(); ++s, ++k)
          cells[task + "|" + std::to_string(vocab) + "|" + pe].push_back(rows[k].metric);
  std::ostringstream md;
  md << "# Synthetic tasks: validation token accuracy (%)\n\n"
     << "Scale `" << grid.scale << "`, " << seed_stats_legend(grid.seeds) << ".\n"
     << "PI = position identification, ETP = even token prediction (docs/synthetic_encoder.md#tasks); chance on PI is 1/n.\n\n"
     << "| task | V |";
  for (const std::string& pe : grid.pes) md << " " << pe << " |";
  md << "\n|---|---|";
  for (size_t i = 0; i < grid.pes.size(); ++i) md << "---|";
  md << "\n";
  for (const std::string& task : grid.tasks)
    for (int64_t vocab : grid.vocabs) {
      md << "| " << task << " | " << vocab << " |";
      for (const std::string& pe : grid.pes) {
        md << " " << format_seed_stats(seed_stats(cells[task + "|" + std::to_string(vocab) + "|" + pe]), 2, false, 100.0)
           << " |";
      }
      md << "\n";
    }
  if (!rows.empty()) {
    double seconds = 0;
    for (const ResultRow& r : rows) seconds += r.seconds;
    md << "\nTraining time in total: " << static_cast<int64_t>(seconds) << " s on " << rows[0].device
       << "; parameters per model: ";
    std::map<std::string, int64_t> params;
    for (const ResultRow& r : rows) params[r.pe] = r.params;
    bool first = true;
    for (const auto& [pe, count] : params) {
      md << (first ? "" : ", ") << pe << " " << count;
      first = false;
    }
    md << ".\n";
  }

  // Figure 1 prints no numbers (bars only), so the paper column says so; ours is RPE → URPE.
  const bool has_pair = std::find(grid.pes.begin(), grid.pes.end(), "rpe") != grid.pes.end() &&
                        std::find(grid.pes.begin(), grid.pes.end(), "urpe") != grid.pes.end();
  std::vector<PaperComparison> comparisons;
  for (const std::string& task : grid.tasks)
    for (int64_t vocab : grid.vocabs) {
      PaperComparison c;
      c.quantity = task + " accuracy (%), V = " + std::to_string(vocab) + " (paper Figure 1)";
      c.paper_note = "not printed: Figure 1 is a bar chart without values";
      const std::string key = task + "|" + std::to_string(vocab) + "|";
      if (has_pair && !cells[key + "rpe"].empty() && !cells[key + "urpe"].empty()) {
        c.ours_base = seed_stats(cells[key + "rpe"]).mean;
        c.ours_urpe = seed_stats(cells[key + "urpe"]).mean;
      }
      c.scale = 100.0;
      comparisons.push_back(c);
    }
  md << paper_comparison_markdown(comparisons, "RPE",
                                  "scale `" + grid.scale + "` on freshly drawn synthetic sequences "
                                  "(docs/synthetic_encoder.md#tasks), mean over " + std::to_string(grid.seeds) +
                                  " seed(s), the final checkpoint's validation accuracy; the paper: sequence "
                                  "length 128, V ∈ {10, 1,000, 10,000}.");
  return md.str();
}

}  // namespace urpe
