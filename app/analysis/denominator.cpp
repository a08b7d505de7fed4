// The denominator experiment: the usual encoder training (train_encoder) per variant and seed,
// with the loop's per-step observer recording every loss, so that a non-finite step and the loss
// spikes are seen even where metrics.csv only keeps window means.
#include "app/analysis/denominator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tensor/error.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/families/encoder/encoder_config.h"
#include "base/io/run_dir.h"
#include "base/plot/charts.h"
#include "train/loop/progress.h"
#include "train/config/run_config.h"
#include "train/config/run_settings.h"
#include "train/families/encoder/encoder_plots.h"

namespace urpe {

namespace {

std::string percent(double x) {
  if (std::isnan(x)) return "—";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * x);
  return text;
}

// The last validation accuracy metrics.csv holds (NaN when none).
double last_valid_metric(const std::string& dir) {
  const std::string path = join_path(dir, "metrics.csv");
  if (!path_exists(path)) return std::nan("");
  double last = std::nan("");
  for (const MetricsRow& row : read_metrics(path))
    if (row.split == "valid") last = row.metric;
  return last;
}

}  // namespace

const std::vector<DenominatorVariant>& denominator_variants() {
  static const std::vector<DenominatorVariant> variants = {
      {"urpe-softmax", "urpe", "softmax"},  // the paper
      {"urpe-exp", "urpe", "exp"},          // the same, without the denominator
      {"rpe-exp", "rpe", "exp"},            // no C at all: only the missing denominator breaks Theorem 2
  };
  return variants;
}

std::pair<double, int64_t> largest_loss_spike(const std::vector<double>& losses, int64_t window) {
  double best = 0;
  int64_t at = 0;
  for (size_t t = 1; t < losses.size(); ++t) {
    if (!std::isfinite(losses[t])) continue;
    double low = INFINITY;
    for (size_t s = t > static_cast<size_t>(window) ? t - window : 0; s < t; ++s)
      if (std::isfinite(losses[s])) low = std::min(low, losses[s]);
    if (std::isfinite(low) && losses[t] - low > best) {
      best = losses[t] - low;
      at = static_cast<int64_t>(t) + 1;
    }
  }
  return {best, at};
}

std::vector<DenominatorRun> run_denominator(const DenominatorPlan& plan, const std::string& out_dir) {
  URPE_CHECK(plan.seeds >= 1 && plan.seeds <= 100,
             "urpe theory denominator: --seeds must be between 1 and 100, got " << plan.seeds);
  for (const std::string& o : plan.overrides)
    for (const char* fixed : {"pe=", "attention_norm=", "seed=", "model="})
      URPE_CHECK(o.rfind(fixed, 0) != 0, "urpe theory denominator: --set " << o << ": the experiment sets "
                                             << std::string(fixed).substr(0, std::string(fixed).size() - 1)
                                             << " itself for each run");
  // Resolve once up front, so a bad preset or key fails before any training.
  const Config probe_config = resolve_config(plan.preset, "", plan.overrides);
  URPE_CHECK(is_encoder_config(probe_config),
             "urpe theory denominator: preset " << plan.preset << " is a " << run_settings_from(probe_config).model
                                                << " preset; the experiment trains the encoder (e.g. pi-tiny)");
  make_directories(join_path(out_dir, "plots"));

  const auto& variants = denominator_variants();
  GridProgress grid(static_cast<int64_t>(variants.size()) * plan.seeds);
  std::vector<DenominatorRun> runs;
  for (const DenominatorVariant& v : variants)
    for (int64_t seed = 1; seed <= plan.seeds; ++seed) {
      std::vector<std::string> sets = {"pe=" + v.pe, "attention_norm=" + v.attention_norm,
                                       "seed=" + std::to_string(seed)};
      sets.insert(sets.end(), plan.overrides.begin(), plan.overrides.end());
      const Config config = resolve_config(plan.preset, "", sets);
      DenominatorRun run;
      run.variant = v.name;
      run.pe = v.pe;
      run.attention_norm = v.attention_norm;
      run.seed = seed;
      const std::string name = v.name + "-s" + std::to_string(seed);
      run.dir = join_path(join_path(out_dir, "runs"), name);
      TrainOptions options;
      options.overwrite = true;
      options.quiet = plan.quiet;
      options.experiment = "theory-denominator";
      options.grid = &grid;
      options.on_step = [&run](int64_t step, double loss) {
        run.losses.push_back(loss);
        run.steps = step;
        if (!std::isfinite(loss) && run.first_nonfinite_step == 0) run.first_nonfinite_step = step;
      };
      grid.begin_run(name);
      try {
        run.accuracy = train_encoder(config, run.dir, options).result.metric;
      } catch (const Error&) {
        if (run.first_nonfinite_step == 0) throw;  // not the divergence this experiment looks for
        run.accuracy = last_valid_metric(run.dir);
      }
      grid.end_run();
      const auto [spike, spike_step] = largest_loss_spike(run.losses);
      run.largest_spike = spike;
      run.spike_step = spike_step;
      for (double loss : run.losses)
        if (std::isfinite(loss)) run.final_loss = loss;
      if (!plan.quiet) {
        std::printf("[%lld/%lld] %-18s valid accuracy %8s  %s  largest spike %.3f at step %lld\n",
                    static_cast<long long>(grid.run()), static_cast<long long>(grid.runs()), name.c_str(),
                    percent(run.accuracy).c_str(),
                    run.first_nonfinite_step ? ("non-finite loss at step " + std::to_string(run.first_nonfinite_step)).c_str()
                                             : "all losses finite",
                    spike, static_cast<long long>(spike_step));
        std::fflush(stdout);
      }
      runs.push_back(std::move(run));
    }

  write_text_atomic(join_path(out_dir, "denominator.json"), denominator_to_json(runs, plan).dump(2) + "\n");
  write_text_atomic(join_path(out_dir, "denominator.md"), denominator_markdown(runs, plan));
  // One panel per variant, every seed in it, on one linear scale: spikes compare across panels.
  std::vector<std::string> names;
  double highest = 0;
  for (const DenominatorRun& r : runs) {
    if (std::find(names.begin(), names.end(), r.variant) == names.end()) names.push_back(r.variant);
    for (float loss : r.losses)
      if (std::isfinite(loss)) highest = std::max(highest, static_cast<double>(loss));
  }
  std::vector<plot::Canvas> panels;
  for (const std::string& variant : names) {
    plot::LineChartSpec spec;
    spec.title = variant;
    spec.x_label = "step";
    spec.y_label = "training loss, cross-entropy (nats)";
    spec.y_min = 0;
    spec.y_max = highest;
    spec.width = 760;
    spec.height = 500;
    spec.x_min = 0;
    for (const DenominatorRun& r : runs) {
      if (r.variant != variant) continue;
      if (spec.references.empty()) spec.references = pi_chance_loss_lines(config_from_text(read_text_file(join_path(r.dir, "config.txt")), r.dir));
      plot::Series s;
      s.name = "seed " + std::to_string(r.seed) + (r.first_nonfinite_step ? " (non-finite at " + std::to_string(r.first_nonfinite_step) + ")" : "");
      for (size_t t = 0; t < r.losses.size(); ++t) {
        s.x.push_back(static_cast<double>(t + 1));
        s.y.push_back(r.losses[t]);
      }
      spec.series.push_back(s);
    }
    bool drawable = false;  // a variant whose every loss overflowed has nothing to draw
    for (const plot::Series& s : spec.series)
      for (double y : s.y) drawable = drawable || std::isfinite(y);
    panels.push_back(drawable ? plot::render_line_chart(spec)
                              : plot::render_caption(variant + ": no finite training loss in any seed", spec.width));
  }
  if (!panels.empty())
    plot::render_page("Training loss per step, every seed (" + plan.preset + "): URPE with softmax, URPE and RPE without the denominator",
                      {panels})
        .save_png(join_path(join_path(out_dir, "plots"), "denominator_loss.png"));
  return runs;
}

std::string denominator_markdown(const std::vector<DenominatorRun>& runs, const DenominatorPlan& plan) {
  std::ostringstream out;
  out << "Preset " << plan.preset;
  for (const std::string& o : plan.overrides) out << ", " << o;
  out << "; " << plan.seeds << " seed(s) per variant. Spike: the largest rise of a step's training loss over the\n"
         "lowest of the " << kSpikeWindow << " steps before it.\n\n"
         "| variant | pe | attention | seed | valid accuracy | first non-finite step | largest loss spike (step) | final train loss |\n"
         "|---|---|---|---|---|---|---|---|\n";
  char line[256];
  for (const DenominatorRun& r : runs) {
    std::snprintf(line, sizeof line, "| %s | %s | %s | %lld | %s%s | %s | %.3f (%lld) | %.4f |\n", r.variant.c_str(),
                  r.pe.c_str(), r.attention_norm.c_str(), static_cast<long long>(r.seed), percent(r.accuracy).c_str(),
                  r.first_nonfinite_step ? " (last eval before)" : "",
                  r.first_nonfinite_step ? std::to_string(r.first_nonfinite_step).c_str() : "none",
                  r.largest_spike, static_cast<long long>(r.spike_step), r.final_loss);
    out << line;
  }
  return out.str();
}

json::Value denominator_to_json(const std::vector<DenominatorRun>& runs, const DenominatorPlan& plan) {
  json::Value list = json::Value::array();
  for (const DenominatorRun& r : runs) {
    json::Value row = json::Value::object();
    row.set("variant", r.variant).set("pe", r.pe).set("attention_norm", r.attention_norm).set("seed", r.seed)
        .set("dir", r.dir).set("steps", r.steps)
        .set("first_nonfinite_step", r.first_nonfinite_step ? json::Value(r.first_nonfinite_step) : json::Value())
        .set("valid_accuracy", std::isnan(r.accuracy) ? json::Value() : json::Value(r.accuracy))
        .set("largest_spike", r.largest_spike).set("spike_step", r.spike_step).set("final_train_loss", r.final_loss);
    list.push(row);
  }
  json::Value overrides = json::Value::array();
  for (const std::string& o : plan.overrides) overrides.push(o);
  json::Value doc = json::Value::object();
  doc.set("preset", plan.preset).set("seeds", plan.seeds).set("overrides", overrides).set("spike_window", kSpikeWindow)
      .set("runs", list);
  return doc;
}

}  // namespace urpe
