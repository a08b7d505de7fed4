// `urpe bench attention` from the command line: every row of its table, and the property it is
// there to show: the fused attention allocates memory that grows with n, the materialised one
// with n² (a 4× longer sequence: ×4 against ×16, here with room for the allocator's size classes).
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "cli_util.h"

using urpe::test::run_urpe;

TEST_CASE("bench attention: fused memory grows with n, materialized with n squared") {
  const urpe::test::CliResult r = run_urpe("bench attention --lengths 256,1024 --repeats 1");
  INFO(r.output);
  REQUIRE(r.code == 0);
  // Rows: n path direction median_ms peak_mib.
  std::map<std::string, double> peak;
  std::istringstream lines(r.output);
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    std::istringstream row(line);
    long long n = 0;
    std::string path, direction;
    double ms = 0, mib = 0;
    if (!(row >> n >> path >> direction >> ms >> mib)) continue;
    ++rows;
    CHECK(ms > 0);
    peak[std::to_string(n) + " " + path + " " + direction] = mib;
  }
  CHECK(rows == 8);  // 2 lengths × 2 paths × 2 directions
  const double fused_growth = peak["1024 fused forward+backward"] / peak["256 fused forward+backward"];
  const double materialized_growth =
      peak["1024 materialized forward+backward"] / peak["256 materialized forward+backward"];
  CAPTURE(fused_growth);
  CAPTURE(materialized_growth);
  CHECK(fused_growth <= 4.5);
  CHECK(materialized_growth >= 12.0);
  CHECK(peak["1024 fused forward"] < peak["1024 materialized forward"] / 8);
}

TEST_CASE("bench attention: bad options are one clear line") {
  const urpe::test::CliResult r = run_urpe("bench attention --lengths 0");
  CHECK(r.code != 0);
  CHECK(r.output.find("option --lengths") != std::string::npos);
  const urpe::test::CliResult math = run_urpe("bench attention --math fp16 --lengths 64");
  CHECK(math.code != 0);
  CHECK(math.output.find("option --math: expected fp32, tf32 or bf16") != std::string::npos);
  const urpe::test::CliResult cpu_bf16 = run_urpe("bench attention --math bf16 --lengths 64");
  CHECK(cpu_bf16.code != 0);
  CHECK(cpu_bf16.output.find("use it with --device cuda") != std::string::npos);
}
