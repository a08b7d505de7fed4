// The table, map and key-padding checks of both URPE attention ops (see the header), and the bucket
// map value check with its per-storage cache of value ranges.
#include "ops/urpe_attention_checks.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "tensor/error.h"

namespace urpe {

namespace {

// "the scores f32 (2, 3, 4, 4) on cpu", "q f32 (…) on cpu and k f32 (…) on cpu".
std::string inputs_of(const UrpeAttentionArgs& a) {
  std::string text = std::string(a.input_name) + " " + a.input->describe();
  if (a.other) text += std::string(" and ") + a.other_name + " " + a.other->describe();
  return text;
}

// The shapes a map may have, named by their sizes: "(Nq, Nk) = (4, 4) or (Bsz, Nq, Nk) = (2, 4, 4)".
std::string map_shapes(const UrpeAttentionArgs& a) {
  std::ostringstream out;
  if (a.relative_maps) out << "(Nq + Nk − 1,) = " << shape_str({a.nq + a.nk - 1}) << " (relative: bucket of j − i), ";
  out << "(Nq, Nk) = " << shape_str({a.nq, a.nk}) << " or (Bsz, Nq, Nk) = " << shape_str({a.bsz, a.nq, a.nk});
  return out.str();
}

void check_table(const UrpeAttentionArgs& a, const char* arg, const Tensor& table) {
  check_dtype(a.op, arg, table, DType::f32);
  URPE_CHECK(table.dim() == 2 && table.size(0) == a.heads,
             a.op << ": " << arg << " " << table.describe() << " must have shape (H, K) with H = " << a.heads
                  << " heads, like " << inputs_of(a));
  check_same_device(a.op, *a.input, table);
}

// A map is (Nq, Nk) shared by the batch, (Bsz, Nq, Nk) per batch item or, for the fused op,
// relative (Nq + Nk − 1,), with every value in [0, buckets). The values are read on the host (one
// copy for a CUDA map): an index out of range would otherwise be a wild read inside a kernel.
void check_map(const UrpeAttentionArgs& a, const char* arg, const Tensor& map, const char* table_arg,
               const Tensor& table) {
  URPE_CHECK(map.defined(), a.op << ": " << table_arg << " " << table.describe() << " is given but " << arg
                                 << " is missing (an i32 map of shape " << map_shapes(a) << ")");
  check_dtype(a.op, arg, map, DType::i32);
  check_same_device(a.op, *a.input, map);
  const Shape& s = map.shape();
  const bool fits = s == Shape{a.nq, a.nk} || s == Shape{a.bsz, a.nq, a.nk} ||
                    (a.relative_maps && s == Shape{a.nq + a.nk - 1});
  URPE_CHECK(fits, a.op << ": " << arg << " " << map.describe() << " must have shape " << map_shapes(a)
                        << " to match " << inputs_of(a));
  check_bucket_map_values(a.op, arg, map, table_arg, table);
}

// A table with its map, or neither.
void check_table_and_map(const UrpeAttentionArgs& a, const char* table_arg, const Tensor& table, const char* map_arg,
                         const Tensor& map) {
  if (table.defined()) {
    check_table(a, table_arg, table);
    check_map(a, map_arg, map, table_arg, table);
  } else {
    URPE_CHECK(!map.defined(), a.op << ": " << map_arg << " " << map.describe() << " is given without a " << table_arg);
  }
}

}  // namespace

void check_urpe_attention_tables(const UrpeAttentionArgs& a, const UrpeAttentionParams& p) {
  check_table_and_map(a, "bias_table", p.bias_table, "bias_map", p.bias_map);
  check_table_and_map(a, "c_table", p.c_table, "c_map", p.c_map);
  if (p.key_padding.defined()) {
    check_dtype(a.op, "key_padding", p.key_padding, DType::i32);
    URPE_CHECK(p.key_padding.shape() == (Shape{a.bsz, a.nk}),
               a.op << ": key_padding " << p.key_padding.describe() << " must have shape (Bsz, Nk) = "
                    << shape_str({a.bsz, a.nk}) << " to match " << inputs_of(a));
    check_same_device(a.op, *a.input, p.key_padding);
  }
}

// ---- map values ----

// The value range of each map already read, by storage. A model builds its maps once and passes
// the same tensors on every call; reading a CUDA map back to the host on every call put a
// device→host copy and a stream synchronisation on every step's hot path. Entries hold the
// storage weakly: a freed map drops out, and a new one at the same address is a new storage.
namespace {

struct MapRange {
  std::weak_ptr<Storage> storage;
  const Storage* key = nullptr;
  Shape shape;
  int32_t min = 0, max = -1;
  bool diagonal_constant = false;
};

std::mutex g_map_ranges_mutex;
std::vector<MapRange> g_map_ranges;  // few entries: one per distinct map tensor alive
constexpr size_t kMaxMapRanges = 64;

// The cached [min, max] of map's values, if this storage was read before.
bool cached_range(const Tensor& map, int32_t& min, int32_t& max) {
  const std::lock_guard<std::mutex> lock(g_map_ranges_mutex);
  for (const MapRange& r : g_map_ranges)
    if (r.key == map.impl().storage.get() && !r.storage.expired() && r.shape == map.shape()) {
      min = r.min;
      max = r.max;
      return true;
    }
  return false;
}

void remember_range(const Tensor& map, int32_t min, int32_t max, bool diagonal_constant) {
  const std::lock_guard<std::mutex> lock(g_map_ranges_mutex);
  g_map_ranges.erase(std::remove_if(g_map_ranges.begin(), g_map_ranges.end(),
                                    [](const MapRange& r) { return r.storage.expired(); }),
                     g_map_ranges.end());
  if (g_map_ranges.size() >= kMaxMapRanges) g_map_ranges.erase(g_map_ranges.begin());  // oldest
  g_map_ranges.push_back({map.impl().storage, map.impl().storage.get(), map.shape(), min, max,
                          diagonal_constant});
}

// A (Nq, Nk) map whose value depends only on j − i: every cell equals its upper-left neighbour.
bool is_diagonal_constant(const std::vector<int32_t>& values, const Shape& shape) {
  if (shape.size() != 2) return false;
  const int64_t nq = shape[0], nk = shape[1];
  for (int64_t i = 1; i < nq; ++i)
    for (int64_t j = 1; j < nk; ++j)
      if (values[i * nk + j] != values[(i - 1) * nk + j - 1]) return false;
  return true;
}

}  // namespace

void note_bucket_map_range(const Tensor& map, int32_t min, int32_t max) {
  URPE_CHECK(map.defined() && map.dtype() == DType::i32,
             "note_bucket_map_range: the map must be a defined i32 tensor, got " << map.describe());
  URPE_CHECK(map.numel() == 0 || min <= max, "note_bucket_map_range: range [" << min << ", " << max << "] is empty");
  if (map.numel() > 0) remember_range(map, min, max, false);
}

bool bucket_map_is_diagonal_constant(const Tensor& map) {
  const std::lock_guard<std::mutex> lock(g_map_ranges_mutex);
  for (const MapRange& r : g_map_ranges)
    if (r.key == map.impl().storage.get() && !r.storage.expired() && r.shape == map.shape())
      return r.diagonal_constant;
  return false;
}

void check_bucket_map_values(const char* op, const char* arg, const Tensor& map, const char* table_arg,
                             const Tensor& table) {
  const int64_t buckets = table.size(1);
  int32_t min = 0, max = -1;
  if (cached_range(map, min, max) && (map.numel() == 0 || (min >= 0 && max < buckets))) return;
  // First time this map is seen (or its range does not fit this table): read every value, so a
  // bad one is named with its position.
  const std::vector<int32_t> values = map.to_vector_i32();
  for (size_t k = 0; k < values.size(); ++k) {
    URPE_CHECK(values[k] >= 0 && values[k] < buckets,
               op << ": " << arg << " " << map.describe() << " has value " << values[k]
                  << " at flat index " << k << ", outside [0, " << buckets << ") = the bucket "
                  << "count of " << table_arg << " " << table.describe());
    min = k == 0 ? values[k] : std::min(min, values[k]);
    max = k == 0 ? values[k] : std::max(max, values[k]);
  }
  if (!values.empty()) remember_range(map, min, max, is_diagonal_constant(values, map.shape()));
}

}  // namespace urpe
