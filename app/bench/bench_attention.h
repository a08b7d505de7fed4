// `urpe bench attention`: the attention alone, fused (ops/urpe_flash_attention) against
// materialised (QKᵀ GEMM, the URPE core, A·V), forward and forward + backward, with unique
// (Toeplitz) B and C, at each sequence length: the median time and the peak of tensor storage the
// call allocates (host allocator, or the CUDA caching allocator), inputs excluded. This is the
// number behind the memory target: the fused path's peak grows with n (×4 from n = 1024
// to 4096), the materialised path's with n² (×16).
// Each row also states its math (fp32; tf32: the tensor-core kernels and TF32 GEMMs; bf16: as
// precision=bf16 leaves the context, the fused attention on BF16 tiles fed bf16 q, k, v and dO,
// as the model's bf16 projections feed it, the materialised rows' f32 GEMMs TF32) and its
// rate in FlashAttention's count: forward 4·B·H·n²·d FLOPs (halved when causal), backward 2.5×
// that, so forward + backward 3.5×; on CUDA as a share of the cuBLAS TF32 GEMM rate measured at
// start (8192³). Lengths above 4096 are for the fused path alone (the materialised one holds n²
// floats per head, three times).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/cuda_backend.h"

namespace urpe::bench {

struct AttentionBenchOptions {
  std::string device = "cpu";
  std::vector<int64_t> lengths{1024, 4096};
  int64_t batch = 1, heads = 4, head_dim = 32;
  bool causal = false;  // causal mask (decoder attention), both paths
  std::string math = "fp32";  // CUDA: tf32 (TF32 tensor cores: the fused kernels and the GEMMs) or
                              // bf16 (the fused kernels' BF16 tiles, the GEMMs TF32)
  bool smoke = false;   // --sizes smoke: the TF32 GEMM reference at 256³ (checks the bench runs,
                        // e.g. on the CUDA simulator; not a ceiling)
  // --tc-pipeline auto|on|off: the tensor-core kernels' pipelined variants, forward and backward
  // (cp.async staging; cuda::set_tc_pipeline), what ran stated on every fused row
  cuda::TcPipeline tc_pipeline = cuda::TcPipeline::automatic;
  // --tc-rows auto|1|2: the tensor-core forward's 16-row blocks per warp (cuda::set_tc_rows; 2:
  // BF16 tiles at the 64 head-dim class), what ran stated on every fused row
  cuda::TcRows tc_rows = cuda::TcRows::automatic;
  int repeats = 3;  // timed runs per row (median), after one warm-up
  std::vector<std::string> paths{"fused", "materialized"};  // --attention PATH keeps one
};

// Prints the table; returns the process exit code.
int run_attention_bench(const AttentionBenchOptions& options);

// FlashAttention's FLOP count of one call (forward, or forward + backward), as the table uses it.
double attention_flops(const AttentionBenchOptions& options, int64_t n, bool backward);

}  // namespace urpe::bench
