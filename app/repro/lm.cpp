// Runner for the language-modelling comparison: one training run per (L, pe, seed), the extra
// evaluations (test, valid without memory), then the summary files.
#include "app/repro/lm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "data/corpus.h"
#include "train/families/txl/txl_trainer.h"
#include "base/plot/charts.h"
#include "train/config/run_config.h"
#include "base/io/run_dir.h"
#include "train/loop/run_control.h"
#include "train/families/txl/txl_plots.h"
#include "base/io/safetensors.h"
#include "app/repro/paper_values.h"
#include "app/repro/seed_stats.h"

namespace urpe {

LmReproPlan lm_plan_for_scale(const std::string& scale) {
  LmReproPlan p;
  p.scale = scale;
  if (scale == "tiny") p.preset = "txl-tiny";
  else if (scale == "small") p.preset = "txl-small";
  else if (scale == "paper") {
    p.preset = "txl-base-paper";  // txl-base with the paper's weight decay
    p.layers = {4, 8, 16};        // the paper's Table 4
  } else URPE_FAIL("--scale '" << scale << "': expected tiny, small or paper");
  return p;
}

std::string lm_run_name(int64_t layers, const std::string& pe, int64_t seed) {
  return "L" + std::to_string(layers) + "-" + pe + "-s" + std::to_string(seed);
}

std::vector<std::string> lm_base_sets(const LmReproPlan& plan) {
  std::vector<std::string> sets = {"device=" + plan.device};
  sets.insert(sets.end(), plan.overrides.begin(), plan.overrides.end());
  sets.insert(sets.end(), plan.extra.sets.begin(), plan.extra.sets.end());
  return sets;
}

std::vector<std::string> lm_run_sets(const LmReproPlan& plan, int64_t layers, const std::string& pe, int64_t seed) {
  std::vector<std::string> sets = lm_base_sets(plan);
  sets.insert(sets.end(), {"pe=" + pe, "seed=" + std::to_string(seed)});
  if (!plan.layers.empty()) sets.push_back("layers=" + std::to_string(layers));
  return sets;
}

namespace {

std::string display_name(const std::string& pe) { return pe == "urpe" ? "Transformer-XL + URPE" : "Transformer-XL"; }
std::string short_name(const std::string& pe) { return pe == "urpe" ? "URPE" : "RPE"; }


std::vector<const LmRunRecord*> runs_of(const LmReproSummary& summary, int64_t layers, const std::string& pe) {
  std::vector<const LmRunRecord*> list;
  for (const LmRunRecord& r : summary.runs)
    if (r.layers == layers && r.pe == pe) list.push_back(&r);
  return list;
}

std::vector<int64_t> depths_of(const LmReproSummary& summary) {
  std::vector<int64_t> depths;
  for (const LmRunRecord& r : summary.runs)
    if (std::find(depths.begin(), depths.end(), r.layers) == depths.end()) depths.push_back(r.layers);
  return depths;
}

ResultRow row_of(const LmRunRecord& r, const std::string& metric_name, double metric, const std::string& device) {
  ResultRow row;
  row.experiment = "lm";
  row.task = "lm";
  row.model = "transformer_xl-L" + std::to_string(r.layers);
  row.pe = r.pe;
  row.seed = r.seed;
  row.metric_name = metric_name;
  row.metric = metric;
  row.params = r.params;
  row.steps = r.steps;
  row.seconds = r.seconds;
  row.device = device;
  return row;
}

void draw_lm_repro_plots(const std::string& out_dir, const LmReproSummary& summary) {
  const std::string plots = join_path(out_dir, "plots");
  make_directories(plots);
  for (int64_t layers : depths_of(summary)) {
    const std::string depth = "L" + std::to_string(layers);
    plot::LineChartSpec chart;
    chart.title = "Validation perplexity, " + depth;
    chart.x_label = "step";
    chart.y_label = "valid PPL (last point: whole split)";
    chart.log_y = true;
    const LmRunRecord* urpe_run = nullptr;
    for (const std::string pe : {"rpe", "urpe"})
      for (const LmRunRecord* r : runs_of(summary, layers, pe)) {
        plot::Series s;
        s.name = short_name(pe) + " seed " + std::to_string(r->seed);
        for (const MetricsRow& m : read_metrics(join_path(r->dir, "metrics.csv")))
          if (m.split == "valid") {
            s.x.push_back(static_cast<double>(m.step));
            s.y.push_back(m.metric);
          }
        chart.series.push_back(std::move(s));
        if (pe == "urpe" && !urpe_run) urpe_run = r;
      }
    plot::line_chart(join_path(plots, "curves_" + depth + ".png"), chart);
    if (urpe_run) {
      const TensorFile file = load_safetensors(join_path(urpe_run->dir, "model.safetensors"));
      plot::line_chart(join_path(plots, "urpe_c_" + depth + ".png"),
                       urpe_c_chart(file.at("model.urpe_c"), "Learned URPE C by distance (" + depth + ", seed " +
                                                                 std::to_string(urpe_run->seed) + ")"));
    }
  }
  // Final perplexities, mean over seeds: valid and test with memory, valid without.
  plot::BarChartSpec bars;
  bars.title = "Mean perplexity";
  bars.y_label = "perplexity (mean over seeds)";
  bars.decimals = 1;
  for (int64_t layers : depths_of(summary))
    for (const char* what : {"valid", "test", "valid, no memory"})
      bars.groups.push_back("L" + std::to_string(layers) + " " + what);
  for (const std::string pe : {"rpe", "urpe"}) {
    plot::BarSeries s;
    s.name = display_name(pe);
    for (int64_t layers : depths_of(summary)) {
      std::vector<double> valid, test, none;
      for (const LmRunRecord* r : runs_of(summary, layers, pe)) {
        valid.push_back(r->valid_ppl);
        test.push_back(r->test_ppl);
        none.push_back(r->valid_ppl_no_memory);
      }
      for (const auto* v : {&valid, &test, &none}) s.values.push_back(seed_stats(*v).mean);
    }
    bars.series.push_back(std::move(s));
  }
  plot::bar_chart(join_path(plots, "perplexity.png"), bars);
}

}  // namespace

LmReproSummary run_lm_repro(const LmReproPlan& plan, const std::string& out_dir,
                            const GridContinuation& continuation) {
  const auto start = std::chrono::steady_clock::now();
  make_directories(out_dir);
  // Ctrl-C or SIGTERM, during a run or between two, stops the grid after the run saves.
  const StopOnInterrupt interrupt;
  std::string stopped_run;
  int64_t stopped_step = 0, run_steps = 0;
  // Every run of the plan reads the same corpus: load it once.
  const Config base = resolve_config(plan.preset, "", lm_base_sets(plan));
  const data::Corpus corpus = corpus_from_config(base);
  LmReproSummary summary;
  summary.corpus = base.get_string("corpus");
  summary.token_mode = base.get_string("token_mode");
  summary.vocab = corpus.vocab.size();
  summary.unigram_valid_ppl = data::unigram_perplexity(corpus.train.ids, corpus.valid.ids);
  summary.unigram_test_ppl = data::unigram_perplexity(corpus.train.ids, corpus.test.ids);
  std::printf("corpus %s (%s mode): vocabulary %lld, train %zu tokens; unigram perplexity valid %.2f, test %.2f\n",
              corpus.directory.c_str(), summary.token_mode.c_str(), static_cast<long long>(summary.vocab),
              corpus.train.ids.size(), summary.unigram_valid_ppl, summary.unigram_test_ppl);

  const std::vector<int64_t> depths = plan.layers.empty() ? std::vector<int64_t>{base.get_int("layers")} : plan.layers;
  const int64_t total = static_cast<int64_t>(depths.size() * plan.pes.size()) * plan.seeds;
  GridProgress progress(total);
  for (int64_t layers : depths)
    for (const std::string& pe : plan.pes)
      for (int64_t seed = plan.first_seed; seed < plan.first_seed + plan.seeds; ++seed) {
        if (interrupt.requested()) continue;  // stopped: the remaining runs never start
        const Config config = resolve_config(plan.preset, "", lm_run_sets(plan, layers, pe, seed));
        LmRunRecord r;
        r.layers = layers;
        r.pe = pe;
        r.seed = seed;
        r.dir = join_path(join_path(out_dir, "runs"), lm_run_name(layers, pe, seed));
        TrainOptions options;
        options.overwrite = true;
        options.experiment = "lm";
        options.grid = &progress;
        const GridCellStart cell = grid_cell_start(r.dir, config, continuation.continuing);
        apply_cell_start(cell, options);
        options.tf32 = plan.extra.tf32;
        progress.begin_run(lm_run_name(layers, pe, seed));
        TxlTrainOutcome outcome;
        if (cell.kind == GridCellStart::finished) outcome.result = cell.result;
        else outcome = train_txl(config, r.dir, options, &corpus);
        if (outcome.interrupted) {  // its checkpoint is saved; the grid stops here
          progress.end_run();
          stopped_run = lm_run_name(layers, pe, seed);
          stopped_step = outcome.result.steps;
          run_steps = config.get_int("steps");
          continue;
        }
        r.params = outcome.result.params;
        r.steps = outcome.result.steps;
        r.seconds = outcome.result.seconds;
        // The official protocol: valid and test of the checkpoint with the best validation.
        r.valid_ppl = evaluate_txl_run(r.dir, "valid", nullptr, &corpus, "", "best").result.perplexity;
        const TxlRunEval test = evaluate_txl_run(r.dir, "test", nullptr, &corpus, "", "best");
        r.test_ppl = test.result.perplexity;
        r.best_step = test.step;
        r.eval_mem_len = test.settings.mem_len;
        TxlEvalSettings no_memory = test.settings;
        no_memory.mem_len = 0;
        no_memory.same_length = false;  // needs a memory
        r.valid_ppl_no_memory = evaluate_txl_run(r.dir, "valid", &no_memory, &corpus, "", "best").result.perplexity;
        progress.end_run();
        std::printf("[%lld/%lld] %-14s best (step %lld) valid ppl %8.2f (without memory %8.2f, %+.1f%%), "
                    "test ppl %8.2f  (%lld steps, %.0f s)\n",
                    static_cast<long long>(progress.run()), static_cast<long long>(total),
                    lm_run_name(layers, pe, seed).c_str(), static_cast<long long>(r.best_step), r.valid_ppl, r.valid_ppl_no_memory, 100.0 * (r.valid_ppl_no_memory / r.valid_ppl - 1.0),
                    r.test_ppl, static_cast<long long>(r.steps), r.seconds);
        std::fflush(stdout);
        summary.runs.push_back(r);
      }

  if (plan.finetune_steps > 0 && !interrupt.requested()) {
    // Paper §4.2: the same trained RPE weights, continued as RPE and as URPE (C = 1), equal steps.
    std::vector<std::string> sets;
    for (const std::string& s : lm_base_sets(plan))
      if (s.rfind("steps=", 0) != 0 && s.rfind("warmup=", 0) != 0) sets.push_back(s);
    sets.insert(sets.end(), {"steps=" + std::to_string(plan.finetune_steps), "warmup=0"});
    for (const LmRunRecord& source : std::vector<LmRunRecord>(summary.runs)) {
      if (source.pe != "rpe") continue;
      LmFinetuneRecord f;
      f.layers = source.layers;
      f.seed = source.seed;
      f.steps = plan.finetune_steps;
      f.source_dir = source.dir;
      f.source_valid_ppl = source.valid_ppl;
      f.source_test_ppl = source.test_ppl;
      for (const std::string pe : {"rpe", "urpe"}) {
        std::vector<std::string> run_sets = sets;
        run_sets.insert(run_sets.end(), {"pe=" + pe, "seed=" + std::to_string(source.seed)});
        if (!plan.layers.empty()) run_sets.push_back("layers=" + std::to_string(source.layers));
        const std::string name = lm_run_name(source.layers, pe, source.seed) + (pe == "urpe" ? "-finetuned" : "-continued");
        const std::string dir = join_path(join_path(out_dir, "runs"), name);
        TrainOptions options;
        options.overwrite = true;
        options.experiment = "lm-finetune";
        options.init_from = source.dir;
        options.quiet = true;
        options.tf32 = plan.extra.tf32;
        train_txl(resolve_config(plan.preset, "", run_sets), dir, options, &corpus);
        if (interrupt.requested()) break;  // no half-finished comparison in the results
        const double valid = evaluate_txl_run(dir, "valid", nullptr, &corpus, "", "best").result.perplexity;
        const double test = evaluate_txl_run(dir, "test", nullptr, &corpus, "", "best").result.perplexity;
        (pe == "urpe" ? f.urpe_dir : f.rpe_dir) = dir;
        (pe == "urpe" ? f.urpe_valid_ppl : f.rpe_valid_ppl) = valid;
        (pe == "urpe" ? f.urpe_test_ppl : f.rpe_test_ppl) = test;
      }
      if (interrupt.requested()) break;
      std::printf("finetune %s: RPE continued valid %.2f test %.2f; URPE fine-tuned valid %.2f test %.2f (%lld steps)\n",
                  source.dir.c_str(), f.rpe_valid_ppl, f.rpe_test_ppl, f.urpe_valid_ppl, f.urpe_test_ppl,
                  static_cast<long long>(f.steps));
      std::fflush(stdout);
      summary.finetune.push_back(f);
    }
  }

  // Stopped before its first run saved a checkpoint, a grid that replaces an old one writes nothing:
  // the old grid comes back (base/io/run_dir.h).
  if (interrupt.requested() && old_run_restorable(out_dir)) return summary;
  summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  json::Value list = json::Value::array();
  const std::string device = parse_device(plan.device).name();
  for (const char* split : {"valid", "test"}) {
    ResultRow u;
    u.experiment = "lm";
    u.task = "lm";
    u.model = "unigram";
    u.pe = "none";
    u.metric_name = std::string(split) + "_ppl";
    u.metric = std::string(split) == "valid" ? summary.unigram_valid_ppl : summary.unigram_test_ppl;
    u.params = summary.vocab;
    u.device = "cpu";
    list.push(result_to_json(u));
  }
  for (const LmRunRecord& r : summary.runs) {
    list.push(result_to_json(row_of(r, "valid_ppl", r.valid_ppl, device)));
    list.push(result_to_json(row_of(r, "test_ppl", r.test_ppl, device)));
    list.push(result_to_json(row_of(r, "valid_ppl_mem0", r.valid_ppl_no_memory, device)));
  }
  write_text_atomic(join_path(out_dir, "results.json"), list.dump(2) + "\n");
  std::string note;
  if (interrupt.requested()) {
    note = grid_interruption_note(stop_signal(), static_cast<int64_t>(summary.runs.size()), total, stopped_run,
                                  stopped_step, run_steps, continuation.command);
    std::printf("\n%s\n", note.c_str());
    note += "\n\n";
  }
  write_text_atomic(join_path(out_dir, "results.md"), note + lm_results_markdown(summary, plan));
  draw_lm_repro_plots(out_dir, summary);
  return summary;
}

std::string lm_results_markdown(const LmReproSummary& summary, const LmReproPlan& plan) {
  std::ostringstream md;
  std::vector<std::string> sets = plan.overrides;
  sets.insert(sets.end(), plan.extra.sets.begin(), plan.extra.sets.end());
  const Config base = resolve_config(plan.preset, "", sets);
  const TxlEvalSettings eval = eval_settings_from(base);
  md << "# Language modelling: Transformer-XL vs Transformer-XL + URPE\n\n"
     << "Scale `" << plan.scale << "` (preset `" << plan.preset << "`), corpus `" << summary.corpus << "` ("
     << summary.token_mode << " tokens, vocabulary " << summary.vocab << "), " << plan.seeds
     << " seed(s) per model: " << seed_stats_legend(plan.seeds) << ".\n"
     << "Model: d_model " << base.get_int("d_model") << ", " << base.get_int("heads") << " heads × "
     << base.get_int("d_head") << ", d_inner " << base.get_int("d_inner") << "; training tgt_len "
     << base.get_int("tgt_len") << ", mem_len " << base.get_int("mem_len") << ", batch " << base.get_int("batch")
     << ", " << base.get_int("steps") << " steps.\n"
     << "Every perplexity is of the run's best-validation checkpoint (model.best.safetensors: the lowest "
     << "validation perplexity at an evaluation step, on the first max_eval_tokens tokens except at the last "
     << "step), as the official Transformer-XL reports test.\n"
     << "Perplexity over the whole split (docs/transformer_xl.md#evaluation-protocol): eval_tgt_len " << eval.tgt_len << ", memory " << eval.mem_len
     << ", clamp_len " << eval.clamp_len << ", same_length " << (eval.same_length ? "true" : "false") << ", "
     << eval.batch << " columns.\n"
     << overrides_markdown_line(plan.extra) << "\n"
     << "Unigram perplexity (train frequencies, no context): valid " << format_seed_stats(seed_stats({summary.unigram_valid_ppl}), 2)
     << ", test " << format_seed_stats(seed_stats({summary.unigram_test_ppl}), 2) << ".\n\n"
     << "| L | model | parameters | valid PPL | test PPL | valid PPL, no memory |\n"
     << "|---|---|---|---|---|---|\n";
  for (int64_t layers : depths_of(summary))
    for (const std::string& pe : plan.pes) {
      std::vector<double> valid, test, none;
      int64_t params = 0;
      for (const LmRunRecord* r : runs_of(summary, layers, pe)) {
        valid.push_back(r->valid_ppl);
        test.push_back(r->test_ppl);
        none.push_back(r->valid_ppl_no_memory);
        params = r->params;
      }
      md << "| " << layers << " | " << display_name(pe) << " | " << params << " | " << format_seed_stats(seed_stats(valid), 2)
         << " | " << format_seed_stats(seed_stats(test), 2) << " | " << format_seed_stats(seed_stats(none), 2) << " |\n";
    }

  md << "\nURPE − baseline (per seed, then mean ± half-range; negative = URPE better):\n\n"
     << "| L | URPE parameters | valid PPL | test PPL |\n|---|---|---|---|\n";
  for (int64_t layers : depths_of(summary)) {
    const auto base_runs = runs_of(summary, layers, "rpe"), urpe_runs = runs_of(summary, layers, "urpe");
    if (base_runs.empty() || urpe_runs.empty()) continue;
    std::vector<double> dv, dt;
    for (const LmRunRecord* u : urpe_runs)
      for (const LmRunRecord* b : base_runs)
        if (b->seed == u->seed) {
          dv.push_back(u->valid_ppl - b->valid_ppl);
          dt.push_back(u->test_ppl - b->test_ppl);
        }
    const int64_t extra = urpe_runs[0]->params - base_runs[0]->params;
    char overhead[96];
    std::snprintf(overhead, sizeof overhead, "+%lld (+%.3f%%)", static_cast<long long>(extra),
                  100.0 * static_cast<double>(extra) / static_cast<double>(base_runs[0]->params));
    md << "| " << layers << " | " << overhead << " | " << format_seed_stats(seed_stats(dv), 2, true) << " | "
       << format_seed_stats(seed_stats(dt), 2, true) << " |\n";
  }

  std::vector<double> gain;
  for (const LmRunRecord& r : summary.runs) gain.push_back(100.0 * (r.valid_ppl_no_memory / r.valid_ppl - 1.0));
  if (!gain.empty()) {
    const auto [lo, hi] = std::minmax_element(gain.begin(), gain.end());
    char text[200];
    std::snprintf(text, sizeof text,
                  "\nMemory: the same checkpoints evaluated with eval_mem_len = 0 score a validation perplexity "
                  "%.1f%% to %.1f%% higher than with memory %lld.\n",
                  *lo, *hi, static_cast<long long>(summary.runs[0].eval_mem_len));
    md << text;
  }
  double seconds = 0;
  for (const LmRunRecord& r : summary.runs) seconds += r.seconds;
  md << "Training time in total: " << static_cast<int64_t>(seconds) << " s on " << parse_device(plan.device).name()
     << "; the whole repro (corpus, training, evaluations) took " << static_cast<int64_t>(summary.wall_seconds)
     << " s. Plots: plots/curves_L*.png (validation perplexity against step), plots/perplexity.png, "
        "plots/urpe_c_L*.png (the learned C).\n";

  // The paper's WikiText-103 numbers: Table 4 (§5.4) gives validation perplexity at L = 4, 8, 16,
  // Table 1 valid and test at L = 16 (Transformer-XL base). A depth of ours the paper has is compared
  // with that depth; any other (the tiny and small scales) with the base model, and the row says so.
  std::vector<PaperComparison> rows;
  for (int64_t layers : depths_of(summary)) {
    std::vector<double> base_valid, urpe_valid, base_test, urpe_test;
    for (const LmRunRecord* r : runs_of(summary, layers, "rpe")) {
      base_valid.push_back(r->valid_ppl);
      base_test.push_back(r->test_ppl);
    }
    for (const LmRunRecord* r : runs_of(summary, layers, "urpe")) {
      urpe_valid.push_back(r->valid_ppl);
      urpe_test.push_back(r->test_ppl);
    }
    const PaperValues::DepthRow* same_depth = paper_table4_row(layers);
    const PaperValues::DepthRow& paper_depth = same_depth ? *same_depth : *paper_table4_row(16);
    const std::string ours = "ours L = " + std::to_string(layers);
    for (int split = 0; split < 2; ++split) {
      PaperComparison c;
      if (split == 0) {
        c.quantity = "valid perplexity, " + ours +
                     (paper_depth.layers == 16 ? std::string(" (paper Tables 1 and 4, L = 16: Transformer-XL base")
                                               : " (paper Table 4, L = " + std::to_string(paper_depth.layers)) +
                     ", WikiText-103)";
        c.paper_base = paper_depth.rpe_valid_ppl;
        c.paper_urpe = paper_depth.urpe_valid_ppl;
      } else if (same_depth && layers != 16) {
        c.quantity = "test perplexity, " + ours;
        c.paper_note = "not printed: Table 4 gives validation perplexity only (Table 1: test at L = 16)";
      } else {
        c.quantity = "test perplexity, " + ours + " (paper Table 1: Transformer-XL base, L = 16, WikiText-103)";
        c.paper_base = PaperValues::txl_base_test_ppl;
        c.paper_urpe = PaperValues::txl_urpe_test_ppl;
      }
      const std::vector<double>& b = split == 0 ? base_valid : base_test;
      const std::vector<double>& u = split == 0 ? urpe_valid : urpe_test;
      if (!b.empty()) c.ours_base = seed_stats(b).mean;
      if (!u.empty()) c.ours_urpe = seed_stats(u).mean;
      c.paper_decimals = 1;
      rows.push_back(c);
    }
  }
  if (!summary.finetune.empty()) {
    md << "\n## Fine-tuning RPE into URPE (paper §4.2)\n\n"
       << "Each trained RPE run continued for " << summary.finetune[0].steps
       << " more steps from its last checkpoint (`urpe train --init-from`, fresh Adam, warm-up 0), once as "
          "RPE and once as URPE with C = 1 (the same function at the start); perplexities of each "
          "continuation's best-validation checkpoint.\n\n"
       << "| L | seed | RPE run valid / test | RPE continued valid / test | URPE fine-tuned valid / test | "
          "URPE − RPE continued (test) |\n|---|---|---|---|---|---|\n";
    for (const LmFinetuneRecord& f : summary.finetune) {
      char line[256];
      std::snprintf(line, sizeof line, "| %lld | %lld | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %+.2f |\n",
                    static_cast<long long>(f.layers), static_cast<long long>(f.seed), f.source_valid_ppl,
                    f.source_test_ppl, f.rpe_valid_ppl, f.rpe_test_ppl, f.urpe_valid_ppl, f.urpe_test_ppl,
                    f.urpe_test_ppl - f.rpe_test_ppl);
      md << line;
    }
  }
  md << paper_comparison_markdown(
      rows, "Transformer-XL",
      "scale `" + plan.scale + "` (preset `" + plan.preset + "`, " + std::to_string(base.get_int("steps")) +
          " steps) on corpus `" + summary.corpus + "` (" + summary.token_mode + " tokens, vocabulary " +
          std::to_string(summary.vocab) + "), mean over " + std::to_string(plan.seeds) +
          " seed(s), the best-validation checkpoint; the paper: WikiText-103 at the full base schedule.");
  return md.str();
}

}  // namespace urpe
