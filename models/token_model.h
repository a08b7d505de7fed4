// What the analyses (app/analysis: `urpe analyze`, `urpe theory probe`) read from a model with token
// positions, whatever its family. Why an interface: the analyses decompose hidden states and
// probe identical tokens the same way for every such model; with one they need no encoder-or-
// Transformer-XL branch, and a new family with token positions plugs in by implementing it
// (train/families/model_family.h, AnalysedModel). TransformerEncoder and TransformerXL implement it.
// Analyses of one architecture's own attention (the logit split, the row sums of the encoder) ask
// for that class instead.
#pragma once
#include <cstdint>

#include "models/hidden_states.h"
#include "models/parameters.h"
#include "tensor/tensor.h"

namespace urpe {

class TokenModel {
 public:
  virtual ~TokenModel() = default;
  virtual const ParameterSet& parameters() const = 0;
  virtual int64_t width() const = 0;   // d_model: the size of one hidden state
  virtual int64_t blocks() const = 0;  // attention blocks; hidden states 0 (the input) .. blocks
  virtual int64_t vocab() const = 0;   // input token ids are in [0, vocab)
  virtual Tensor c_table() const = 0;  // URPE's C (H, K), undefined without URPE
  // Evaluation mode, no memory: batch-major token ids i32 (B, T) → the model's output (encoder:
  // logits (B, T, classes); Transformer-XL: the last block's output (T, B, d)). `states`, when
  // given, receives every block's input and output, batch-major (models/hidden_states.h).
  virtual Tensor forward_tokens(const Tensor& batch_major_ids, HiddenStates* states) const = 0;
};

}  // namespace urpe
