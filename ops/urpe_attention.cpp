// Public URPE attention core: validation of every argument (shapes, dtypes, devices, map values),
// dispatch to urpe_attention_cpu.cpp / urpe_attention_cuda.cu, and autograd for scores and the two
// tables. The maths is in urpe_attention.h.
#include "ops/urpe_attention.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

#include "autograd/node.h"
#include "ops/dispatch.h"

namespace urpe {

namespace {

constexpr const char* kOp = "urpe_attention";

// A bucket map is (Nq, Nk) shared by the batch, or (Bsz, Nq, Nk) per batch item, with every value
// in [0, buckets). The value check reads the map on the host (one copy for a CUDA map): an index
// out of range would otherwise be an out-of-bounds read inside the kernel.
void check_map(const char* arg, const Tensor& map, const char* table_arg, const Tensor& table,
               const Tensor& scores) {
  const int64_t bsz = scores.size(0), nq = scores.size(2), nk = scores.size(3);
  URPE_CHECK(map.defined(), kOp << ": " << table_arg << " " << table.describe() << " is given but "
                                << arg << " is missing (an i32 map of shape (Nq, Nk) = ("
                                << nq << ", " << nk << ") or (Bsz, Nq, Nk))");
  check_dtype(kOp, arg, map, DType::i32);
  check_same_device(kOp, scores, map);
  const Shape shared{nq, nk}, per_batch{bsz, nq, nk};
  URPE_CHECK(map.shape() == shared || map.shape() == per_batch,
             kOp << ": " << arg << " " << map.describe() << " must have shape "
                 << shape_str(shared) << " or " << shape_str(per_batch)
                 << " to match the scores");
  check_bucket_map_values(kOp, arg, map, table_arg, table);
}

void check_table(const char* arg, const Tensor& table, const Tensor& scores, int64_t heads) {
  check_dtype(kOp, arg, table, DType::f32);
  URPE_CHECK(table.dim() == 2 && table.size(0) == heads,
             kOp << ": " << arg << " " << table.describe() << " must have shape (H, K) with H = "
                 << heads << " heads, like the scores " << scores.describe());
  check_same_device(kOp, scores, table);
}

void validate(const Tensor& scores, const UrpeAttentionParams& p) {
  check_dtype(kOp, "scores", scores, DType::f32);
  URPE_CHECK(scores.dim() == 4, kOp << ": scores " << scores.describe()
                                    << " must be 4-D (Bsz, H, Nq, Nk)");
  URPE_CHECK(std::isfinite(p.scale), kOp << ": scale must be finite, got " << p.scale);
  const int64_t bsz = scores.size(0), heads = scores.size(1), nk = scores.size(3);
  if (p.bias_table.defined()) {
    check_table("bias_table", p.bias_table, scores, heads);
    check_map("bias_map", p.bias_map, "bias_table", p.bias_table, scores);
  } else {
    URPE_CHECK(!p.bias_map.defined(), kOp << ": bias_map " << p.bias_map.describe()
                                          << " is given without a bias_table");
  }
  if (p.c_table.defined()) {
    check_table("c_table", p.c_table, scores, heads);
    check_map("c_map", p.c_map, "c_table", p.c_table, scores);
  } else {
    URPE_CHECK(!p.c_map.defined(),
               kOp << ": c_map " << p.c_map.describe() << " is given without a c_table");
  }
  if (p.key_padding.defined()) {
    check_dtype(kOp, "key_padding", p.key_padding, DType::i32);
    URPE_CHECK(p.key_padding.shape() == (Shape{bsz, nk}),
               kOp << ": key_padding " << p.key_padding.describe() << " must have shape (Bsz, Nk) = "
                   << shape_str({bsz, nk}) << " to match the scores " << scores.describe());
    check_same_device(kOp, scores, p.key_padding);
  }
}

}  // namespace

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

void remember_range(const Tensor& map, int32_t min, int32_t max) {
  const std::lock_guard<std::mutex> lock(g_map_ranges_mutex);
  g_map_ranges.erase(std::remove_if(g_map_ranges.begin(), g_map_ranges.end(),
                                    [](const MapRange& r) { return r.storage.expired(); }),
                     g_map_ranges.end());
  if (g_map_ranges.size() >= kMaxMapRanges) g_map_ranges.erase(g_map_ranges.begin());  // oldest
  g_map_ranges.push_back({map.impl().storage, map.impl().storage.get(), map.shape(), min, max});
}

}  // namespace

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
  }
  if (!values.empty()) {
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    remember_range(map, *lo, *hi);
  }
}

// ---- forward and backward ----

Tensor urpe_attention(const Tensor& scores, const UrpeAttentionParams& params) {
  validate(scores, params);
  // P is kept only for a backward; with gradients off (NoGrad, or nothing requires one) the
  // kernels write A alone, so inference holds one (Bsz, H, Nq, Nk) tensor here, not two.
  const bool saving = autograd::needs_grad({scores, params.bias_table, params.c_table});
  Tensor probs = saving ? Tensor::empty(scores.shape(), DType::f32, scores.device())  // (Bsz, H, Nq, Nk)
                        : Tensor();
  Tensor out = Tensor::empty(scores.shape(), DType::f32, scores.device());    // (Bsz, H, Nq, Nk)
  URPE_DISPATCH(kOp, scores.device(),
                kernels::urpe_attention_forward_cpu(scores, params, probs, out),
                kernels::urpe_attention_forward_cuda(scores, params, probs, out));

  // The node's inputs are the three differentiable tensors (undefined tables are skipped by the
  // engine); the maps, masks and P are captured for the backward.
  return autograd::record(
      out, kOp, {scores, params.bias_table, params.c_table},
      [params, probs](const Tensor& grad_out) {
        Tensor grad_scores = Tensor::empty(probs.shape(), DType::f32, probs.device());
        Tensor grad_bias, grad_c;
        if (params.bias_table.defined() && params.bias_table.requires_grad())
          grad_bias = Tensor::empty(params.bias_table.shape(), DType::f32, probs.device());
        if (params.c_table.defined() && params.c_table.requires_grad())
          grad_c = Tensor::empty(params.c_table.shape(), DType::f32, probs.device());
        Tensor* gb = grad_bias.defined() ? &grad_bias : nullptr;
        Tensor* gc = grad_c.defined() ? &grad_c : nullptr;
        URPE_DISPATCH(kOp, grad_out.device(),
                      kernels::urpe_attention_backward_cpu(grad_out, probs, params, grad_scores, gb, gc),
                      kernels::urpe_attention_backward_cuda(grad_out, probs, params, grad_scores, gb, gc));
        return std::vector<Tensor>{grad_scores, grad_bias, grad_c};
      });
}

// ---- the normalisation ----

AttentionNorm parse_attention_norm(const std::string& text) {
  if (text == "softmax") return AttentionNorm::softmax;
  if (text == "exp") return AttentionNorm::exp;
  URPE_FAIL("attention_norm '" << text << "': expected softmax or exp");
}

const char* attention_norm_name(AttentionNorm norm) {
  return norm == AttentionNorm::exp ? "exp" : "softmax";
}

// ---- the "unique" Toeplitz map ----

Tensor toeplitz_map(int64_t nq, int64_t nk, const Device& device) {
  URPE_CHECK(nq >= 1 && nk >= 1, "toeplitz_map: sizes must be at least 1, got nq = " << nq
                                                                                    << ", nk = " << nk);
  URPE_CHECK(nq + nk - 1 <= INT32_MAX, "toeplitz_map: nq + nk − 1 = " << nq + nk - 1
                                                                      << " buckets do not fit i32");
  std::vector<int32_t> values(static_cast<size_t>(nq * nk));  // (nq, nk)
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t j = 0; j < nk; ++j) values[i * nk + j] = static_cast<int32_t>(j - i + nq - 1);
  return Tensor::from_vector(values, {nq, nk}).to(device);
}

}  // namespace urpe
