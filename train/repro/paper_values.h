// The paper's numbers beside ours in every repro results.md. The values are
// copied from the authors' own material, never estimated: the tables of the NeurIPS 2022 poster in
// the official repository (lsj2408/URPE, doc/poster.png). Where the paper gives no number (Figure
// 1 is a bar chart without printed values) or we could not find it (the Transformer-XL depth
// table, L = 4, 8, 16), the table says so. Each row shows baseline → URPE and the relative change
// (URPE − baseline) / baseline, computed here for both the paper and our measurement.
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
};

// A "## The paper beside ours" section: the source line, `measured_on` (at what scale and on what
// data ours was measured), and one table row per comparison.
std::string paper_comparison_markdown(const std::vector<PaperComparison>& rows, const std::string& baseline_name,
                                      const std::string& measured_on);

// The paper's values, as printed in its tables (see the header comment for the source).
struct PaperValues {
  // WikiText-103, Transformer-XL base (151M parameters) vs + URPE-based attention.
  static constexpr double txl_base_valid_ppl = 23.1, txl_urpe_valid_ppl = 22.4;
  static constexpr double txl_base_test_ppl = 24.0, txl_urpe_test_ppl = 23.2;
  // ZINC (subset), Graphormer-slim vs + URPE: test MAE (mean ± std over seeds) and parameters.
  static constexpr double zinc_base_test_mae = 0.122, zinc_base_test_mae_std = 0.006;
  static constexpr double zinc_urpe_test_mae = 0.086, zinc_urpe_test_mae_std = 0.007;
  static constexpr long zinc_base_params = 489321, zinc_urpe_params = 491737;
  // Table 5 ("Efficiency: Runtime and Memory Usage Evaluation"): inference runtime and peak memory
  // of the RPE- and URPE-based Transformer at N = 128, 256, 512 (the authors' eager PyTorch code on
  // a V100). The poster prints no units (the paper's text was not reachable here to add them).
  struct Table5Row {
    long seq_len;
    double rpe_time, urpe_time, rpe_memory, urpe_memory;
  };
  static constexpr Table5Row table5[3] = {
      {128, 4.55, 4.59, 0.96, 0.97}, {256, 5.60, 5.66, 1.12, 1.17}, {512, 6.79, 6.91, 1.86, 2.04}};
  static constexpr const char* table5_units = "units not printed";
};

// The paper's Table 5 row at sequence length n, or nullptr where it has none.
const PaperValues::Table5Row* paper_table5_row(long seq_len);

extern const char* const kPaperSource;

}  // namespace urpe
