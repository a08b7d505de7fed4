// The denominator question (`urpe theory denominator`): Theorem 2 blames the softmax's
// normalisation, so why not drop it instead of adding C? This trains, from one encoder preset and
// for K seeds, URPE as in the paper next to the same model with attention_norm = exp
// (A = exp(S·scale + B) ⊙ C, no denominator; ops/urpe_attention.h), with and without C, and
// reports for each run its final validation accuracy, the first step whose training loss was not
// finite (the run stops there), and the largest loss spike: the largest rise of a step's loss over
// the lowest loss of the 20 steps before it. The paper only says that the unnormalised variant is
// unstable; this measures it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/io/json.h"

namespace urpe {

struct DenominatorVariant {
  std::string name;  // "urpe-softmax", "urpe-exp", "rpe-exp"
  std::string pe, attention_norm;
};
const std::vector<DenominatorVariant>& denominator_variants();

struct DenominatorPlan {
  std::string preset = "pi-tiny";         // an encoder preset
  int64_t seeds = 3;                      // seeds 1 … seeds
  std::vector<std::string> overrides;     // --set key=value, applied to every run
  bool quiet = false;                     // no progress lines (tests)
};

constexpr int64_t kSpikeWindow = 20;

struct DenominatorRun {
  std::string variant, pe, attention_norm, dir;
  int64_t seed = 0;
  int64_t steps = 0;               // steps taken (up to and including a non-finite one)
  int64_t first_nonfinite_step = 0;  // 0: every loss was finite
  double accuracy = 0;             // final validation accuracy; after a non-finite loss, the last
                                   // evaluation before it (NaN when there was none)
  double largest_spike = 0;        // max_t loss_t − min(loss_{t−20} … loss_{t−1}), finite losses only
  int64_t spike_step = 0;
  double final_loss = 0;           // the last finite training loss
  std::vector<double> losses;      // every step's training loss
};

// Largest rise of a loss over the minimum of the `window` finite losses before it; returns
// (rise, 1-based step), (0, 0) when there is none.
std::pair<double, int64_t> largest_loss_spike(const std::vector<double>& losses, int64_t window = kSpikeWindow);

// Trains every (variant, seed) into out_dir/runs/<variant>-s<seed>, then writes
// out_dir/denominator.json, denominator.md and plots/denominator_loss.png.
std::vector<DenominatorRun> run_denominator(const DenominatorPlan& plan, const std::string& out_dir);

std::string denominator_markdown(const std::vector<DenominatorRun>& runs, const DenominatorPlan& plan);
json::Value denominator_to_json(const std::vector<DenominatorRun>& runs, const DenominatorPlan& plan);

}  // namespace urpe
