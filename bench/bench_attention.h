// `urpe bench attention`: the attention alone, fused (ops/urpe_flash_attention) against
// materialised (QKᵀ GEMM, the URPE core, A·V), forward and forward + backward, with unique
// (Toeplitz) B and C, at each sequence length: the median time and the peak of tensor storage the
// call allocates (host allocator, or the CUDA caching allocator), inputs excluded. This is the
// number behind the memory target: the fused path's peak grows with n (×4 from n = 1024
// to 4096), the materialised path's with n² (×16).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace urpe::bench {

struct AttentionBenchOptions {
  std::string device = "cpu";
  std::vector<int64_t> lengths{1024, 4096};
  int64_t batch = 1, heads = 4, head_dim = 32;
  int repeats = 3;  // timed runs per row (median), after one warm-up
  std::vector<std::string> paths{"fused", "materialized"};  // --attention PATH keeps one
};

// Prints the table; returns the process exit code.
int run_attention_bench(const AttentionBenchOptions& options);

}  // namespace urpe::bench
