// `urpe repro table5` from the command line, the way a user runs it: every row of the paper's
// Table 5 (RPE and URPE, materialized and fused) at two lengths, its files, and one-line errors.
// One layer instead of the paper's 12 (--layers 1) keeps the suite within seconds; the rows,
// files and ratios are the same code as the full run's.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "cli_util.h"
#include "base/io/json.h"
#include "base/io/run_dir.h"

using namespace urpe;
using urpe::test::run_urpe;

namespace {

std::string temp_dir(const std::string& name) {
  const std::string dir = "/tmp/urpe_test_table5_" + std::to_string(::getpid()) + "_" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

void check_one_line_error(const test::CliResult& r, const std::string& expected) {
  INFO(r.output);
  CHECK(r.code != 0);
  int lines = 0;
  for (char c : r.output) lines += c == '\n';
  CHECK(lines == 1);
  CHECK(r.output.find(expected) != std::string::npos);
}

}  // namespace

TEST_CASE("repro table5 on the CPU: every row, results.md/json and plots") {
  const std::string out = temp_dir("run");
  const test::CliResult r = run_urpe("repro table5 --device cpu --lengths 128,256 --batch 2 --layers 1 "
                                     "--repeats 1 --out " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  for (const char* file : {"results.md", "results.json", "plots/time.png", "plots/memory.png"}) {
    INFO(file);
    CHECK(path_exists(join_path(out, file)));
  }
  const json::Value rows = json::read_file(join_path(out, "results.json"));
  REQUIRE(rows.size() == 8);  // 2 lengths × {rpe, urpe} × {materialized, fused}
  int fused = 0, urpe = 0;
  for (const json::Value& row : rows.items()) {
    CHECK(row.at("median_ms").as_number() > 0);
    CHECK(row.at("peak_bytes").as_number() > 0);
    CHECK(row.at("batch").as_integer() == 2);
    fused += row.at("attention").as_string() == "fused";
    urpe += row.at("pe").as_string() == "urpe";
  }
  CHECK(fused == 4);
  CHECK(urpe == 4);
  const std::string md = read_text_file(join_path(out, "results.md"));
  CHECK(md.find("| n | attention | RPE ms | URPE ms | URPE/RPE time |") != std::string::npos);
  CHECK(md.find("| 128 | materialized |") != std::string::npos);
  CHECK(md.find("| 256 | fused |") != std::string::npos);
  CHECK(md.find("Load averages") != std::string::npos);
  // The paper's printed values (V100) on the materialised rows, runtime in log₂ ms as Table 5's
  // caption gives it and in ms: 2^4.55 = 23.4, 2^4.59 = 24.1, ratio 2^0.04 = 1.028; memory in GB,
  // 0.97 / 0.96 = 1.010. At 256: 2^5.60 = 48.5, 2^5.66 = 50.6, 1.042; 1.17 / 1.12 = 1.045.
  CHECK(md.find("time 4.55 → 4.59 log₂ ms = 23.4 → 24.1 ms (1.028), memory 0.96 → 0.97 GB (1.010) |") !=
        std::string::npos);
  CHECK(md.find("time 5.60 → 5.66 log₂ ms = 48.5 → 50.6 ms (1.042), memory 1.12 → 1.17 GB (1.045) |") !=
        std::string::npos);
  CHECK(md.find("units not printed") == std::string::npos);
  // The rows again in the paper's units: log₂ ms, ms and GB, paper / ours.
  CHECK(md.find("## In the paper's units (Table 5: log₂ ms and GB)") != std::string::npos);
  CHECK(md.find("| 128 | 4.55 / ") != std::string::npos);
  CHECK(md.find("| 0.96 / ") != std::string::npos);
  CHECK(md.find("TF32 off (full FP32 GEMMs).") != std::string::npos);
  // The paper-beside-ours section: ms (23.4 → 24.1: +2.8%), log₂ ms without a relative change, GB
  // ((1.17 − 1.12) / 1.12 = +4.5%).
  CHECK(md.find("## The paper beside ours") != std::string::npos);
  CHECK(md.find("| forward time, n = 128 (ms; ours: materialized, median) | 23.4 → 24.1 | +2.8% |") != std::string::npos);
  CHECK(md.find("| forward time, n = 128 (log₂ ms; ours: materialized) | 4.55 → 4.59 | – |") != std::string::npos);
  CHECK(md.find("| peak memory, n = 256 (GB; ours: fused) | 1.12 → 1.17 | +4.5% |") != std::string::npos);
  for (const json::Value& row : rows.items()) {
    const json::Value& paper = row.at("paper");
    const bool urpe_row = row.at("pe").as_string() == "urpe";
    if (row.at("seq_len").as_integer() == 128) {
      CHECK(paper.at("time_log2_ms").as_number() == (urpe_row ? 4.59 : 4.55));
      CHECK(paper.at("time_ms").as_number() == doctest::Approx(urpe_row ? 24.0839 : 23.4254).epsilon(1e-4));
      CHECK(paper.at("memory_gb").as_number() == (urpe_row ? 0.97 : 0.96));
      CHECK(std::abs(paper.at("urpe_over_rpe_time").as_number() - std::exp2(0.04)) < 1e-9);
    }
    CHECK(!row.at("tf32").as_bool());
  }
  CHECK(r.output.find("[8/8] n = 256") != std::string::npos);
}

TEST_CASE("repro table5: bad options are one clear line") {
  const std::string out = temp_dir("bad");
  check_one_line_error(run_urpe("repro table5 --lengths 128,abc --out " + out), "option --lengths");
  check_one_line_error(run_urpe("repro table5 --lengths 128,128 --out " + out), "given twice");
  check_one_line_error(run_urpe("repro table5 --lengths 1 --out " + out), "between 2 and 65536");
  check_one_line_error(run_urpe("repro table5 --batch 0 --out " + out), "option --batch");
  check_one_line_error(run_urpe("repro table5 --layers 0 --out " + out), "option --layers");
  check_one_line_error(run_urpe("repro table5 --lengths 128"), "--out");
  check_one_line_error(run_urpe("repro table5 --tf32 --out " + out), "--tf32 is a mode of the GPU's tensor cores");
}
