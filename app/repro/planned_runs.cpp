// The runs of each experiment before any starts (see planned_runs.h).
#include "app/repro/planned_runs.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "train/config/run_config.h"
#include "app/repro/molecule_grid.h"
#include "app/repro/repro_overrides.h"

namespace urpe {

namespace {

// Why the command sets a key itself, for the keys of `sets` the user did not give (`user`).
CommandSets labels_of(const std::vector<std::string>& sets, const std::vector<std::string>& user,
                      const std::map<std::string, std::string>& reasons) {
  CommandSets labels;
  for (const std::string& s : sets) {
    if (std::find(user.begin(), user.end(), s) != user.end()) continue;
    const std::string key = override_key(s);
    const auto it = reasons.find(key);
    labels[key] = it != reasons.end() ? it->second : "repro: the scale's setting for every run";
  }
  return labels;
}

const char* const kSeedReason = "repro: --seeds K runs seeds 1 … K";
const char* const kDeviceReason = "repro: --device";

}  // namespace

Config PlannedRun::config() const { return resolve_config(preset, "", sets); }

std::vector<ValueSource> PlannedRun::sources() const { return config_sources(config(), preset, labels); }

std::vector<PlannedRun> planned_synthetic_runs(const SyntheticGrid& grid) {
  const std::map<std::string, std::string> reasons = {
      {"pe", "repro synthetic: one run per encoding (--pes; C.1 compares noPE, T5-style RPE and URPE)"},
      {"vocab", grid.scale == "paper" ? "repro synthetic --scale paper: one run per V of C.1's {10, 1000, 10000}"
                                      : "repro synthetic --scale " + grid.scale + ": the scale's V values"},
      {"seed", kSeedReason},
      {"device", kDeviceReason},
      {"seq_len", "repro synthetic: --lengths (Figure 3: 256 and 512)"},
  };
  const std::vector<int64_t> lengths = grid.lengths.empty() ? std::vector<int64_t>{0} : grid.lengths;
  std::vector<PlannedRun> runs;
  for (const std::string& task : grid.tasks)
    for (int64_t vocab : grid.vocabs)
      for (int64_t length : lengths)
        for (const std::string& pe : grid.pes)
          for (int64_t seed = grid.first_seed; seed < grid.first_seed + grid.seeds; ++seed) {
            PlannedRun run{synthetic_run_name(task, vocab, length, pe, seed), task + "-" + grid.scale,
                           synthetic_run_sets(grid, pe, vocab, length, seed), {}};
            run.labels = labels_of(run.sets, grid.extra.sets, reasons);
            runs.push_back(run);
          }
  return runs;
}

std::vector<PlannedRun> planned_lm_runs(const LmReproPlan& plan) {
  const std::map<std::string, std::string> reasons = {
      {"pe", "repro lm: Transformer-XL (rpe) against Transformer-XL + URPE (urpe), Tables 1 and 4"},
      {"seed", kSeedReason},
      {"device", kDeviceReason},
      {"layers", "repro lm --scale paper: §5.4 Table 4's depths 4, 8 and 16"},
      {"corpus", "repro lm: --corpus"},
  };
  std::vector<int64_t> depths = plan.layers;
  if (depths.empty()) depths = {resolve_config(plan.preset, "", lm_base_sets(plan)).get_int("layers")};
  std::vector<PlannedRun> runs;
  for (int64_t layers : depths)
    for (const std::string& pe : plan.pes)
      for (int64_t seed = plan.first_seed; seed < plan.first_seed + plan.seeds; ++seed) {
        PlannedRun run{lm_run_name(layers, pe, seed), plan.preset, lm_run_sets(plan, layers, pe, seed), {}};
        run.labels = labels_of(run.sets, plan.extra.sets, reasons);
        runs.push_back(run);
      }
  return runs;
}

std::vector<PlannedRun> planned_molecule_runs(const MoleculeRepro& repro,
                                              const std::vector<std::vector<std::string>>& points) {
  std::map<std::string, std::string> reasons = {
      {"pe", "repro molecules: Graphormer (none) against Graphormer + URPE (urpe), Tables 2 and 3"},
      {"seed", repro.scale == "paper" ? "repro molecules --scale paper: 4 seeds, as §5.3 averages four (--seeds)"
                                      : kSeedReason},
      {"device", kDeviceReason},
      {"dataset", "repro molecules: --data"},
  };
  if (repro.scale == "small")
    for (const char* key : {"batch", "steps", "warmup", "eval_every"})
      reasons[key] = "repro molecules --scale small: urpe's CPU schedule over the paper's model";
  std::vector<PlannedRun> runs;
  const std::vector<std::vector<std::string>> settings = points.empty() ? std::vector<std::vector<std::string>>{{}} : points;
  for (const std::vector<std::string>& point : settings) {
    MoleculeRepro one = repro;
    one.overrides.insert(one.overrides.end(), point.begin(), point.end());
    std::map<std::string, std::string> point_reasons = reasons;
    for (const std::string& s : point)
      point_reasons[override_key(s)] = "repro molecules --grid: this grid setting (C.3.1's sets: --grid paper)";
    const std::string prefix = point.empty() ? "" : "grid/" + grid_point_name(point) + "/runs/";
    for (int64_t seed = one.first_seed; seed < one.first_seed + one.seeds; ++seed)
      for (const std::string pe : {"none", "urpe"}) {
        PlannedRun run{prefix + molecule_run_name(pe, seed), one.preset, molecule_run_sets(one, pe, seed), {}};
        run.labels = labels_of(run.sets, one.extra.sets, point_reasons);
        runs.push_back(run);
      }
  }
  return runs;
}

std::vector<PlannedRun> planned_pretrain_runs(const PretrainPlan& plan) {
  const std::map<std::string, std::string> reasons = {
      {"pe", "repro pretrain: C.4's three models, APE+RPE (ape+rpe), RPE (rpe) and URPE (urpe)"},
      {"seed", kSeedReason},
      {"device", kDeviceReason},
      {"corpus", "repro pretrain: --corpus"},
  };
  std::vector<PlannedRun> runs;
  for (const std::string& pe : plan.pes)
    for (int64_t seed = plan.first_seed; seed < plan.first_seed + plan.seeds; ++seed) {
      PlannedRun run{pretrain_run_name(pe, seed), plan.preset, pretrain_run_sets(plan, pe, seed), {}};
      run.labels = labels_of(run.sets, plan.extra.sets, reasons);
      runs.push_back(run);
    }
  return runs;
}

std::string planned_runs_text(const std::vector<PlannedRun>& runs) {
  std::ostringstream out;
  std::vector<ValueSource> first;
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::vector<ValueSource> sources = runs[k].sources();
    out << "run " << k + 1 << "/" << runs.size() << " " << runs[k].name;
    if (k == 0) {
      out << " (preset " << runs[k].preset << "):\n" << sources_text(sources);
      first = sources;
      continue;
    }
    const std::string differences = sources_difference(first, sources);
    out << ": as run 1" << (differences.empty() ? "" : " except " + differences) << "\n";
  }
  return out.str();
}

std::string planned_runs_markdown(const std::vector<PlannedRun>& runs) {
  std::ostringstream out;
  out << "## Every value and its source\n\n";
  if (runs.empty()) return out.str() + "No runs.\n";
  out << "Run 1, `" << runs[0].name << "` (preset `" << runs[0].preset
      << "`): every config key, its value and where the value comes from (`urpe repro ... --dry-run` prints the "
         "same; docs/reproduce.md#every-value-and-its-source).\n\n";
  const std::vector<ValueSource> first = runs[0].sources();
  out << sources_markdown(first);
  if (runs.size() > 1) out << "\nThe other runs differ from run 1 in:\n\n";
  for (size_t k = 1; k < runs.size(); ++k) {
    const std::string differences = sources_difference(first, runs[k].sources());
    out << "- `" << runs[k].name << "`: " << (differences.empty() ? "nothing" : differences) << "\n";
  }
  return out.str();
}

}  // namespace urpe
