// The Graphormer collator (GV2 graphormer/data/collator.py on top of wrapper.py's preprocess_item,
// with BFS in place of Floyd–Warshall): rows of a MoleculeDataset → one padded GraphBatch (the
// layout at the top of data/molecule_dataset.h).
//
// It runs on the host for every training step (the Graphormer trainer runs it a step ahead on a
// second thread, so that a GPU need not wait for it). Per graph: one BFS per atom (shortest_paths,
// O(N·(N+E))); then every (i, j) pair writes its entries straight into the batch's tensors; the
// hops of the kept path i → j are read by walking BFS parents back from j (shortest_path_edge_types'
// walk, without a vector per pair). The output is O(B·n²·D) ids, so writing it is the bound.
#include <algorithm>
#include <limits>
#include <vector>

#include "data/molecule_dataset.h"
#include "tensor/error.h"

namespace urpe::data {

namespace {

// Everything of one graph that the batch holds (slot b of B, padded to n nodes, D hops).
struct BatchSlot {
  int64_t b, n, n1, D;
  int32_t F, Fe;               // feature columns (0: the single atom / bond type)
  int32_t spatial_pos_max;
  int64_t own_hops;            // the batch's own D: hops [own_hops, D) are absent (fixed shapes)
  int32_t absent_hop_id;
};

// Pointers into the batch's tensors (their layout: data/molecule_dataset.h).
struct BatchOut {
  int32_t* x;               // (B, n) or (B, n, F)
  int32_t* in_degree;       // (B, n)
  int32_t* spatial_pos;     // (B, n, n)
  int32_t* attn_edge_type;  // (B, n, n)
  int32_t* edge_input;      // (B, n, n, D·Fb)
  float* attn_bias;         // (B, n+1, n+1)
};

// Writes graph g into slot s of the batch (the padding stays as zeroed, except attn_bias's −∞).
void write_graph(const MoleculeGraph& g, const ShortestPaths& p, const BatchSlot& s, const BatchOut& out) {
  const int32_t N = g.num_nodes, F = s.F, Fe = s.Fe;
  const int64_t b = s.b, n = s.n, n1 = s.n1, D = s.D, Fb = std::max(1, Fe);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int32_t i = 0; i < N; ++i) {
    if (F == 0) out.x[b * n + i] = g.node_type[i] + 2;
    for (int32_t f = 0; f < F; ++f) out.x[(b * n + i) * F + f] = g.atom_features[i * F + f] + 2 + kFeatureIdOffset * f;
    out.in_degree[b * n + i] = static_cast<int32_t>(g.neighbours[i].size()) + 1;
  }
  std::vector<int32_t> bond_at;  // (N, N) bond index, with feature columns
  if (Fe > 0) {
    bond_at.assign(static_cast<size_t>(N) * N, -1);
    for (size_t e = 0; e < g.edge_begin.size(); ++e)
      bond_at[static_cast<size_t>(g.edge_begin[e]) * N + g.edge_end[e]] =
          bond_at[static_cast<size_t>(g.edge_end[e]) * N + g.edge_begin[e]] = static_cast<int32_t>(e);
  }
  float* bias = out.attn_bias + b * n1 * n1;  // (n+1, n+1), graph token at 0
  for (int32_t i = 0; i < N; ++i) {
    const int32_t* parent = &p.parent[static_cast<size_t>(i) * N];  // (N,) the i → · paths
    for (int32_t j = 0; j < N; ++j) {
      const int64_t ij = (b * n + i) * n + j;
      const int32_t spd = p.distance[static_cast<size_t>(i) * N + j];
      out.spatial_pos[ij] = spd + 1;
      const int32_t bond = g.edge_type_matrix[static_cast<size_t>(i) * N + j];
      if (bond) out.attn_edge_type[ij] = bond + 2;
      if (spd >= s.spatial_pos_max) bias[(i + 1) * n1 + (j + 1)] = neg_inf;
      // Hop h of the kept path i → j is the bond parent(node) → node, walking back from j; only
      // the first D hops are kept. None for i == j or unreachable pairs (no parent).
      if (i == j || parent[j] < 0) continue;
      int32_t* hops = out.edge_input + ij * D * Fb;  // (D, Fb) hop-major
      int32_t node = j;
      for (int32_t hop = spd - 1; hop >= 0; --hop) {
        const int32_t before = parent[node];
        if (hop < D) {
          if (Fe == 0) {
            hops[hop] = g.edge_type_matrix[static_cast<size_t>(before) * N + node] + 3;
          } else {
            const int32_t e = bond_at[static_cast<size_t>(before) * N + node];
            for (int32_t f = 0; f < Fe; ++f)
              hops[hop * Fe + f] = g.bond_features[e * Fe + f] + 3 + kFeatureIdOffset * f;
          }
        }
        node = before;
      }
    }
  }
  // Padding: padded keys are −inf for every query; padded query rows keep 0 over real keys.
  for (int64_t q = 0; q < n1; ++q)
    for (int64_t k = N + 1; k < n1; ++k) bias[q * n1 + k] = neg_inf;
  // Fixed shapes: hops past the batch's own D are absent in every pair of the slot (padding too).
  if (s.own_hops < D)
    for (int64_t ij = b * n * n; ij < (b + 1) * n * n; ++ij)
      std::fill(out.edge_input + (ij * D + s.own_hops) * Fb, out.edge_input + (ij + 1) * D * Fb, s.absent_hop_id);
}

}  // namespace

GraphBatch collate_graphs(const MoleculeDataset& dataset, const std::vector<int64_t>& indices,
                          const CollateOptions& options) {
  URPE_CHECK(options.multi_hop_max_dist >= 1, "collate_graphs: expected multi_hop_max_dist >= 1, got "
                                                  << options.multi_hop_max_dist);
  const bool fixed = options.fixed_nodes > 0 || options.fixed_hops > 0 || options.absent_hop_id > 0;
  URPE_CHECK(!fixed || (options.fixed_nodes > 0 && options.fixed_hops > 0 && options.absent_hop_id > 0),
             "collate_graphs: fixed shapes need fixed_nodes, fixed_hops and absent_hop_id all positive, got "
                 << options.fixed_nodes << ", " << options.fixed_hops << ", " << options.absent_hop_id);
  GraphBatch batch;
  for (int64_t index : indices) {
    URPE_CHECK(index >= 0 && static_cast<size_t>(index) < dataset.size(),
               "collate_graphs: row " << index << " is outside the dataset of " << dataset.size() << " graphs");
    URPE_CHECK(!fixed || dataset.graphs[index].num_nodes <= options.fixed_nodes,
               "collate_graphs: row " << index << " has " << dataset.graphs[index].num_nodes
                                      << " nodes, more than the fixed batch shape's " << options.fixed_nodes
                                      << " (cuda_graph = on pads every batch to one node count, the training "
                                         "split's largest molecule)");
    if (dataset.graphs[index].num_nodes > options.max_nodes) {
      ++batch.num_dropped;
      continue;
    }
    batch.indices.push_back(index);
  }
  URPE_CHECK(!batch.indices.empty(), "collate_graphs: every graph of the batch has more than max_nodes = "
                                         << options.max_nodes << " nodes (or the batch is empty)");

  const int64_t B = static_cast<int64_t>(batch.indices.size());
  // Feature columns: the same counts in every graph of the batch (0 = the single type).
  const int32_t F = dataset.graphs[batch.indices[0]].atom_feature_count;
  const int32_t Fe = dataset.graphs[batch.indices[0]].bond_feature_count;
  for (int64_t index : batch.indices)
    URPE_CHECK(dataset.graphs[index].atom_feature_count == F && dataset.graphs[index].bond_feature_count == Fe,
               "collate_graphs: row " << index << " has " << dataset.graphs[index].atom_feature_count << " atom and "
                                      << dataset.graphs[index].bond_feature_count << " bond feature columns, row "
                                      << batch.indices[0] << " " << F << " and " << Fe);
  const int64_t Fx = std::max(1, F), Fb = std::max(1, Fe);
  // Every graph's paths first: the batch's hop count D depends on all of them.
  std::vector<ShortestPaths> paths(B);
  for (int64_t b = 0; b < B; ++b) paths[b] = shortest_paths(dataset.graphs[batch.indices[b]]);
  int32_t n = 0, longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    n = std::max(n, dataset.graphs[batch.indices[b]].num_nodes);
    longest = std::max(longest, paths[b].max_distance);
  }
  const int32_t own_hops = std::max(1, std::min(longest, options.multi_hop_max_dist));
  URPE_CHECK(!fixed || own_hops <= options.fixed_hops,
             "collate_graphs: the batch needs " << own_hops << " hops, more than the fixed batch shape's "
                                                << options.fixed_hops);
  const int32_t D = fixed ? options.fixed_hops : own_hops;
  if (fixed) {
    n = options.fixed_nodes;
    batch.absent_hop_id = options.absent_hop_id;
  }
  const int64_t n1 = n + 1;

  batch.x = F == 0 ? Tensor::zeros({B, n}, DType::i32) : Tensor::zeros({B, n, Fx}, DType::i32);
  batch.bond_features = Fb;
  batch.in_degree = Tensor::zeros({B, n}, DType::i32);
  batch.spatial_pos = Tensor::zeros({B, n, n}, DType::i32);
  batch.attn_edge_type = Tensor::zeros({B, n, n}, DType::i32);
  batch.edge_input = Tensor::zeros({B, n, n, D * Fb}, DType::i32);
  batch.attn_bias = Tensor::zeros({B, n1, n1}, DType::f32);
  batch.y = Tensor::empty({B}, DType::f32);
  batch.num_nodes = Tensor::empty({B}, DType::i32);
  const BatchOut out{batch.x.i32(),          batch.in_degree.i32(),  batch.spatial_pos.i32(),
                     batch.attn_edge_type.i32(), batch.edge_input.i32(), batch.attn_bias.f32()};
  for (int64_t b = 0; b < B; ++b) {
    const MoleculeGraph& g = dataset.graphs[batch.indices[b]];
    write_graph(g, paths[b], BatchSlot{b, n, n1, D, F, Fe, options.spatial_pos_max, own_hops, options.absent_hop_id},
                out);
    batch.num_nodes.i32()[b] = g.num_nodes;
    batch.y.f32()[b] = dataset.targets[batch.indices[b]];
  }
  if (options.maps) batch.maps = graph_batch_maps(batch, *options.maps);
  if (options.maps && !batch.maps.edge_ids_bounded) {  // (packing measured them already)
    const int64_t count = batch.edge_input.numel();
    batch.maps.edge_ids_bounded = true;
    if (count > 0) {
      const IdRange range = id_range(batch.edge_input.i32(), count);
      batch.maps.edge_id_low = range.low;
      batch.maps.edge_id_high = range.high;
    }
  }
  return batch;
}

}  // namespace urpe::data
