// The paper's language-modelling comparison (§4.2, Table 4): Transformer-XL against
// Transformer-XL + URPE at matched settings, over seeds (and, at paper scale, depths
// L ∈ {4, 8, 16}). Every run is scored on the whole valid and test splits with memory, and its
// valid split again without memory (eval_mem_len = 0) to show what the memory buys. Writes
// results.json (one row per run and metric, plus the unigram baseline), results.md (the table:
// perplexities mean ± half-range over seeds, parameters, the URPE overhead and the URPE − baseline
// difference) and plots/ (validation perplexity against step for both models, the learned C).
#pragma once
#include <string>
#include <vector>

#include "base/io/run_dir.h"
#include "app/repro/grid_cells.h"
#include "app/repro/repro_overrides.h"

namespace urpe {

struct LmReproPlan {
  std::string scale;                        // tiny | small | paper
  std::string preset;                       // the run preset the scale trains
  std::vector<int64_t> layers;              // depths compared; empty = the preset's
  std::vector<std::string> pes = {"rpe", "urpe"};
  int64_t seeds = 1;
  int64_t first_seed = 1;                   // seeds run first_seed … first_seed + seeds − 1
  std::string device = "cpu";
  std::vector<std::string> overrides;       // extra key=value applied to every run (not pe or seed,
                                            // nor layers when `layers` is set: the plan sets those)
  ReproOverrides extra;                     // the user's --set (after `overrides`) and --tf32
  // > 0 (--finetune): after the grid, each RPE run is continued for this many steps twice, from
  // its last checkpoint (urpe train --init-from): as RPE, and as URPE with C = 1 (paper §4.2).
  int64_t finetune_steps = 0;
};

// One RPE run continued both ways (both: best-validation checkpoint, whole splits).
struct LmFinetuneRecord {
  int64_t layers = 0, seed = 0, steps = 0;
  std::string source_dir, rpe_dir, urpe_dir;
  double source_valid_ppl = 0, source_test_ppl = 0;  // the RPE run they start from
  double rpe_valid_ppl = 0, rpe_test_ppl = 0;        // RPE continued
  double urpe_valid_ppl = 0, urpe_test_ppl = 0;      // URPE fine-tuned from it
};

// tiny: txl-tiny on the embedded corpus (≈ 3 minutes per run on 2 CPU cores); small: txl-small;
// paper: txl-base-paper (Appendix C.2, WikiText-103) at L = 4, 8 and 16 (§5.4, Table 4) — a GPU job.
LmReproPlan lm_plan_for_scale(const std::string& scale);

// One run of the plan: its directory name under runs/ (L<L>-<pe>-s<seed>) and the assignments it
// adds to plan.preset: device, the plan's overrides, the user's --set (lm_base_sets, what every run
// shares), then pe, seed and, when the plan sets depths, layers.
std::string lm_run_name(int64_t layers, const std::string& pe, int64_t seed);
std::vector<std::string> lm_base_sets(const LmReproPlan& plan);
std::vector<std::string> lm_run_sets(const LmReproPlan& plan, int64_t layers, const std::string& pe, int64_t seed);

// What one run achieved (all perplexities over the whole split, docs/transformer_xl.md#evaluation-protocol,
// of the run's best-validation checkpoint, as the official Transformer-XL reports).
struct LmRunRecord {
  int64_t layers = 0;
  std::string pe, dir;
  int64_t seed = 0, params = 0, steps = 0;
  int64_t best_step = 0;  // the step of model.best.safetensors
  double seconds = 0;
  double valid_ppl = 0, test_ppl = 0;
  double valid_ppl_no_memory = 0;  // the same checkpoint evaluated with eval_mem_len = 0
  int64_t eval_mem_len = 0;        // the memory of the two evaluations above
};

struct LmReproSummary {
  std::string corpus, token_mode;
  int64_t vocab = 0;
  double unigram_valid_ppl = 0, unigram_test_ppl = 0;
  std::vector<LmRunRecord> runs;
  std::vector<LmFinetuneRecord> finetune;  // with plan.finetune_steps > 0
  double wall_seconds = 0;  // the whole repro: corpus, training, every evaluation
};

// Trains every (L, pe, seed) into out_dir/runs/L<L>-<pe>-s<seed>, printing one line per run, then
// writes out_dir/results.json, results.md and plots/.
// Ctrl-C or SIGTERM stops the grid after the current run saves (no fine-tuning then): the summary
// files hold the finished runs, results.md starts with a note naming `continuation.command`, and
// with continuation.continuing the runs already in out_dir/runs are reused or resumed
// (grid_cells.h).
LmReproSummary run_lm_repro(const LmReproPlan& plan, const std::string& out_dir,
                            const GridContinuation& continuation = {});

// The results.md text.
std::string lm_results_markdown(const LmReproSummary& summary, const LmReproPlan& plan);

}  // namespace urpe
