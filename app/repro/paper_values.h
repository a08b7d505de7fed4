// The paper's numbers beside ours in every repro results.md, as printed in the paper itself (Luo
// et al., "Your Transformer May Not be as Powerful as You Expect", NeurIPS 2022): Tables 1–6 and
// the validation losses of Appendix C.4, each with its section. Nothing here is estimated: where
// the paper prints no number (Figures 1 and 3 are bar charts without values) the table says so.
// Each comparison row shows baseline → URPE and the relative change (URPE − baseline) / baseline,
// computed here for both the paper and our measurement.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace urpe {

struct PaperComparison {
  std::string quantity;                          // e.g. "WikiText-103 test perplexity (L = 16)"
  std::optional<double> paper_base, paper_urpe;  // empty: not available (see `paper_note`)
  std::string paper_note;                        // why a paper value is missing, or its spread
  std::optional<double> ours_base, ours_urpe;    // empty: not measured in this run
  int decimals = 2;                              // ours
  int paper_decimals = -1;                       // the paper's as printed (-1: as ours)
  double scale = 1.0;                            // 100 for accuracies shown in percent
  bool relative_change = true;                   // false for logarithms (log₂ ms): "–"
};

// A "## The paper beside ours" section: the source line, `measured_on` (at what scale and on what
// data ours was measured), and one table row per comparison.
std::string paper_comparison_markdown(const std::vector<PaperComparison>& rows, const std::string& baseline_name,
                                      const std::string& measured_on);

// The paper's values, as printed (section and table in each comment).
struct PaperValues {
  // Table 1 (§5.2, C.2): WikiText-103 perplexity, Transformer-XL base (151M parameters, both).
  static constexpr double txl_base_valid_ppl = 23.1, txl_urpe_valid_ppl = 22.4;
  static constexpr double txl_base_test_ppl = 24.0, txl_urpe_test_ppl = 23.2;
  static constexpr long txl_params_millions = 151;
  // Table 4 (§5.4): WikiText-103 validation perplexity by depth L (10 heads, d = 410, d_ff 2100).
  struct DepthRow {
    long layers;
    double rpe_valid_ppl, urpe_valid_ppl;
  };
  static constexpr DepthRow table4[3] = {{4, 29.6, 28.7}, {8, 26.0, 25.2}, {16, 23.1, 22.4}};
  // Table 2 (§5.3, C.3.1): ZINC test MAE, mean ± std over 4 seeds, subset (12K) and full (250K);
  // parameters of Graphormer and Graphormer + URPE.
  static constexpr double zinc_base_test_mae = 0.122, zinc_base_test_mae_std = 0.006;
  static constexpr double zinc_urpe_test_mae = 0.086, zinc_urpe_test_mae_std = 0.007;
  static constexpr double zinc_full_base_test_mae = 0.052, zinc_full_base_test_mae_std = 0.005;
  static constexpr double zinc_full_urpe_test_mae = 0.028, zinc_full_urpe_test_mae_std = 0.002;
  static constexpr long zinc_base_params = 489321, zinc_urpe_params = 491737;
  static constexpr long zinc_seeds = 4;
  // Table 3 (§5.3, C.3.2): PCQM4M validation MAE (12.5M parameters, both).
  static constexpr double pcqm4m_base_valid_mae = 0.1264, pcqm4m_urpe_valid_mae = 0.1238;
  // Table 6 (C.3.3): MAG240M validation accuracy (11.0M parameters, both); not reproduced here.
  static constexpr double mag240m_base_valid_acc = 0.7013, mag240m_urpe_valid_acc = 0.7074;
  // Table 5 (§5.4): inference of the 12-layer, d = 768, 12-head Transformer at batch 32 on a 16 GB
  // V100, RPE vs URPE at N = 128, 256, 512: runtime in log₂ milliseconds (the caption's "ms in log
  // base 2") and peak memory in GB.
  struct Table5Row {
    long seq_len;
    double rpe_time, urpe_time, rpe_memory, urpe_memory;  // log₂ ms, log₂ ms, GB, GB
  };
  static constexpr Table5Row table5[3] = {
      {128, 4.55, 4.59, 0.96, 0.97}, {256, 5.60, 5.66, 1.12, 1.17}, {512, 6.79, 6.91, 1.86, 2.04}};
  static constexpr const char* table5_time_units = "log₂ ms";
  static constexpr const char* table5_memory_units = "GB";
  // C.4: masked-LM validation loss after 1M iterations of BERT-base pre-training.
  static constexpr double pretrain_ape_rpe_loss = 1.86, pretrain_rpe_loss = 1.94, pretrain_urpe_loss = 1.87;
};

// The paper's Table 5 row at sequence length n, or nullptr where it has none.
const PaperValues::Table5Row* paper_table5_row(long seq_len);
// The paper's Table 4 row at depth L, or nullptr where it has none.
const PaperValues::DepthRow* paper_table4_row(long layers);
// Table 5's runtime, log₂ ms, in milliseconds: 2^value.
double milliseconds_from_log2(double log2_ms);

extern const char* const kPaperSource;

}  // namespace urpe
