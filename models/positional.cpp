// Bucket maps: the unique Toeplitz map comes from the URPE op itself; T5 buckets follow
// transformers' T5Attention._relative_position_bucket, with the log computed in float32.
#include "models/positional.h"

#include <cmath>
#include <vector>

#include "ops/urpe_attention.h"

namespace urpe {

RelativeKind parse_relative_kind(const std::string& text) {
  if (text == "unique") return RelativeKind::unique;
  if (text == "bucketed") return RelativeKind::bucketed;
  URPE_FAIL("relative position kind '" << text << "': expected unique or bucketed");
}

const char* relative_kind_name(RelativeKind kind) {
  return kind == RelativeKind::unique ? "unique" : "bucketed";
}

int32_t t5_relative_bucket(int64_t rel, bool bidirectional, int num_buckets, int max_distance) {
  int32_t base = 0;
  int64_t n;
  int nb = num_buckets;
  if (bidirectional) {
    nb /= 2;
    base = rel > 0 ? nb : 0;
    n = rel < 0 ? -rel : rel;
  } else {
    n = rel < 0 ? -rel : 0;  // future keys (rel > 0) share bucket 0: they are masked anyway
  }
  const int max_exact = nb / 2;
  if (n < max_exact) return base + static_cast<int32_t>(n);
  // max_exact + log(n / max_exact) / log(max_distance / max_exact) · (nb − max_exact), truncated.
  const float scaled = std::log(static_cast<float>(n) / static_cast<float>(max_exact)) /
                       std::log(static_cast<float>(max_distance) / static_cast<float>(max_exact)) *
                       static_cast<float>(nb - max_exact);
  const int32_t large = max_exact + static_cast<int32_t>(scaled);
  return base + std::min<int32_t>(large, nb - 1);
}

Tensor relative_bucket_map(int64_t n, RelativeKind kind, bool bidirectional, const Device& device) {
  if (kind == RelativeKind::unique) return toeplitz_map(n, n, device);
  std::vector<int32_t> map(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) map[i * n + j] = t5_relative_bucket(j - i, bidirectional);
  return Tensor::from_vector(map, {n, n}, device);
}

Tensor relative_bucket_vector(int64_t n, RelativeKind kind, bool bidirectional, const Device& device) {
  std::vector<int32_t> map(2 * n - 1);
  for (int64_t d = 0; d < 2 * n - 1; ++d)
    map[d] = kind == RelativeKind::unique ? static_cast<int32_t>(d)
                                          : t5_relative_bucket(d - (n - 1), bidirectional);
  return Tensor::from_vector(map, {2 * n - 1}, device);
}

int64_t relative_bucket_count(int64_t n, RelativeKind kind) {
  return kind == RelativeKind::unique ? 2 * n - 1 : 32;
}

}  // namespace urpe
