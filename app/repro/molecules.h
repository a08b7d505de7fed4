// The paper's molecule experiment (Table 2): Graphormer vs Graphormer + URPE with matched settings
// on the same split, over seeds. `urpe repro molecules` writes
//   runs/graphormer-s<seed>, runs/graphormer-urpe-s<seed>   one run directory each (urpe train's files)
//   results.json   rows: per run valid_mae and test_mae, plus the predict-the-training-mean baseline
//                  (model "mean-predictor" = kMeanPredictorModel, params 0)
//   results.md     the Table-2-style table: parameters (and URPE's overhead), valid and test MAE
//                  mean ± half-range over seeds, the baseline, the URPE − Graphormer difference
//   plots/         curves.png (validation MAE against step, every run), mae.png (valid and test MAE bars),
//                  spatial_bias.png and urpe_spatial_bias.png (learned spatial bias per head against
//                  distance, first seed), urpe_c.png (learned C per head against distance)
//
// Scales (all on the embedded molecules, target = normalised penalized logP, split.csv):
//   tiny   graphormer-tiny (3 layers, d = 32) for 1,500 steps of 32 molecules (6 epochs of the
//          full training split), sized for 2 models × 2 seeds in under 20 minutes on 2 CPU cores
//   small  graphormer-slim (paper sizes), 20k steps of batch 64 on the full training split
//   paper  graphormer-slim, Appendix C.3.1's ZINC-subset setting (600K steps of batch 256,
//          docs/reproduce.md), 4 seeds as Table 2; another preset with --preset (graphormer-slim-full:
//          ZINC full, graphormer-pcqm4m: C.3.2), which also picks the paper's row beside ours
// (Table 2 subset, Table 2 full, Table 3).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "base/io/config.h"

#include "base/io/run_dir.h"
#include "app/repro/grid_cells.h"
#include "app/repro/paper_values.h"
#include "app/repro/repro_overrides.h"

namespace urpe {

// The `model` of the predict-the-training-mean row beside the trained Graphormer rows.
constexpr const char* kMeanPredictorModel = "mean-predictor";

struct MoleculeRepro {
  std::string scale;                   // tiny | small | paper
  std::string preset;                  // graphormer-tiny | graphormer-slim (pe is set per model)
  std::vector<std::string> overrides;  // the scale's schedule and data keys, for both models
  ReproOverrides extra;                // the user's --set (after `overrides`) and --tf32
  int64_t seeds = 1;
  int64_t first_seed = 1;              // seeds first_seed … first_seed + seeds − 1
  std::string device = "cpu";
};

MoleculeRepro molecule_repro_for_scale(const std::string& scale);

// Trains every (seed, model) into out_dir/runs/, printing one line per run, then writes
// results.json, results.md and plots/. Returns the results.json rows. Ctrl-C or SIGTERM stops the
// grid after the current run saves: the summary files then hold the finished runs (none are
// written before the first has finished), results.md starts with a note naming
// `continuation.command`, and with continuation.continuing the runs already in out_dir/runs are
// reused or resumed (grid_cells.h).
std::vector<ResultRow> run_molecule_repro(const MoleculeRepro& repro, const std::string& out_dir,
                                          const GridContinuation& continuation = {});

// The config of one run of `repro` (pe = none or urpe, a seed): the preset, then
// molecule_run_sets: pe, seed, device, the scale's overrides (and a grid point's), the user's --set.
Config molecule_repro_config(const MoleculeRepro& repro, const std::string& pe, int64_t seed);
std::vector<std::string> molecule_run_sets(const MoleculeRepro& repro, const std::string& pe, int64_t seed);
// Its directory name under runs/: graphormer-s<seed>, graphormer-urpe-s<seed>.
std::string molecule_run_name(const std::string& pe, int64_t seed);

// The paper's rows beside ours for a preset: Table 2's subset and full test MAE and Table 3's
// PCQM4M valid MAE, with ours (valid, test means; empty when not measured) in the row the preset
// is for (pcqm4m: Table 3 with our valid MAE; -full: Table 2 full; others: Table 2 subset).
struct MoleculeMeans {
  std::optional<double> base_valid, urpe_valid, base_test, urpe_test;
};
std::vector<PaperComparison> molecule_paper_rows(const std::string& preset, const MoleculeMeans& ours);

}  // namespace urpe
