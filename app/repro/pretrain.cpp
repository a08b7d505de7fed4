// Runner of the C.4 comparison (see pretrain.h): one masked-LM run per (pe, seed), each scored on
// the valid and test windows, then the summary files.
#include "app/repro/pretrain.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "data/corpus.h"
#include "tensor/error.h"
#include "base/io/run_dir.h"
#include "train/loop/checkpoint.h"
#include "train/families/txl/txl_config.h"
#include "train/families/encoder/encoder_mlm_trainer.h"
#include "base/plot/charts.h"
#include "train/config/run_config.h"
#include "app/repro/paper_values.h"
#include "app/repro/seed_stats.h"

namespace urpe {

PretrainPlan pretrain_plan_for_scale(const std::string& scale) {
  PretrainPlan p;
  p.scale = scale;
  if (scale == "tiny") p.preset = "mlm-tiny";
  else if (scale == "small") p.preset = "mlm-small";
  else if (scale == "paper") p.preset = "mlm-paper";
  else URPE_FAIL("--scale '" << scale << "': expected tiny, small or paper");
  return p;
}

std::vector<std::string> pretrain_run_sets(const PretrainPlan& plan, const std::string& pe, int64_t seed) {
  std::vector<std::string> sets = {"device=" + plan.device};
  sets.insert(sets.end(), plan.overrides.begin(), plan.overrides.end());
  sets.insert(sets.end(), plan.extra.sets.begin(), plan.extra.sets.end());
  sets.insert(sets.end(), {"pe=" + pe, "seed=" + std::to_string(seed)});
  return sets;
}

std::string pretrain_run_name(const std::string& pe, int64_t seed) { return pe + "-s" + std::to_string(seed); }

double paper_pretrain_loss(const std::string& pe) {
  if (pe == "ape+rpe") return PaperValues::pretrain_ape_rpe_loss;
  if (pe == "rpe") return PaperValues::pretrain_rpe_loss;
  if (pe == "urpe") return PaperValues::pretrain_urpe_loss;
  return -1;
}

namespace {

std::string display_name(const std::string& pe) {
  if (pe == "ape+rpe") return "APE+RPE";
  if (pe == "rpe") return "RPE";
  if (pe == "urpe") return "URPE";
  return pe;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::vector<std::string> plan_sets(const PretrainPlan& plan) {
  std::vector<std::string> sets = {"device=" + plan.device};
  sets.insert(sets.end(), plan.overrides.begin(), plan.overrides.end());
  sets.insert(sets.end(), plan.extra.sets.begin(), plan.extra.sets.end());
  return sets;
}

std::vector<const PretrainRun*> runs_of(const PretrainSummary& summary, const std::string& pe) {
  std::vector<const PretrainRun*> list;
  for (const PretrainRun& r : summary.runs)
    if (r.pe == pe) list.push_back(&r);
  return list;
}

ResultRow row_of(const PretrainRun& r, const std::string& name, double metric, const std::string& device) {
  ResultRow row;
  row.experiment = "pretrain";
  row.task = "mlm";
  row.model = "encoder";
  row.pe = r.pe;
  row.seed = r.seed;
  row.metric_name = name;
  row.metric = metric;
  row.params = r.params;
  row.steps = r.steps;
  row.seconds = r.seconds;
  row.device = device;
  return row;
}

void draw_plots(const std::string& out_dir, const PretrainSummary& summary, const PretrainPlan& plan) {
  const std::string plots = join_path(out_dir, "plots");
  make_directories(plots);
  plot::LineChartSpec curves;
  curves.title = "Validation MLM loss (Appendix C.4 in small)";
  curves.x_label = "step";
  curves.y_label = "valid masked-LM loss";
  for (const PretrainRun& r : summary.runs) {
    plot::Series s;
    s.name = display_name(r.pe) + ", seed " + std::to_string(r.seed);
    for (const MetricsRow& m : read_metrics(join_path(r.dir, "metrics.csv")))
      if (m.split == "valid") {
        s.x.push_back(static_cast<double>(m.step));
        s.y.push_back(m.loss);
      }
    curves.series.push_back(std::move(s));
  }
  plot::line_chart(join_path(plots, "curves.png"), curves);
  plot::BarChartSpec bars;
  bars.title = "Final MLM loss, mean over seeds (lower is better)";
  bars.y_label = "masked-LM loss";
  bars.groups = {"valid", "test"};
  bars.decimals = 3;
  for (const std::string& pe : plan.pes) {
    std::vector<double> valid, test;
    for (const PretrainRun* r : runs_of(summary, pe)) {
      valid.push_back(r->valid_loss);
      test.push_back(r->test_loss);
    }
    if (!valid.empty()) bars.series.push_back({display_name(pe), {seed_stats(valid).mean, seed_stats(test).mean}});
  }
  plot::bar_chart(join_path(plots, "loss.png"), bars);
}

}  // namespace

PretrainSummary run_pretrain_repro(const PretrainPlan& plan, const std::string& out_dir) {
  URPE_CHECK(plan.seeds >= 1, "repro pretrain: seeds must be at least 1, got " << plan.seeds);
  const auto start = std::chrono::steady_clock::now();
  make_directories(out_dir);
  const Config base = resolve_config(plan.preset, "", plan_sets(plan));
  const data::Corpus corpus = data::load_corpus(corpus_dir_from(base), data::TokenMode::word);  // once for every run
  const MaskedLmData data = masked_lm_data(base, &corpus);
  PretrainSummary summary;
  summary.corpus = base.get_string("corpus");
  summary.corpus_vocab = data.corpus_vocab;
  summary.vocab = data.task.vocab();
  summary.seq_len = data.task.seq_len();
  summary.masked_per_sequence = data.task.masked_per_sequence();
  summary.valid_windows = std::min(base.get_int("valid_size"), data.task.window_count(data.valid));
  summary.rare_share_valid = data.rare_share_valid;
  std::printf("corpus %s: %lld words, vocabulary capped at %lld ids (%.1f%% of valid tokens rarer); windows of %lld, "
              "%lld masked each\n",
              data.corpus_dir.c_str(), static_cast<long long>(summary.corpus_vocab), static_cast<long long>(summary.vocab),
              100.0 * summary.rare_share_valid, static_cast<long long>(summary.seq_len),
              static_cast<long long>(summary.masked_per_sequence));
  std::fflush(stdout);

  const int64_t total = static_cast<int64_t>(plan.pes.size()) * plan.seeds;
  GridProgress progress(total);
  bool stopped = false;  // a signal stopped a run (its checkpoint is saved): the rest never start
  for (const std::string& pe : plan.pes)
    for (int64_t seed = plan.first_seed; seed < plan.first_seed + plan.seeds && !stopped; ++seed) {
      const Config config = resolve_config(plan.preset, "", pretrain_run_sets(plan, pe, seed));
      PretrainRun r;
      r.pe = pe;
      r.seed = seed;
      const std::string name = pretrain_run_name(pe, seed);
      r.dir = join_path(join_path(out_dir, "runs"), name);
      TrainOptions options;
      options.overwrite = true;
      options.experiment = "pretrain";
      options.grid = &progress;
      options.tf32 = plan.extra.tf32;
      progress.begin_run(name);
      const EncoderTrainOutcome outcome = train_masked_lm(config, r.dir, options, &corpus);
      if (outcome.interrupted) {
        progress.end_run();
        stopped = true;
        break;
      }
      r.params = outcome.result.params;
      r.steps = outcome.result.steps;
      r.seconds = outcome.result.seconds;
      r.valid_loss = outcome.final_valid_loss;
      r.valid_accuracy = outcome.result.metric;
      // The test windows, scored by the same final checkpoint.
      TransformerEncoder model(encoder_config_from(config), 0, parse_device(config.get_string("device")));
      load_checkpoint(join_path(r.dir, "model.safetensors"), model.parameters(), nullptr);
      const MaskedLmEval test = evaluate_masked_lm(model, data.task, data.test, config.get_int("valid_size"));
      r.test_loss = test.loss;
      r.test_accuracy = test.accuracy;
      progress.end_run();
      std::printf("[%lld/%lld] %-12s valid MLM loss %.4f (masked accuracy %.2f%%), test %.4f  (%lld params, %lld steps, "
                  "%.0f s)\n",
                  static_cast<long long>(progress.run()), static_cast<long long>(total), name.c_str(), r.valid_loss,
                  100.0 * r.valid_accuracy, r.test_loss, static_cast<long long>(r.params),
                  static_cast<long long>(r.steps), r.seconds);
      std::fflush(stdout);
      summary.runs.push_back(r);
    }
  summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (stopped && old_run_restorable(out_dir)) return summary;  // an --overwrite's old run comes back

  json::Value list = json::Value::array();
  const std::string device = parse_device(plan.device).name();
  for (const PretrainRun& r : summary.runs) {
    list.push(result_to_json(row_of(r, "valid_mlm_loss", r.valid_loss, device)));
    list.push(result_to_json(row_of(r, "test_mlm_loss", r.test_loss, device)));
    list.push(result_to_json(row_of(r, "valid_masked_accuracy", r.valid_accuracy, device)));
  }
  write_text_atomic(join_path(out_dir, "results.json"), list.dump(2) + "\n");
  write_text_atomic(join_path(out_dir, "results.md"), pretrain_results_markdown(summary, plan));
  draw_plots(out_dir, summary, plan);
  return summary;
}

std::string pretrain_results_markdown(const PretrainSummary& summary, const PretrainPlan& plan) {
  const Config base = resolve_config(plan.preset, "", plan_sets(plan));
  std::ostringstream md;
  md << "# Pre-training: APE+RPE vs RPE vs URPE (paper Appendix C.4)\n\n"
     << "Scale `" << plan.scale << "` (preset `" << plan.preset << "`): encoder of " << base.get_int("layers")
     << " layers, d = " << base.get_int("d_model") << ", " << base.get_int("heads") << " heads, d_ff "
     << base.get_int("d_ff") << ", RPE " << base.get_string("rpe_kind") << " (T5), URPE's C "
     << base.get_string("urpe_kind") << "; " << base.get_int("steps") << " steps of batch " << base.get_int("batch")
     << ", lr " << base.get_string("lr") << " (warm-up " << base.get_int("warmup") << ", linear to 0), weight decay "
     << base.get_string("weight_decay") << ", dropout " << base.get_string("dropout") << ".\n"
     << "Data: corpus `" << summary.corpus << "` (" << summary.corpus_vocab << " words), vocabulary capped at "
     << summary.vocab << " ids (the " << summary.vocab - 2 << " most frequent words, a rare-word id for the rest: "
     << fixed(100.0 * summary.rare_share_valid, 1) << "% of the valid tokens, and [MASK]); windows of "
     << summary.seq_len << " tokens, " << summary.masked_per_sequence
     << " positions masked in each (BERT: 15%, then 80% [MASK] / 10% random / 10% kept); validation on the first "
     << summary.valid_windows << " windows of the valid split (test: of the test split), masks from a fixed seed.\n"
     << "Every loss is the final checkpoint's mean cross-entropy over the masked positions, as C.4 reports the "
        "loss after its last iteration; " << plan.seeds << " seed(s) per model: " << seed_stats_legend(plan.seeds) << ".\n"
     << overrides_markdown_line(plan.extra) << "\n"
     << "| model (`pe`) | parameters | valid MLM loss | test MLM loss | valid masked-token accuracy (%) | paper valid "
        "MLM loss (C.4, BERT-base, 1M steps) |\n|---|---|---|---|---|---|\n";
  std::vector<std::pair<double, std::string>> ours_order, paper_order;
  for (const std::string& pe : plan.pes) {
    std::vector<double> valid, test, accuracy;
    int64_t params = 0;
    for (const PretrainRun* r : runs_of(summary, pe)) {
      valid.push_back(r->valid_loss);
      test.push_back(r->test_loss);
      accuracy.push_back(r->valid_accuracy);
      params = r->params;
    }
    if (valid.empty()) continue;
    const double paper = paper_pretrain_loss(pe);
    md << "| " << display_name(pe) << " (`" << pe << "`) | " << params << " | " << format_seed_stats(seed_stats(valid), 4)
       << " | " << format_seed_stats(seed_stats(test), 4) << " | " << format_seed_stats(seed_stats(accuracy), 2, false, 100.0)
       << " | " << (paper < 0 ? std::string("not in the paper") : fixed(paper, 2)) << " |\n";
    ours_order.push_back({seed_stats(valid).mean, display_name(pe)});
    if (paper >= 0) paper_order.push_back({paper, display_name(pe)});
  }
  auto order = [](std::vector<std::pair<double, std::string>> list, int digits) {
    std::stable_sort(list.begin(), list.end());
    std::string text;
    for (size_t k = 0; k < list.size(); ++k)
      text += (k ? " < " : "") + list[k].second + " " + [&] {
        char v[32];
        std::snprintf(v, sizeof v, "%.*f", digits, list[k].first);
        return std::string(v);
      }();
    return text;
  };
  md << "\nValidation loss, lowest first: paper " << order(paper_order, 2) << "; ours " << order(ours_order, 4) << ".\n";
  double seconds = 0;
  for (const PretrainRun& r : summary.runs) seconds += r.seconds;
  md << "Training time in total: " << static_cast<int64_t>(seconds) << " s on " << parse_device(plan.device).name()
     << "; the whole repro took " << static_cast<int64_t>(summary.wall_seconds)
     << " s. Plots: plots/curves.png (validation MLM loss against step), plots/loss.png.\n";

  // RPE → URPE and APE+RPE → URPE, the two comparisons C.4 draws.
  auto mean_of = [&](const std::string& pe) -> std::optional<double> {
    std::vector<double> v;
    for (const PretrainRun* r : runs_of(summary, pe)) v.push_back(r->valid_loss);
    if (v.empty()) return std::nullopt;
    return seed_stats(v).mean;
  };
  PaperComparison rpe;
  rpe.quantity = "valid MLM loss (C.4)";
  rpe.paper_base = PaperValues::pretrain_rpe_loss;
  rpe.paper_urpe = PaperValues::pretrain_urpe_loss;
  rpe.ours_base = mean_of("rpe");
  rpe.ours_urpe = mean_of("urpe");
  rpe.decimals = 4;
  PaperComparison ape = rpe;
  ape.quantity = "valid MLM loss with APE+RPE as the baseline (C.4)";
  ape.paper_base = PaperValues::pretrain_ape_rpe_loss;
  ape.ours_base = mean_of("ape+rpe");
  for (PaperComparison* c : {&rpe, &ape}) {
    c->paper_decimals = 2;
    if (!c->ours_base || !c->ours_urpe) c->ours_base = c->ours_urpe = std::nullopt;
  }
  md << paper_comparison_markdown({rpe, ape}, "RPE",
                                  "scale `" + plan.scale + "` (preset `" + plan.preset + "`, " +
                                      std::to_string(base.get_int("steps")) + " steps) on corpus `" + summary.corpus +
                                      "`, mean over " + std::to_string(plan.seeds) +
                                      " seed(s); the paper: BERT-base pre-training, 1M iterations (its second row's "
                                      "baseline is APE+RPE).");
  return md.str();
}

}  // namespace urpe
