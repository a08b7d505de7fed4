// The paper's Appendix C.4 in small: masked-language-model pre-training of the encoder with
// learned absolute positions and T5's relative bias together (APE+RPE, as UniLMv2 uses them), with
// the relative bias only (RPE), and with URPE, compared by validation MLM loss (the paper, BERT-base
// after 1M iterations: 1.86, 1.94, 1.87). `urpe repro pretrain` writes
//   runs/<pe>-s<seed>   one run directory per encoding and seed (urpe train's files, task = mlm)
//   results.json        per run: valid_mlm_loss, test_mlm_loss, valid_masked_accuracy
//   results.md          the table (mean ± half-range over seeds) with the paper's losses beside
//   plots/              curves.png (validation MLM loss against step), loss.png (final losses)
// Scales: tiny = mlm-tiny on the embedded corpus (minutes on 2 CPU cores), small = mlm-small,
// paper = mlm-paper (BERT-base, 1M steps: a multi-GPU job; set corpus to a WikiText-format directory).
#pragma once
#include <string>
#include <vector>

#include "base/io/run_dir.h"
#include "app/repro/repro_overrides.h"

namespace urpe {

struct PretrainPlan {
  std::string scale;   // tiny | small | paper
  std::string preset;  // mlm-tiny | mlm-small | mlm-paper
  std::vector<std::string> pes = {"ape+rpe", "rpe", "urpe"};
  int64_t seeds = 1;
  int64_t first_seed = 1;
  std::string device = "cpu";
  std::vector<std::string> overrides;  // the command's own key=value for every run (--corpus: corpus=DIR)
  ReproOverrides extra;  // --set (after the overrides) and --tf32, every run
};
PretrainPlan pretrain_plan_for_scale(const std::string& scale);
// One run: the assignments it adds to plan.preset (device, overrides, the user's --set, pe, seed)
// and its directory name under runs/ (<pe>-s<seed>).
std::vector<std::string> pretrain_run_sets(const PretrainPlan& plan, const std::string& pe, int64_t seed);
std::string pretrain_run_name(const std::string& pe, int64_t seed);

// What one run reached: the final checkpoint, as C.4 reports the loss after its last iteration.
struct PretrainRun {
  std::string pe, dir;
  int64_t seed = 0, params = 0, steps = 0;
  double seconds = 0;
  double valid_loss = 0, valid_accuracy = 0, test_loss = 0, test_accuracy = 0;
};

struct PretrainSummary {
  std::string corpus;
  int64_t corpus_vocab = 0, vocab = 0, seq_len = 0, masked_per_sequence = 0, valid_windows = 0;
  double rare_share_valid = 0;
  std::vector<PretrainRun> runs;
  double wall_seconds = 0;
};

// Trains every (pe, seed) into out_dir/runs/, printing one line per run, then writes
// results.json, results.md and plots/.
PretrainSummary run_pretrain_repro(const PretrainPlan& plan, const std::string& out_dir);

// The results.md text.
std::string pretrain_results_markdown(const PretrainSummary& summary, const PretrainPlan& plan);

// The paper's C.4 loss for a `pe` of the comparison (ape+rpe, rpe, urpe), or < 0 for another.
double paper_pretrain_loss(const std::string& pe);

}  // namespace urpe
