// The encoder's run and grid pictures from metrics.csv files and checkpoints (see encoder_plots.h).
#include "train/families/encoder/encoder_plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "data/synthetic.h"
#include "models/positional.h"
#include "train/encoding_names.h"
#include "base/io/config.h"
#include "train/families/run_plots.h"
#include "base/plot/charts.h"
#include "train/config/run_config.h"
#include "train/config/run_settings.h"
#include "train/families/encoder/encoder_config.h"
#include "base/io/safetensors.h"
#include "tensor/error.h"

namespace urpe {

namespace {

std::string display_name(const std::string& pe) { return encoding_display_name(pe); }

std::string percent_text(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

// The scored positions of a position-identification config (n, or n − 1 under the official
// protocol); 0 for other tasks.
int64_t pi_scored_positions(const Config& c) {
  if (run_settings_from(c).model != "encoder") return 0;
  const EncoderSettings s = encoder_settings_from(c);
  if (s.task != "pi") return 0;
  const SyntheticTask task(SyntheticKind::position_identification, s.seq_len, s.vocab, s.task_protocol);
  return task.scored_per_sequence();
}

// "chance 1/32 = 3.1%" as a reference line at `scale` × 1/scored (100 for percent axes).
std::vector<plot::ReferenceLine> pi_chance_lines(const Config& c, double scale) {
  const int64_t scored = pi_scored_positions(c);
  if (scored <= 0) return {};
  return {{scale / static_cast<double>(scored),
           "chance 1/" + std::to_string(scored) + " = " + percent_text(1.0 / static_cast<double>(scored))}};
}

}  // namespace

std::vector<plot::ReferenceLine> pi_chance_loss_lines(const Config& c) {
  const int64_t scored = pi_scored_positions(c);
  if (scored <= 0) return {};
  char label[64];
  std::snprintf(label, sizeof label, "chance: ln %lld = %.3f", static_cast<long long>(scored),
                std::log(static_cast<double>(scored)));
  return {{std::log(static_cast<double>(scored)), label}};
}

namespace {

Config run_config(const std::string& run_dir) {
  const std::string path = join_path(run_dir, "config.txt");
  return config_from_text(read_text_file(path), path);
}

// One panel per head: M_h[i, j] = table[h, bucket(j − i)] for the run's seq_len, through the
// relative bucket vector (2n − 1 entries: both kinds of map are functions of j − i). Above
// kMaxPanelSide positions the panel shows every s-th row and column (s = ⌈n / kMaxPanelSide⌉):
// a picture has no more pixels than that per panel anyway, and a run at n = 4096 would otherwise
// hold n² values per head and a canvas of four panels side by side wider than any image
// (urpe train failed there after training, "canvas size ... is out of range").
constexpr int64_t kMaxPanelSide = 256;

std::vector<plot::HeatmapSpec> table_panels(const TensorFile& file, const EncoderSettings& settings,
                                            const std::string& tensor, RelativeKind kind, double center) {
  std::vector<plot::HeatmapSpec> panels;
  if (!file.contains("model." + tensor)) return panels;
  const Tensor table = file.at("model." + tensor);
  const int64_t n = settings.seq_len;
  const Tensor map = relative_bucket_vector(n, kind, true);
  const std::vector<float> values = table.to_vector_f32();
  const std::vector<int32_t> buckets = map.to_vector_i32();  // bucket of j − i at (j − i) + n − 1
  const int64_t heads = table.size(0), width = table.size(1);
  const int64_t step = (n + kMaxPanelSide - 1) / kMaxPanelSide, side = (n + step - 1) / step;
  for (int64_t h = 0; h < heads; ++h) {
    plot::HeatmapSpec p;
    p.title = "head " + std::to_string(h);
    const std::string stride = step == 1 ? "" : " (stride " + std::to_string(step) + ")";
    p.x_label = "key j" + stride;
    p.y_label = "query i" + stride;
    p.rows = static_cast<int>(side);
    p.cols = static_cast<int>(side);
    p.index_step = static_cast<int>(step);
    p.center = center;
    p.values.reserve(static_cast<size_t>(side * side));
    for (int64_t r = 0; r < side; ++r)
      for (int64_t c = 0; c < side; ++c)
        p.values.push_back(values[h * width + buckets[(c - r) * step + n - 1]]);
    panels.push_back(std::move(p));
  }
  return panels;
}

// "pi, URPE, n = 32, V = 100".
std::string title_of(const EncoderSettings& s) {
  return s.task + ", " + display_name(s.pe) + ", n = " + std::to_string(s.seq_len) + ", V = " + std::to_string(s.vocab);
}

}  // namespace

std::vector<std::string> draw_encoder_run_plots(const std::string& run_dir) {
  const std::string plots = join_path(run_dir, "plots");
  make_directories(plots);
  std::vector<std::string> written;
  const std::vector<MetricsRow> rows = read_metrics(join_path(run_dir, "metrics.csv"));
  const TensorFile file = load_safetensors(join_path(run_dir, "model.safetensors"));
  const Config config = config_of_checkpoint(file);
  const EncoderSettings settings = encoder_settings_from(config);
  const std::string title = title_of(settings);
  if (!rows.empty()) {
    plot::LineChartSpec accuracy;
    accuracy.title = "Token accuracy (" + title + ")";
    accuracy.x_label = "step";
    accuracy.y_label = "accuracy (%)";
    accuracy.series = {metric_series(rows, "valid", false, "validation", 100.0),
                       metric_series(rows, "train", false, "training batch", 100.0)};
    accuracy.references = pi_chance_lines(config, 100.0);
    written.push_back(join_path(plots, "curves.png"));
    plot::line_chart(written.back(), accuracy);
    plot::LineChartSpec loss;
    loss.title = "Cross-entropy (" + title + ")";
    loss.x_label = "step";
    loss.y_label = "loss";
    loss.log_y = true;
    loss.series = {metric_series(rows, "train", true, "training (mean since last point)"),
                   metric_series(rows, "valid", true, "validation")};
    loss.references = pi_chance_loss_lines(config);
    written.push_back(join_path(plots, "loss.png"));
    plot::line_chart(written.back(), loss);
  }
  const auto bias = table_panels(file, settings, "rel_pos_bias", settings.rpe_kind, 0.0);
  if (!bias.empty()) {
    written.push_back(join_path(plots, "rpe_bias.png"));
    plot::heatmap_grid(written.back(), bias, static_cast<int>(std::min<size_t>(bias.size(), 4)),
                       "Learned RPE bias B per head (" + title + ")", true);
  }
  const auto c = table_panels(file, settings, "urpe_c", settings.urpe_kind, 1.0);
  if (!c.empty()) {
    written.push_back(join_path(plots, "urpe_c.png"));
    plot::heatmap_grid(written.back(), c, static_cast<int>(std::min<size_t>(c.size(), 4)),
                       "Learned URPE matrix C per head (" + title + ")", true);
  }
  return written;
}

double chance_accuracy(const std::string& run_dir) {
  const int64_t scored = pi_scored_positions(run_config(run_dir));
  return scored > 0 ? 1.0 / static_cast<double>(scored) : NAN;
}

int64_t seeds_of(const std::vector<RunCurve>& curves) {
  std::vector<int64_t> seeds;
  for (const RunCurve& c : curves)
    if (std::find(seeds.begin(), seeds.end(), c.seed) == seeds.end()) seeds.push_back(c.seed);
  return static_cast<int64_t>(seeds.size());
}

// "1 seed", "mean of 3 seeds"
static std::string seeds_text(int64_t seeds) {
  return seeds == 1 ? "1 seed" : "mean of " + std::to_string(seeds) + " seeds";
}

// Chance lines of the PI groups (one per distinct chance level), from the runs' configs.
static std::vector<plot::ReferenceLine> grid_chance_lines(const std::vector<RunCurve>& curves, const std::string& task) {
  std::vector<plot::ReferenceLine> lines;
  for (const RunCurve& c : curves) {
    if (!task.empty() && c.task != task) continue;
    for (const plot::ReferenceLine& r : pi_chance_lines(run_config(c.dir), 100.0)) {
      bool seen = false;
      for (const plot::ReferenceLine& l : lines) seen = seen || std::fabs(l.value - r.value) < 1e-12;
      if (!seen) lines.push_back(r);
    }
  }
  return lines;
}

plot::BarChartSpec grid_accuracy_chart(const std::vector<ResultRow>& rows, const std::vector<RunCurve>& curves) {
  // Figure 1: mean accuracy per (task, V) group and pe, each seed a dot on its bar.
  std::vector<std::string> groups, pes;
  std::map<std::pair<std::string, std::string>, std::vector<double>> seeds;
  for (size_t k = 0; k < rows.size() && k < curves.size(); ++k) {
    const RunCurve& c = curves[k];
    const std::string group = c.task == "pi" ? "PI" : c.task == "etp" ? "ETP" : c.task;
    const std::string label = group + ", V=" + std::to_string(c.vocab);
    if (std::find(groups.begin(), groups.end(), label) == groups.end()) groups.push_back(label);
    if (std::find(pes.begin(), pes.end(), c.pe) == pes.end()) pes.push_back(c.pe);
    seeds[{label, c.pe}].push_back(100.0 * rows[k].metric);
  }
  plot::BarChartSpec bars;
  const int64_t n_seeds = seeds_of(curves);
  bars.title = "Validation accuracy, " + seeds_text(n_seeds);  // short: two groups make a narrow chart
  bars.y_label = "accuracy (%)";
  bars.groups = groups;
  bars.y_min = 0;
  bars.y_max = 112;  // room for "100.0" above a full bar
  bars.decimals = 1;
  bars.references = grid_chance_lines(curves, "");
  std::vector<std::string> bound;
  for (const std::string& pe : pes) {
    plot::BarSeries s;
    s.name = display_name(pe);
    s.marked = theorem2_binds_encoding(pe);
    if (s.marked) bound.push_back(s.name);
    for (const std::string& g : groups) {
      auto it = seeds.find({g, pe});
      double total = 0;
      if (it != seeds.end())
        for (double v : it->second) total += v;
      s.values.push_back(it == seeds.end() ? NAN : total / static_cast<double>(it->second.size()));
      s.points.push_back(n_seeds > 1 && it != seeds.end() ? it->second : std::vector<double>{});
    }
    bars.series.push_back(s);
  }
  if (n_seeds > 1) bars.notes.push_back("dots: the " + std::to_string(n_seeds) + " seeds, whisker from the lowest to the highest");
  if (!bound.empty()) {
    std::string names;
    for (size_t k = 0; k < bound.size(); ++k) names += (k ? (k + 1 == bound.size() ? " and " : ", ") : "") + bound[k];
    bars.mark_label = "bound by Theorem 2";
    bars.notes.push_back("Theorem 2 binds " + names +
                         ": each changes only the logits before the softmax, so every attention row sums to 1 "
                         "and position enters only as j - i (or not at all); fed n identical tokens, every position "
                         "gets the same output. It says nothing about other inputs: a bound encoding can still learn "
                         "the task from distinct tokens.");
  }
  return bars;
}

plot::LineChartSpec grid_curves_chart(const std::string& task, const std::vector<RunCurve>& curves) {
  std::vector<int64_t> vocabs;
  for (const RunCurve& c : curves)
    if (c.task == task && c.seed == 1 && std::find(vocabs.begin(), vocabs.end(), c.vocab) == vocabs.end())
      vocabs.push_back(c.vocab);
  plot::LineChartSpec chart;
  const int64_t seeds = seeds_of(curves);
  chart.title = "Validation accuracy during training (" + task + (vocabs.size() == 1 ? ", V = " + std::to_string(vocabs[0]) : "") +
                (seeds == 1 ? ", 1 seed)" : ", seed 1 of " + std::to_string(seeds) + ")");
  chart.x_label = "step";
  chart.y_label = "accuracy (%)";
  chart.x_min = 0;
  chart.references = grid_chance_lines(curves, task);
  for (const RunCurve& c : curves) {
    if (c.task != task || c.seed != 1) continue;
    chart.series.push_back(metric_series(read_metrics(join_path(c.dir, "metrics.csv")), "valid", false,
                                         display_name(c.pe) + (vocabs.size() == 1 ? "" : " V=" + std::to_string(c.vocab)),
                                         100.0));
  }
  return chart;
}

plot::LineChartSpec grid_loss_chart(const std::string& task, const std::vector<RunCurve>& curves) {
  plot::LineChartSpec chart = grid_curves_chart(task, curves);
  const std::string accuracy = "Validation accuracy during training";
  chart.title = "Validation loss" + chart.title.substr(accuracy.size());
  chart.y_label = "cross-entropy (nats)";
  chart.references.clear();
  chart.series.clear();
  std::vector<int64_t> vocabs;
  for (const RunCurve& c : curves)
    if (c.task == task && c.seed == 1 && std::find(vocabs.begin(), vocabs.end(), c.vocab) == vocabs.end())
      vocabs.push_back(c.vocab);
  for (const RunCurve& c : curves) {
    if (c.task != task || c.seed != 1) continue;
    chart.series.push_back(metric_series(read_metrics(join_path(c.dir, "metrics.csv")), "valid", true,
                                         display_name(c.pe) + (vocabs.size() == 1 ? "" : " V=" + std::to_string(c.vocab))));
    if (chart.references.empty()) chart.references = pi_chance_loss_lines(run_config(c.dir));
  }
  return chart;
}

std::vector<plot::HeatmapSpec> grid_c_panels(const std::string& task, const std::vector<RunCurve>& curves,
                                             std::string* title) {
  const RunCurve* urpe_run = nullptr;
  for (const RunCurve& c : curves)
    if (c.task == task && c.seed == 1 && c.pe == "urpe" && (!urpe_run || c.vocab > urpe_run->vocab)) urpe_run = &c;
  if (!urpe_run) return {};
  const TensorFile file = load_safetensors(join_path(urpe_run->dir, "model.safetensors"));
  const Config config = config_of_checkpoint(file);
  const EncoderSettings settings = encoder_settings_from(config);
  if (title)
    *title = "Learned URPE matrix C per head (" + title_of(settings) + ", seed " +
             std::to_string(run_settings_from(config).seed) + ")";
  std::vector<plot::HeatmapSpec> panels = table_panels(file, settings, "urpe_c", settings.urpe_kind, 1.0);
  for (plot::HeatmapSpec& p : panels) p.value_label = "C[i,j] = c[j - i]";
  return panels;
}

// The URPE run's B per head, beside its C (the paper's Figure 2 shows both).
static std::vector<plot::HeatmapSpec> grid_b_panels(const std::string& task, const std::vector<RunCurve>& curves) {
  const RunCurve* urpe_run = nullptr;
  for (const RunCurve& c : curves)
    if (c.task == task && c.seed == 1 && c.pe == "urpe" && (!urpe_run || c.vocab > urpe_run->vocab)) urpe_run = &c;
  if (!urpe_run) return {};
  const TensorFile file = load_safetensors(join_path(urpe_run->dir, "model.safetensors"));
  const EncoderSettings settings = encoder_settings_from(config_of_checkpoint(file));
  std::vector<plot::HeatmapSpec> panels = table_panels(file, settings, "rel_pos_bias", settings.rpe_kind, 0.0);
  for (plot::HeatmapSpec& p : panels) p.value_label = "B[i,j] = b[j - i]";
  return panels;
}

// Under the C and B matrices: how to read them, and what their corners are.
static std::string c_caption(int64_t n) {
  const std::string last = std::to_string(n - 1), seventh = std::to_string(n - 7);
  return "Each matrix is Toeplitz: entry (i, j) holds the table's value for the offset j - i, constant along every "
         "diagonal, so row i of C is the table seen through the window of offsets -i ... " + last + " - i, which slides "
         "with the query: that is how C gives each position its own row sum. The corner stripes are the longest "
         "offsets: +" + last + " occurs in one cell, (0, " + last + "), and only row 0 reads it; -" + last +
         " only row " + last + "; +-" + seventh + " in 7 cells. Each corner entry shapes the row sums of a few "
         "positions at one end and nothing else, so it is free to take values far from its neighbours'.";
}

std::vector<std::string> draw_grid_plots(const std::string& out_dir, const std::vector<ResultRow>& rows,
                                         const std::vector<RunCurve>& curves) {
  const std::string plots = join_path(out_dir, "plots");
  make_directories(plots);
  std::vector<std::string> written;
  const plot::BarChartSpec bars = grid_accuracy_chart(rows, curves);
  if (!bars.groups.empty()) {
    written.push_back(join_path(plots, "accuracy.png"));
    plot::bar_chart(written.back(), bars);
  }
  // Learning curves and the URPE C matrices, first seed, per task.
  std::vector<std::string> tasks;
  for (const RunCurve& c : curves)
    if (std::find(tasks.begin(), tasks.end(), c.task) == tasks.end()) tasks.push_back(c.task);
  for (const std::string& task : tasks) {
    written.push_back(join_path(plots, "curves_" + task + ".png"));
    plot::LineChartSpec accuracy = grid_curves_chart(task, curves), loss = grid_loss_chart(task, curves);
    accuracy.width = loss.width = 820;
    plot::render_page("", {{plot::render_line_chart(accuracy), plot::render_line_chart(loss)}}).save_png(written.back());
    std::string title;
    const std::vector<plot::HeatmapSpec> panels = grid_c_panels(task, curves, &title);
    if (!panels.empty()) {
      written.push_back(join_path(plots, "urpe_c_" + task + ".png"));
      const int columns = static_cast<int>(std::min<size_t>(panels.size(), 4));
      std::vector<std::vector<plot::Canvas>> rows = {{plot::render_heatmap_grid(panels, columns, "C: multiplies the softmax P (starts at 1)", true)}};
      const std::vector<plot::HeatmapSpec> bias = grid_b_panels(task, curves);
      if (!bias.empty()) rows.push_back({plot::render_heatmap_grid(bias, columns, "B: added to the logits before the softmax (starts at 0)", true)});
      rows.push_back({plot::render_caption(c_caption(panels[0].rows), rows[0][0].width())});
      const std::string both = bias.empty() ? title : "Learned URPE matrices C and B" + title.substr(title.find(" per head"));
      plot::render_page(both, rows).save_png(written.back());
    }
  }
  return written;
}

std::vector<RunCurve> grid_runs_on_disk(const std::string& out_dir, std::vector<ResultRow>* rows) {
  const std::string runs_dir = join_path(out_dir, "runs");
  URPE_CHECK(is_directory(runs_dir), "'" << out_dir << "' has no runs/ folder (is it written by 'urpe repro synthetic' or 'urpe demo'?)");
  struct Found {
    RunCurve curve;
    int64_t seq_len;
    ResultRow row;
  };
  std::vector<Found> found;
  std::vector<std::string> pe_order;  // as the grid ran them: results.json's order
  if (path_exists(join_path(out_dir, "results.json"))) {
    const json::Value list = json::read_file(join_path(out_dir, "results.json"));
    for (size_t k = 0; k < list.size(); ++k) {
      const std::string pe = list[k].at("pe").as_string();
      if (std::find(pe_order.begin(), pe_order.end(), pe) == pe_order.end()) pe_order.push_back(pe);
    }
  }
  for (const auto& entry : std::filesystem::directory_iterator(runs_dir)) {
    const std::string dir = entry.path().string();
    if (!entry.is_directory() || !path_exists(join_path(dir, "results.json")) || !path_exists(join_path(dir, "config.txt")))
      continue;
    const Config c = run_config(dir);
    const RunSettings run = run_settings_from(c);
    if (run.model != "encoder") continue;
    const EncoderSettings s = encoder_settings_from(c);
    Found f{{entry.path().filename().string(), s.task, s.vocab, s.pe, run.seed, dir},
            s.seq_len,
            result_from_json(json::read_file(join_path(dir, "results.json")))};
    found.push_back(f);
  }
  URPE_CHECK(!found.empty(), "'" << runs_dir << "' holds no finished encoder run (config.txt and results.json)");
  // Seeds numbered from 1 as in the grid; tasks with several lengths get one group per length.
  int64_t first_seed = found[0].curve.seed;
  for (const Found& f : found) first_seed = std::min(first_seed, f.curve.seed);
  for (Found& f : found) {
    f.curve.seed -= first_seed - 1;
    for (const Found& g : found)
      if (g.curve.task == f.curve.task && g.seq_len != f.seq_len) {
        f.curve.task += "-n" + std::to_string(f.seq_len);
        break;
      }
  }
  auto pe_rank = [&](const std::string& pe) {
    return static_cast<size_t>(std::find(pe_order.begin(), pe_order.end(), pe) - pe_order.begin());
  };
  std::sort(found.begin(), found.end(), [&](const Found& a, const Found& b) {
    return std::make_tuple(a.curve.task, a.curve.vocab, a.seq_len, pe_rank(a.curve.pe), a.curve.pe, a.curve.seed) <
           std::make_tuple(b.curve.task, b.curve.vocab, b.seq_len, pe_rank(b.curve.pe), b.curve.pe, b.curve.seed);
  });
  std::vector<RunCurve> curves;
  if (rows) rows->clear();
  for (const Found& f : found) {
    curves.push_back(f.curve);
    if (rows) rows->push_back(f.row);
  }
  return curves;
}

}  // namespace urpe
