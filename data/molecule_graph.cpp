// Atom typing, BFS shortest paths and the networkx cycle basis for molecular graphs.
#include "data/molecule_graph.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

#include "tensor/error.h"

namespace urpe::data {

std::string atom_type_key(const Atom& atom) {
  std::string key = atom.element;
  if (atom.explicit_h > 0) key += " H" + std::to_string(atom.explicit_h);
  if (atom.charge != 0) key += " " + std::string(std::abs(atom.charge), atom.charge > 0 ? '+' : '-');
  return key;
}

// ---- vocabulary ----

AtomVocabulary AtomVocabulary::zinc() {
  static const char* kZincTypes[] = {
      "C",    "O",    "N",      "F",     "C H1", "S",      "Cl",     "O -",   "N H1 +", "Br",
      "N H3 +", "N H2 +", "N +", "N -",  "S -",  "I",      "P",      "O H1 +", "N H1 -", "O +",
      "S +",  "P H1", "P H2",   "C H2 -", "P +",  "S H1 +", "C H1 -", "P H1 +"};
  AtomVocabulary v;
  for (const char* key : kZincTypes) v.add(key);
  return v;
}

AtomVocabulary AtomVocabulary::load(const std::string& path) {
  std::ifstream in(path);
  URPE_CHECK(in, "atom vocabulary " << path << ": cannot open the file");
  AtomVocabulary v;
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    URPE_CHECK(!line.empty(), "atom vocabulary " << path << " line " << number
                                                 << ": expected an atom type key, got an empty line");
    URPE_CHECK(v.find(line) < 0, "atom vocabulary " << path << " line " << number
                                                    << ": expected a new key, '" << line
                                                    << "' is already line " << v.find(line) + 1);
    v.add(line);
  }
  URPE_CHECK(v.size() > 0, "atom vocabulary " << path << ": expected at least one key, the file is empty");
  return v;
}

void AtomVocabulary::save(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    URPE_CHECK(out, "atom vocabulary " << path << ": cannot write the file");
    for (const auto& key : keys_) out << key << '\n';
    URPE_CHECK(out, "atom vocabulary " << path << ": write failed");
  }
  URPE_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "atom vocabulary " << path << ": rename failed");
}

int32_t AtomVocabulary::find(const std::string& key) const {
  auto it = ids_.find(key);
  return it == ids_.end() ? -1 : it->second;
}

int32_t AtomVocabulary::add(const std::string& key) {
  const int32_t id = find(key);
  if (id >= 0) return id;
  keys_.push_back(key);
  ids_.emplace(key, size() - 1);
  return size() - 1;
}

// ---- graph ----

MoleculeGraph molecule_graph(const Molecule& molecule, AtomVocabulary& vocabulary, bool grow_vocabulary) {
  MoleculeGraph g;
  const int32_t n = static_cast<int32_t>(molecule.atoms.size());
  g.num_nodes = n;
  g.node_type.reserve(n);
  for (const Atom& atom : molecule.atoms) {
    const std::string key = atom_type_key(atom);
    int32_t id = vocabulary.find(key);
    if (id < 0) {
      URPE_CHECK(grow_vocabulary, "atom type '" << key << "' is not in the atom vocabulary ("
                                                << vocabulary.size() << " types"
                                                << (vocabulary.size() == 28 ? ", the ZINC set" : "")
                                                << "); write the molecule in Kekulé form or let the "
                                                   "loader grow the vocabulary");
      id = vocabulary.add(key);
    }
    g.node_type.push_back(id);
  }
  return molecule_graph_from_bonds(std::move(g.node_type), molecule.bonds);
}

MoleculeGraph molecule_graph_from_bonds(std::vector<int32_t> node_type, const std::vector<Bond>& bonds) {
  MoleculeGraph g;
  const int32_t n = static_cast<int32_t>(node_type.size());
  g.num_nodes = n;
  g.node_type = std::move(node_type);
  g.neighbours.assign(n, {});
  g.edge_type_matrix.assign(static_cast<size_t>(n) * n, 0);
  for (const Bond& bond : bonds) {
    g.edge_begin.push_back(bond.begin);
    g.edge_end.push_back(bond.end);
    g.edge_type.push_back(static_cast<int32_t>(bond.type));
    g.neighbours[bond.begin].push_back(bond.end);
    g.neighbours[bond.end].push_back(bond.begin);
    g.edge_type_matrix[static_cast<size_t>(bond.begin) * n + bond.end] = static_cast<int32_t>(bond.type);
    g.edge_type_matrix[static_cast<size_t>(bond.end) * n + bond.begin] = static_cast<int32_t>(bond.type);
  }
  for (auto& list : g.neighbours) std::sort(list.begin(), list.end());
  return g;
}

std::vector<int32_t> node_degrees(const MoleculeGraph& graph) {
  std::vector<int32_t> degree(graph.num_nodes);
  for (int32_t v = 0; v < graph.num_nodes; ++v) degree[v] = static_cast<int32_t>(graph.neighbours[v].size());
  return degree;
}

// ---- shortest paths: one BFS per source, O(N·(N+E)) ----

ShortestPaths shortest_paths(const MoleculeGraph& graph) {
  const int32_t n = graph.num_nodes;
  ShortestPaths p;
  p.num_nodes = n;
  // -1 marks "not reached yet": the unreachable value 510 cannot, since in a chain of more than
  // 510 atoms it is also a real distance (a node found at 510 looked unvisited, was queued
  // again and ran the queue past its end).
  p.distance.assign(static_cast<size_t>(n) * n, -1);
  p.parent.assign(static_cast<size_t>(n) * n, -1);
  std::vector<int32_t> queue(n);
  for (int32_t source = 0; source < n; ++source) {
    int32_t* dist = &p.distance[static_cast<size_t>(source) * n];
    int32_t* parent = &p.parent[static_cast<size_t>(source) * n];
    size_t head = 0, tail = 0;
    dist[source] = 0;
    queue[tail++] = source;
    while (head < tail) {
      const int32_t u = queue[head++];
      for (int32_t v : graph.neighbours[u]) {
        if (dist[v] >= 0) continue;
        dist[v] = dist[u] + 1;
        parent[v] = u;
        p.max_distance = std::max(p.max_distance, dist[v]);
        queue[tail++] = v;
      }
    }
    for (int32_t v = 0; v < n; ++v)
      if (dist[v] < 0) dist[v] = kUnreachableDistance;
  }
  return p;
}

std::vector<int32_t> shortest_path_distances(const MoleculeGraph& graph) {
  return shortest_paths(graph).distance;
}

std::vector<int32_t> shortest_path_edge_types(const MoleculeGraph& graph, const ShortestPaths& paths,
                                              int32_t i, int32_t j) {
  const int32_t n = graph.num_nodes;
  const int32_t d = paths.distance[static_cast<size_t>(i) * n + j];
  // Unreachable is "no parent", not "distance 510", which is also a real distance in a long chain.
  if (i == j || paths.parent[static_cast<size_t>(i) * n + j] < 0) return {};
  std::vector<int32_t> types(d);
  int32_t node = j;
  for (int32_t hop = d - 1; hop >= 0; --hop) {
    const int32_t before = paths.parent[static_cast<size_t>(i) * n + node];
    types[hop] = graph.edge_type_matrix[static_cast<size_t>(before) * n + node];
    node = before;
  }
  return types;
}

// ---- cycle basis (networkx 2.8 cycle_basis, same traversal order) ----

std::vector<std::vector<int32_t>> cycle_basis(const MoleculeGraph& graph) {
  const int32_t n = graph.num_nodes;
  std::vector<std::vector<int32_t>> cycles;
  std::vector<int32_t> pred(n, -1);
  std::vector<std::set<int32_t>> used(n);
  std::vector<char> seen(n, 0);  // "in used"
  for (int32_t root = 0; root < n; ++root) {
    if (seen[root]) continue;
    std::vector<int32_t> stack = {root};
    pred[root] = root;
    seen[root] = 1;
    while (!stack.empty()) {
      const int32_t z = stack.back();
      stack.pop_back();
      for (int32_t nbr : graph.neighbours[z]) {
        if (!seen[nbr]) {
          pred[nbr] = z;
          stack.push_back(nbr);
          seen[nbr] = 1;
          used[nbr] = {z};
        } else if (nbr == z) {
          cycles.push_back({z});
        } else if (!used[z].count(nbr)) {
          const std::set<int32_t>& pn = used[nbr];
          std::vector<int32_t> cycle = {nbr, z};
          int32_t p = pred[z];
          while (!pn.count(p)) {
            cycle.push_back(p);
            p = pred[p];
          }
          cycle.push_back(p);
          cycles.push_back(std::move(cycle));
          used[nbr].insert(z);
        }
      }
    }
  }
  return cycles;
}

int32_t cycle_penalty(const MoleculeGraph& graph) {
  size_t longest = 0;
  for (const auto& cycle : cycle_basis(graph)) longest = std::max(longest, cycle.size());
  return std::max<int32_t>(0, static_cast<int32_t>(longest) - 6);
}

int32_t num_connected_components(const MoleculeGraph& graph) {
  std::vector<char> seen(graph.num_nodes, 0);
  int32_t components = 0;
  std::vector<int32_t> stack;
  for (int32_t root = 0; root < graph.num_nodes; ++root) {
    if (seen[root]) continue;
    ++components;
    seen[root] = 1;
    stack = {root};
    while (!stack.empty()) {
      const int32_t u = stack.back();
      stack.pop_back();
      for (int32_t v : graph.neighbours[u])
        if (!seen[v]) seen[v] = 1, stack.push_back(v);
    }
  }
  return components;
}

}  // namespace urpe::data
