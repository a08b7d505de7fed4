// Relative-position bucket maps for RPE bias tables and URPE C tables
// (docs/urpe_attention.md#bucket-maps).
//   unique:   bucket(i, j) = (j − i) + (n − 1): one scalar per relative distance, 2n − 1 buckets,
//             so the gathered matrix is Toeplitz (the paper's synthetic-task setting).
//   bucketed: the T5 bucket of rel = j − i (32 buckets, max distance 128): exact for small
//             distances, logarithmic bins beyond; bidirectional uses 16 per direction.
#pragma once
#include <cstdint>
#include <string>

#include "tensor/tensor.h"

namespace urpe {

enum class RelativeKind { unique, bucketed };

RelativeKind parse_relative_kind(const std::string& text);  // "unique" | "bucketed"
const char* relative_kind_name(RelativeKind kind);

// T5's _relative_position_bucket for rel = key − query.
int32_t t5_relative_bucket(int64_t relative_position, bool bidirectional, int num_buckets = 32,
                           int max_distance = 128);

// i32 (n, n) bucket map and the number of buckets it uses.
Tensor relative_bucket_map(int64_t n, RelativeKind kind, bool bidirectional, const Device& device = {});
int64_t relative_bucket_count(int64_t n, RelativeKind kind);
// The same buckets as a relative map for ops/urpe_flash_attention: i32 (2n − 1), the value at
// d being the bucket of rel = j − i = d − (n − 1), so no n×n map is needed.
Tensor relative_bucket_vector(int64_t n, RelativeKind kind, bool bidirectional, const Device& device = {});

}  // namespace urpe
