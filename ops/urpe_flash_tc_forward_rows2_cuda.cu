// The fused URPE attention's tensor-core forward with two 16-row blocks of queries per warp
// (FlashAttention-2's warp layout: Dao, "FlashAttention-2: Faster Attention with Better Parallelism
// and Work Partitioning", 2023, §3.3; its d 64 forward runs blocks of 128 query rows on 4 warps,
// Dao-AILab/flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h, run_mha_fwd_hdim64), BF16 tiles
// at the 64 head-dim class only; cuda::TcRows (`--tc-rows 2`) selects it, the one-row-block kernel
// (urpe_flash_tc_forward_cuda.cu, whose header has the maths) stays the default.
// Why: on the H200 the one-row kernel at d 64 is latency- and issue-bound (0.49 eligible warps of
// 2.97 per scheduler, 808 instructions per warp and tile; bench/cuda_notes.md, sixth pass). With 32
// rows a warp
//   * reads each K and V B fragment from shared memory once for two mma (rows 0–15 and 16–31):
//       S_r (16 × 64) = Q_r·K_Jᵀ, r = 0, 1      the same 64-bit load of K feeds both products
//       O_r ← α_r·O_r + W_r·V_J                  likewise for V
//     so the shared loads per mma halve;
//   * has two independent mma chains and two independent softmax chains to interleave (ILP,
//     where the one-row kernel needed more resident warps);
//   * its block covers 128 query rows, so K and V are staged (global loads, BF16 packing, the
//     shared stores) once per 128 rows instead of per 64: half those bytes and instructions per row.
// Bytes: Q and O once; K and V (Nq/128)·Nk·(dh + dv)·sizeof(TIn) per (b, h); the tables' 191
// diagonals per tile from cache.
// The cost is registers: Q's fragments (2 × 16), O (2 × 32) and S (2 × 32) per thread, ~200 in
// all, so 2 blocks of 4 warps per SM (__launch_bounds__(128, 2)), 8 warps where the one-row kernel
// keeps 12 (ptxas -v and the spills: bench/cuda_notes.md, seventh pass).
// Every cell is computed exactly as in the one-row kernel: the same 64-key tiles in the same
// order, the same staged values of B and C (the diagonal of a cell, read from a wider staging of
// 128 + 64 − 1 diagonals), the same mma sequence per 16-row block (Q·Kᵀ over k-steps in order,
// W·V over key steps in order), the same logits, exponentials and weights (forward_logits,
// forward_weights, shared through urpe_flash_tc_forward.cuh). A 16-row block whose rows all lie
// beyond a tile's last unmasked key (the tiles a 128-row block visits for its later rows) adds
// exactly nothing: its weights are 0, α = 1. So O and L are the one-row kernel's bits
// (tests/test_cuda_flash_tensor_core.cpp checks it on the simulator).
// The interior fast path is chosen per warp (its 32 rows), a warp-uniform branch: a causal
// block's diagonal tiles take the edge path only for the warps they cut.
#include <type_traits>

#include "ops/urpe_flash_tc_forward.cuh"

namespace urpe::kernels {

namespace {

using namespace flash_tc;

constexpr int kDim = 64;                            // the 64 head-dim class only
constexpr int kRowBlocks = 2;                       // 16-row blocks per warp
constexpr int kWarpRows2 = kRowBlocks * kWarpRows;  // 32 query rows per warp
constexpr int kBlockRows2 = kWarps * kWarpRows2;    // 128 query rows per block

// One block (4 warps) per (b, h, 128 query rows); warp w owns rows 32w … 32w + 31 of its block as
// row blocks r = 0, 1 (rows 32w + 16r …). The staging of K, V and the diagonals is the one-row
// kernel's (pipelined or not), for 128 rows. TIn: float or __nv_bfloat16 tensors.
template <typename TIn, bool kPipelined>
__global__ void __launch_bounds__(kThreads, 2)
    urpe_flash_tc_forward_rows2_kernel(FlashGeometry g, const TIn* __restrict__ q, const TIn* __restrict__ k,
                                       const TIn* __restrict__ v, TIn* __restrict__ out, float* __restrict__ lse) {
  const uint64_t seed = g.dropout_seed();  // once per thread
  using Shared = ForwardShared<kDim, true, TIn, kBlockRows2, kPipelined>;  // diagonals: 128 + 64 − 1
  using Tiles = typename Shared::Tiles;  // the layouts the shared arrays were declared with
  constexpr int kKeys = Tiles::kKeys;
  constexpr int kKeyBlocks = kKeys / 8;       // n-blocks of S (8 keys each)
  constexpr int kSteps = Dim<kDim>::kSteps;   // n-blocks of O (8 columns each)
  constexpr int kQSteps = kDim / 16;          // k-steps of Q·Kᵀ
  constexpr int kKWords = Tiles::kKWords, kVWords = Tiles::kVWords;
  const Shared shared = Shared::declare();
  auto& k_s4 = *shared.k_s4;
  auto& v_s4 = *shared.v_s4;
  const float* bias_s = *shared.bias_s;
  const float* c_s = *shared.c_s;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int group = lane / 4, member = lane % 4;
  const int nq = int(g.nq), nk = int(g.nk), dh = int(g.dh), dv = int(g.dv);  // check_tc_sizes
  const unsigned tiles = (nq + kBlockRows2 - 1) / kBlockRows2, tasks = tiles * unsigned(g.batch * g.heads);
  const bool fast_path = kSassInteriorOnly || fast_path_possible(g);
  for (unsigned task = blockIdx.x; task < tasks; task += gridDim.x) {
    const TcTask t = tc_task(task, tiles, unsigned(g.heads), kBlockRows2);
    const int i0 = t.first, rows = min(kBlockRows2, nq - i0);
    const int w0 = i0 + warp * kWarpRows2;  // the warp's first row; row block r starts at w0 + 16r
    const KeyRows<TIn> keys{k + int64_t(t.bh) * nk * dh, v + int64_t(t.bh) * nk * dv, nk, dh, dv};
    const int key_end = int(g.key_limit(i0 + rows - 1));  // masked for every row beyond
    shared.begin_task(g, keys, i0, key_end);
    uint32_t qa[kRowBlocks][kQSteps][4];
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb) {
      const int first = w0 + rb * kWarpRows;
      load_a_fragments_bf16(qa[rb], q + int64_t(t.bh) * nq * dh, first, nq - first, dh, lane);
    }
    float o[kRowBlocks][kSteps][4];
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb)
#pragma unroll
      for (int s = 0; s < kSteps; ++s)
#pragma unroll
        for (int r = 0; r < 4; ++r) o[rb][s][r] = 0.0f;
    // Per row block: rows group, group + 8.
    float m[kRowBlocks][2], l[kRowBlocks][2];
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb) m[rb][0] = m[rb][1] = -INFINITY, l[rb][0] = l[rb][1] = 0.0f;
    const int pad_from = first_padded_key(g, t.b, *shared.pad_scratch);
    for (int j0 = 0; j0 < key_end; j0 += kKeys) {
      shared.load_key_tile(g, keys, t.h, i0, j0, key_end);

      // S_r += Q_r·Kᵀ, 16 head-dim columns a step; each K fragment (one 64-bit shared load) feeds
      // both row blocks' mma: b = K(key, 16ks + 2t | +1), K(key, 16ks + 8 + 2t | +1).
      float s[kRowBlocks][kKeyBlocks][4];
#pragma unroll
      for (int rb = 0; rb < kRowBlocks; ++rb)
#pragma unroll
        for (int nb = 0; nb < kKeyBlocks; ++nb)
#pragma unroll
          for (int r = 0; r < 4; ++r) s[rb][nb][r] = 0.0f;
      const auto& k_w = tile_view<uint32_t, kKWords>(k_s4);
#pragma unroll
      for (int ks = 0; ks < kQSteps; ++ks)
#pragma unroll
        for (int nb = 0; nb < kKeyBlocks; ++nb) {
          uint32_t kb[2];
          bf16_rows_fragment<kDim>(kb, k_w, nb * 8 + group, ks, member);
#pragma unroll
          for (int rb = 0; rb < kRowBlocks; ++rb) tc::mma_m16n8k16_bf16(s[rb][nb], qa[rb][ks], kb);
        }

      // Logits, running max, weights per row block, as the one-row kernel computes them for a
      // warp whose first row is w0 + 16r; one warp-uniform branch per tile between the interior
      // fast path and the edge path (both give the same bits; the one-row kernel's choice is per
      // block, this one per warp, so a cell may take the other path here: the same values).
      LaneCells at[kRowBlocks];
#pragma unroll
      for (int rb = 0; rb < kRowBlocks; ++rb) {
        const int row_offset = warp * kWarpRows2 + rb * kWarpRows;  // of the row block in the block
        at[rb] = LaneCells{i0 + row_offset + group, j0 + 2 * member, 2 * member - row_offset - group + kBlockRows2 - 1};
      }
      const bool interior = fast_path && tile_is_interior(g, w0, w0 + kWarpRows2, j0, j0 + kKeys, pad_from);
      float tile_max[kRowBlocks][2];
#pragma unroll
      for (int rb = 0; rb < kRowBlocks; ++rb) tile_max[rb][0] = tile_max[rb][1] = -INFINITY;
      if (interior) {
#pragma unroll
        for (int rb = 0; rb < kRowBlocks; ++rb) forward_logits<true>(g, s[rb], tile_max[rb], bias_s, at[rb], t.b, t.h);
      } else {
#pragma unroll
        for (int rb = 0; rb < kRowBlocks; ++rb) forward_logits<false>(g, s[rb], tile_max[rb], bias_s, at[rb], t.b, t.h);
      }
      float alpha[kRowBlocks][2], offset[kRowBlocks][2], row_sum[kRowBlocks][2];
#pragma unroll
      for (int rb = 0; rb < kRowBlocks; ++rb)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float m_new = fmaxf(m[rb][half], group_max(tile_max[rb][half]));
          offset[rb][half] = tc::base2_offset(m_new);
          // e^{m − m'} in the weights' base 2: 0 from m = −∞
          alpha[rb][half] =
              m[rb][half] == m_new ? 1.0f : tc::exp2_approx(fmaf(m[rb][half], tc::kLog2e, -offset[rb][half]));
          m[rb][half] = m_new;
          row_sum[rb][half] = 0.0f;
        }
      if (interior) {
#pragma unroll
        for (int rb = 0; rb < kRowBlocks; ++rb)
          forward_weights<true>(g, seed, s[rb], offset[rb], row_sum[rb], c_s, at[rb], t.b, t.h, t.bh);
      } else {
#pragma unroll
        for (int rb = 0; rb < kRowBlocks; ++rb)
          forward_weights<false>(g, seed, s[rb], offset[rb], row_sum[rb], c_s, at[rb], t.b, t.h, t.bh);
      }
#pragma unroll
      for (int rb = 0; rb < kRowBlocks; ++rb) {
#pragma unroll
        for (int half = 0; half < 2; ++half) l[rb][half] = l[rb][half] * alpha[rb][half] + group_sum(row_sum[rb][half]);
#pragma unroll
        for (int nd = 0; nd < kSteps; ++nd)
#pragma unroll
          for (int r = 0; r < 4; ++r) o[rb][nd][r] *= alpha[rb][r / 2];
      }

      // O_r += W_r·V_J, 16 keys a step: key blocks 2κ, 2κ + 1 of S_r are W_r's A fragment as they
      // are; each V fragment b = V(16κ + 2t | +1, column), V(16κ + 8 + 2t | +1, column) from the
      // quad rows feeds both row blocks' mma.
      const auto& v_w = tile_view<uint32_t, kVWords>(v_s4);
#pragma unroll
      for (int kb = 0; kb < kKeyBlocks / 2; ++kb) {
        uint32_t wa[kRowBlocks][4];
#pragma unroll
        for (int rb = 0; rb < kRowBlocks; ++rb) tc::accumulators_as_a_bf16(wa[rb], s[rb][2 * kb], s[rb][2 * kb + 1]);
#pragma unroll
        for (int nd = 0; nd < kSteps; ++nd) {
          uint32_t vb[2];
          bf16_quads_fragment(vb, v_w, kb, nd * 8 + group, member);
#pragma unroll
          for (int rb = 0; rb < kRowBlocks; ++rb) tc::mma_m16n8k16_bf16(o[rb][nd], wa[rb], vb);
        }
      }
    }
    TIn* out_bh = out + int64_t(t.bh) * nq * dv;
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int i = w0 + rb * kWarpRows + group + 8 * half;
        if (i >= nq) continue;
        const bool empty = l[rb][half] == 0.0f;  // no unmasked key: O = 0, L = −∞
        const float inv = empty ? 0.0f : 1.0f / l[rb][half];
#pragma unroll
        for (int nd = 0; nd < kSteps; ++nd)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int col = nd * 8 + 2 * member + e;
            if (col < dv) {
              if constexpr (std::is_same_v<TIn, float>)
                out_bh[i * dv + col] = o[rb][nd][2 * half + e] * inv;
              else
                out_bh[i * dv + col] = __float2bfloat16_rn(o[rb][nd][2 * half + e] * inv);
            }
          }
        if (lse != nullptr && member == 0)
          lse[int64_t(t.bh) * nq + i] = empty ? -INFINITY : m[rb][half] + logf(l[rb][half]);
      }
  }
}

template <typename TIn>
bool rows2_pipeline_takes(const cuda::Context& ctx, const FlashGeometry& g, const Tensor& k, const Tensor& v) {
  return pipeline_takes<kDim, true, TIn, kBlockRows2>(ctx, g, values<TIn>(k), values<TIn>(v));
}

template <typename TIn>
void launch_rows2(cuda::Context& ctx, const FlashGeometry& g, const Tensor& q, const Tensor& k, const Tensor& v,
                  Tensor& out, float* lse) {
  const int64_t tasks = g.batch * g.heads * ((g.nq + kBlockRows2 - 1) / kBlockRows2);
  const char* name = std::is_same_v<TIn, __nv_bfloat16> ? "urpe_flash_tc_forward_rows2_kernel (bf16 tensors)"
                                                        : "urpe_flash_tc_forward_rows2_kernel (bf16)";
  const bool pipelined = rows2_pipeline_takes<TIn>(ctx, g, k, v);
  cuda::TcKernelsRan& ran = ctx.tc_kernels_ran();  // what ran, for the benchmark's rows
  ran.forward = true, ran.forward_pipelined = pipelined, ran.forward_row_blocks = kRowBlocks;
  if (pipelined) {
    constexpr size_t kBytes = ForwardTiles<kDim, true, TIn, kBlockRows2>::kDynamicBytes;
    auto* kernel = urpe_flash_tc_forward_rows2_kernel<TIn, true>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kBytes)));
    kernel<<<grid_for(ctx, tasks, 1), kThreads, kBytes, ctx.stream()>>>(g, values<TIn>(q), values<TIn>(k),
                                                                        values<TIn>(v), values<TIn>(out), lse);
    CUDA_CHECK_LAUNCH(name);
    return;
  }
  urpe_flash_tc_forward_rows2_kernel<TIn, false><<<grid_for(ctx, tasks, 1), kThreads, 0, ctx.stream()>>>(
      g, values<TIn>(q), values<TIn>(k), values<TIn>(v), values<TIn>(out), lse);
  CUDA_CHECK_LAUNCH(name);
}

}  // namespace

namespace flash_tc {

bool forward_rows2_pipelined(const cuda::Context& ctx, const FlashGeometry& g, const Tensor& k, const Tensor& v) {
  return k.dtype() == DType::bf16 ? rows2_pipeline_takes<__nv_bfloat16>(ctx, g, k, v)
                                  : rows2_pipeline_takes<float>(ctx, g, k, v);
}

void launch_forward_rows2(cuda::Context& ctx, const FlashGeometry& g, const Tensor& q, const Tensor& k,
                          const Tensor& v, Tensor& out, float* lse) {
  URPE_CHECK(dim_class(g.dh, g.dv) == kDim, "urpe_flash_tc_forward: two row blocks per warp at the 64 class only");
  if (q.dtype() == DType::bf16)
    launch_rows2<__nv_bfloat16>(ctx, g, q, k, v, out, lse);
  else
    launch_rows2<float>(ctx, g, q, k, v, out, lse);
}

}  // namespace flash_tc

}  // namespace urpe::kernels
