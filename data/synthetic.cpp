// Generators for PI and ETP: pure functions of the random stream, so a seed fixes every batch.
#include "data/synthetic.h"

#include <vector>

namespace urpe {

SyntheticKind parse_synthetic_kind(const std::string& text) {
  if (text == "pi") return SyntheticKind::position_identification;
  if (text == "etp") return SyntheticKind::even_token_prediction;
  URPE_FAIL("task '" << text << "': expected pi (position identification) or etp (even token prediction)");
}

const char* synthetic_kind_name(SyntheticKind kind) {
  return kind == SyntheticKind::position_identification ? "pi" : "etp";
}

SyntheticTask::SyntheticTask(SyntheticKind kind, int64_t seq_len, int64_t vocab)
    : kind_(kind), seq_len_(seq_len), vocab_(vocab) {
  URPE_CHECK(seq_len > 1, "synthetic task: seq_len must be > 1, got " << seq_len);
  URPE_CHECK(vocab >= 2, "synthetic task: vocab must be ≥ 2, got " << vocab);
}

int64_t SyntheticTask::num_classes() const {
  return kind_ == SyntheticKind::position_identification ? seq_len_ : vocab_ + 1;
}

SyntheticBatch SyntheticTask::sample(int64_t batch, Rng& rng, const Device& device) const {
  const int64_t n = seq_len_;
  std::vector<int32_t> tokens(batch * n), targets(batch * n);
  const uint64_t start = rng.reserve(batch * n);
  for (int64_t k = 0; k < batch * n; ++k) {
    const float u = philox_uniform(rng.seed(), start, k);
    tokens[k] = std::min<int32_t>(static_cast<int32_t>(u * vocab_), static_cast<int32_t>(vocab_ - 1));
  }
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i) {
      int32_t target;
      if (kind_ == SyntheticKind::position_identification) target = static_cast<int32_t>(i);
      else if (2 * i + 1 < n && i < n / 2) target = tokens[b * n + 2 * i + 1];
      else target = static_cast<int32_t>(vocab_);  // EOS
      targets[b * n + i] = target;
    }
  return {Tensor::from_vector(tokens, {batch, n}, device), Tensor::from_vector(targets, {batch, n}, device)};
}

}  // namespace urpe
