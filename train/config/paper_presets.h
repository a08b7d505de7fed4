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
// Every line of a preset's text carries its source as a comment (config_sources.h): the paper's
// section, the official script, or urpe's own reason. ZINC's heads and C: C.3.1 prints 32 heads,
// which cannot split d = 80; Table 2's counts (489,321 → 491,737, +2,416 = 8 × 302) give 8 heads
// and 302 C entries per head (docs/reproduce.md#zinc-heads-and-the-size-of-c, checked by
// tests/test_paper_presets.cpp with the model's own parameter formula).
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
