// The per-op profiler on a CUDA device: each op's time on the stream from an event pair (no
// synchronise per op), the trace's stream track, and `urpe bench peaks --device cuda` + `urpe
// profile --device cuda` end to end at tiny sizes. Nothing about speed is asserted (on a real GPU
// the numbers go to bench/results/ next to Nsight's).
//
// Without a CUDA device the suite exits with 77 before any test (CTest: skipped). Built against
// the CUDA simulator (tests/cuda_sim) as test_cuda_sim_profile, it runs there in CI: the
// simulator's events carry the host clock when recorded, a stand-in for the stream's.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "ops/activation.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "scratch_dir.h"
#include "tensor/cuda_backend.h"
#include "base/io/json.h"
#include "base/io/run_dir.h"
#include "base/profile/chrome_trace.h"
#include "base/profile/key_averages.h"
#include "base/profile/op_recorder.h"

using namespace urpe;

namespace {

struct SkipWithoutCuda {
  SkipWithoutCuda() {
    if (cuda::device_count() == 0) {
      std::printf("no CUDA device: CUDA profile suite skipped\n");
      std::fflush(stdout);
      std::exit(77);
    }
  }
} skip_without_cuda;

}  // namespace

TEST_CASE("profile on CUDA: every op has its stream time from an event pair") {
  const Device device = parse_device("cuda");
  Rng rng(1);
  Tensor a = Tensor::uniform({16, 24}, -1, 1, rng, device), b = Tensor::uniform({24, 8}, -1, 1, rng, device);
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  profile::OpRecorder recorder{device};
  for (int step = 1; step <= 2; ++step) {
    recorder.begin_step(step);
    sum_all(gelu(matmul(a, b))).backward();
    recorder.end_step();
  }
  const profile::Recording r = recorder.take();
  CHECK(r.cuda);
  int timed = 0;
  for (const profile::Span& s : r.spans) {
    if (s.kind != profile::SpanKind::op) continue;
    INFO(r.name_of(s));
    CHECK(s.cuda);
    CHECK(s.device_end_us >= s.device_begin_us);
    // Inside its step, as the stream saw it (the step's first event is placed at its start).
    const profile::Span& step = r.spans[static_cast<size_t>(r.steps[static_cast<size_t>(s.step - 1)])];
    CHECK(s.device_begin_us >= step.begin_us - 1.0);
    CHECK(s.device_end_us <= step.end_us + 1.0);
    ++timed;
  }
  CHECK(timed >= 2 * 6);  // matmul, gelu, sum_all and their backwards, twice
  const profile::ProfileSummary summary = profile::summarize(r, std::nullopt);
  CHECK(summary.device_times);
  CHECK(summary.ops_self_ms >= 0);
  // The trace has the stream's track: complete events with a duration.
  const json::Value trace = json::Value::parse(profile::chrome_trace_json(r));
  int stream_events = 0;
  for (const json::Value& e : trace.at("traceEvents").items())
    if (e.at("ph").as_string() == "X") {
      CHECK(e.at("tid").as_integer() == 10);
      CHECK(e.at("dur").as_number() >= 0);
      ++stream_events;
    }
  CHECK(stream_events == timed);
}

TEST_CASE("`urpe bench peaks --device cuda` and `urpe profile --device cuda` at tiny sizes") {
  const std::string dir = test::make_scratch_dir("urpe_cuda_profile");
  const std::string bin = "URPE_PEAKS_CACHE=" + join_path(dir, "peaks.json") + " " + std::string(URPE_BINARY) + " ";
  const test::CliResult peaks = test::run_command(bin + "bench peaks --device cuda --sizes smoke");
  INFO(peaks.output);
  REQUIRE(peaks.code == 0);
  CHECK(peaks.output.find("device-to-device copy") != std::string::npos);
  // The GEMMs by dtype (issue 36): every math with β = 0 and 1 at each smoke shape, a positive rate.
  CHECK(peaks.output.find("GEMMs by dtype") != std::string::npos);
  std::map<std::string, int> rows;  // "math β" → rows
  std::istringstream lines(peaks.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| square 64 |", 0) != 0 && line.rfind("| linear 96×80×48 |", 0) != 0) continue;
    std::vector<std::string> cells;
    std::istringstream cells_in(line.substr(1));
    for (std::string cell; std::getline(cells_in, cell, '|');) cells.push_back(cell.substr(1, cell.size() - 2));
    REQUIRE(cells.size() == 6);
    INFO(line);
    CHECK(std::stod(cells[4]) > 0.0);
    CHECK(std::stod(cells[5]) > 0.0);
    ++rows[cells[2] + " " + cells[3]];
  }
  for (const char* math : {"fp32", "tf32", "bf16→f32", "bf16→bf16"}) {
    for (const char* beta : {"0", "1"}) CHECK(rows[std::string(math) + " " + beta] == 2);
    CHECK(rows[std::string(math) + ", Lt bias epilogue 0"] == 2);  // cuBLASLt's bias epilogue, β = 0
  }
  CHECK(rows["linear op bf16→bf16, cuBLASLt 0"] == 2);
  CHECK(rows["linear op bf16→bf16, cuBLAS path 1"] == 2);
  const std::string out = join_path(dir, "prof");
  const test::CliResult r = test::run_command(
      bin + "profile --preset pi-tiny --set seq_len=8 --set d_model=16 --set d_ff=32 --set batch=2 --set valid_size=4 "
            "--device cuda --steps 2:2 --quiet --out " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  const std::string md = read_text_file(join_path(out, "profile.md"));
  CHECK(md.find("the CUDA stream's") != std::string::npos);
  CHECK(md.find("| urpe_attention | forward | 2 |") != std::string::npos);
  CHECK(read_text_file(join_path(out, "trace.json")).find("cuda stream (op events)") != std::string::npos);
  CHECK(path_exists(join_path(out, "plots/roofline.png")));
}
