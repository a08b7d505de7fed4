// `urpe bench kernels --device cuda` runs end to end: the measured ceilings, every row of the
// table and the summary, here at the tiny `--sizes smoke` model so that it takes seconds. Nothing
// about speed is asserted (tests time nothing; the numbers go to bench/results/ from a real GPU).
//
// Without a CUDA device the suite exits with 77 before any test (CTest: skipped). Built against
// the CUDA simulator (tests/cuda_sim) as test_cuda_sim_bench, it runs the simulated binary.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

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
