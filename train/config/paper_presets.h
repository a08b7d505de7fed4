// The presets of the paper's own experiments, value by value from its Appendix C (Luo et al.,
// NeurIPS 2022; docs/reproduce.md): each preset's description names the section it follows and,
// for every value the section does not give, the official code it was taken from. Where the
// appendix gives a set to select from (ZINC: batch, learning rate, dropout, weight decay) the
// preset holds one documented choice and paper_selection() lists the whole set, which
// `urpe repro molecules --grid paper` runs.
//
//   preset                 section   experiment
//   pi-paper, etp-paper    C.1       synthetic PI / ETP, n = 128, V = 1000 (one of C.1's V values)
//   txl-base-paper         C.2       Transformer-XL base on WikiText-103 (Table 1; §5.4 Table 4: L)
//   graphormer-slim        C.3.1     Graphormer on the ZINC subset (Table 2), heads 8 (below)
//   graphormer-slim-full   C.3.1     the same on ZINC full, 800K steps
//   graphormer-pcqm4m      C.3.2     Graphormer on PCQM4M (Table 3)
//   mlm-paper              C.4       BERT-base masked-LM pre-training (APE+RPE / RPE / URPE)
//   (each graphormer preset also as NAME-urpe)
//
// ZINC's heads: C.3.1 prints 32 heads with d = 80, which multi-head attention cannot split
// (80/32 = 2.5). Table 2's parameter counts decide it. URPE adds 491,737 − 489,321 = 2,416 = 2⁴·151
// parameters, one C table of K entries per head, so H·K = 2,416: H divides 2,416, and 32 does not
// (75.5 entries per head). With the official GV1 ZINC embedding tables the baseline has
// 486,081 + 105·H + 40·H² parameters: of the H dividing both 80 and 2,416 (1, 2, 4, 8, 16), H = 8
// comes nearest Table 2's 489,321 (489,481: 160 = 2·80 more, one LayerNorm's worth; H = 4: 487,141,
// H = 16: 498,001), and H = 32 would give 530,401, over C.3.1's own 500K budget. So the presets
// use H = 8, the official GV1 ZINC script's value, whose C table Table 2 puts at K = 302 entries
// per head (ours has max_spd + 4 = 42: the paper does not say how its 302 are indexed).
// tests/test_paper_presets.cpp checks this arithmetic with the model's own parameter formula.
#pragma once
#include <string>
#include <vector>

#include "train/config/run_config.h"

namespace urpe {

// The presets above, in help order (run_config.cpp's presets() lists them after urpe's own).
const std::vector<Preset>& paper_presets();

// One hyper-parameter the paper selects from a set: the config key, the values the appendix
// lists, the value the preset holds, and why that one.
struct PaperChoice {
  std::string key;
  std::vector<std::string> values;
  std::string preset_value;
  std::string why;
};
// The selection an appendix section gives for a preset's experiment (empty when it gives none):
// C.3.1 for the ZINC presets (3 batch sizes × 2 learning rates × 2 dropouts × 2 weight decays).
std::vector<PaperChoice> paper_selection(const std::string& preset);

// The appendix section a preset follows ("C.3.1"), or "" for urpe's own presets.
std::string paper_section_of(const std::string& preset);

}  // namespace urpe
