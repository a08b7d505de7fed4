// The training steps `urpe bench step --model encoder|txl|graphormer` times: one per model family,
// each the family's own (the registry's make_bench_step, train/families/NAME/NAME_bench_step.cpp),
// at a bench configuration of about the same cost (10 to 13 GFLOP a step, counted by the ops'
// cost formulas), with the sizes, optimizer (Adam, lr 1e-4) and data of its PyTorch twin in
// tools/torch_bench.py, so the two programs time the same work:
//
//   encoder     the synthetic-tasks bench: n = 128, d = 128, 4 heads, 2 layers, d_ff 512,
//               batch 32, URPE (T5-style Toeplitz B and C), position identification (random
//               tokens, target = position), no dropout
//   txl         Transformer-XL + URPE: vocab 1000 (full softmax, tied), 2 layers, d 128, 4 heads
//               of 32, d_inner 512, tgt_len 128, mem_len 128 (the memory starts as zeros of
//               mem_len rows, so every step has the steady state's shapes, klen 256), batch 16,
//               random tokens and targets, no dropout
//   graphormer  Graphormer + URPE: 2 layers, d 128, d_ffn 512, 8 heads, multi-hop 5, no
//               dropout; one batch of 128 synthetic molecules of 20 to 38 atoms
//               (train/families/graphormer/graphormer_bench_step.cpp: bench_molecules; the twin
//               builds the same graphs), L1 loss
//
// --seq-len and --batch change the encoder's n and batch (the long-sequence bench is n = 1024
// and 4096, batch 4) and the Transformer-XL's tgt_len = mem_len and batch; Graphormer takes
// --batch (graphs) only.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "train/families/model_family.h"  // StepModel, StepModelOptions

namespace urpe::bench {

// The families that have a bench step, in the registry's order (encoder, txl, graphormer).
const std::vector<std::string>& step_model_names();
// Builds `options.model` on `device` through the registry; an unknown model or an option it does
// not take is an error naming the option and what is expected.
std::unique_ptr<StepModel> make_step_model(const StepModelOptions& options, const Device& device);

}  // namespace urpe::bench
