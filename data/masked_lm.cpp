// Masked-language-model windows and BERT's 80/10/10 masking (see masked_lm.h).
#include "data/masked_lm.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tensor/error.h"

namespace urpe::data {

MaskedLanguageModel::MaskedLanguageModel(int64_t vocab, int64_t seq_len, double mask_prob)
    : vocab_(vocab), seq_len_(seq_len) {
  URPE_CHECK(vocab >= 3, "masked LM: vocab must be at least 3 (a text token, the rare-token id and [MASK]), got "
                             << vocab);
  URPE_CHECK(vocab <= INT32_MAX, "masked LM: vocab " << vocab << " does not fit an i32 token id");
  URPE_CHECK(seq_len >= 2, "masked LM: seq_len must be at least 2, got " << seq_len);
  URPE_CHECK(mask_prob > 0.0 && mask_prob < 1.0, "masked LM: mask_prob must be in (0, 1), got " << mask_prob);
  masked_ = std::max<int64_t>(1, std::llround(mask_prob * static_cast<double>(seq_len)));
}

std::vector<int32_t> MaskedLanguageModel::capped(const std::vector<int32_t>& corpus_ids) const {
  std::vector<int32_t> ids(corpus_ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    URPE_CHECK(corpus_ids[k] >= 0, "masked LM: corpus id " << corpus_ids[k] << " at token " << k << " is negative");
    ids[k] = corpus_ids[k] < rare_id() ? corpus_ids[k] : rare_id();
  }
  return ids;
}

void MaskedLanguageModel::mask_window(int32_t* ids, int32_t* targets, Rng& rng) const {
  // Partial Fisher–Yates: the first k entries of `order` are k distinct uniform positions.
  std::vector<int64_t> order(static_cast<size_t>(seq_len_));
  std::iota(order.begin(), order.end(), 0);
  std::fill(targets, targets + seq_len_, kIgnoreTarget);
  for (int64_t k = 0; k < masked_; ++k) {
    std::swap(order[k], order[k + rng.below(seq_len_ - k)]);
    const int64_t position = order[k];
    targets[position] = ids[position];
    const float r = rng.uniform();
    if (r < kMaskShare) ids[position] = mask_id();
    else if (r < kMaskShare + kRandomShare) ids[position] = static_cast<int32_t>(rng.below(vocab_ - 1));
    // else: the token stays itself (and is still scored)
  }
}

MaskedBatch MaskedLanguageModel::masked(std::vector<int32_t> ids, int64_t batch, Rng& rng) const {
  std::vector<int32_t> targets(ids.size());
  for (int64_t b = 0; b < batch; ++b) mask_window(ids.data() + b * seq_len_, targets.data() + b * seq_len_, rng);
  return {Tensor::from_vector(ids, {batch, seq_len_}), Tensor::from_vector(targets, {batch, seq_len_})};
}

MaskedBatch MaskedLanguageModel::sample(const std::vector<int32_t>& stream, int64_t batch, Rng& rng) const {
  URPE_CHECK(static_cast<int64_t>(stream.size()) >= seq_len_,
             "masked LM: the training split has " << stream.size() << " tokens, fewer than seq_len " << seq_len_);
  URPE_CHECK(batch >= 1, "masked LM: batch must be positive, got " << batch);
  const int64_t starts = static_cast<int64_t>(stream.size()) - seq_len_ + 1;
  std::vector<int32_t> ids(static_cast<size_t>(batch * seq_len_));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = rng.below(starts);
    std::copy_n(stream.begin() + start, seq_len_, ids.begin() + b * seq_len_);
  }
  return masked(std::move(ids), batch, rng);
}

MaskedBatch MaskedLanguageModel::windows(const std::vector<int32_t>& stream, int64_t first, int64_t count,
                                         Rng& rng) const {
  URPE_CHECK(first >= 0 && count >= 1 && first + count <= window_count(stream),
             "masked LM: windows " << first << " … " << first + count - 1 << " are not in a split of "
                                   << window_count(stream) << " windows of " << seq_len_ << " tokens");
  std::vector<int32_t> ids(stream.begin() + first * seq_len_, stream.begin() + (first + count) * seq_len_);
  return masked(std::move(ids), count, rng);
}

}  // namespace urpe::data
