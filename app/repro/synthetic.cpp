// Grid runner for the synthetic tasks: one training run per cell, then the summary files.
#include "app/repro/synthetic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <sstream>

#include "tensor/device.h"
#include "train/families/encoder/encoder_trainer.h"
#include "app/bench/process_memory.h"
#include "train/config/run_config.h"
#include "base/io/run_dir.h"
#include "train/loop/run_control.h"
#include "train/families/encoder/encoder_plots.h"
#include "app/repro/paper_values.h"
#include "app/repro/seed_stats.h"

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

std::string synthetic_run_name(const std::string& task, int64_t vocab, int64_t length, const std::string& pe,
                               int64_t seed) {
  const std::string n = length > 0 ? "-n" + std::to_string(length) : "";
  return task + "-V" + std::to_string(vocab) + n + "-" + pe + "-s" + std::to_string(seed);
}

std::vector<std::string> synthetic_run_sets(const SyntheticGrid& grid, const std::string& pe, int64_t vocab,
                                            int64_t length, int64_t seed) {
  std::vector<std::string> sets = {"pe=" + pe, "vocab=" + std::to_string(vocab), "seed=" + std::to_string(seed),
                                   "device=" + grid.device};
  if (length > 0) sets.push_back("seq_len=" + std::to_string(length));
  sets.insert(sets.end(), grid.overrides.begin(), grid.overrides.end());
  sets.insert(sets.end(), grid.extra.sets.begin(), grid.extra.sets.end());
  return sets;
}

// The lengths the grid runs: 0 stands for the preset's own seq_len.
static std::vector<int64_t> grid_lengths(const SyntheticGrid& grid) {
  return grid.lengths.empty() ? std::vector<int64_t>{0} : grid.lengths;
}

std::string theorem2_line(const std::vector<std::pair<std::string, double>>& spreads) {
  std::vector<std::pair<std::string, double>> sorted = spreads;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  std::ostringstream bound, free;
  for (const auto& [pe, spread] : sorted) {
    char value[32];
    std::snprintf(value, sizeof value, "%.2g", spread);
    std::ostringstream& out = spread <= kSpreadZero ? bound : free;
    out << (out.tellp() > 0 ? ", " : "") << pe << " " << value;
  }
  const std::string b = bound.str(), f = free.str();
  return "Theorem 2 probe (largest hidden-state spread on identical tokens, `urpe theory probe`; zero means "
         "every position gets the same output): spread 0, bound by the theorem: " +
         (b.empty() ? std::string("(none)") : b) + "; spread > 0, can tell positions apart: " +
         (f.empty() ? std::string("(none)") : f) + ".";
}

std::string synthetic_command(const SyntheticGrid& grid) {
  auto join = [](const auto& items) {
    std::ostringstream out;
    for (size_t k = 0; k < items.size(); ++k) out << (k ? "," : "") << items[k];
    return out.str();
  };
  std::ostringstream cmd;
  cmd << "urpe repro synthetic --scale " << grid.scale << " --seeds " << grid.seeds << " --tasks "
      << join(grid.tasks) << " --pes " << join(grid.pes);
  if (!grid.lengths.empty()) cmd << " --lengths " << join(grid.lengths);
  if (grid.device != "cpu") cmd << " --device " << grid.device;
  cmd << overrides_command_text(grid.extra);
  return cmd.str();
}

// The settings every run of (task, n) shares, from the config its runs resolve (preset + overrides).
static std::string setting_line(const SyntheticGrid& grid, const std::string& task, int64_t length) {
  std::vector<std::string> sets = {"vocab=" + std::to_string(grid.vocabs.front())};
  if (length > 0) sets.push_back("seq_len=" + std::to_string(length));
  sets.insert(sets.end(), grid.overrides.begin(), grid.overrides.end());
  sets.insert(sets.end(), grid.extra.sets.begin(), grid.extra.sets.end());
  const Config c = resolve_config(task + "-" + grid.scale, "", sets);
  std::ostringstream out;
  out << "- " << task << ", n = " << c.get_int("seq_len") << ": preset `" << task << "-" << grid.scale << "`, "
      << c.get_int("layers") << " layers, d_model " << c.get_int("d_model") << ", " << c.get_int("heads")
      << " heads, d_ff " << c.get_int("d_ff") << "; " << c.get_int("steps") << " steps of batch " << c.get_int("batch")
      << ", lr " << c.get_string("lr") << ", validation on " << c.get_int("valid_size") << " fresh sequences";
  if (!grid.overrides.empty()) {
    out << " (overrides:";
    for (const std::string& o : grid.overrides) out << " " << o;
    out << ")";
  }
  return out.str();
}

static std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &utc);
  return text;
}

std::vector<ResultRow> run_synthetic_grid(const SyntheticGrid& grid, const std::string& out_dir,
                                          const std::string& experiment, const GridContinuation& continuation) {
  make_directories(out_dir);
  // Ctrl-C or SIGTERM, during a run or between two, stops the grid after the run saves.
  const StopOnInterrupt interrupt;
  GridMachine machine;
  machine.machine = machine_description(parse_device(grid.device));
  machine.load_before = load_averages();
  const auto start = std::chrono::steady_clock::now();
  std::vector<ResultRow> rows;
  std::vector<RunCurve> curves;
  const std::vector<int64_t> lengths = grid_lengths(grid);
  struct Cell {
    std::string task, pe;
    int64_t vocab, length, seed;
  };
  std::vector<Cell> cells;
  for (const std::string& task : grid.tasks)
    for (int64_t vocab : grid.vocabs)
      for (int64_t length : lengths)
        for (const std::string& pe : grid.pes)
          for (int64_t seed = grid.first_seed; seed < grid.first_seed + grid.seeds; ++seed)
            cells.push_back({task, pe, vocab, length, seed});
  const int64_t total = static_cast<int64_t>(cells.size());
  std::map<std::string, double> spreads;  // pe → largest probe spread over its runs
  std::vector<double> identical;          // per finished run: accuracy on identical tokens
  GridProgress progress(total);
  std::string stopped_run;
  int64_t stopped_step = 0, run_steps = 0;
  for (const Cell& cell : cells) {
    if (interrupt.requested()) break;  // a signal between two runs: the next one never starts
    const Config config = resolve_config(cell.task + "-" + grid.scale, "",
                                         synthetic_run_sets(grid, cell.pe, cell.vocab, cell.length, cell.seed));
    const std::string name = synthetic_run_name(cell.task, cell.vocab, cell.length, cell.pe, cell.seed);
    const std::string dir = join_path(join_path(out_dir, "runs"), name);
    const GridCellStart cell_start = grid_cell_start(dir, config, continuation.continuing);
    TrainOptions options;
    options.overwrite = true;
    options.experiment = experiment;
    options.grid = &progress;
    options.tf32 = grid.extra.tf32;
    apply_cell_start(cell_start, options);
    progress.begin_run(name);
    EncoderTrainOutcome outcome;
    if (cell_start.kind == GridCellStart::finished) outcome.result = cell_start.result;
    else outcome = train_encoder(config, dir, options);
    progress.end_run();
    if (outcome.interrupted) {  // its checkpoint is saved; the grid stops here
      stopped_run = name;
      stopped_step = outcome.result.steps;
      run_steps = config.get_int("steps");
      break;
    }
    std::printf("[%lld/%lld] %-22s valid accuracy %6.2f%%  (%lld steps, %.1f s)%s\n",
                static_cast<long long>(progress.run()), static_cast<long long>(total), name.c_str(),
                100.0 * outcome.result.metric, static_cast<long long>(outcome.result.steps), outcome.result.seconds,
                cell_start.kind == GridCellStart::finished ? "  (finished before: reused)" : "");
    std::fflush(stdout);
    rows.push_back(outcome.result);
    // With several lengths each (task, n) gets its own plot group and curves file.
    const std::string group = cell.length > 0 ? cell.task + "-n" + std::to_string(cell.length) : cell.task;
    curves.push_back({name, group, cell.vocab, cell.pe, cell.seed - grid.first_seed + 1, dir});
    if (grid.probe) {
      const GridProbe probe = grid.probe(dir);
      spreads[cell.pe] = std::max(spreads[cell.pe], probe.spread);
      identical.push_back(probe.identical_accuracy);
    }
  }
  // Stopped before its first run saved a checkpoint, a grid that replaces an old one writes nothing:
  // the old grid comes back (base/io/run_dir.h).
  if (interrupt.requested() && old_run_restorable(out_dir)) return rows;
  std::string probe_line;
  if (grid.probe) {
    std::vector<std::pair<std::string, double>> ordered;
    for (const std::string& pe : grid.pes) ordered.push_back({pe, spreads[pe]});
    probe_line = theorem2_line(ordered);
  }
  machine.load_after = load_averages();
  machine.finished_utc = utc_now();
  machine.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  json::Value list = json::Value::array();
  for (const ResultRow& r : rows) list.push(result_to_json(r));
  write_text_atomic(join_path(out_dir, "results.json"), list.dump(2) + "\n");
  std::string note;
  if (interrupt.requested()) {
    note = grid_interruption_note(stop_signal(), static_cast<int64_t>(rows.size()), total, stopped_run, stopped_step,
                                  run_steps, continuation.command);
    std::printf("\n%s\n", note.c_str());
    note += "\n\n";
  }
  write_text_atomic(join_path(out_dir, "results.md"), note + synthetic_results_markdown(rows, grid, probe_line, &machine, identical));
  draw_grid_plots(out_dir, rows, curves);
  return rows;
}

std::string synthetic_results_markdown(const std::vector<ResultRow>& rows, const SyntheticGrid& grid,
                                       const std::string& probe_line, const GridMachine* machine,
                                       const std::vector<double>& identical) {
  // (task, V, n, pe) → accuracies over seeds; V and n are recovered from the run order.
  const std::vector<int64_t> lengths = grid_lengths(grid);
  const bool show_n = !grid.lengths.empty();
  auto key = [](const std::string& task, int64_t vocab, int64_t n, const std::string& pe) {
    return task + "|" + std::to_string(vocab) + "|" + std::to_string(n) + "|" + pe;
  };
  std::map<std::string, std::vector<double>> cells, identical_cells;
  size_t k = 0;
  for (const std::string& task : grid.tasks)
    for (int64_t vocab : grid.vocabs)
      for (int64_t n : lengths)
        for (const std::string& pe : grid.pes)
          for (int64_t s = 0; s < grid.seeds && k < rows.size(); ++s, ++k) {
            cells[key(task, vocab, n, pe)].push_back(rows[k].metric);
            if (k < identical.size() && std::isfinite(identical[k]))
              identical_cells[key(task, vocab, n, pe)].push_back(identical[k]);
          }
  std::ostringstream md;
  md << "# Synthetic tasks: validation token accuracy (%)\n\n"
     << "`" << synthetic_command(grid) << "`"
     << (grid.first_seed != 1 ? " with seeds from " + std::to_string(grid.first_seed) : std::string())  // demo --seed
     << ": scale `" << grid.scale << "`, " << seed_stats_legend(grid.seeds) << ".\n"
     << "PI = position identification, ETP = even token prediction (docs/synthetic_encoder.md#tasks); chance on PI is 1/n.\n"
     << "Columns are the `pe` values (docs/theory.md#which-encodings-can-tell-positions-apart); every run of a row has the "
        "same setting:\n";
  for (const std::string& task : grid.tasks)
    for (int64_t n : lengths) md << setting_line(grid, task, n) << "\n";
  md << overrides_markdown_line(grid.extra);
  md << "\n| task | V |" << (show_n ? " n |" : "");
  for (const std::string& pe : grid.pes) md << " " << pe << " |";
  md << "\n|---|---|" << (show_n ? "---|" : "");
  for (size_t i = 0; i < grid.pes.size(); ++i) md << "---|";
  md << "\n";
  for (const std::string& task : grid.tasks)
    for (int64_t vocab : grid.vocabs)
      for (int64_t n : lengths) {
        md << "| " << task << " | " << vocab << " |";
        if (show_n) md << " " << n << " |";
        for (const std::string& pe : grid.pes)
          md << " " << format_seed_stats(seed_stats(cells[key(task, vocab, n, pe)]), 2, false, 100.0) << " |";
        md << "\n";
        // The same models on sequences of one repeated token: what Theorem 2 speaks of.
        bool probed = true;
        for (const std::string& pe : grid.pes) probed = probed && !identical_cells[key(task, vocab, n, pe)].empty();
        if (!probed) continue;
        md << "| " << task << " (identical tokens) | " << vocab << " |";
        if (show_n) md << " " << n << " |";
        for (const std::string& pe : grid.pes)
          md << " " << format_seed_stats(seed_stats(identical_cells[key(task, vocab, n, pe)]), 2, false, 100.0) << " |";
        md << "\n";
      }
  if (!probe_line.empty()) md << "\n" << probe_line << "\n";
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
  if (machine) {
    char wall[32];
    std::snprintf(wall, sizeof wall, "%.0f", machine->wall_seconds);
    md << "Ran on " << machine->machine << ", finished " << machine->finished_utc << ", " << wall
       << " s wall for " << rows.size() << " runs; load average " << machine->load_before << " before, "
       << machine->load_after << " after.\n";
  }

  // Figures 1 and 3 print no numbers (bars only), so the paper column says so; ours is RPE → URPE.
  const bool has_pair = std::find(grid.pes.begin(), grid.pes.end(), "rpe") != grid.pes.end() &&
                        std::find(grid.pes.begin(), grid.pes.end(), "urpe") != grid.pes.end();
  std::vector<PaperComparison> comparisons;
  for (const std::string& task : grid.tasks)
    for (int64_t vocab : grid.vocabs)
      for (int64_t n : lengths) {
        PaperComparison c;
        // With --lengths the rows are Figure 3's question (PI at n = 256 and 512 in the paper).
        c.quantity = task + " accuracy (%), V = " + std::to_string(vocab) +
                     (show_n ? ", n = " + std::to_string(n) + " (paper Figures 1 and 3)" : " (paper Figure 1)");
        c.paper_note = show_n ? "not printed: Figures 1 and 3 are bar charts without values"
                              : "not printed: Figure 1 is a bar chart without values";
        const std::vector<double>& base = cells[key(task, vocab, n, "rpe")];
        const std::vector<double>& urpe = cells[key(task, vocab, n, "urpe")];
        if (has_pair && !base.empty() && !urpe.empty()) {
          c.ours_base = seed_stats(base).mean;
          c.ours_urpe = seed_stats(urpe).mean;
        }
        c.scale = 100.0;
        comparisons.push_back(c);
      }
  // The grid's task protocol (the scale's presets, or an override): the paper scale's is official.
  std::vector<std::string> all_sets = grid.overrides;
  all_sets.insert(all_sets.end(), grid.extra.sets.begin(), grid.extra.sets.end());
  const std::string protocol =
      grid.tasks.empty() ? std::string("simple")
                         : resolve_config(grid.tasks.front() + "-" + grid.scale, "", all_sets).get_string("task_protocol");
  md << paper_comparison_markdown(comparisons, "RPE",
                                  "scale `" + grid.scale + "`, task protocol `" + protocol + "`, on freshly drawn "
                                  "synthetic sequences (docs/synthetic_encoder.md#tasks), mean over " + std::to_string(grid.seeds) +
                                  " seed(s), the final checkpoint's validation accuracy; the paper: sequence "
                                  "length 128, V ∈ {10, 1,000, 10,000}.");
  return md.str();
}

}  // namespace urpe
