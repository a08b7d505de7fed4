// Every layer's hidden states from one ordinary forward pass, for the analyses that look inside a
// model (`urpe theory probe`, Theorem 2: do the positions of identical tokens stay identical?; the
// position and context analyses that build on it). The models fill it as they go when given a
// pointer, so there is one forward pass, not a copy of it for analysis:
//
//   HiddenStates states;
//   states.keep_after_attention = true;              // optional
//   states.keep_attention = true;                    // optional
//   encoder.forward(tokens, false, nullptr, &states);
//   states.blocks[0]                                  // input to block 1, (B, N, d)
//   states.blocks[l]                                  // output of block l = 1..L, (B, N, d)
//   states.after_attention[l - 1]                     // block l after its attention sub-layer
//   states.attention[l - 1]                           // block l's weights A, (B, H, Nq, Nk)
//
// The tensors are batch-major (B, N, d) for every model (Transformer-XL's public API is
// time-major; its states here are not) and are the forward's own tensors: under autograd they keep
// the graph alive, so analyses run under autograd::NoGrad. Where each state is taken, per model:
//   encoder (post-LN): blocks[0] = Drop(LN_emb(E[t] (+ P))); after_attention = LN1(x + Drop(MHA(x)));
//                      blocks[l] = LN2(x' + Drop(FFN(x'))).
//   Transformer-XL:    blocks[0] = Drop(E[w]·√d) of the current segment (not the memory); the rest
//                      as the encoder (post-LN), before the final dropout.
//   attention:         A = softmax(S·scale + B) ⊙ C as the URPE core returns it, before attention
//                      dropout (Transformer-XL: Nk = memory + segment length).
#pragma once
#include <vector>

#include "tensor/tensor.h"

namespace urpe {

struct HiddenStates {
  bool keep_after_attention = false;   // also record each block's state after attention
  bool keep_attention = false;         // also record each block's attention weights
  std::vector<Tensor> blocks;          // L + 1 tensors (B, N, d)
  std::vector<Tensor> after_attention;  // L tensors (B, N, d) when keep_after_attention, else empty
  std::vector<Tensor> attention;       // L tensors (B, H, Nq, Nk) when keep_attention, else empty

  void clear() {
    blocks.clear();
    after_attention.clear();
    attention.clear();
  }
};

}  // namespace urpe
