// The host-side index maps of a Graphormer batch (why they live in data/: graph_batch_maps.h).
#include "data/graph_batch_maps.h"

#include <algorithm>
#include <vector>

#include "data/molecule_dataset.h"

namespace urpe::data {

namespace {

// Word w of a row holds ids w·per … w·per + per − 1, id k in bits [bits·(k mod per), …); the
// last word's missing ids are 0. Every id is known to fit (pack_ids checks, graph_batch_maps
// measured the range). With `per` a constant the inner loop has no division and unrolls:
// 7.7 ms → about 1 ms for a ZINC batch on the development machine.
template <int32_t bits>
void pack_rows(const int32_t* in, uint32_t* out, int64_t rows, int64_t L, int64_t W) {
  constexpr int64_t per = 32 / bits;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* row = in + r * L;  // (L,)
    uint32_t* words = out + r * W;    // (W,)
    for (int64_t w = 0; w < W; ++w) {
      uint32_t word = 0;
      for (int64_t s = 0; s < per; ++s) {
        const int64_t k = w * per + s;
        if (k < L) word |= uint32_t(row[k]) << (bits * s);
      }
      words[w] = word;
    }
  }
}

// pack_ids without the range check: ids (..., L) → (..., ceil(L / per)).
Tensor pack_checked_ids(const Tensor& ids, int32_t bits) {
  const int64_t L = ids.size(-1), rows = L == 0 ? 0 : ids.numel() / L, per = 32 / bits;
  const int64_t W = (L + per - 1) / per;
  Shape shape = ids.shape();
  shape.back() = W;
  Tensor packed = Tensor::empty(shape, DType::i32);  // every word is written
  uint32_t* out = reinterpret_cast<uint32_t*>(packed.i32());
  if (bits == 8)
    pack_rows<8>(ids.i32(), out, rows, L, W);
  else
    pack_rows<16>(ids.i32(), out, rows, L, W);
  return packed;
}

}  // namespace

GraphBatchMaps graph_batch_maps(const GraphBatch& batch, const GraphMapOptions& options) {
  const int64_t B = batch.x.size(0), n = batch.x.size(1), n1 = n + 1, M = B * n * n;
  const std::vector<int32_t> spatial = batch.spatial_pos.to_vector_i32();  // (B, n, n): SPD + 1, 0 = padding
  GraphBatchMaps maps;
  maps.made = true;
  maps.options = options;

  // Spatial + virtual distance in one lookup: node pairs read Spatial[min(spatial_pos,
  // num_spatial − 1)], the graph token's row and column read t (row num_spatial).
  const int32_t virtual_row = options.num_spatial;
  std::vector<int32_t> ids(B * n1 * n1, virtual_row);
  for (int64_t g = 0; g < B; ++g)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        ids[(g * n1 + i + 1) * n1 + j + 1] = std::min<int32_t>(spatial[(g * n + i) * n + j], virtual_row - 1);
  maps.joint_ids = Tensor::from_vector(ids, {B, n1, n1});

  // Divisor sp': SPD for real pairs (spatial_pos − 1), 1 for self and padding, clamped to
  // [0, multi_hop_max_dist].
  std::vector<float> divisor(M);
  for (int64_t m = 0; m < M; ++m) {
    int64_t sp = spatial[m] == 0 ? 1 : spatial[m];
    if (sp > 1) sp -= 1;
    divisor[m] = static_cast<float>(std::min<int64_t>(sp, options.multi_hop_max_dist));
  }
  maps.divisor = Tensor::from_vector(divisor, {B, n, n});

  // URPE's C buckets: min(SPD, max_spd) for node pairs, then graph token → node (max_spd + 1),
  // node → graph token (max_spd + 2), the graph token itself (max_spd + 3). Padding (sp = 0) maps
  // to bucket 0: padded keys are masked (A = 0) and padded query rows never reach the graph
  // token, so the value there is never used.
  const int32_t max_spd = options.max_spd;
  std::vector<int32_t> map(B * n1 * n1, 0);
  for (int64_t g = 0; g < B; ++g) {
    int32_t* m = map.data() + g * n1 * n1;
    m[0] = max_spd + 3;
    for (int64_t j = 1; j < n1; ++j) m[j] = max_spd + 1;
    for (int64_t i = 1; i < n1; ++i) {
      m[i * n1] = max_spd + 2;
      for (int64_t j = 1; j < n1; ++j) {
        const int32_t sp = spatial[(g * n + i - 1) * n + j - 1];
        m[i * n1 + j] = sp == 0 ? 0 : std::min(sp - 1, max_spd);
      }
    }
  }
  maps.c_map = Tensor::from_vector(map, {B, n1, n1});
  const auto [low, high] = std::minmax_element(map.begin(), map.end());
  maps.c_map_low = *low;
  maps.c_map_high = *high;

  // Key padding: 1 on the padded nodes (index > num_nodes[b]); the graph token never.
  const std::vector<int32_t> nodes = batch.num_nodes.to_vector_i32();
  std::vector<int32_t> mask(B * n1, 0);
  for (int64_t g = 0; g < B; ++g)
    for (int64_t j = nodes[g] + 1; j < n1; ++j) mask[g * n1 + j] = 1;
  maps.key_padding = Tensor::from_vector(mask, {B, n1});

  // The multi-hop ids' bounds, and the ids packed into the narrowest fields that hold them.
  if (options.pack_edge_ids) {
    const int64_t count = batch.edge_input.numel();
    maps.edge_ids_bounded = true;
    if (count > 0) {
      const IdRange range = id_range(batch.edge_input.i32(), count);
      maps.edge_id_low = range.low;
      maps.edge_id_high = range.high;
    }
    URPE_CHECK(options.pack_bits == 0 || options.pack_bits == 8 || options.pack_bits == 16,
               "graph_batch_maps: pack_bits must be 0, 8 or 16, got " << options.pack_bits);
    const int32_t bits = options.pack_bits > 0 ? options.pack_bits : maps.edge_id_high < (1 << 8) ? 8 : 16;
    if (count > 0 && maps.edge_id_low >= 0 && maps.edge_id_high < (1 << bits)) {
      maps.edge_id_bits = bits;
      maps.edge_ids_packed = pack_checked_ids(batch.edge_input, maps.edge_id_bits);
    }
  }
  return maps;
}

IdRange id_range(const int32_t* ids, int64_t count) {
  int32_t low = ids[0], high = ids[0];
  for (int64_t i = 1; i < count; ++i) {
    low = std::min(low, ids[i]);
    high = std::max(high, ids[i]);
  }
  return {low, high};
}

Tensor pack_ids(const Tensor& ids, int32_t bits) {
  URPE_CHECK(ids.dtype() == DType::i32 && ids.dim() >= 1, "pack_ids: expected i32 ids, got " << ids.describe());
  URPE_CHECK(bits == 8 || bits == 16, "pack_ids: bits must be 8 or 16, got " << bits);
  const int32_t* in = ids.i32();
  const int64_t count = ids.numel();
  const int64_t limit = int64_t(1) << bits;
  if (count > 0) {
    const IdRange range = id_range(in, count);
    if (range.low < 0 || range.high >= limit) {  // name the first id that does not fit
      const int32_t* bad = std::find_if(in, in + count, [limit](int32_t id) { return id < 0 || id >= limit; });
      URPE_CHECK(false, "pack_ids: id " << *bad << " at flat index " << bad - in << " does not fit " << bits << " bits");
    }
  }
  return pack_checked_ids(ids, bits);
}

}  // namespace urpe::data
