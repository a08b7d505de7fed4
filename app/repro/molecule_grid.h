// The paper's hyper-parameter selection for the molecule experiment (`urpe repro molecules --grid`):
// Appendix C.3.1 selects ZINC's batch from {128, 256, 512}, the peak learning rate from
// {4e-4, 5e-4}, the dropout from {0, 0.1} and the weight decay from {0, 0.01}; `--grid paper` runs
// all 24 settings (train/config/paper_presets.h, paper_selection), `--grid key=a,b,...` (repeatable) any
// other grid. Each setting is a whole `repro molecules` (both models, every seed) in
// out/grid/<setting>/; then, per model, the setting with the lowest mean validation MAE is
// selected (the paper does not say its criterion; validation is the one that leaves test unseen)
// and its test MAE goes beside the paper's. Writes
//   results.md    every setting's valid / test MAE per model, the selection, the paper beside
//   results.json  every run's rows, each with "grid" (its setting) and "selected"
//   plots/grid.png  validation MAE per setting and model
#pragma once
#include <string>
#include <vector>

#include "app/repro/molecules.h"

namespace urpe {

struct GridAxis {
  std::string key;
  std::vector<std::string> values;
};

// The --grid options: "paper" (the preset's Appendix C selection; an error where the appendix
// gives none) or "key=v1,v2,..." (no key twice, no empty value, not pe or seed).
std::vector<GridAxis> parse_grid_options(const std::vector<std::string>& options, const std::string& preset);

// Every combination, the first axis slowest; each a list of "key=value".
std::vector<std::vector<std::string>> grid_points(const std::vector<GridAxis>& axes);
// "batch=128", "lr=4e-4" → "batch128-lr4e-4" (a directory name).
std::string grid_point_name(const std::vector<std::string>& point);

struct GridPointResult {
  std::vector<std::string> point;
  std::string dir;
  std::vector<ResultRow> rows;  // the point's repro rows (valid_mae, test_mae per run)
};

// For one model (pe = none | urpe): the index of the point with the lowest mean valid MAE over its
// seeds (the first of equals), or -1 when no point has a run of that model.
int selected_point(const std::vector<GridPointResult>& points, const std::string& pe);

// Runs every point of the grid into out_dir/grid/, then writes the summary files. Returns the points.
std::vector<GridPointResult> run_molecule_grid(const MoleculeRepro& repro, const std::vector<GridAxis>& axes,
                                               const std::string& out_dir);

std::string molecule_grid_markdown(const MoleculeRepro& repro, const std::vector<GridAxis>& axes,
                                   const std::vector<GridPointResult>& points);

}  // namespace urpe
