// The paper's molecule experiment (Table 2): Graphormer vs Graphormer + URPE with matched settings
// on the same split, over seeds. `urpe repro molecules` writes
//   runs/graphormer-s<seed>, runs/graphormer-urpe-s<seed>   one run directory each (urpe train's files)
//   results.json   rows: per run valid_mae and test_mae, plus the predict-the-training-mean baseline
//                  (model "mean-predictor", params 0)
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
//   paper  graphormer-slim with the paper's GV1 schedule (400k steps of batch 256, docs/graphormer.md#configurations)
#pragma once
#include <string>
#include <vector>

#include "train/io/run_dir.h"
#include "train/repro/grid_cells.h"

namespace urpe {

struct MoleculeRepro {
  std::string scale;                   // tiny | small | paper
  std::string preset;                  // graphormer-tiny | graphormer-slim (pe is set per model)
  std::vector<std::string> overrides;  // the scale's schedule and data keys, for both models
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

}  // namespace urpe
