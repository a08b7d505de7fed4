// Run and grid pictures from metrics.csv files and checkpoints (see run_plots.h).
#include "train/run_plots.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "models/positional.h"
#include "train/checkpoint.h"
#include "train/io/config.h"
#include "train/molecule_plots.h"
#include "train/plot/charts.h"
#include "train/run_config.h"
#include "train/io/safetensors.h"

namespace urpe {

namespace {

std::string display_name(const std::string& pe) {
  if (pe == "none") return "noPE";
  if (pe == "ape") return "APE";
  if (pe == "rpe") return "RPE";
  if (pe == "urpe") return "URPE";
  return pe;
}

plot::Series metric_series(const std::vector<MetricsRow>& rows, const std::string& split, bool loss,
                           const std::string& name, double scale = 1.0) {
  plot::Series s;
  s.name = name;
  for (const MetricsRow& r : rows)
    if (r.split == split) {
      s.x.push_back(static_cast<double>(r.step));
      s.y.push_back(scale * (loss ? r.loss : r.metric));
    }
  return s;
}

// One panel per head: M_h[i, j] = table[h, map(i, j)] for the run's seq_len.
std::vector<plot::HeatmapSpec> table_panels(const TensorFile& file, const Config& config,
                                            const std::string& tensor, const std::string& kind_key,
                                            double center) {
  std::vector<plot::HeatmapSpec> panels;
  if (!file.contains("model." + tensor)) return panels;
  const Tensor table = file.at("model." + tensor);
  const int64_t n = config.get_int("seq_len");
  const Tensor map = relative_bucket_map(n, parse_relative_kind(config.get_string(kind_key)), true);
  const std::vector<float> values = table.to_vector_f32();
  const std::vector<int32_t> buckets = map.to_vector_i32();
  const int64_t heads = table.size(0), width = table.size(1);
  for (int64_t h = 0; h < heads; ++h) {
    plot::HeatmapSpec p;
    p.title = "head " + std::to_string(h);
    p.x_label = "key j";
    p.y_label = "query i";
    p.rows = static_cast<int>(n);
    p.cols = static_cast<int>(n);
    p.center = center;
    for (int64_t k = 0; k < n * n; ++k) p.values.push_back(values[h * width + buckets[k]]);
    panels.push_back(std::move(p));
  }
  return panels;
}

Config config_of_checkpoint(const TensorFile& file) {
  return config_from_text(file.meta("config"), file.path + " (config)");
}

std::string title_of(const Config& c) {
  if (c.get_string("model") != "encoder") return c.get_string("model") + ", " + c.get_string("pe");
  return c.get_string("task") + ", " + display_name(c.get_string("pe")) + ", n = " +
         std::to_string(c.get_int("seq_len")) + ", V = " + std::to_string(c.get_int("vocab"));
}

// A language-model run: perplexity (log axis) against step, and the URPE C by distance per head.
std::vector<std::string> draw_lm_run_plots(const std::string& plots, const std::vector<MetricsRow>& rows,
                                           const TensorFile& file, const Config& config, const std::string& title) {
  std::vector<std::string> written;
  if (!rows.empty()) {
    plot::LineChartSpec ppl;
    ppl.title = "Perplexity (" + title + ")";
    ppl.x_label = "step";
    ppl.y_label = "perplexity";
    ppl.log_y = true;
    ppl.series = {metric_series(rows, "train", false, "training (mean loss since last point)"),
                  metric_series(rows, "valid", false, "validation")};
    const int64_t subset = config.get_int("max_eval_tokens");
    if (subset > 0)
      ppl.series[1].name = "validation (first " + std::to_string(subset) + " tokens; last point: whole split)";
    written.push_back(join_path(plots, "perplexity.png"));
    plot::line_chart(written.back(), ppl);
  }
  if (file.contains("model.urpe_c")) {
    written.push_back(join_path(plots, "urpe_c.png"));
    plot::line_chart(written.back(), urpe_c_chart(file.at("model.urpe_c"), "Learned URPE C by distance (" + title + ")"));
  }
  return written;
}

}  // namespace

plot::LineChartSpec urpe_c_chart(const Tensor& c_table, const std::string& title) {
  plot::LineChartSpec chart;
  chart.title = title;
  chart.x_label = "relative distance i - j (query to key)";
  chart.y_label = "C";
  const std::vector<float> values = c_table.to_vector_f32();
  const int64_t heads = c_table.size(0), width = c_table.size(1);
  for (int64_t h = 0; h < heads; ++h) {
    plot::Series s;
    s.name = "head " + std::to_string(h);
    for (int64_t k = 0; k < width; ++k) {
      s.x.push_back(static_cast<double>(k));
      s.y.push_back(values[h * width + k]);
    }
    chart.series.push_back(std::move(s));
  }
  return chart;
}

std::vector<std::string> draw_run_plots(const std::string& run_dir) {
  const std::string plots = join_path(run_dir, "plots");
  make_directories(plots);
  std::vector<std::string> written;
  const std::vector<MetricsRow> rows = read_metrics(join_path(run_dir, "metrics.csv"));
  const TensorFile file = load_safetensors(join_path(run_dir, "model.safetensors"));
  const Config config = config_of_checkpoint(file);
  if (config.get_string("model") == "graphormer") return draw_graphormer_run_plots(run_dir);
  const std::string title = title_of(config);
  if (config.get_string("model") == "txl") return draw_lm_run_plots(plots, rows, file, config, title);
  if (!rows.empty()) {
    plot::LineChartSpec accuracy;
    accuracy.title = "Token accuracy (" + title + ")";
    accuracy.x_label = "step";
    accuracy.y_label = "accuracy (%)";
    accuracy.series = {metric_series(rows, "valid", false, "validation", 100.0),
                       metric_series(rows, "train", false, "training batch", 100.0)};
    written.push_back(join_path(plots, "curves.png"));
    plot::line_chart(written.back(), accuracy);
    plot::LineChartSpec loss;
    loss.title = "Cross-entropy (" + title + ")";
    loss.x_label = "step";
    loss.y_label = "loss";
    loss.log_y = true;
    loss.series = {metric_series(rows, "train", true, "training (mean since last point)"),
                   metric_series(rows, "valid", true, "validation")};
    written.push_back(join_path(plots, "loss.png"));
    plot::line_chart(written.back(), loss);
  }
  if (config.get_string("model") != "encoder") return written;  // tables below: encoder maps
  const auto bias = table_panels(file, config, "rel_pos_bias", "rpe_kind", 0.0);
  if (!bias.empty()) {
    written.push_back(join_path(plots, "rpe_bias.png"));
    plot::heatmap_grid(written.back(), bias, static_cast<int>(std::min<size_t>(bias.size(), 4)),
                       "Learned RPE bias B per head (" + title + ")", true);
  }
  const auto c = table_panels(file, config, "urpe_c", "urpe_kind", 1.0);
  if (!c.empty()) {
    written.push_back(join_path(plots, "urpe_c.png"));
    plot::heatmap_grid(written.back(), c, static_cast<int>(std::min<size_t>(c.size(), 4)),
                       "Learned URPE matrix C per head (" + title + ")", true);
  }
  return written;
}

std::vector<std::string> draw_grid_plots(const std::string& out_dir, const std::vector<ResultRow>& rows,
                                         const std::vector<RunCurve>& curves) {
  const std::string plots = join_path(out_dir, "plots");
  make_directories(plots);
  std::vector<std::string> written;
  // Figure 1: mean accuracy per (task, V) group and pe.
  std::vector<std::string> groups, pes;
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> sums;
  for (size_t k = 0; k < rows.size() && k < curves.size(); ++k) {
    const RunCurve& c = curves[k];
    const std::string group = c.task == "pi" ? "PI" : c.task == "etp" ? "ETP" : c.task;
    const std::string label = group + ", V=" + std::to_string(c.vocab);
    if (std::find(groups.begin(), groups.end(), label) == groups.end()) groups.push_back(label);
    if (std::find(pes.begin(), pes.end(), c.pe) == pes.end()) pes.push_back(c.pe);
    auto& cell = sums[{label, c.pe}];
    cell.first += 100.0 * rows[k].metric;
    cell.second += 1;
  }
  plot::BarChartSpec bars;
  bars.title = "Accuracy (%), seed mean";  // short: two groups make a narrow chart
  bars.y_label = "accuracy (%)";
  bars.groups = groups;
  bars.y_min = 0;
  bars.y_max = 100;
  bars.decimals = 1;
  for (const std::string& pe : pes) {
    plot::BarSeries s;
    s.name = display_name(pe);
    for (const std::string& g : groups) {
      auto it = sums.find({g, pe});
      s.values.push_back(it == sums.end() ? NAN : it->second.first / it->second.second);
    }
    bars.series.push_back(s);
  }
  if (!groups.empty()) {
    written.push_back(join_path(plots, "accuracy.png"));
    plot::bar_chart(written.back(), bars);
  }
  // Learning curves and the URPE C matrices, first seed, per task.
  std::vector<std::string> tasks;
  for (const RunCurve& c : curves)
    if (std::find(tasks.begin(), tasks.end(), c.task) == tasks.end()) tasks.push_back(c.task);
  for (const std::string& task : tasks) {
    plot::LineChartSpec chart;
    chart.title = "Validation accuracy during training (" + task + ", seed 1)";
    chart.x_label = "step";
    chart.y_label = "accuracy (%)";
    const RunCurve* urpe_run = nullptr;
    for (const RunCurve& c : curves) {
      if (c.task != task || c.seed != 1) continue;
      chart.series.push_back(metric_series(read_metrics(join_path(c.dir, "metrics.csv")), "valid", false,
                                           display_name(c.pe) + " V=" + std::to_string(c.vocab), 100.0));
      if (c.pe == "urpe" && (!urpe_run || c.vocab > urpe_run->vocab)) urpe_run = &c;
    }
    written.push_back(join_path(plots, "curves_" + task + ".png"));
    plot::line_chart(written.back(), chart);
    if (urpe_run) {
      const TensorFile file = load_safetensors(join_path(urpe_run->dir, "model.safetensors"));
      const Config config = config_of_checkpoint(file);
      const auto panels = table_panels(file, config, "urpe_c", "urpe_kind", 1.0);
      written.push_back(join_path(plots, "urpe_c_" + task + ".png"));
      plot::heatmap_grid(written.back(), panels, static_cast<int>(std::min<size_t>(panels.size(), 4)),
                         "Learned URPE matrix C per head (" + title_of(config) + ")", true);
    }
  }
  return written;
}

}  // namespace urpe
