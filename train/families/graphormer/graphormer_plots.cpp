// Graphormer run pictures (see graphormer_plots.h).
#include "train/families/graphormer/graphormer_plots.h"

#include <algorithm>
#include <utility>

#include "data/molecule_graph.h"
#include "train/families/graphormer/graphormer_config.h"
#include "train/families/graphormer/graphormer_trainer.h"
#include "base/io/config.h"
#include "train/config/run_config.h"
#include "base/io/run_dir.h"

namespace urpe {

namespace {

// One series per head over entries [first, first + count) of a table laid out (entries, heads)
// when heads_in_columns, else (heads, entries).
std::vector<plot::Series> head_series(const Tensor& table, bool heads_in_columns, int64_t first, int64_t count) {
  const std::vector<float> v = table.to_vector_f32();
  const int64_t heads = heads_in_columns ? table.size(1) : table.size(0);
  const int64_t width = table.size(1);
  std::vector<plot::Series> out;
  for (int64_t h = 0; h < heads; ++h) {
    plot::Series s;
    s.name = "head " + std::to_string(h);
    for (int64_t d = 0; d < count; ++d) {
      s.x.push_back(static_cast<double>(d));
      s.y.push_back(heads_in_columns ? v[(first + d) * width + h] : v[h * width + first + d]);
    }
    out.push_back(std::move(s));
  }
  return out;
}

plot::Series metric_series(const std::vector<MetricsRow>& rows, const std::string& split, const std::string& name) {
  plot::Series s;
  s.name = name;
  for (const MetricsRow& r : rows)
    if (r.split == split) {
      s.x.push_back(static_cast<double>(r.step));
      s.y.push_back(r.metric);
    }
  return s;
}

// Per-head series of one of the checkpoint's tables against shortest-path distance.
plot::LineChartSpec distance_chart(const std::string& title, const std::string& y_label,
                                   std::vector<plot::Series> series) {
  plot::LineChartSpec chart;
  chart.title = title;
  chart.x_label = "shortest-path distance";
  chart.y_label = y_label;
  chart.series = std::move(series);
  return chart;
}

}  // namespace

std::vector<plot::Series> spatial_bias_series(const TensorFile& checkpoint, int64_t max_distance) {
  const std::string name = "model.spatial_pos_encoder.weight";
  if (!checkpoint.contains(name)) return {};
  const Tensor& table = checkpoint.at(name);  // (num_spatial, H); row SPD + 1, row 0 = padding
  const int64_t rows = table.size(0) - 1;
  return head_series(table, true, 1, max_distance < 0 ? rows : std::min(rows, max_distance + 1));
}

std::vector<plot::Series> urpe_c_series(const TensorFile& checkpoint, int64_t max_distance) {
  const std::string name = "model.urpe_c";
  if (!checkpoint.contains(name)) return {};
  const Tensor& table = checkpoint.at(name);  // (H, max_spd + 4); column SPD, then 3 graph-token buckets
  const int64_t buckets = table.size(1) - 3;
  return head_series(table, false, 0, max_distance < 0 ? buckets : std::min(buckets, max_distance + 1));
}

std::vector<int64_t> training_bucket_counts(const GraphormerData& data, int64_t max_spd) {
  std::vector<int64_t> counts(static_cast<size_t>(std::max<int64_t>(max_spd, 0) + 1), 0);
  for (int64_t row : data.split.train)
    for (int32_t d : data::shortest_path_distances(data.dataset.graphs[static_cast<size_t>(row)]))
      ++counts[static_cast<size_t>(std::min<int64_t>(d, max_spd))];  // unreachable (510) lands in max_spd
  return counts;
}

plot::LineChartSpec urpe_c_chart(const std::string& title, std::vector<plot::Series> series,
                                 const std::vector<int64_t>& counts) {
  plot::LineChartSpec chart = distance_chart(title, "C (multiplies the attention probabilities)", std::move(series));
  if (counts.empty()) {
    chart.notes.push_back("training data not read: distances never seen in training are not marked");
    return chart;
  }
  int64_t shown = 0;
  for (const plot::Series& s : chart.series) shown = std::max<int64_t>(shown, static_cast<int64_t>(s.x.size()));
  // Runs of buckets with no training pair, each one shaded band.
  std::string listed;
  for (int64_t d = 0; d < shown && d < static_cast<int64_t>(counts.size());) {
    if (counts[static_cast<size_t>(d)] > 0) {
      ++d;
      continue;
    }
    int64_t e = d;
    while (e + 1 < shown && e + 1 < static_cast<int64_t>(counts.size()) && counts[static_cast<size_t>(e + 1)] == 0) ++e;
    chart.x_bands.push_back({d - 0.5, e + 0.5});
    listed += (listed.empty() ? "" : ", ") + (d == e ? std::to_string(d) : std::to_string(d) + " to " + std::to_string(e));
    d = e + 1;
  }
  if (!listed.empty())
    chart.notes.push_back("grey: distance " + listed +
                          ", in no training molecule; C there never gets a gradient and stays at its start, 1, "
                          "shrunk by weight decay");
  return chart;
}

std::vector<std::string> draw_graphormer_run_plots(const std::string& run_dir, int64_t max_distance) {
  const std::string plots = join_path(run_dir, "plots");
  make_directories(plots);
  std::vector<std::string> written;
  const std::vector<MetricsRow> rows = read_metrics(join_path(run_dir, "metrics.csv"));
  const TensorFile file = load_safetensors(join_path(run_dir, "model.safetensors"));
  const GraphormerSettings settings =
      graphormer_settings_from(config_from_text(file.meta("config"), file.path + " (config)"));
  const std::string title = settings.urpe ? "Graphormer + URPE" : "Graphormer";
  const auto draw = [&](const std::string& file, const plot::LineChartSpec& chart) {
    written.push_back(join_path(plots, file));
    plot::line_chart(written.back(), chart);
  };
  if (!rows.empty()) {
    plot::LineChartSpec curves;
    curves.title = "Mean absolute error (" + title + ")";
    curves.x_label = "step";
    curves.y_label = "MAE, " + settings.target_column;
    curves.series = {metric_series(rows, "train", "training batches"), metric_series(rows, "valid", "validation")};
    const plot::Series test = metric_series(rows, "test", "test (final)");
    if (!test.x.empty()) curves.series.push_back(test);
    draw("curves.png", curves);
  }
  const std::vector<plot::Series> bias = spatial_bias_series(file, max_distance);
  if (!bias.empty())
    draw("spatial_bias.png", distance_chart("Spatial bias per head (" + title + ")", "bias added to the logits", bias));
  const std::vector<plot::Series> c = urpe_c_series(file, max_distance);
  if (!c.empty()) {
    // Which distances the training molecules have: the run's own dataset and split, read again.
    std::vector<int64_t> counts;
    try {
      counts = training_bucket_counts(load_graphormer_data(settings), settings.max_spd);
    } catch (const Error&) {
      counts.clear();  // moved or missing data: the chart says it could not mark them
    }
    draw("urpe_c.png", urpe_c_chart("URPE C per head (" + title + ")", c, counts));
  }
  return written;
}

}  // namespace urpe
