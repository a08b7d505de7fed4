// The host-side index maps of a Graphormer batch (why they live in data/: graph_batch_maps.h).
#include "data/graph_batch_maps.h"

#include <algorithm>
#include <vector>

#include "data/molecule_dataset.h"

namespace urpe::data {

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
    const int32_t* edge = batch.edge_input.i32();
    const int64_t count = batch.edge_input.numel();
    maps.edge_ids_bounded = true;
    if (count > 0) {
      const auto [lo, hi] = std::minmax_element(edge, edge + count);
      maps.edge_id_low = *lo;
      maps.edge_id_high = *hi;
    }
    if (count > 0 && maps.edge_id_low >= 0 && maps.edge_id_high < (1 << 16)) {
      maps.edge_id_bits = maps.edge_id_high < (1 << 8) ? 8 : 16;
      maps.edge_ids_packed = pack_ids(batch.edge_input, maps.edge_id_bits);
    }
  }
  return maps;
}

Tensor pack_ids(const Tensor& ids, int32_t bits) {
  URPE_CHECK(ids.dtype() == DType::i32 && ids.dim() >= 1, "pack_ids: expected i32 ids, got " << ids.describe());
  URPE_CHECK(bits == 8 || bits == 16, "pack_ids: bits must be 8 or 16, got " << bits);
  const int64_t L = ids.size(-1), rows = L == 0 ? 0 : ids.numel() / L, per = 32 / bits;
  const int64_t W = (L + per - 1) / per;
  Shape shape = ids.shape();
  shape.back() = W;
  Tensor packed = Tensor::zeros(shape, DType::i32);
  const int32_t* in = ids.i32();
  uint32_t* out = reinterpret_cast<uint32_t*>(packed.i32());
  const uint32_t limit = uint32_t(1) << bits;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < L; ++k) {
      const int32_t id = in[r * L + k];
      URPE_CHECK(id >= 0 && uint32_t(id) < limit,
                 "pack_ids: id " << id << " at flat index " << r * L + k << " does not fit " << bits << " bits");
      out[r * W + k / per] |= uint32_t(id) << (bits * (k % per));
    }
  return packed;
}

}  // namespace urpe::data
