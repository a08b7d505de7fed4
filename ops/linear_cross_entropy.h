// A linear output layer fused with cross-entropy, in row chunks, so that the (rows, classes)
// logits never exist whole. Position identification has one class per position: its head's
// logits and their gradient are (B·n, n) each, the encoder step's only n² tensors once attention
// is fused (bench/results/cpu_fused_memory_2026-11-27.md). This op keeps per-row statistics only.
//
// linear_cross_entropy(h (N, d), W (C, d), b (C,) or undefined, targets i32 (N,)):
//   z = h·Wᵀ + b (never stored whole: computed chunk by chunk of rows)
//   lse_i = log Σ_c e^{z_ic},  L = (1/M) Σ_{i counted} (lse_i − z_{i,t_i}),  M = #rows with t_i ≠ ignore_index
//   (M = 0 gives L = 0): the same value and semantics as cross_entropy(linear(h, W, b), targets).
//   argmax (optional): i32 (N,), argmax_c z_ic, ties to the smaller c (as argmax_last).
// Backward (g = ∂L/∂L), chunk by chunk in row order, the chunk's logits recomputed:
//   dz = (softmax(z) − onehot(t))·g/M on counted rows, 0 on ignored rows
//   dh_chunk = dz·W,   dW += dzᵀ·h_chunk,   db += Σ_rows dz
// The chunks are visited in a fixed order and each accumulation is a GEMM (β = 1) or an
// elementwise add, so the gradients do not depend on the thread count.
// A chunk holds at most kLinearCrossEntropyChunkFloats logits (16 MiB of floats; at least one
// row): forward and backward each allocate one such buffer, whatever N is.
#pragma once
#include <cstdint>

#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

constexpr int64_t kLinearCrossEntropyChunkFloats = int64_t(1) << 22;  // 16 MiB of logits

// The rows per chunk: chunk_rows when positive (tests pick small chunks), else as many rows as
// fit kLinearCrossEntropyChunkFloats, at least 1, at most N.
int64_t linear_cross_entropy_chunk_rows(int64_t rows, int64_t classes, int64_t chunk_rows = 0);

// Returns the loss, shape (). When `argmax` is not null it receives the rows' argmax, i32 (N,).
Tensor linear_cross_entropy(const Tensor& h, const Tensor& weight, const Tensor& bias, const Tensor& targets,
                            int32_t ignore_index = -100, Tensor* argmax = nullptr, int64_t chunk_rows = 0);

namespace kernels {
// On rows [row0, row0 + rows) of the whole batch, whose logits are the first rows of `logits`
// (a chunk buffer, row stride = classes): lse[row0 + r], term[row0 + r] = lse − z_{t} (0 when
// ignored) and, when argmax is defined, argmax[row0 + r].
void linear_ce_chunk_stats_cpu(const Tensor& logits, int64_t rows, int64_t classes, const Tensor& targets,
                               int64_t row0, int32_t ignore_index, Tensor& lse, Tensor& term, Tensor& argmax);
void linear_ce_chunk_stats_cuda(const Tensor& logits, int64_t rows, int64_t classes, const Tensor& targets,
                                int64_t row0, int32_t ignore_index, Tensor& lse, Tensor& term, Tensor& argmax);
// loss = Σ term / count (0 when count = 0), terms added in row order (CPU) or a fixed tree (CUDA).
// CUDA reads M from the device (`count`: i32, shape (), linear_ce_count_cuda's): no host wait, and a
// captured step (CUDA graphs) counts each replay's targets.
void linear_ce_mean_cpu(const Tensor& term, int64_t count, Tensor& loss);
void linear_ce_mean_cuda(const Tensor& term, const Tensor& count, Tensor& loss);
// count = the targets that are counted: not ignore_index and inside [0, classes) (one block, in
// a fixed order; a target outside is the range check's error, raised at the next read).
void linear_ce_count_cuda(const Tensor& targets, int64_t classes, int32_t ignore_index, Tensor& count);
// In place on the chunk buffer: z ← (e^{z − lse} − [c = t])·g/count on counted rows, 0 on ignored
// rows; g = grad_loss[0], read where it lives.
void linear_ce_chunk_grad_cpu(Tensor& logits, int64_t rows, int64_t classes, const Tensor& targets, int64_t row0,
                              int32_t ignore_index, const Tensor& lse, int64_t count, const Tensor& grad_loss);
void linear_ce_chunk_grad_cuda(Tensor& logits, int64_t rows, int64_t classes, const Tensor& targets, int64_t row0,
                               int32_t ignore_index, const Tensor& lse, const Tensor& count, const Tensor& grad_loss);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// Forward over N rows, d features, C classes: the GEMM 2·N·C·d (+ the bias written into the chunk,
// then read back by the GEMM), the statistics 4 per logit (max, −, exp, Σ). Bytes: h and W once
// per chunk, the chunk's logits written and read back, lse/term/argmax per row.
// Backward: the logits recomputed (the GEMM only), dz 4 per logit, dh and dW one GEMM each, db's
// column sums N·C adds.
inline profile::Cost linear_cross_entropy_forward_cost(int64_t rows, int64_t features, int64_t classes,
                                                       int64_t chunks, bool bias) {
  const double n = double(rows), d = double(features), c = double(classes), k = double(chunks);
  const double flops = 2.0 * n * c * d + 4.0 * n * c;
  const double elements = n * d + k * c * d + (bias ? k * c + n * c : 0.0) + 2.0 * n * c + 3.0 * n + 1;
  return {flops, profile::kElementBytes * elements};
}
inline profile::Cost linear_cross_entropy_backward_cost(int64_t rows, int64_t features, int64_t classes,
                                                        int64_t chunks, bool bias) {
  const double n = double(rows), d = double(features), c = double(classes), k = double(chunks);
  // Recomputed logits 2·N·C·d, dz 4 per logit, dh and dW 2·N·C·d each, db N·C adds (+ C per chunk
  // to accumulate).
  const double flops = 6.0 * n * c * d + 4.0 * n * c + (bias ? n * c + k * c : 0.0);
  // Recomputation: h and W per chunk, the bias rows, the chunk written; dz read and written;
  // dh = dz·W (dz, W per chunk, dh written); dW += dzᵀ·h (dz, h, dW read and written per chunk);
  // db: dz read, the chunk's sums written, read and added to db.
  const double elements = (n * d + k * c * d + (bias ? k * c + n * c : 0.0) + n * c) + 2.0 * n * c +
                          (n * c + k * c * d + n * d) + (n * c + n * d + 2.0 * k * c * d) +
                          (bias ? n * c + 4.0 * k * c : 0.0) + 2.0 * n + 1;
  return {flops, profile::kElementBytes * elements};
}

}  // namespace urpe
