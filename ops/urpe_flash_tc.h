// The tensor-core (TF32 or BF16 mma.sync) kernels of the fused URPE attention, as the scalar path's
// host code calls them (ops/urpe_flash_attention_cuda.cu picks them when the context's TF32 switch
// is on, `--tf32`, cuda::set_tf32, or its BF16 switch, precision=bf16, cuda::set_bf16_tiles). Maths in urpe_flash_attention.h; tiles, fragments and the table
// gradients' partial sums in urpe_flash_tc_forward_cuda.cu and urpe_flash_tc_backward_cuda.cu.
#pragma once
#include "ops/urpe_flash_attention.h"

namespace urpe::cuda {
class Context;  // tensor/cuda_context.h (CUDA builds only); this header stays host-only
}

namespace urpe::kernels {

// The scalar and tensor-core kernels' own entry points (urpe_flash_attention_cuda.cu), as
// kernels::urpe_flash_attention_{forward,backward}_cuda (urpe_flash_attention.cpp) call them:
// q, k, v, O, dO and ∂q, ∂k, ∂v all f32, or all bf16 where flash_cuda_reads_bf16 is true: the
// context's BF16 tiles on, head dims they take, and (backward) no table gradient of a dense map,
// whose bucket walk reads f32. The caller widens bf16 tensors for every other case.
bool flash_cuda_reads_bf16(const Tensor& q, const Tensor& k, const Tensor& v, const UrpeAttentionParams& params,
                           const Tensor* grad_bias_table, const Tensor* grad_c_table);
void urpe_flash_attention_forward_cuda_native(const Tensor& q, const Tensor& k, const Tensor& v,
                                              const UrpeAttentionParams& params, const AttentionDropout& dropout,
                                              Tensor& out, Tensor& lse);
void urpe_flash_attention_backward_cuda_native(const Tensor& q, const Tensor& k, const Tensor& v,
                                               const Tensor& out, const Tensor& lse, const Tensor& grad_out,
                                               const UrpeAttentionParams& params, const AttentionDropout& dropout,
                                               Tensor& grad_q, Tensor& grad_k, Tensor& grad_v,
                                               Tensor* grad_bias_table, Tensor* grad_c_table);

// The tiles' input precision: TF32 m16n8k8 (the context's TF32 switch, --tf32 / precision=tf32)
// or BF16 m16n8k16 (the context's BF16 switch, precision=bf16): inputs rounded once when staged,
// P and dS rounded before their products. Both accumulate in FP32; softmax, C and the table
// gradients stay FP32.
enum class TcMath { tf32, bf16 };

// Head dims the tensor-core kernels take (dh and dv ≤ 128); the tiles are padded with zeros up
// to 32, 64 or 128.
bool flash_tc_supports(int64_t dh, int64_t dv);

// O (Bsz, H, Nq, dv) and, when defined, L (Bsz, H, Nq), as urpe_flash_attention_forward_cuda.
// The kernel's key tiles are software-pipelined where flash_tc_forward_pipelined says so (the
// context's cuda::TcPipeline: by default where a GPU measured it faster, cuda::tc_pipeline_by_default;
// `urpe bench attention --tc-pipeline on|off|auto`); the results are the same bits either way.
void urpe_flash_tc_forward(cuda::Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                           const UrpeAttentionParams& params, const AttentionDropout& dropout,
                           Tensor& out, Tensor& lse, TcMath math = TcMath::tf32);

// Whether urpe_flash_tc_forward runs its pipelined variant (cp.async staging of the next key tile)
// for these tensors: the context's cuda::TcPipeline asks for it (cuda::tc_pipeline_wanted), k's
// and v's rows whole 16-byte units (dh and dv a multiple of 4 floats, 8 bf16 values) on 16-byte
// boundaries, and its shared memory within the device's per-block limit. Otherwise the single-buffered kernel runs.
// causal: whether the call's mask is causal (UrpeAttentionParams::causal), which the row blocks depend on.
bool flash_tc_forward_pipelined(cuda::Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, TcMath math,
                                bool causal);

// How many 16-row blocks of queries each warp of urpe_flash_tc_forward owns for these tensors: 1
// (64 query rows per block), or 2 (FlashAttention-2's 32 rows per warp, 128 per block) where the
// context's cuda::TcRows asks for it (cuda::tc_rows_wanted: by default without a causal mask from
// 1024 query rows on; the variant exists for BF16 tiles at the 64 head-dim class only). The
// results are the same bits either way.
int flash_tc_forward_row_blocks(const cuda::Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                                TcMath math, bool causal);

// Which backward kernels urpe_flash_tc_backward runs pipelined (cp.async staging of the next key
// tile in dQ, of the next query tile in dK/dV) for these tensors: the context's cuda::TcPipeline
// asks for it (cuda::tc_pipeline_wanted, the forward's switch), the rows each streams (K and V; Q and dO) whole 16-byte
// units (dh and dv a multiple of 4 floats, 8 bf16 values) on 16-byte boundaries, and its shared
// memory within the device's per-block limit. The gradients are the same bits either way.
struct TcBackwardPipelines {
  bool dq = false, dkdv = false;
};
TcBackwardPipelines flash_tc_backward_pipelined(cuda::Context& ctx, const Tensor& q, const Tensor& k,
                                                const Tensor& v, const Tensor& grad_out, TcMath math);

// dQ, dK, dV, and the table gradients of tables whose map is relative ((Nq + Nk − 1,), a function
// of j − i): grad_bias_table / grad_c_table non-null only for those. d_row: D_i = dO_i·O_i, (Bsz·H·Nq).
// A table with a dense map is the caller's (the scalar bucket walk). partial_cap_bytes bounds the
// tables' per-diagonal partial sums held at once (0: max(64 MiB, the bytes of q)); the result does
// not depend on it, to the bit (tests pass a tiny cap to check that). The kernels that
// flash_tc_backward_pipelined names run their pipelined variants: the same bits.
void urpe_flash_tc_backward(cuda::Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& lse, const Tensor& grad_out, const double* d_row,
                            const UrpeAttentionParams& params, const AttentionDropout& dropout,
                            Tensor& grad_q, Tensor& grad_k, Tensor& grad_v, Tensor* grad_bias_table,
                            Tensor* grad_c_table, int64_t partial_cap_bytes = 0, TcMath math = TcMath::tf32);

}  // namespace urpe::kernels
