// Generators for PI and ETP: pure functions of the random stream, so a seed fixes every batch.
#include "data/synthetic.h"

#include <algorithm>
#include <vector>

namespace urpe {

namespace {

// The official dictionary (fairseq's SimDictionary): ids 0 … 10 are reserved, 1 is padding.
constexpr int32_t kOfficialFirstToken = 11;
constexpr int32_t kOfficialPadding = 1;
constexpr int32_t kNeverAClass = -100;

}  // namespace

SyntheticKind parse_synthetic_kind(const std::string& text) {
  if (text == "pi") return SyntheticKind::position_identification;
  if (text == "etp") return SyntheticKind::even_token_prediction;
  URPE_FAIL("task '" << text << "': expected pi (position identification) or etp (even token prediction)");
}

const char* synthetic_kind_name(SyntheticKind kind) {
  return kind == SyntheticKind::position_identification ? "pi" : "etp";
}

TaskProtocol parse_task_protocol(const std::string& text) {
  if (text == "simple") return TaskProtocol::simple;
  if (text == "official") return TaskProtocol::official;
  URPE_FAIL("task_protocol '" << text << "': expected simple or official");
}

const char* task_protocol_name(TaskProtocol protocol) {
  return protocol == TaskProtocol::simple ? "simple" : "official";
}

SyntheticTask::SyntheticTask(SyntheticKind kind, int64_t seq_len, int64_t vocab, TaskProtocol protocol)
    : kind_(kind), seq_len_(seq_len), vocab_(vocab), protocol_(protocol) {
  URPE_CHECK(seq_len > 1, "synthetic task: seq_len must be > 1, got " << seq_len);
  URPE_CHECK(vocab >= 2, "synthetic task: vocab must be ≥ 2, got " << vocab);
}

int64_t SyntheticTask::num_classes() const {
  const bool pi = kind_ == SyntheticKind::position_identification;
  if (protocol_ == TaskProtocol::simple) return pi ? seq_len_ : vocab_ + 1;
  return pi ? std::max(kOfficialFirstToken + vocab_, seq_len_ + 1) : kOfficialFirstToken + vocab_;
}

int64_t SyntheticTask::input_ids() const {
  return protocol_ == TaskProtocol::simple ? vocab_ : kOfficialFirstToken + vocab_;
}

int32_t SyntheticTask::ignore_index() const {
  return protocol_ == TaskProtocol::official ? kOfficialPadding : kNeverAClass;
}

int32_t SyntheticTask::padding_id() const { return protocol_ == TaskProtocol::official ? kOfficialPadding : -1; }

int64_t SyntheticTask::scored_per_sequence() const {
  const bool skips_first = protocol_ == TaskProtocol::official && kind_ == SyntheticKind::position_identification;
  return skips_first ? seq_len_ - 1 : seq_len_;
}

SyntheticBatch SyntheticTask::sample(int64_t batch, Rng& rng, const Device& device) const {
  const int64_t n = seq_len_;
  const bool official = protocol_ == TaskProtocol::official;
  // simple: ids [0, V); official: V − 20 ids from 11 (np.random.choice(V − 20) + 11), or all V
  // ids from 11 when V ≤ 20.
  const int64_t first = official ? kOfficialFirstToken : 0;
  const int64_t count = official && vocab_ > 20 ? vocab_ - 20 : vocab_;
  const int32_t eos = static_cast<int32_t>(official ? vocab_ - 2 : vocab_);
  std::vector<int32_t> tokens(batch * n), targets(batch * n);
  const uint64_t start = rng.reserve(batch * n);
  for (int64_t k = 0; k < batch * n; ++k) {
    const float u = philox_uniform(rng.seed(), start, k);
    tokens[k] = static_cast<int32_t>(first + std::min<int64_t>(static_cast<int64_t>(u * count), count - 1));
  }
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i) {
      int32_t target;
      if (kind_ == SyntheticKind::position_identification) target = static_cast<int32_t>(official ? 1 + i : i);
      else if (2 * i + 1 < n && i < n / 2) target = tokens[b * n + 2 * i + 1];
      else target = eos;
      targets[b * n + i] = target;
    }
  return {Tensor::from_vector(tokens, {batch, n}, device), Tensor::from_vector(targets, {batch, n}, device)};
}

}  // namespace urpe
