// The paper's synthetic tasks (docs/synthetic_encoder.md#tasks), which isolate position handling:
//   Position Identification (PI): the target at position i is its position.
//   Even Token Prediction (ETP): for k < n/2 the target is input[2k + 1] (w2, w4, … 1-based);
//     for k ≥ n/2 it is a fixed end marker (EOS).
// Two protocols (`task_protocol`, docs/synthetic_encoder.md#protocols):
//   simple:   tokens i.i.d. uniform over [0, V); PI targets i (n classes, every position scored);
//             ETP's EOS = V (V + 1 classes).
//   official: the fairseq generator of the paper's code (lsj2408/URPE, SimDataset): ids 0 … 10 are
//             reserved symbols (1 = padding), tokens i.i.d. uniform over the V − 20 ids 11 … V − 10
//             (all V ids 11 … 10 + V when V ≤ 20, where the official code has none: our choice);
//             PI targets 1 + i with position 0 (target 1 = padding) not scored; ETP's EOS = V − 2;
//             11 + V classes (PI: at least n + 1, so that 1 + i fits).
// Training batches are fresh draws from a seeded stream; the validation set is a fixed draw from a
// different seed. Both protocols draw one uniform per token, so a stream's offsets agree.
#pragma once
#include <cstdint>
#include <string>

#include "tensor/tensor.h"

namespace urpe {

enum class SyntheticKind { position_identification, even_token_prediction };
SyntheticKind parse_synthetic_kind(const std::string& text);  // "pi" | "etp"
const char* synthetic_kind_name(SyntheticKind kind);          // "pi" | "etp"

enum class TaskProtocol { simple, official };
TaskProtocol parse_task_protocol(const std::string& text);  // "simple" | "official"
const char* task_protocol_name(TaskProtocol protocol);

struct SyntheticBatch {
  Tensor tokens;   // i32 (B, n)
  Tensor targets;  // i32 (B, n); ignore_index() where a position is not scored
};

class SyntheticTask {
 public:
  SyntheticTask(SyntheticKind kind, int64_t seq_len, int64_t vocab, TaskProtocol protocol = TaskProtocol::simple);
  int64_t num_classes() const;
  // Rows of the token embedding: every id a batch may hold (official: the 11 + V ids of its
  // dictionary, reserved symbols included, so ETP's output layer can share the table).
  int64_t input_ids() const;
  // The target of a position that is not scored (official PI's position 0); -100 (never a class)
  // under the simple protocol, where every position is scored.
  int32_t ignore_index() const;
  // The dictionary's padding id (official: 1, never drawn as a token), or −1 (simple: none).
  int32_t padding_id() const;
  // Scored positions per sequence: n, or n − 1 for official PI.
  int64_t scored_per_sequence() const;
  SyntheticBatch sample(int64_t batch, Rng& rng, const Device& device = {}) const;
  SyntheticKind kind() const { return kind_; }
  TaskProtocol protocol() const { return protocol_; }

 private:
  SyntheticKind kind_;
  int64_t seq_len_, vocab_;
  TaskProtocol protocol_;
};

}  // namespace urpe
