// `urpe repro table5` from the command line, the way a user runs it: every row of the paper's
// Table 5 (RPE and URPE, materialized and fused) at two lengths, its files, and one-line errors.
// One layer instead of the paper's 12 (--layers 1) keeps the suite within seconds; the rows,
// files and ratios are the same code as the full run's.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "cli_util.h"
#include "train/io/json.h"
#include "train/io/run_dir.h"

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
  // The paper's printed values (V100) on the materialised rows, with their ratios URPE/RPE:
  // 4.59 / 4.55 = 1.009, 0.97 / 0.96 = 1.010; 5.66 / 5.60 = 1.011, 1.17 / 1.12 = 1.045.
  CHECK(md.find("time 4.55 → 4.59 (1.009), memory 0.96 → 0.97 (1.010) |") != std::string::npos);
  CHECK(md.find("time 5.60 → 5.66 (1.011), memory 1.12 → 1.17 (1.045) |") != std::string::npos);
  CHECK(md.find("units not printed") != std::string::npos);
  // The paper-beside-ours section: (4.59 − 4.55) / 4.55 = +0.9%, (1.17 − 1.12) / 1.12 = +4.5%.
  CHECK(md.find("## The paper beside ours") != std::string::npos);
  CHECK(md.find("| forward time, n = 128 (ours: materialized, median ms) | 4.55 → 4.59 (units not printed) | +0.9% |") !=
        std::string::npos);
  CHECK(md.find("| peak memory, n = 256 (ours: fused, MiB) | 1.12 → 1.17 (units not printed) | +4.5% |") !=
        std::string::npos);
  for (const json::Value& row : rows.items()) {
    const json::Value& paper = row.at("paper");
    const bool urpe_row = row.at("pe").as_string() == "urpe";
    if (row.at("seq_len").as_integer() == 128) {
      CHECK(paper.at("time").as_number() == (urpe_row ? 4.59 : 4.55));
      CHECK(paper.at("memory").as_number() == (urpe_row ? 0.97 : 0.96));
      CHECK(std::abs(paper.at("urpe_over_rpe_time").as_number() - 4.59 / 4.55) < 1e-12);
    }
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
}
