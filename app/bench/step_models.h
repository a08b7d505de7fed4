// The training steps `urpe bench step --model encoder|txl|graphormer` times: one per model family,
// each at a bench configuration of about the same cost (10 to 13 GFLOP a step, counted by the
// ops' cost formulas), with the sizes, optimizer (Adam, lr 1e-4) and data of its PyTorch twin in
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
//               dropout; one batch of 128 synthetic molecules of 20 to 38 atoms (bench_molecules
//               below; the twin builds the same graphs), L1 loss
//
// --seq-len and --batch change the encoder's n and batch (the long-sequence bench is n = 1024
// and 4096, batch 4) and the Transformer-XL's tgt_len = mem_len and batch; Graphormer takes
// --batch (graphs) only.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/molecule_graph.h"
#include "tensor/device.h"
#include "tensor/tensor.h"

namespace urpe::bench {

struct StepModelOptions {
  std::string model = "encoder";        // encoder | txl | graphormer
  int64_t seq_len = 0;                  // 0: the model's bench default
  int64_t batch = 0;                    // 0: the model's bench default
  std::string attention = "materialized";  // encoder: materialized (the training default) or fused
};

// One family's model, optimizer and data, ready to run training steps.
class StepModel {
 public:
  virtual ~StepModel() = default;
  // "n=128 d=128 heads=4 ...": the sizes, printed on the bench's config line.
  virtual std::string description() const = 0;
  // The data of the next step, drawn before the clock starts (the twins draw theirs untimed too).
  virtual void next_batch() = 0;
  // One training step on that data: zero the gradients, forward, loss, backward, one Adam
  // update (lr 1e-4). This is what the bench times.
  virtual void step() = 0;
};

const std::vector<std::string>& step_model_names();  // encoder, txl, graphormer
// Builds `options.model` on `device`; an unknown model or an option it does not take is an error
// naming the option and what is expected.
std::unique_ptr<StepModel> make_step_model(const StepModelOptions& options, const Device& device);

// The bench's synthetic molecules, a pure function of (count), so the PyTorch twin builds the
// same graphs (tools/torch_bench.py: bench_molecules): molecule g has N = 20 + (7·g mod 19) atoms
// of type (g + 3·i) mod 9, a chain of bonds i–(i+1) of type 1 + ((g + i) mod 3), and a ring
// closure i–(i+5) (single) at every i ≡ 0 (mod 6) with i + 5 < N.
std::vector<data::MoleculeGraph> bench_molecules(int64_t count);
std::vector<float> bench_molecule_targets(int64_t count);  // y_g = ((g mod 10) − 4.5) / 3

}  // namespace urpe::bench
