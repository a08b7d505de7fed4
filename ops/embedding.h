// Embedding lookup and gather of per-head tables through an index map.
//
// embedding: out[..., :] = table[ids[...], :]           table: (V, D), ids: i32 (...), out: (..., D)
//   backward: ∂table[v, :] = Σ_{p: ids[p] = v} g[p, :]  (deterministic: each row summed in index
//   order by its owner, never with float atomics)
//   With padding_idx = p ≥ 0 (PyTorch's nn.Embedding(padding_idx=p)): the forward still reads row
//   p as it is, but ∂table[p, :] = 0, so the optimiser never moves that row by its gradient (the
//   official Graphormer's "missing" rows). kNoPadding (the default) keeps every row trained.
// embedding_sum: out[p, :] = Σ_{k < S·G} tables[k / G, ids[p, k], :]
//                                                      tables: (S, V, D), ids: i32 (..., L), out: (..., D)
//   S tables, each read by G consecutive id columns (slot k uses table k / G); columns k ≥ S·G of
//   ids are not read (L ≥ S·G). Graphormer's multi-hop edge term (models/graphormer.h):
//   S = hops, G = bond feature columns, tables[s] = EdgeEmb·W_s / G, so that the per-hop lookups,
//   the per-hop matmul and the sum over hops are one pass over the ids with no (hops, pairs, H)
//   intermediate (and no GEMM whose contraction runs over every pair in its backward).
//   backward: ∂tables[s, v, :] = Σ_{(p, k): k / G = s, ids[p, k] = v} g[p, :]  (every row trained,
//   no padding row; deterministic, no float atomics: on CUDA, fixed per-chunk partials summed in
//   chunk order for tables of one shared tile, sorted fixed-length segments of each row otherwise;
//   ops/embedding_cuda.cu)
// unpack_ids: out[..., k] = (packed[..., k / per] >> bits·(k mod per)) & (2^bits − 1), per = 32 / bits
//   packed: i32 (..., W), W = ceil(columns / per), bits 8 or 16; out: i32 (..., columns). Ids
//   packed on the host (data/graph_batch_maps.h pack_ids) to cut an upload, unpacked on the device.
//   No gradient (indices).
// gather_table: out[h, i, j] = table[h, map[i, j]]      table: (H, K), map: i32 (Nq, Nk)
//   backward: ∂table[h, k] = Σ_{i,j: map[i,j] = k} g[h, i, j]
// Ids out of range are an error naming the op, the bad id and the table size.
#pragma once
#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe {

inline constexpr int64_t kNoPadding = -1;

// padding_idx: kNoPadding or a row in [0, V); any other value is an error naming it.
Tensor embedding(const Tensor& table, const Tensor& ids, int64_t padding_idx = kNoPadding);
// group ≥ 1 id columns per table; ids.size(-1) ≥ tables.size(0)·group.
Tensor embedding_sum(const Tensor& tables, const Tensor& ids, int64_t group = 1);
Tensor unpack_ids(const Tensor& packed, int64_t columns, int bits);
Tensor gather_table(const Tensor& table, const Tensor& map);

namespace kernels {
void embedding_forward_cpu(const Tensor& table, const Tensor& ids, Tensor& out);
void embedding_forward_cuda(const Tensor& table, const Tensor& ids, Tensor& out);
// grad_table is overwritten (not accumulated); its row padding_idx (unless kNoPadding) is zeros.
void embedding_backward_cpu(const Tensor& ids, const Tensor& grad_out, Tensor& grad_table,
                            int64_t padding_idx = kNoPadding);
void embedding_backward_cuda(const Tensor& ids, const Tensor& grad_out, Tensor& grad_table,
                             int64_t padding_idx = kNoPadding);
// ids: (P, L) flat rows; out: (P, D); grad_tables overwritten (S, V, D).
void embedding_sum_forward_cpu(const Tensor& tables, const Tensor& ids, int64_t group, Tensor& out);
void embedding_sum_forward_cuda(const Tensor& tables, const Tensor& ids, int64_t group, Tensor& out);
void embedding_sum_backward_cpu(const Tensor& ids, int64_t group, const Tensor& grad_out, Tensor& grad_tables);
void embedding_sum_backward_cuda(const Tensor& ids, int64_t group, const Tensor& grad_out, Tensor& grad_tables);
void unpack_ids_cpu(const Tensor& packed, int bits, Tensor& out);
void unpack_ids_cuda(const Tensor& packed, int bits, Tensor& out);
void gather_table_forward_cpu(const Tensor& table, const Tensor& map, Tensor& out);
void gather_table_forward_cuda(const Tensor& table, const Tensor& map, Tensor& out);
void gather_table_backward_cpu(const Tensor& map, const Tensor& grad_out, Tensor& grad_table);
void gather_table_backward_cuda(const Tensor& map, const Tensor& grad_out, Tensor& grad_table);
// The smallest and largest value of a device int32 tensor (numel > 0): the public ops' range
// check of CUDA indices reads back these two numbers instead of every index.
struct IndexBounds {
  int32_t low = 0, high = 0;
};
IndexBounds index_bounds_cuda(const Tensor& indices);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// embedding, R ids into a (V, D) table: forward reads the ids and R table rows, writes (R, D);
// backward reads the ids and g (R, D), writes ∂table (V, D) whole, one add per element of g.
inline profile::Cost embedding_forward_cost(int64_t ids, int64_t d) {
  return {0.0, profile::kElementBytes * (double(ids) + 2.0 * double(ids) * d)};
}
inline profile::Cost embedding_backward_cost(int64_t ids, int64_t vocab, int64_t d) {
  return {double(ids) * d, profile::kElementBytes * (double(ids) + double(ids) * d + double(vocab) * d)};
}
// embedding_sum, P rows of K = S·G ids into (S, V, D) tables: forward reads the K ids and K table
// rows of each output row, one add per table element read, writes (P, D); backward reads the ids
// and g (P, D) once, one add per (id, d), writes ∂tables (S, V, D) whole.
inline profile::Cost embedding_sum_forward_cost(int64_t rows, int64_t ids_per_row, int64_t d) {
  const double reads = double(rows) * ids_per_row;
  return {reads * d, profile::kElementBytes * (reads + reads * d + double(rows) * d)};
}
inline profile::Cost embedding_sum_backward_cost(int64_t rows, int64_t ids_per_row, int64_t table_elements, int64_t d) {
  const double reads = double(rows) * ids_per_row;
  return {reads * d, profile::kElementBytes * (reads + double(rows) * d + double(table_elements))};
}
// unpack_ids: reads the packed words, writes the ids (4 bytes each).
inline profile::Cost unpack_ids_cost(int64_t words, int64_t ids) {
  return {0.0, profile::kElementBytes * (double(words) + double(ids))};
}
// gather_table, an (Nq, Nk) map into an (H, K) table: forward reads the map and the table,
// writes (H, Nq, Nk); backward reads the map and g, writes ∂table, one add per element of g.
inline profile::Cost gather_table_forward_cost(int64_t heads, int64_t buckets, int64_t map_elements) {
  return {0.0, profile::kElementBytes * (double(map_elements) + double(heads) * buckets + double(heads) * map_elements)};
}
inline profile::Cost gather_table_backward_cost(int64_t heads, int64_t buckets, int64_t map_elements) {
  return {double(heads) * map_elements,
          profile::kElementBytes * (double(map_elements) + double(heads) * map_elements + double(heads) * buckets)};
}

}  // namespace urpe
