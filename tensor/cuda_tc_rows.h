// The fused attention's tensor-core forward: how many 16-row blocks of queries each warp owns
// (ops/urpe_flash_tc_forward_cuda.cu). One (64 query rows per block of 4 warps); two (FlashAttention-2's layout: 32 rows per warp, 128 per block,
// each K/V fragment read from shared memory feeding two mma, K and V staged once per 128 rows)
// exists for BF16 tiles at the 64 head-dim class only. Both give the same bits.
// Part of tensor/cuda_backend.h's interface (which includes it; a header of its own to keep that
// one short); `urpe bench attention --tc-rows auto|1|2`.
#pragma once

namespace urpe::cuda {

class Context;

// automatic (the default): tc_rows_by_default (two without a causal mask from 1024 query rows on);
// one / two: that many row blocks wherever the kernel has the variant (two: BF16 tiles at the 64
// class; elsewhere one).
enum class TcRows { automatic, one, two };
void set_tc_rows(Context* context, TcRows mode);
TcRows tc_rows(Context* context);
inline const char* tc_rows_name(TcRows mode) {
  return mode == TcRows::one ? "1" : mode == TcRows::two ? "2" : "auto";
}

// Whether a kernel of this class has the two-row-block variant: BF16 tiles, tile class 64.
inline bool tc_rows_two_exists(int tile_dim, bool bf16_tiles) { return tile_dim == 64 && bf16_tiles; }
// What `automatic` picks, from the H200's A/B (2026-11-28, bench/gpu_session.sh tc_rows_ab; BF16
// tiles, d 64, B 8, H 16, bf16 tensors, two alternating rounds, bench/results/gpu_h200_2026-11-28d.md):
// without a causal mask two row blocks took 0.86–0.87× the one-row forward's time at n = 1k, 4k
// and 16k; with one, 2.08× and 1.37× at n = 1k and 4k (a 128-row block walks its key tiles up to its
// last row, so more of them straddle the diagonal) and 0.92× at 16k. So two where the variant
// exists, the mask is not causal and there are at least 1024 query rows (the shortest measured);
// one everywhere else. Both give the same bits.
constexpr int kTcRowsTwoFromQueries = 1024;
inline int tc_rows_by_default(int tile_dim, bool bf16_tiles, bool causal, long long query_rows) {
  return tc_rows_two_exists(tile_dim, bf16_tiles) && !causal && query_rows >= kTcRowsTwoFromQueries ? 2 : 1;
}
// The row blocks per warp that `mode` gives a forward kernel of this class, mask and length.
inline int tc_rows_wanted(TcRows mode, int tile_dim, bool bf16_tiles, bool causal, long long query_rows) {
  const int want = mode == TcRows::two   ? 2
                   : mode == TcRows::one ? 1
                                         : tc_rows_by_default(tile_dim, bf16_tiles, causal, query_rows);
  return want == 2 && tc_rows_two_exists(tile_dim, bf16_tiles) ? 2 : 1;
}

}  // namespace urpe::cuda
