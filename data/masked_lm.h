// Masked-language-model sequences from a corpus token stream: BERT's pre-training objective
// (Devlin et al. 2019, §3.1), the task of the paper's Appendix C.4 (APE+RPE vs RPE vs URPE), in
// small (docs/reproduce.md, "APE+RPE vs URPE in pre-training").
//
// Vocabulary of `vocab` ids. The corpus's ids are ordered by train frequency (data/corpus.h:
// `<eos>` = 0, then by descending count), so the vocab − 2 most frequent tokens keep their ids
// 0 … vocab − 3; every rarer token becomes rare_id = vocab − 2 (like BERT's [UNK] for what its
// WordPiece table lacks); mask_id = vocab − 1 is [MASK], which the text never holds.
//
// A sequence is n consecutive ids of a split's stream (`<eos>` between lines, as in the corpus):
// training draws each start uniformly, evaluation cuts the split into consecutive windows from its
// first token. Masking, as BERT's create_pretraining_data.py does it:
//   k = max(1, round(mask_prob · n)) positions chosen uniformly without replacement (15%: 10 of 64);
//   each chosen position's input becomes [MASK] with probability 0.8, a token drawn uniformly from
//   the text ids 0 … vocab − 2 with probability 0.1, and stays itself with probability 0.1;
//   its target is the original id. Positions not chosen have target kIgnoreTarget (not scored).
// Every draw comes from the caller's Rng, window by window in order, so the same seed gives the
// same sequences whatever batch they are cut into.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/rng.h"
#include "tensor/tensor.h"

namespace urpe::data {

struct MaskedBatch {
  Tensor tokens;   // i32 (B, n): the inputs, masked
  Tensor targets;  // i32 (B, n): the original id at the k chosen positions, kIgnoreTarget elsewhere
};

class MaskedLanguageModel {
 public:
  static constexpr int32_t kIgnoreTarget = -100;
  static constexpr double kMaskShare = 0.8, kRandomShare = 0.1;  // the rest (0.1) stays unchanged

  // vocab >= 3 (one text id, rare_id and mask_id), seq_len >= 2, 0 < mask_prob < 1.
  MaskedLanguageModel(int64_t vocab, int64_t seq_len, double mask_prob);

  int64_t vocab() const { return vocab_; }
  int64_t seq_len() const { return seq_len_; }
  int32_t rare_id() const { return static_cast<int32_t>(vocab_ - 2); }
  int32_t mask_id() const { return static_cast<int32_t>(vocab_ - 1); }
  // k: the scored positions of every sequence.
  int64_t masked_per_sequence() const { return masked_; }

  // The corpus stream in this vocabulary: ids >= vocab − 2 become rare_id.
  std::vector<int32_t> capped(const std::vector<int32_t>& corpus_ids) const;

  // `batch` windows starting uniformly in `stream` (already capped; at least seq_len ids), masked.
  MaskedBatch sample(const std::vector<int32_t>& stream, int64_t batch, Rng& rng) const;
  // The consecutive windows first … first + count − 1 of `stream` (window w = ids [w·n, (w + 1)·n)),
  // masked from `rng`.
  MaskedBatch windows(const std::vector<int32_t>& stream, int64_t first, int64_t count, Rng& rng) const;
  // How many whole windows `stream` holds.
  int64_t window_count(const std::vector<int32_t>& stream) const {
    return static_cast<int64_t>(stream.size()) / seq_len_;
  }

 private:
  // Masks one window in place: ids → inputs, and writes its targets.
  void mask_window(int32_t* ids, int32_t* targets, Rng& rng) const;
  MaskedBatch masked(std::vector<int32_t> ids, int64_t batch, Rng& rng) const;

  int64_t vocab_, seq_len_, masked_;
};

}  // namespace urpe::data
