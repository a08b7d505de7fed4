// The paper-beside-ours sections of the repro results (train/repro/paper_values.h): the paper's
// printed values, the relative changes computed from the values shown, and "not available" /
// "not measured" where a number is missing, never a made-up one.
#include "test_util.h"
#include "train/repro/paper_values.h"
#include "train/repro/synthetic.h"

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
  CHECK(md.find("github.com/lsj2408/URPE") != std::string::npos);
  CHECK(md.find("Ours: tiny, on a toy set.") != std::string::npos);
  // (0.086 − 0.122) / 0.122 = −29.5%; (0.4 − 0.5) / 0.5 = −20.0%.
  CHECK(md.find("| test MAE | 0.122 → 0.086 | -29.5% | 0.5000 → 0.4000 | -20.0% |") != std::string::npos);
  CHECK(md.find("| accuracy | not printed | – | not measured | – |") != std::string::npos);
  // The printed values themselves.
  CHECK(PaperValues::txl_base_test_ppl == 24.0);
  CHECK(PaperValues::txl_urpe_test_ppl == 23.2);
  CHECK(PaperValues::zinc_urpe_params - PaperValues::zinc_base_params == 2416);
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
  // The paper's URPE/RPE: time +1–2%, memory +1–10% (its eager code), every row URPE ≥ RPE.
  for (const PaperValues::Table5Row& row : PaperValues::table5) {
    CHECK(row.urpe_time >= row.rpe_time);
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
