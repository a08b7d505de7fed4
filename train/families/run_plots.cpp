// A run's pictures, by its family (see run_plots.h).
#include "train/families/run_plots.h"

#include "base/io/config.h"
#include "train/config/run_config.h"
#include "train/families/model_family.h"
#include "train/loop/checkpoint.h"

namespace urpe {

std::vector<std::string> draw_run_plots(const std::string& run_dir) {
  make_directories(join_path(run_dir, "plots"));
  read_metrics(join_path(run_dir, "metrics.csv"));  // a missing or malformed file is the first error
  const std::string checkpoint = join_path(run_dir, "model.safetensors");
  const Config config = config_from_text(read_checkpoint_info(checkpoint).config_text, checkpoint + " (config)");
  return family_of(config).draw_run_plots(run_dir);
}

plot::Series metric_series(const std::vector<MetricsRow>& rows, const std::string& split, bool loss,
                           const std::string& name, double scale) {
  plot::Series s;
  s.name = name;
  for (const MetricsRow& r : rows)
    if (r.split == split) {
      s.x.push_back(static_cast<double>(r.step));
      s.y.push_back(scale * (loss ? r.loss : r.metric));
    }
  return s;
}

Config config_of_checkpoint(const TensorFile& file) {
  return config_from_text(file.meta("config"), file.path + " (config)");
}

}  // namespace urpe
