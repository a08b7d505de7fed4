// `urpe bench kernels --device cuda` runs end to end: the measured ceilings, every row of the
// table and the summary, here at the tiny `--sizes smoke` model so that it takes seconds; and
// `urpe bench attention --device cuda --tf32` (the tensor-core rows of bench/gpu_session.sh). Nothing
// about speed is asserted (tests time nothing; the numbers go to bench/results/ from a real GPU).
//
// Without a CUDA device the suite exits with 77 before any test (CTest: skipped). Built against
// the CUDA simulator (tests/cuda_sim) as test_cuda_sim_bench, it runs the simulated binary.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "tensor/cuda_backend.h"

namespace {

// A number printed as NaN ("nan", "-nan"): the word alone, so that a device or CPU name that
// happens to contain the letters does not count.
bool prints_nan(const std::string& text) {
  for (size_t at = text.find("nan"); at != std::string::npos; at = text.find("nan", at + 1)) {
    const bool starts = at == 0 || !std::isalpha(static_cast<unsigned char>(text[at - 1]));
    const bool ends = at + 3 == text.size() || !std::isalpha(static_cast<unsigned char>(text[at + 3]));
    if (starts && ends) return true;
  }
  return false;
}

// The rows of `urpe bench attention`'s table, every column; other lines are skipped.
struct AttentionRow {
  long long n = 0;
  std::string path, direction, math, share, pipe, rows;
  double ms = 0, mib = 0, gflop = 0, tflops = 0;
};
std::vector<AttentionRow> attention_rows(const std::string& output) {
  std::vector<AttentionRow> rows;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    AttentionRow r;
    if (in >> r.n >> r.path >> r.direction >> r.ms >> r.mib >> r.math >> r.gflop >> r.tflops >> r.share >> r.pipe >> r.rows)
      rows.push_back(r);
  }
  return rows;
}

struct SkipWithoutCuda {
  SkipWithoutCuda() {
    if (urpe::cuda::device_count() == 0) {
      std::printf("no CUDA device: CUDA bench suite skipped\n");
      std::fflush(stdout);
      std::exit(77);
    }
  }
} skip_without_cuda;

}  // namespace

TEST_CASE("`urpe bench kernels --device cuda --sizes smoke` prints the whole table") {
  const urpe::test::CliResult r =
      urpe::test::run_urpe("bench kernels --device cuda --sizes smoke --repeats 3");
  INFO(r.output);
  CHECK(r.code == 0);
  for (const char* text :
       {"urpe bench kernels — ", "measured peaks: copy", "-- N = 17:", "-- N = 40:",
        "Q·Kᵀ cuBLAS strided-batched", "matmul(P, V) op", "linear(X, W, b) op",
        "URPE core fwd: softmax mode", "URPE core bwd: Toeplitz (∂S, ∂B, ∂C)",
        "urpe_attention() op", "softmax bwd (ops/softmax)", "layer norm bwd", "GELU fwd",
        "cross-entropy fwd", "cross-entropy bwd", "Adam step (multi-tensor, 32 tensors)",
        "targets met: "}) {
    INFO("expected in the output: " << text);
    CHECK(r.output.find(text) != std::string::npos);
  }
  CHECK_FALSE(prints_nan(r.output));
}

TEST_CASE("bench kernels: a bad --sizes is one clear error") {
  const urpe::test::CliResult r =
      urpe::test::run_urpe("bench kernels --device cuda --sizes huge --repeats 1");
  CHECK(r.code != 0);
  CHECK(r.output.find("option --sizes: expected table5 or smoke, got 'huge'") != std::string::npos);
}

TEST_CASE("`urpe bench attention --device cuda --tf32` names its math and rate on every row") {
  // The shapes of bench/gpu_session.sh attention_tc in small: both paths, causal, TF32.
  const urpe::test::CliResult r = urpe::test::run_urpe(
      "bench attention --device cuda --tf32 --causal --batch 1 --heads 2 --head-dim 40 --lengths 70 --repeats 1 "
      "--sizes smoke");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("causal") != std::string::npos);
  CHECK(r.output.find("math tf32") != std::string::npos);
  const std::vector<AttentionRow> rows = attention_rows(r.output);
  for (const AttentionRow& row : rows) {
    CHECK(row.math == "tf32");
    // FlashAttention's count: 4·B·H·n²·d / 2 (causal) forward, 3.5× that with the backward.
    const double forward = 4.0 * 1 * 2 * 70 * 70 * 40 / 2 / 1e9;
    CHECK(row.gflop == doctest::Approx(row.direction == "forward" ? forward : 3.5 * forward).epsilon(0.05));
    CHECK(row.share.back() == '%');
  }
  CHECK(rows.size() == 4);  // fused and materialized, forward and forward + backward
  // --math bf16: the fused path on BF16 tiles, stated on every row; --tf32 with it is one clear line.
  const urpe::test::CliResult bf16 = urpe::test::run_urpe(
      "bench attention --device cuda --math bf16 --attention fused --batch 1 --heads 2 --head-dim 40 --lengths 70 "
      "--repeats 1 --sizes smoke");
  INFO(bf16.output);
  REQUIRE(bf16.code == 0);
  CHECK(bf16.output.find("math bf16") != std::string::npos);
  CHECK(bf16.output.find("fused rows: bf16 q, k, v and dO in") != std::string::npos);  // as precision=bf16 feeds it
  const std::vector<AttentionRow> bf16_rows = attention_rows(bf16.output);
  for (const AttentionRow& row : bf16_rows) CHECK(row.math == "bf16");
  CHECK(bf16_rows.size() == 2);  // fused, forward and forward + backward
  // --tc-pipeline on: the pipelined tensor-core forward, stated on every fused row (last column).
  const urpe::test::CliResult piped = urpe::test::run_urpe(
      "bench attention --device cuda --math tf32 --tc-pipeline on --attention fused --batch 1 --heads 2 --head-dim 32 "
      "--lengths 70 --repeats 1 --sizes smoke");
  INFO(piped.output);
  REQUIRE(piped.code == 0);
  CHECK(piped.output.find("tc pipeline on") != std::string::npos);
  const std::vector<AttentionRow> piped_rows = attention_rows(piped.output);
  for (const AttentionRow& row : piped_rows) CHECK(row.pipe == "on");
  CHECK(piped_rows.size() == 2);
  // Asked for but not taken: rows of 38 floats are not whole 16-byte units, so every kernel runs
  // single-buffered, and the rows say what ran (cuda::TcKernelsRan), not what was asked.
  const urpe::test::CliResult unaligned = urpe::test::run_urpe(
      "bench attention --device cuda --math tf32 --tc-pipeline on --attention fused --batch 1 --heads 2 --head-dim 38 "
      "--lengths 70 --repeats 1 --sizes smoke");
  INFO(unaligned.output);
  REQUIRE(unaligned.code == 0);
  const std::vector<AttentionRow> unaligned_rows = attention_rows(unaligned.output);
  CHECK(unaligned_rows.size() == 2);
  for (const AttentionRow& row : unaligned_rows) CHECK(row.pipe == "off");
  // The default, auto: at d 64 on TF32 tiles the forward single-buffered, the backward pipelined
  // (cuda::tc_pipeline_by_default), so the forward+backward row says off/on.
  const urpe::test::CliResult automatic = urpe::test::run_urpe(
      "bench attention --device cuda --math tf32 --attention fused --batch 1 --heads 2 --head-dim 64 "
      "--lengths 70 --repeats 1 --sizes smoke");
  INFO(automatic.output);
  REQUIRE(automatic.code == 0);
  CHECK(automatic.output.find("tc pipeline auto") != std::string::npos);
  std::vector<std::string> automatic_pipes;
  for (const AttentionRow& row : attention_rows(automatic.output)) automatic_pipes.push_back(row.direction + " " + row.pipe);
  CHECK(automatic_pipes == std::vector<std::string>{"forward off", "forward+backward off/on"});
  // --tc-rows: the forward's 16-row blocks per warp as they ran (cuda::TcKernelsRan), last column;
  // auto is one at n = 70 (two only from 1024 query rows on, without a causal mask), 2 takes the
  // two-row-block kernel on BF16 tiles at d 64 and nowhere else.
  CHECK(automatic.output.find("tc rows auto") != std::string::npos);
  for (const AttentionRow& row : attention_rows(automatic.output)) CHECK(row.rows == "1");
  for (const char* math : {"bf16", "tf32"}) {
    const urpe::test::CliResult two = urpe::test::run_urpe(
        std::string("bench attention --device cuda --math ") + math + " --tc-rows 2 --attention fused --batch 1 "
        "--heads 2 --head-dim 64 --lengths 70 --repeats 1 --sizes smoke");
    INFO(two.output);
    REQUIRE(two.code == 0);
    CHECK(two.output.find("tc rows 2") != std::string::npos);
    const std::vector<AttentionRow> two_rows = attention_rows(two.output);
    CHECK(two_rows.size() == 2);
    for (const AttentionRow& row : two_rows) CHECK(row.rows == (std::string(math) == "bf16" ? "2" : "1"));
  }
  const urpe::test::CliResult bad_rows =
      urpe::test::run_urpe("bench attention --device cuda --math bf16 --tc-rows 3 --lengths 70 --repeats 1");
  CHECK(bad_rows.code != 0);
  CHECK(bad_rows.output.find("option --tc-rows: expected auto, 1 or 2, got '3'") != std::string::npos);
  const urpe::test::CliResult fp32_rows = urpe::test::run_urpe("bench attention --device cuda --tc-rows 2 --lengths 70 --repeats 1");
  CHECK(fp32_rows.code != 0);
  CHECK(fp32_rows.output.find("option --tc-rows 2: a variant of the tensor-core forward") != std::string::npos);
  const urpe::test::CliResult bad_pipe =
      urpe::test::run_urpe("bench attention --device cuda --math tf32 --tc-pipeline maybe --lengths 70 --repeats 1");
  CHECK(bad_pipe.code != 0);
  CHECK(bad_pipe.output.find("option --tc-pipeline: expected auto, on or off, got 'maybe'") != std::string::npos);
  const urpe::test::CliResult clash =
      urpe::test::run_urpe("bench attention --device cuda --tf32 --math bf16 --lengths 70 --repeats 1");
  CHECK(clash.code != 0);
  CHECK(clash.output.find("option --tf32 is --math tf32") != std::string::npos);
  // Above 4096 only the fused path runs; asking for both is one clear line.
  const urpe::test::CliResult both = urpe::test::run_urpe("bench attention --device cuda --lengths 8192 --repeats 1");
  CHECK(both.code != 0);
  CHECK(both.output.find("add --attention fused") != std::string::npos);
}

// `bench step --set cuda_graph=on` (the encoder at a tiny size): both medians, and each replay's
// GPU span from CUDA events around its launch, which lies inside the step the host timed, so the
// replayed step's idle share 1 − span / step is a share (0 to 100%), not the negative number the
// ops' summed event times gave on the H200 (2026-11-28).
TEST_CASE("`urpe bench step --set cuda_graph=on` times the replay's GPU span and its idle share") {
  const urpe::test::CliResult r = urpe::test::run_urpe(
      "bench step --device cuda --model encoder --seq-len 16 --batch 2 --repeats 5 --set cuda_graph=on");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_FALSE(prints_nan(r.output));
  double step_ms = -1, span_ms = -1, idle = -1;
  std::istringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) {
    std::sscanf(line.c_str(), "cuda_graph: median %lf ms per step", &step_ms);
    if (line.rfind("cuda_graph: the graph's GPU span", 0) == 0)
      std::sscanf(line.c_str(), "cuda_graph: the graph's GPU span median %lf ms per step (CUDA events on the stream "
                                "before and after each launch); GPU idle share of a replayed step (1 - span / step, "
                                "per step): median %lf%%", &span_ms, &idle);
  }
  CHECK(step_ms > 0);
  CHECK(span_ms > 0);
  CHECK(span_ms <= step_ms);
  CHECK(idle >= 0.0);
  CHECK(idle < 100.0);
}
