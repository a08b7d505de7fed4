// Every run a `urpe repro` command would start, before it starts any: its name, its preset and the
// assignments the command adds, with why the command sets each key it sets itself. `--dry-run`
// prints each run's resolved config with the source of every value (train/config/config_sources.h),
// and results.md ends with the same table. The lists come from the experiments' own per-run
// functions (synthetic_run_sets, lm_run_sets, molecule_run_sets, pretrain_run_sets), so they are
// the runs the grids train.
#pragma once
#include <string>
#include <vector>

#include "train/config/config_sources.h"
#include "app/repro/lm.h"
#include "app/repro/molecules.h"
#include "app/repro/pretrain.h"
#include "app/repro/synthetic.h"

namespace urpe {

struct PlannedRun {
  std::string name;               // its directory under runs/ (a grid point's: grid/<setting>/runs/)
  std::string preset;             // resolve_config(preset, "", sets) is its config
  std::vector<std::string> sets;  // what the command adds, in order (the user's --set among them)
  CommandSets labels;             // key → why the command sets it (keys the user set are not here)
  Config config() const;
  std::vector<ValueSource> sources() const;  // config_sources of config()
};

std::vector<PlannedRun> planned_synthetic_runs(const SyntheticGrid& grid);
std::vector<PlannedRun> planned_lm_runs(const LmReproPlan& plan);
// points: the --grid settings (each a list of key=value), or none for one setting.
std::vector<PlannedRun> planned_molecule_runs(const MoleculeRepro& repro,
                                              const std::vector<std::vector<std::string>>& points = {});
std::vector<PlannedRun> planned_pretrain_runs(const PretrainPlan& plan);

// The runs as text: run 1 in full (key = value, source), every later run as its differences from
// run 1 ("as run 1 except ...").
std::string planned_runs_text(const std::vector<PlannedRun>& runs);
// The same for results.md: a heading, run 1 as a markdown table, the later runs' differences.
std::string planned_runs_markdown(const std::vector<PlannedRun>& runs);

}  // namespace urpe
