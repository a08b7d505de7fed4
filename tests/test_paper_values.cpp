// The paper-beside-ours sections of the repro results (app/repro/paper_values.h): the paper's
// printed values, the relative changes computed from the values shown, and "not available" /
// "not measured" where a number is missing, never a made-up one.
#include "test_util.h"
#include "app/repro/paper_values.h"
#include "app/repro/synthetic.h"

using namespace urpe;

TEST_CASE("paper comparison: values, relative changes, missing numbers said so") {
  PaperComparison known;
  known.quantity = "test MAE";
  known.paper_base = 0.122;
  known.paper_urpe = 0.086;
  known.ours_base = 0.5;
  known.ours_urpe = 0.4;
  known.decimals = 4;
  known.paper_decimals = 3;
  PaperComparison missing;
  missing.quantity = "accuracy";
  missing.paper_note = "not printed";
  const std::string md = paper_comparison_markdown({known, missing}, "Graphormer", "tiny, on a toy set.");
  CHECK(md.find("## The paper beside ours") != std::string::npos);
  CHECK(md.find("values as printed in its tables and Appendix C") != std::string::npos);
  CHECK(md.find("Ours: tiny, on a toy set.") != std::string::npos);
  // (0.086 − 0.122) / 0.122 = −29.5%; (0.4 − 0.5) / 0.5 = −20.0%.
  CHECK(md.find("| test MAE | 0.122 → 0.086 | -29.5% | 0.5000 → 0.4000 | -20.0% |") != std::string::npos);
  CHECK(md.find("| accuracy | not printed | – | not measured | – |") != std::string::npos);
  // A logarithm's row shows no relative change (its difference is a ratio).
  PaperComparison log_row = known;
  log_row.quantity = "log time";
  log_row.relative_change = false;
  CHECK(paper_comparison_markdown({log_row}, "RPE", "x").find("| log time | 0.122 → 0.086 | – | 0.5000 → 0.4000 | – |") !=
        std::string::npos);
}

TEST_CASE("the paper's numbers as printed: Tables 1-6 and Appendix C.4") {
  // Table 1 (§5.2): WikiText-103, Transformer-XL base.
  CHECK(PaperValues::txl_base_valid_ppl == 23.1);
  CHECK(PaperValues::txl_urpe_valid_ppl == 22.4);
  CHECK(PaperValues::txl_base_test_ppl == 24.0);
  CHECK(PaperValues::txl_urpe_test_ppl == 23.2);
  // Table 4 (§5.4): valid perplexity by depth; its L = 16 row is Table 1's valid column.
  REQUIRE(paper_table4_row(4) != nullptr);
  CHECK(paper_table4_row(4)->rpe_valid_ppl == 29.6);
  CHECK(paper_table4_row(4)->urpe_valid_ppl == 28.7);
  CHECK(paper_table4_row(8)->rpe_valid_ppl == 26.0);
  CHECK(paper_table4_row(8)->urpe_valid_ppl == 25.2);
  CHECK(paper_table4_row(16)->rpe_valid_ppl == PaperValues::txl_base_valid_ppl);
  CHECK(paper_table4_row(16)->urpe_valid_ppl == PaperValues::txl_urpe_valid_ppl);
  CHECK(paper_table4_row(2) == nullptr);
  // Table 2 (§5.3): ZINC test MAE, subset and full, and the parameter counts.
  CHECK(PaperValues::zinc_base_test_mae == 0.122);
  CHECK(PaperValues::zinc_urpe_test_mae == 0.086);
  CHECK(PaperValues::zinc_full_base_test_mae == 0.052);
  CHECK(PaperValues::zinc_full_base_test_mae_std == 0.005);
  CHECK(PaperValues::zinc_full_urpe_test_mae == 0.028);
  CHECK(PaperValues::zinc_full_urpe_test_mae_std == 0.002);
  CHECK(PaperValues::zinc_urpe_params - PaperValues::zinc_base_params == 2416);
  // Table 3: PCQM4M valid MAE; Table 6: MAG240M valid accuracy; C.4: MLM validation losses.
  CHECK(PaperValues::pcqm4m_base_valid_mae == 0.1264);
  CHECK(PaperValues::pcqm4m_urpe_valid_mae == 0.1238);
  CHECK(PaperValues::mag240m_urpe_valid_acc == 0.7074);
  CHECK(PaperValues::pretrain_ape_rpe_loss == 1.86);
  CHECK(PaperValues::pretrain_rpe_loss == 1.94);
  CHECK(PaperValues::pretrain_urpe_loss == 1.87);
  // Table 5's caption: runtime in log2 ms, so 4.55 is 2^4.55 = 23.4 ms; memory in GB.
  CHECK(milliseconds_from_log2(4.55) == doctest::Approx(23.4254).epsilon(1e-4));
  CHECK(std::string(PaperValues::table5_time_units) == "log₂ ms");
  CHECK(std::string(PaperValues::table5_memory_units) == "GB");
}

TEST_CASE("paper Table 5: the printed rows by sequence length, none invented for other lengths") {
  const PaperValues::Table5Row* n512 = paper_table5_row(512);
  REQUIRE(n512 != nullptr);
  CHECK(n512->rpe_time == 6.79);
  CHECK(n512->urpe_time == 6.91);
  CHECK(n512->rpe_memory == 1.86);
  CHECK(n512->urpe_memory == 2.04);
  REQUIRE(paper_table5_row(128) != nullptr);
  CHECK(paper_table5_row(128)->urpe_time == 4.59);
  CHECK(paper_table5_row(256)->rpe_memory == 1.12);
  CHECK(paper_table5_row(1024) == nullptr);
  CHECK(paper_table5_row(64) == nullptr);
  // The paper's URPE/RPE (its eager code): time +3–9% in ms (2^(URPE − RPE) of the log₂ values:
  // 2^0.04, 2^0.06, 2^0.12), memory +1–10%; every row URPE ≥ RPE.
  for (const PaperValues::Table5Row& row : PaperValues::table5) {
    const double time_ratio = milliseconds_from_log2(row.urpe_time) / milliseconds_from_log2(row.rpe_time);
    CHECK(time_ratio > 1.02);
    CHECK(time_ratio < 1.09);
    CHECK(row.urpe_memory >= row.rpe_memory);
    CHECK(row.urpe_memory / row.rpe_memory < 1.1);
  }
}

TEST_CASE("synthetic results: Figure 1 has no printed values; ours RPE → URPE with the change") {
  SyntheticGrid grid;
  grid.scale = "tiny";
  grid.tasks = {"pi"};
  grid.vocabs = {10};
  grid.pes = {"rpe", "urpe"};
  grid.seeds = 1;
  ResultRow rpe, urpe;
  rpe.pe = "rpe";
  rpe.metric = 0.25;
  urpe.pe = "urpe";
  urpe.metric = 1.0;
  const std::string md = synthetic_results_markdown({rpe, urpe}, grid);
  CHECK(md.find("| pi accuracy (%), V = 10 (paper Figure 1) | not printed: Figure 1 is a bar chart without values | – "
                "| 25.00 → 100.00 | +300.0% |") != std::string::npos);
}
