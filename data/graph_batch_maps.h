// The index maps a Graphormer step derives on the host from a batch's shortest-path distances:
// the spatial/virtual-distance lookup ids, the multi-hop divisor, URPE's C bucket map and the key
// padding. Why here, in data/: the collator can make them on its own thread a step ahead
// (CollateOptions::maps), so the training thread only uploads them. On the H200 the three host
// loops held the GPU idle ~1.4 ms of a 38.5 ms ZINC step (bench/results/gpu_h200_2026-11-27.md).
// models/graphormer.cpp calls the same function when a batch comes without them.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace urpe::data {

struct GraphBatch;

// The model settings the maps depend on (models/graphormer.h has their meaning).
struct GraphMapOptions {
  int32_t num_spatial = 40;         // rows of the Spatial table; row num_spatial is the virtual distance t
  int32_t max_spd = 38;             // URPE's C buckets for SPD 0..max_spd, then 3 graph-token buckets
  int32_t multi_hop_max_dist = 20;  // the divisor's clamp
  // Also pack edge_input's ids into 8- or 16-bit fields (GraphBatchMaps::edge_ids_packed): a model
  // on a GPU uploads a quarter (or half) of the bytes and unpacks them there (ops/embedding.h
  // unpack_ids). On the H200 the 15 MB of a ZINC batch's multi-hop ids held the GPU idle 1.45 ms
  // a step (the copy into pinned staging and the transfer; bench/cuda_notes.md).
  bool pack_edge_ids = false;
  // The packing's width: 0, the narrowest that holds the batch's ids (8, else 16 bits); 8 or 16,
  // always that one (fixed shapes: every batch of a captured step packs alike), a batch whose ids
  // do not fit it left unpacked.
  int32_t pack_bits = 0;
  bool operator==(const GraphMapOptions& o) const {
    return num_spatial == o.num_spatial && max_spd == o.max_spd && multi_hop_max_dist == o.multi_hop_max_dist &&
           pack_edge_ids == o.pack_edge_ids && pack_bits == o.pack_bits;
  }
};

// Host tensors, n the batch's node count (padded), B its graphs.
struct GraphBatchMaps {
  bool made = false;        // false: the batch came without maps (the model makes them)
  GraphMapOptions options;  // what they were made for; a model with other settings ignores them
  Tensor joint_ids;         // i32 (B, n+1, n+1): Spatial[min(spd, num_spatial − 1)], t on the graph token's row/column
  Tensor divisor;           // f32 (B, n, n): clamp(spd − 1 for real pairs, 1 for self and padding) to [.., max dist]
  Tensor c_map;             // i32 (B, n+1, n+1): URPE's C bucket of each pair
  int32_t c_map_low = 0, c_map_high = 0;  // the range of c_map's values, measured while making it
  Tensor key_padding;       // i32 (B, n+1): 1 on padded nodes
  // The bounds of edge_input's ids, when the collator measured them (while it had the ids in its
  // cache, on its own thread): the model then checks them against its edge table without reading
  // bounds back from the device. Not set by graph_batch_maps (the model's own thread would pay a
  // pass over millions of ids).
  bool edge_ids_bounded = false;
  int32_t edge_id_low = 0, edge_id_high = -1;  // an empty edge_input: no id
  // With options.pack_edge_ids, when every id fits 8 (else 16) bits: edge_input (B, n, n, L) with
  // `per = 32 / edge_id_bits` ids to an i32 word, (B, n, n, ceil(L / per)); id k of a row in
  // bits [edge_id_bits·(k mod per), …) of word k / per. Undefined otherwise (ids too large).
  Tensor edge_ids_packed;
  int32_t edge_id_bits = 0;
};

// With options.pack_edge_ids, also measures edge_input's bounds (edge_ids_bounded) and packs it.
GraphBatchMaps graph_batch_maps(const GraphBatch& batch, const GraphMapOptions& options);

// ids (..., L), every value in [0, 2^bits), bits 8 or 16 → (..., ceil(L·bits / 32)) packed as above.
Tensor pack_ids(const Tensor& ids, int32_t bits);

// The smallest and largest of `count` ids (count > 0). A plain loop the compiler vectorises:
// std::minmax_element's branchy scan took 3.2 ms over a ZINC batch's 3.9M multi-hop ids on the
// development machine, this about a tenth of it (bench/cuda_notes.md, "The Graphormer step").
struct IdRange {
  int32_t low, high;
};
IdRange id_range(const int32_t* ids, int64_t count);

}  // namespace urpe::data
