// The txl family's run pictures (see txl_plots.h).
#include "train/families/txl/txl_plots.h"

#include "base/io/config.h"
#include "base/io/run_dir.h"
#include "base/io/safetensors.h"
#include "train/config/run_config.h"
#include "train/config/run_settings.h"
#include "train/families/txl/txl_config.h"
#include "train/families/run_plots.h"

namespace urpe {

namespace {

// "txl, urpe".
std::string title_of(const Config& c) { return run_settings_from(c).model + ", " + txl_settings_from(c).pe; }

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
    const int64_t subset = txl_settings_from(config).max_eval_tokens;
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

std::vector<std::string> draw_txl_run_plots(const std::string& run_dir) {
  const std::string plots = join_path(run_dir, "plots");
  make_directories(plots);
  const std::vector<MetricsRow> rows = read_metrics(join_path(run_dir, "metrics.csv"));
  const TensorFile file = load_safetensors(join_path(run_dir, "model.safetensors"));
  const Config config = config_of_checkpoint(file);
  return draw_lm_run_plots(plots, rows, file, config, title_of(config));
}

}  // namespace urpe
