// Molecule → graph for Graphormer: ZINC-style atom types, degrees, all-pairs shortest-path
// distances, shortest-path bond sequences (the multi-hop edge input) and the cycle basis that
// the penalized-logP cycle penalty needs. See docs/graphormer.md#preprocessing.
//
// Atom typing (Benchmarking-GNNs ZINC): key = element, then " H<n>" when a bracket atom writes
// n > 0 hydrogens, then one '+' or '-' per unit of charge: "C", "N H1 +", "O -", "C H2 -".
// The key's id comes from an AtomVocabulary (file: one key per line, line k = id k); the 28
// ZINC types, in ZINC's order, are AtomVocabulary::zinc(). A key missing from the vocabulary is
// an error unless the caller allows growing it (then it gets the next id). Bonds keep their
// BondType value as raw edge type: 1 single, 2 double, 3 triple, 4 aromatic (0 = no bond).
//
// Shortest paths are BFS from every node with neighbours visited in ascending atom index. Among
// several shortest paths from i to j the one kept follows BFS parents back from j: each node's
// parent is its neighbour that was dequeued first (the smallest-distance, then earliest, node).
// Graphormer's Floyd–Warshall reconstruction may pick a different path of the same length when
// there are ties (e.g. across a six-ring); distances are identical.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/smiles.h"

namespace urpe::data {

constexpr int32_t kUnreachableDistance = 510;  // SPD of pairs in different components (GV2)

std::string atom_type_key(const Atom& atom);  // "N H1 +"

class AtomVocabulary {
 public:
  AtomVocabulary() = default;
  static AtomVocabulary zinc();                       // the 28 Benchmarking-GNNs types
  static AtomVocabulary load(const std::string& path); // one key per line; errors name the line
  void save(const std::string& path) const;

  int32_t find(const std::string& key) const;  // -1 when absent
  int32_t add(const std::string& key);         // id of key, appended when new
  int32_t size() const { return static_cast<int32_t>(keys_.size()); }
  const std::string& key(int32_t id) const { return keys_.at(id); }

 private:
  std::vector<std::string> keys_;
  std::unordered_map<std::string, int32_t> ids_;
};

// An undirected molecular graph. Nodes are atoms in SMILES order.
struct MoleculeGraph {
  int32_t num_nodes = 0;
  std::vector<int32_t> node_type;   // (N,) atom type id
  std::vector<int32_t> edge_begin;  // (E,) one entry per bond
  std::vector<int32_t> edge_end;    // (E,)
  std::vector<int32_t> edge_type;   // (E,) raw bond type 1..4
  std::vector<std::vector<int32_t>> neighbours;  // (N, deg) ascending atom index
  std::vector<int32_t> edge_type_matrix;         // (N, N) raw bond type, 0 = no bond
  // Feature columns in place of the single atom type and bond type (PCQM4M: OGB's 9 atom and 3
  // bond features, data/ogb_features.h); counts 0 = none (ZINC: node_type and edge_type only).
  int32_t atom_feature_count = 0;
  std::vector<int32_t> atom_features;  // (N, atom_feature_count)
  int32_t bond_feature_count = 0;
  std::vector<int32_t> bond_features;  // (E, bond_feature_count), bond e = edge_begin[e]–edge_end[e]
};

// Builds the graph; atom keys missing from `vocabulary` throw (naming the key, the SMILES and
// the vocabulary size) unless `grow_vocabulary`, which appends them.
MoleculeGraph molecule_graph(const Molecule& molecule, AtomVocabulary& vocabulary,
                             bool grow_vocabulary = false);

// The graph of N = node_type.size() nodes and the given bonds (atom indices in [0, N), raw bond
// types); the readers of graph files (data/graph_file.h) check the indices before calling it.
MoleculeGraph molecule_graph_from_bonds(std::vector<int32_t> node_type, const std::vector<Bond>& bonds);

std::vector<int32_t> node_degrees(const MoleculeGraph& graph);  // (N,)

struct ShortestPaths {
  int32_t num_nodes = 0;
  std::vector<int32_t> distance;  // (N, N) hops; 0 on the diagonal; kUnreachableDistance apart
                                  // (exact also past 510 in chains that long: the model clamps
                                  // both to its tables, and `parent` tells them apart)
  std::vector<int32_t> parent;    // (N, N) parent[i*N + j] = node before j on the kept i→j path
                                  // (-1 on the diagonal and for unreachable pairs)
  int32_t max_distance = 0;       // largest finite distance
};

ShortestPaths shortest_paths(const MoleculeGraph& graph);
// Just the (N, N) distance matrix of shortest_paths (Graphormer's spatial_pos before the +1).
std::vector<int32_t> shortest_path_distances(const MoleculeGraph& graph);

// Raw bond types along the kept shortest path i → j, hop by hop (size = distance; empty when
// i == j or unreachable).
std::vector<int32_t> shortest_path_edge_types(const MoleculeGraph& graph,
                                              const ShortestPaths& paths, int32_t i, int32_t j);

// networkx.cycle_basis on this graph with nodes 0..N-1 and neighbours ascending, the graph JT-VAE
// builds from RDKit's adjacency matrix: root = smallest unvisited node, depth-first spanning tree,
// one cycle per non-tree edge. Each cycle is a list of nodes.
std::vector<std::vector<int32_t>> cycle_basis(const MoleculeGraph& graph);

// JT-VAE's penalty: max(0, longest cycle of the basis − 6).
int32_t cycle_penalty(const MoleculeGraph& graph);

int32_t num_connected_components(const MoleculeGraph& graph);

}  // namespace urpe::data
