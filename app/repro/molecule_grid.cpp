// Runner of the molecule grid (see molecule_grid.h): one molecules repro per setting, then the
// selection by validation MAE and the summary files.
#include "app/repro/molecule_grid.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>

#include "tensor/error.h"
#include "train/config/paper_presets.h"
#include "base/io/run_dir.h"
#include "base/io/stop_signals.h"
#include "base/plot/charts.h"
#include "app/repro/seed_stats.h"

namespace urpe {

namespace {

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(item);
  if (!text.empty() && text.back() == ',') items.push_back("");
  return items;
}

// Values of `metric` (valid_mae, test_mae) for model `pe` at one point, over its seeds.
std::vector<double> values_of(const GridPointResult& point, const std::string& pe, const std::string& metric) {
  std::vector<double> values;
  for (const ResultRow& r : point.rows)
    if (r.pe == pe && r.model != kMeanPredictorModel && r.metric_name == metric) values.push_back(r.metric);
  return values;
}

std::string joined(const std::vector<std::string>& point, const char* separator) {
  std::string text;
  for (size_t k = 0; k < point.size(); ++k) text += (k ? separator : "") + point[k];
  return text;
}

const char* model_name(const std::string& pe) { return pe == "urpe" ? "Graphormer + URPE" : "Graphormer"; }

}  // namespace

std::vector<GridAxis> parse_grid_options(const std::vector<std::string>& options, const std::string& preset) {
  std::vector<GridAxis> axes;
  for (const std::string& option : options) {
    if (option == "paper") {
      const std::vector<PaperChoice> selection = paper_selection(preset);
      URPE_CHECK(!selection.empty(), "--grid paper: the paper's appendix gives no set to select from for preset '"
                                         << preset << "' (it does for the ZINC presets, Appendix C.3.1)");
      for (const PaperChoice& c : selection) axes.push_back({c.key, c.values});
      continue;
    }
    const size_t eq = option.find('=');
    URPE_CHECK(eq != std::string::npos && eq > 0,
               "--grid '" << option << "': expected paper or key=v1,v2,... (e.g. --grid lr=4e-4,5e-4)");
    GridAxis axis{option.substr(0, eq), comma_list(option.substr(eq + 1))};
    URPE_CHECK(axis.key != "pe" && axis.key != "seed",
               "--grid " << option << ": the experiment sets " << axis.key << " per run itself (--seeds for seeds)");
    for (const std::string& v : axis.values)
      URPE_CHECK(!v.empty(), "--grid " << option << ": an empty value (expected key=v1,v2,...)");
    URPE_CHECK(!axis.values.empty(), "--grid " << option << ": no values (expected key=v1,v2,...)");
    axes.push_back(axis);
  }
  for (size_t k = 0; k < axes.size(); ++k)
    for (size_t j = 0; j < k; ++j)
      URPE_CHECK(axes[j].key != axes[k].key, "--grid names " << axes[k].key << " twice");
  return axes;
}

std::vector<std::vector<std::string>> grid_points(const std::vector<GridAxis>& axes) {
  std::vector<std::vector<std::string>> points = {{}};
  for (const GridAxis& axis : axes) {
    std::vector<std::vector<std::string>> next;
    for (const std::vector<std::string>& p : points)
      for (const std::string& v : axis.values) {
        std::vector<std::string> q = p;
        q.push_back(axis.key + "=" + v);
        next.push_back(q);
      }
    points = next;
  }
  return points;
}

std::string grid_point_name(const std::vector<std::string>& point) {
  std::string name;
  for (const std::string& assignment : point) {
    std::string part = assignment;
    part.erase(std::remove(part.begin(), part.end(), '='), part.end());
    for (char& ch : part)
      if (ch == '/' || ch == ' ') ch = '_';
    name += (name.empty() ? "" : "-") + part;
  }
  return name.empty() ? "default" : name;
}

int selected_point(const std::vector<GridPointResult>& points, const std::string& pe) {
  int best = -1;
  double lowest = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < points.size(); ++k) {
    const std::vector<double> valid = values_of(points[k], pe, "valid_mae");
    if (valid.empty()) continue;
    const double mean = seed_stats(valid).mean;
    if (mean < lowest) {
      lowest = mean;
      best = static_cast<int>(k);
    }
  }
  return best;
}

std::vector<GridPointResult> run_molecule_grid(const MoleculeRepro& repro, const std::vector<GridAxis>& axes,
                                               const std::string& out_dir) {
  const std::vector<std::vector<std::string>> points = grid_points(axes);
  make_directories(out_dir);
  std::vector<GridPointResult> results;
  for (size_t k = 0; k < points.size(); ++k) {
    GridPointResult r;
    r.point = points[k];
    r.dir = join_path(join_path(out_dir, "grid"), grid_point_name(points[k]));
    std::printf("\n== grid setting %zu/%zu: %s ==\n", k + 1, points.size(), joined(points[k], " ").c_str());
    std::fflush(stdout);
    MoleculeRepro one = repro;
    one.overrides.insert(one.overrides.end(), points[k].begin(), points[k].end());
    r.rows = run_molecule_repro(one, r.dir);
    if (stop_signal() != 0) break;  // a signal stopped that setting's grid: the next one never starts
    results.push_back(r);
  }
  if (stop_signal() != 0 && old_run_restorable(out_dir)) return {};  // the old grid comes back
  const int chosen[2] = {selected_point(results, "none"), selected_point(results, "urpe")};
  json::Value list = json::Value::array();
  for (size_t k = 0; k < results.size(); ++k)
    for (const ResultRow& row : results[k].rows) {
      json::Value v = result_to_json(row);
      const bool selected = row.model != kMeanPredictorModel && chosen[row.pe == "urpe"] == static_cast<int>(k);
      v.set("grid", joined(results[k].point, " ")).set("selected", selected);
      list.push(v);
    }
  write_text_atomic(join_path(out_dir, "results.json"), list.dump(2) + "\n");
  write_text_atomic(join_path(out_dir, "results.md"), molecule_grid_markdown(repro, axes, results));
  plot::BarChartSpec bars;
  bars.title = "Validation MAE per grid setting (mean over seeds)";
  bars.y_label = "valid MAE";
  bars.decimals = 3;
  for (const GridPointResult& p : results) bars.groups.push_back(grid_point_name(p.point));
  for (const std::string pe : {"none", "urpe"}) {
    plot::BarSeries s{model_name(pe), {}};
    for (const GridPointResult& p : results) {
      const std::vector<double> v = values_of(p, pe, "valid_mae");
      s.values.push_back(v.empty() ? std::numeric_limits<double>::quiet_NaN() : seed_stats(v).mean);
    }
    bars.series.push_back(s);
  }
  make_directories(join_path(out_dir, "plots"));
  plot::bar_chart(join_path(join_path(out_dir, "plots"), "grid.png"), bars);
  return results;
}

std::string molecule_grid_markdown(const MoleculeRepro& repro, const std::vector<GridAxis>& axes,
                                   const std::vector<GridPointResult>& points) {
  std::ostringstream md;
  md << "# Molecules: the hyper-parameter selection (paper Appendix C.3.1)\n\n"
     << "Scale `" << repro.scale << "`, preset `" << repro.preset << "`, " << repro.seeds
     << " seed(s) per model and setting: " << seed_stats_legend(repro.seeds) << ".\nGrid:";
  for (const GridAxis& a : axes) {
    md << " " << a.key << " ∈ {";
    for (size_t k = 0; k < a.values.size(); ++k) md << (k ? ", " : "") << a.values[k];
    md << "}";
  }
  md << " (" << points.size() << " settings; each a whole `repro molecules` under grid/<setting>/).\n"
     << "Selection: per model, the setting with the lowest mean validation MAE (best-validation checkpoints); its "
        "test MAE is the one reported.\n"
     << overrides_markdown_line(repro.extra) << "\n"
     << "| setting | Graphormer valid MAE | Graphormer test MAE | + URPE valid MAE | + URPE test MAE |\n"
     << "|---|---|---|---|---|\n";
  const int chosen[2] = {selected_point(points, "none"), selected_point(points, "urpe")};
  for (size_t k = 0; k < points.size(); ++k) {
    md << "| " << joined(points[k].point, " ") << " |";
    for (int m = 0; m < 2; ++m) {
      const std::string pe = m ? "urpe" : "none";
      const std::string mark = chosen[m] == static_cast<int>(k) ? " **(selected)**" : "";
      md << " " << format_seed_stats(seed_stats(values_of(points[k], pe, "valid_mae")), 4) << mark << " | "
         << format_seed_stats(seed_stats(values_of(points[k], pe, "test_mae")), 4) << " |";
    }
    md << "\n";
  }
  MoleculeMeans means;
  for (int m = 0; m < 2; ++m) {
    if (chosen[m] < 0) continue;
    const std::string pe = m ? "urpe" : "none";
    const GridPointResult& p = points[static_cast<size_t>(chosen[m])];
    md << "\nSelected for " << model_name(pe) << ": " << joined(p.point, " ") << " (" << p.dir << ").";
    const double valid = seed_stats(values_of(p, pe, "valid_mae")).mean;
    const double test = seed_stats(values_of(p, pe, "test_mae")).mean;
    (m ? means.urpe_valid : means.base_valid) = valid;
    (m ? means.urpe_test : means.base_test) = test;
  }
  md << "\n";
  md << paper_comparison_markdown(molecule_paper_rows(repro.preset, means), "Graphormer",
                                  "the selected setting of each model, scale `" + repro.scale + "` (preset `" +
                                      repro.preset + "`), mean over " + std::to_string(repro.seeds) +
                                      " seed(s); the paper: its own selection, 4 seeds.");
  return md.str();
}

}  // namespace urpe
