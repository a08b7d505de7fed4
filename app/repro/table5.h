// The paper's Table 5 (§5.4): what URPE costs over RPE at inference. `urpe repro table5` runs the
// paper's model (§5.4: the vanilla post-LN encoder, 12 layers, d = 768, 12 heads, batch 32, N = 128,
// 256, 512; d_ff = 3072 as RoBERTa base, where §5.4 is silent) with
// RPE and with URPE (unique Toeplitz B and C), each with the materialised attention (QKᵀ, the URPE
// core, A·V: (B, H, n, n) tensors) and with the fused one (ops/urpe_flash_attention: nothing
// n×n), at each sequence length, and writes
//   results.md    per length and attention path: median forward time and peak memory for RPE and
//                 URPE, the ratios URPE/RPE, the paper's V100 values with their ratios
//                 (PaperValues::table5), the same rows in the paper's units (log₂ ms and GB, and
//                 ms), and a "paper beside ours" section of relative changes
//   results.json  one row per (length, pe, attention), with the paper's value for it
//   plots/time.png, plots/memory.png   time and peak memory against n, one line per row kind
// Memory: on the CPU the host allocator's peak of tensor storage (parameters included: what the
// forward needs, independent of caching) and the process's peak resident set (VmHWM, reset before
// each row through /proc/self/clear_refs where the kernel allows it); on CUDA the caching
// allocator's peak. Each row runs one warm-up forward, then `repeats` timed ones under NoGrad.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace urpe {

struct Table5Options {
  std::string device = "cpu";
  std::vector<int64_t> lengths{128, 256, 512};
  int64_t batch = 32;
  int64_t layers = 12;  // the paper's 12; tests use fewer to stay fast
  int64_t d_model = 768, heads = 12, d_ff = 3072, vocab = 1000;
  int repeats = 3;      // timed forward passes per row (the median is reported)
  bool tf32 = false;    // TF32 tensor-core GEMMs on CUDA (--tf32)
};

struct Table5Row {
  int64_t seq_len = 0;
  std::string pe;         // rpe | urpe
  std::string attention;  // materialized | fused
  double median_ms = 0, min_ms = 0;
  double median_cpu_ms = 0;  // process CPU time (all threads) of a forward: robust to a busy machine
  int64_t runs = 0;
  int64_t params = 0;
  double peak_bytes = 0;  // allocator peak (host or CUDA), parameters included
  double peak_rss_bytes = -1;  // CPU: process peak RSS during the row; −1 when not measured
};

// Runs every row, printing one line each, and writes results.md, results.json and plots/ under
// out_dir. Returns the rows.
std::vector<Table5Row> run_table5(const Table5Options& options, const std::string& out_dir);

// "128,256,512" → {128, 256, 512}; errors name --lengths and the bad item.
std::vector<int64_t> parse_lengths(const std::string& text);

}  // namespace urpe
