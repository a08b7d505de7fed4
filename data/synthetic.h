// The paper's synthetic tasks (docs/synthetic_encoder.md#tasks), which isolate position handling:
//   Position Identification (PI): the target at position i is i itself (n classes). A model that
//     cannot tell positions apart (noPE, and RPE on inputs it cannot distinguish) is at chance.
//   Even Token Prediction (ETP): for k < n/2 the target is input[2k + 1] (w2, w4, … 1-based);
//     for k ≥ n/2 it is a fixed EOS class (id = vocab). vocab + 1 classes.
// Tokens are i.i.d. uniform over [0, vocab). Training batches are fresh draws from a seeded
// stream; the validation set is a fixed draw from a different seed.
#pragma once
#include <cstdint>
#include <string>

#include "tensor/tensor.h"

namespace urpe {

enum class SyntheticKind { position_identification, even_token_prediction };
SyntheticKind parse_synthetic_kind(const std::string& text);  // "pi" | "etp"
const char* synthetic_kind_name(SyntheticKind kind);          // "pi" | "etp"

struct SyntheticBatch {
  Tensor tokens;   // i32 (B, n)
  Tensor targets;  // i32 (B, n)
};

class SyntheticTask {
 public:
  SyntheticTask(SyntheticKind kind, int64_t seq_len, int64_t vocab);
  int64_t num_classes() const;
  SyntheticBatch sample(int64_t batch, Rng& rng, const Device& device = {}) const;
  SyntheticKind kind() const { return kind_; }

 private:
  SyntheticKind kind_;
  int64_t seq_len_, vocab_;
};

}  // namespace urpe
