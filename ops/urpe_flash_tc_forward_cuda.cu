// The fused URPE attention's forward on the tensor cores (TF32 mma.sync m16n8k8 through
// ops/mma_tf32.cuh, or BF16 m16n8k16 through ops/mma_bf16.cuh: the kernel's kBf16), FlashAttention-2's loop with URPE's two extra terms: the bias B added to the
// logits before the online softmax and C multiplied into the weights, in registers, before P·V.
// The maths is urpe_flash_attention.h's; the scalar FP32 kernel (urpe_flash_attention_cuda.cu)
// is the reference and the path without --tf32.
//
// urpe_flash_tc_forward_kernel<kDim>: one block (4 warps) per (b, h, 64 query rows); each warp owns
//   16 rows, its Q fragments held in registers for the whole task. Per tile of kKeys keys (64, or
//   32 at kDim = 128 to fit 48 KiB) K_J and V_J come to shared memory rounded to TF32,
//   with the tile's 64 + kKeys − 1 diagonals of B and C for a relative map; then per warp
//     S (16 × kKeys) = Q·K_Jᵀ                                  kKeys/8 × kDim/8 mma
//     z = S·scale + B  (−∞ where masked),  m' = max(m, rowmax z),  α = e^{m − m'}
//     ℓ ← α·ℓ + Σ_j e^{z − m'},   W = e^{z − m'} ⊙ C ⊙ κ        in the accumulators
//   each e^{z − m'} as 2^(z·log2 e − m'·log2 e) on the SFU (ops/sfu_exp2.cuh: FFMA + MUFU.EX2)
//     O ← α·O + W·V_J                                          kDim/8 × kKeys/8 mma
//   W goes from the accumulator layout into the A operand without moving (the key pairing of
//   ops/mma_tf32.cuh): lane t's keys 2t, 2t+1 are its A columns t, t+4, and V is read at rows
//   2t, 2t+1. K sits in shared memory as column pairs and V as row pairs
//   (load_rounded_column_pairs / _row_pairs, ops/urpe_flash_tc_tiles.cuh), so each mma's two B
//   registers are one 64-bit shared load. Per tile, one block-uniform branch sends interior tiles
//   (no mask, padding, dropout, dense map) down a fast path that evaluates no per-cell condition.
//   At the end O/ℓ and L = m + ln ℓ are written; a row with no unmasked key gets O = 0, L = −∞,
//   as on the scalar path. At most 3 blocks of 4 warps per SM (2 at kDim = 128): __launch_bounds__
//   holds the registers to 168; kDim = 64 spills a few words (see kKeys below).
//   FLOPs: 4·Nq·Nk·kDim per (b, h) on the tensor cores (the padded dims count), plus per cell the
//   scale, bias, max, exp, sum and C (~10) on the FP32 units.
//   BF16 (kBf16, precision=bf16): K and V staged as packed BF16 words (bf16 rows, bf16 quad rows:
//   each mma's two B registers one 64-bit shared load), Q's fragments 16 columns a register set,
//   S·V with k = 16 keys, and two neighbouring S blocks are W's A fragment as they are (no
//   pairing); W rounded to BF16 before its product. 64-key tiles at every kDim (ptxas -v and the
//   spills: bench/sass_mix.sh).
//   Bytes: Q and O once; K and V once per 64 query rows: (Nq/64)·Nk·(dh + dv)·4 per (b, h); the
//   tables' diagonals per tile from cache. Nothing of size Nq·Nk.
//   Pipelined variant (kPipelined; cuda::TcPipeline, by default at d 64 on BF16 tiles): the same
//   bytes and the same bits, but the next key tile's K, V rows and map entries are copied with
//   cp.async (ops/cp_async.cuh) to a staging buffer in dynamic shared memory while this tile
//   computes, and turned into the tiles above from there, so no warp waits for global memory
//   inside a task but at its first tile (ForwardTiles, urpe_flash_tc_forward.cuh, has the layout
//   and the bytes).
//   Two row blocks per warp (cuda::TcRows, --tc-rows 2; BF16 tiles at kDim = 64 only): a second
//   kernel, urpe_flash_tc_forward_rows2_cuda.cu, 32 rows a warp and 128 a block, the same bits.
#include <type_traits>

#include "ops/urpe_flash_tc_forward.cuh"

namespace urpe::kernels {

namespace {

using namespace flash_tc;

// TIn: the tensors' element type, float or (BF16 tiles only) __nv_bfloat16: q, k, v read as they
// are and O written in it (rounded once); L stays FP32.
// kPipelined: the key tiles' global loads software-pipelined (FlashAttention-2's cp.async
// double buffering): while tile j computes, tile j + 1's raw K and V rows and its map entries are
// in flight (cp.async) to a staging buffer; after tile j, the block turns the staged rows into
// the fragment layouts with the same loaders (the same rounding and pairing), so the output and
// L are today's to the bit. A block then waits for global memory once per task, not per tile.
template <int kDim, bool kBf16, typename TIn, bool kPipelined>
__global__ void __launch_bounds__(kThreads, kDim == 128 ? 2 : 3)
    urpe_flash_tc_forward_kernel(FlashGeometry g, const TIn* __restrict__ q, const TIn* __restrict__ k,
                                 const TIn* __restrict__ v, TIn* __restrict__ out, float* __restrict__ lse) {
  const uint64_t seed = g.dropout_seed();  // once per thread
  static_assert(kBf16 || std::is_same_v<TIn, float>, "TF32 tiles read f32 tensors (the host widens bf16 ones)");
  using Shared = ForwardShared<kDim, kBf16, TIn, kBlockRows, kPipelined>;
  using Tiles = typename Shared::Tiles;  // the layouts the shared arrays were declared with
  constexpr int kKeys = Tiles::kKeys;
  constexpr int kKeyBlocks = kKeys / 8;  // n-blocks of S (8 keys each)
  constexpr int kSteps = Dim<kDim>::kSteps;  // n-blocks of O (8 columns each)
  constexpr int kQSteps = kBf16 ? kDim / 16 : kSteps;  // k-steps of Q·Kᵀ
  constexpr int kKWords = Tiles::kKWords, kVWords = Tiles::kVWords;
  const Shared shared = Shared::declare();
  auto& k_s4 = *shared.k_s4;
  auto& v_s4 = *shared.v_s4;
  const float* bias_s = *shared.bias_s;
  const float* c_s = *shared.c_s;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int group = lane / 4, member = lane % 4;
  const int nq = int(g.nq), nk = int(g.nk), dh = int(g.dh), dv = int(g.dv);  // check_tc_sizes
  const unsigned tiles = (nq + kBlockRows - 1) / kBlockRows, tasks = tiles * unsigned(g.batch * g.heads);
  const bool fast_path = kSassInteriorOnly || fast_path_possible(g);
  for (unsigned task = blockIdx.x; task < tasks; task += gridDim.x) {
    const TcTask t = tc_task(task, tiles, unsigned(g.heads), kBlockRows);
    const int i0 = t.first, rows = min(kBlockRows, nq - i0);
    const int w0 = i0 + warp * kWarpRows;  // the warp's first row
    const KeyRows<TIn> keys{k + int64_t(t.bh) * nk * dh, v + int64_t(t.bh) * nk * dv, nk, dh, dv};
    const int key_end = int(g.key_limit(i0 + rows - 1));  // masked for every row beyond
    shared.begin_task(g, keys, i0, key_end);
    uint32_t qa[kQSteps][4];
    if constexpr (kBf16)
      load_a_fragments_bf16(qa, q + int64_t(t.bh) * nq * dh, w0, nq - w0, dh, lane);
    else
      load_a_fragments(qa, q + int64_t(t.bh) * nq * dh, w0, nq - w0, dh, lane);
    float o[kSteps][4];
#pragma unroll
    for (int s = 0; s < kSteps; ++s)
#pragma unroll
      for (int r = 0; r < 4; ++r) o[s][r] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // rows group, group + 8
    const int pad_from = first_padded_key(g, t.b, *shared.pad_scratch);
    for (int j0 = 0; j0 < key_end; j0 += kKeys) {
      shared.load_key_tile(g, keys, t.h, i0, j0, key_end);

      float s[kKeyBlocks][4];
#pragma unroll
      for (int nb = 0; nb < kKeyBlocks; ++nb)
#pragma unroll
        for (int r = 0; r < 4; ++r) s[nb][r] = 0.0f;
      if constexpr (kBf16) {
        // S += Q·Kᵀ, 16 head-dim columns a step: b = K(key, 16ks + 2t | +1), K(key, 16ks + 8 + 2t | +1).
        const auto& k_w = tile_view<uint32_t, kKWords>(k_s4);
#pragma unroll
        for (int ks = 0; ks < kQSteps; ++ks)
#pragma unroll
          for (int nb = 0; nb < kKeyBlocks; ++nb) {
            uint32_t kb[2];
            bf16_rows_fragment<kDim>(kb, k_w, nb * 8 + group, ks, member);
            tc::mma_m16n8k16_bf16(s[nb], qa[ks], kb);
          }
      } else {
        const auto& k_s = tile_view<float2, kDim / 2 + 4>(k_s4);  // column pairs
#pragma unroll
        for (int ks = 0; ks < kQSteps; ++ks)
#pragma unroll
          for (int nb = 0; nb < kKeyBlocks; ++nb) {
            const float2 kf = column_pairs_fragment<kDim>(k_s, nb * 8 + group, ks, member);  // K(key, 8ks + t | + 4)
            const uint32_t kb[2] = {__float_as_uint(kf.x), __float_as_uint(kf.y)};
            tc::mma_m16n8k8(s[nb], qa[ks], kb);
          }
      }

      // Logits, the running max of the lane's two rows, then the weights: one block-uniform
      // branch per tile between the interior fast path and the edge path.
      const LaneCells at{w0 + group, j0 + 2 * member, 2 * member - warp * kWarpRows - group + kBlockRows - 1};
      const bool interior = fast_path && tile_is_interior(g, i0, i0 + kBlockRows, j0, j0 + kKeys, pad_from);
      float tile_max[2] = {-INFINITY, -INFINITY};
      if (interior)
        forward_logits<true>(g, s, tile_max, bias_s, at, t.b, t.h);
      else
        forward_logits<false>(g, s, tile_max, bias_s, at, t.b, t.h);
      float alpha[2], m_new[2], offset[2], row_sum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        m_new[half] = fmaxf(m[half], group_max(tile_max[half]));
        offset[half] = tc::base2_offset(m_new[half]);
        // e^{m − m'} in the weights' base 2: 0 from m = −∞
        alpha[half] = m[half] == m_new[half] ? 1.0f : tc::exp2_approx(fmaf(m[half], tc::kLog2e, -offset[half]));
      }
      if (interior)
        forward_weights<true>(g, seed, s, offset, row_sum, c_s, at, t.b, t.h, t.bh);
      else
        forward_weights<false>(g, seed, s, offset, row_sum, c_s, at, t.b, t.h, t.bh);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        l[half] = l[half] * alpha[half] + group_sum(row_sum[half]);
        m[half] = m_new[half];
      }
#pragma unroll
      for (int nd = 0; nd < kSteps; ++nd)
#pragma unroll
        for (int r = 0; r < 4; ++r) o[nd][r] *= alpha[r / 2];
      if constexpr (kBf16) {
        // O += W·V_J, 16 keys a step: key blocks 2κ, 2κ + 1 are the A fragment as they are, and
        // b = V(16κ + 2t | +1, column), V(16κ + 8 + 2t | +1, column) from the quad rows.
        const auto& v_w = tile_view<uint32_t, kVWords>(v_s4);
#pragma unroll
        for (int kb = 0; kb < kKeyBlocks / 2; ++kb) {
          uint32_t wa[4];
          tc::accumulators_as_a_bf16(wa, s[2 * kb], s[2 * kb + 1]);
#pragma unroll
          for (int nd = 0; nd < kSteps; ++nd) {
            uint32_t vb[2];
            bf16_quads_fragment(vb, v_w, kb, nd * 8 + group, member);
            tc::mma_m16n8k16_bf16(o[nd], wa, vb);
          }
        }
      } else {
        // O += W·V_J, keys paired (2t, 2t + 1) ↔ A columns (t, t + 4).
        const auto& v_s = tile_view<float2, kDim + 4>(v_s4);  // row pairs
#pragma unroll
        for (int kb = 0; kb < kKeyBlocks; ++kb) {
          uint32_t wa[4];
          tc::accumulator_as_a(wa, s[kb]);
#pragma unroll
          for (int nd = 0; nd < kSteps; ++nd) {
            const float2 vf = row_pairs_fragment(v_s, kb * 4 + member, nd * 8 + group);  // V(8kb + 2t | + 1, ·)
            const uint32_t vb[2] = {__float_as_uint(vf.x), __float_as_uint(vf.y)};
            tc::mma_m16n8k8(o[nd], wa, vb);
          }
        }
      }
    }
    TIn* out_bh = out + int64_t(t.bh) * nq * dv;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int i = w0 + group + 8 * half;
      if (i >= nq) continue;
      const bool empty = l[half] == 0.0f;  // no unmasked key: O = 0, L = −∞
      const float inv = empty ? 0.0f : 1.0f / l[half];
#pragma unroll
      for (int nd = 0; nd < kSteps; ++nd)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = nd * 8 + 2 * member + e;
          if (col < dv) {
            if constexpr (std::is_same_v<TIn, float>)
              out_bh[i * dv + col] = o[nd][2 * half + e] * inv;
            else
              out_bh[i * dv + col] = __float2bfloat16_rn(o[nd][2 * half + e] * inv);
          }
        }
      if (lse != nullptr && member == 0) lse[int64_t(t.bh) * nq + i] = empty ? -INFINITY : m[half] + logf(l[half]);
    }
  }
}

template <int kDim, bool kBf16, typename TIn>
void launch_forward(cuda::Context& ctx, const FlashGeometry& g, const Tensor& q, const Tensor& k, const Tensor& v,
                    Tensor& out, float* lse) {
  const int64_t tasks = g.batch * g.heads * ((g.nq + kBlockRows - 1) / kBlockRows);
  constexpr bool kBf16Tensors = std::is_same_v<TIn, __nv_bfloat16>;
  const char* name = !kBf16         ? "urpe_flash_tc_forward_kernel"
                     : kBf16Tensors ? "urpe_flash_tc_forward_kernel (bf16 tensors)"
                                    : "urpe_flash_tc_forward_kernel (bf16)";
  const bool pipelined = pipeline_takes<kDim, kBf16>(ctx, g, values<TIn>(k), values<TIn>(v));
  ctx.tc_kernels_ran().forward = true;  // what ran, for the benchmark's rows (cuda::TcKernelsRan)
  ctx.tc_kernels_ran().forward_pipelined = pipelined;
  ctx.tc_kernels_ran().forward_row_blocks = 1;
  if (pipelined) {
    constexpr size_t kBytes = ForwardTiles<kDim, kBf16, TIn>::kDynamicBytes;
    auto* kernel = urpe_flash_tc_forward_kernel<kDim, kBf16, TIn, true>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kBytes)));
    kernel<<<grid_for(ctx, tasks, 1), kThreads, kBytes, ctx.stream()>>>(g, values<TIn>(q), values<TIn>(k),
                                                                        values<TIn>(v), values<TIn>(out), lse);
    CUDA_CHECK_LAUNCH(name);
    return;
  }
  urpe_flash_tc_forward_kernel<kDim, kBf16, TIn, false><<<grid_for(ctx, tasks, 1), kThreads, 0, ctx.stream()>>>(
      g, values<TIn>(q), values<TIn>(k), values<TIn>(v), values<TIn>(out), lse);
  CUDA_CHECK_LAUNCH(name);
}

template <int kDim>
void launch_forward_for(cuda::Context& ctx, const FlashGeometry& g, TcMath math, const Tensor& q, const Tensor& k,
                        const Tensor& v, Tensor& out, float* lse) {
  if (math == TcMath::tf32)
    launch_forward<kDim, false, float>(ctx, g, q, k, v, out, lse);
  else if (q.dtype() == DType::bf16)
    launch_forward<kDim, true, __nv_bfloat16>(ctx, g, q, k, v, out, lse);
  else
    launch_forward<kDim, true, float>(ctx, g, q, k, v, out, lse);
}

// launch_forward_for's choice of tiles, asked of pipeline_takes.
template <int kDim>
bool pipelined_for(const cuda::Context& ctx, const FlashGeometry& g, TcMath math, const Tensor& q, const Tensor& k,
                   const Tensor& v) {
  if (math == TcMath::tf32)
    return k.dtype() == DType::f32 && v.dtype() == DType::f32 &&
           pipeline_takes<kDim, false>(ctx, g, values<float>(k), values<float>(v));
  if (q.dtype() == DType::bf16)
    return pipeline_takes<kDim, true>(ctx, g, values<__nv_bfloat16>(k), values<__nv_bfloat16>(v));
  return pipeline_takes<kDim, true>(ctx, g, values<float>(k), values<float>(v));
}

}  // namespace

int flash_tc_forward_row_blocks(const cuda::Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                                TcMath math, bool causal) {
  return cuda::tc_rows_wanted(ctx.tc_rows(), dim_class(q.size(3), v.size(3)), math == TcMath::bf16, causal,
                              q.size(2));
}

bool flash_tc_forward_pipelined(cuda::Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, TcMath math,
                                bool causal) {
  const FlashGeometry g = geometry_of(q, k, v, UrpeAttentionParams{}, AttentionDropout{});
  if (flash_tc_forward_row_blocks(ctx, q, k, v, math, causal) == 2) return forward_rows2_pipelined(ctx, g, k, v);
  switch (dim_class(g.dh, g.dv)) {
    case 32: return pipelined_for<32>(ctx, g, math, q, k, v);
    case 64: return pipelined_for<64>(ctx, g, math, q, k, v);
    default: return pipelined_for<128>(ctx, g, math, q, k, v);
  }
}

bool flash_tc_supports(int64_t dh, int64_t dv) { return dh <= kFlashMaxDim && dv <= kFlashMaxDim; }

void urpe_flash_tc_forward(cuda::Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                           const UrpeAttentionParams& params, const AttentionDropout& dropout,
                           Tensor& out, Tensor& lse, TcMath math) {
  const FlashGeometry g = geometry_of(q, k, v, params, dropout);
  if (g.batch * g.heads * g.nq == 0 || g.dv == 0) return;
  check_tc_sizes(g);
  URPE_CHECK(q.dtype() == DType::f32 || math == TcMath::bf16,
             "urpe_flash_tc_forward: TF32 tiles read f32 q, k, v; got " << q.describe());
  float* lse_out = lse.defined() ? lse.f32() : nullptr;
  if (flash_tc_forward_row_blocks(ctx, q, k, v, math, params.causal) == 2) {  // BF16 tiles, the 64 class: two row blocks per warp
    launch_forward_rows2(ctx, g, q, k, v, out, lse_out);
    return;
  }
  switch (dim_class(g.dh, g.dv)) {
    case 32: launch_forward_for<32>(ctx, g, math, q, k, v, out, lse_out); break;
    case 64: launch_forward_for<64>(ctx, g, math, q, k, v, out, lse_out); break;
    default: launch_forward_for<128>(ctx, g, math, q, k, v, out, lse_out); break;
  }
}

}  // namespace urpe::kernels
