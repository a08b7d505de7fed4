// Relevant cycles by bounded enumeration and GF(2) elimination (see rings.h).
#include "data/rings.h"

#include <algorithm>
#include <deque>

#include "tensor/error.h"

namespace urpe::data {

namespace {

// Bond sets of cycles as bit vectors over the ring bonds, reduced to an echelon basis.
class CycleSpace {
 public:
  explicit CycleSpace(size_t bits) : words_((bits + 63) / 64) {}
  // Reduces v by the basis; true when v was independent (then it joins the basis).
  bool insert(std::vector<uint64_t> v) {
    reduce(v);
    const int lead = leading(v);
    if (lead < 0) return false;
    basis_.push_back(std::move(v));
    leads_.push_back(lead);
    return true;
  }
  bool independent(std::vector<uint64_t> v) const {
    reduce(v);
    return leading(v) >= 0;
  }
  size_t rank() const { return basis_.size(); }
  std::vector<uint64_t> zero() const { return std::vector<uint64_t>(words_, 0); }

 private:
  static int leading(const std::vector<uint64_t>& v) {
    for (size_t w = 0; w < v.size(); ++w)
      if (v[w]) return static_cast<int>(w * 64 + __builtin_ctzll(v[w]));
    return -1;
  }
  void reduce(std::vector<uint64_t>& v) const {
    // Each basis vector is reduced against the earlier ones at insertion, so one pass suffices
    // when applied in insertion order with a check of the lead bit.
    for (size_t k = 0; k < basis_.size(); ++k) {
      const int lead = leads_[k];
      if ((v[lead / 64] >> (lead % 64)) & 1u)
        for (size_t w = 0; w < v.size(); ++w) v[w] ^= basis_[k][w];
    }
  }
  size_t words_;
  std::vector<std::vector<uint64_t>> basis_;
  std::vector<int> leads_;
};

}  // namespace

Rings relevant_cycles(int32_t n_atoms, const std::vector<std::pair<int32_t, int32_t>>& bonds) {
  const int32_t n_bonds = static_cast<int32_t>(bonds.size());
  std::vector<std::vector<std::pair<int32_t, int32_t>>> adjacent(n_atoms);  // (neighbour, bond)
  for (int32_t e = 0; e < n_bonds; ++e) {
    adjacent[bonds[e].first].push_back({bonds[e].second, e});
    adjacent[bonds[e].second].push_back({bonds[e].first, e});
  }
  Rings rings;
  rings.ring_bond.assign(n_bonds, false);
  // Ring bonds: an edge is on a cycle when its ends stay connected without it (bridges are not).
  std::vector<int32_t> component(n_atoms, -1);
  int32_t components = 0;
  for (int32_t s = 0; s < n_atoms; ++s) {
    if (component[s] >= 0) continue;
    std::deque<int32_t> queue = {s};
    component[s] = components;
    while (!queue.empty()) {
      const int32_t u = queue.front();
      queue.pop_front();
      for (const auto& [w, e] : adjacent[u])
        if (component[w] < 0) component[w] = components, queue.push_back(w);
    }
    ++components;
  }
  const int64_t cyclomatic = static_cast<int64_t>(n_bonds) - n_atoms + components;
  if (cyclomatic <= 0) return rings;
  // Bridges by Tarjan's low-link (iteratively: molecules may be long chains).
  std::vector<int32_t> order(n_atoms, -1), low(n_atoms, 0);
  int32_t counter = 0;
  for (int32_t root = 0; root < n_atoms; ++root) {
    if (order[root] >= 0) continue;
    std::vector<std::pair<int32_t, size_t>> stack = {{root, 0}};
    std::vector<int32_t> parent_bond(1, -1);
    order[root] = low[root] = counter++;
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      if (next < adjacent[u].size()) {
        const auto [w, e] = adjacent[u][next++];
        if (e == parent_bond.back()) continue;
        if (order[w] < 0) {
          order[w] = low[w] = counter++;
          stack.push_back({w, 0});
          parent_bond.push_back(e);
        } else {
          low[u] = std::min(low[u], order[w]);
          rings.ring_bond[e] = true;  // a back edge closes a cycle
        }
        continue;
      }
      const int32_t done = u, via = parent_bond.back();
      stack.pop_back();
      parent_bond.pop_back();
      if (stack.empty()) break;
      const int32_t up = stack.back().first;
      low[up] = std::min(low[up], low[done]);
      if (low[done] <= order[up]) rings.ring_bond[via] = true;  // not a bridge
    }
  }
  // Cycles of each length L = 3, 4, …: from their lowest atom s, through ring bonds and atoms
  // above s, closing back at s; each once (its second atom below its last).
  std::vector<std::vector<int32_t>> found_atoms;
  std::vector<std::vector<int32_t>> found_bonds;
  CycleSpace shorter(static_cast<size_t>(n_bonds));
  std::vector<int32_t> distance(n_atoms);
  std::vector<bool> on_path(n_atoms, false);
  const int32_t max_length = n_atoms;
  for (int32_t length = 3; length <= max_length && static_cast<int64_t>(shorter.rank()) < cyclomatic; ++length) {
    std::vector<std::vector<int32_t>> cycle_atoms, cycle_bonds;
    for (int32_t s = 0; s < n_atoms; ++s) {
      // BFS distances from s over ring bonds and atoms ≥ s, to prune paths that cannot close.
      std::fill(distance.begin(), distance.end(), -1);
      std::deque<int32_t> queue = {s};
      distance[s] = 0;
      while (!queue.empty()) {
        const int32_t u = queue.front();
        queue.pop_front();
        for (const auto& [w, e] : adjacent[u])
          if (rings.ring_bond[e] && w > s && distance[w] < 0) distance[w] = distance[u] + 1, queue.push_back(w);
      }
      std::vector<int32_t> path_atoms = {s}, path_bonds;
      on_path[s] = true;
      // Depth-first over (atom, next neighbour) frames.
      std::vector<size_t> next = {0};
      int64_t budget = 2000000;  // a cage far beyond any molecule's ring system stops here
      while (!next.empty() && --budget > 0) {
        const int32_t u = path_atoms.back();
        if (next.back() >= adjacent[u].size()) {
          next.pop_back();
          on_path[u] = false;
          path_atoms.pop_back();
          if (!path_bonds.empty()) path_bonds.pop_back();
          continue;
        }
        const auto [w, e] = adjacent[u][next.back()++];
        if (!rings.ring_bond[e]) continue;
        const int32_t steps = static_cast<int32_t>(path_bonds.size()) + 1;
        if (w == s) {
          if (steps == length && path_atoms.size() >= 3 && path_atoms[1] < path_atoms.back()) {
            std::vector<int32_t> b = path_bonds;
            b.push_back(e);
            cycle_atoms.push_back(path_atoms);
            cycle_bonds.push_back(b);
          }
          continue;
        }
        if (w < s || on_path[w] || distance[w] < 0 || steps + distance[w] > length || steps >= length) continue;
        on_path[w] = true;
        path_atoms.push_back(w);
        path_bonds.push_back(e);
        next.push_back(0);
      }
      for (int32_t a : path_atoms) on_path[a] = false;
      URPE_CHECK(budget > 0, "ring perception: more cycles of length " << length << " than a molecule has");
    }
    // Relevant: independent of the strictly shorter cycles. Then all of this length join them.
    std::vector<std::vector<uint64_t>> vectors;
    for (size_t c = 0; c < cycle_bonds.size(); ++c) {
      std::vector<uint64_t> v = shorter.zero();
      for (int32_t e : cycle_bonds[c]) v[e / 64] |= uint64_t{1} << (e % 64);
      vectors.push_back(v);
      if (!shorter.independent(v)) continue;
      std::vector<int32_t> sorted = cycle_bonds[c];
      std::sort(sorted.begin(), sorted.end());
      found_atoms.push_back(cycle_atoms[c]);
      found_bonds.push_back(sorted);
    }
    for (const std::vector<uint64_t>& v : vectors) shorter.insert(v);
  }
  // Sorted by size, then by their atoms (a stable order whatever the enumeration's).
  std::vector<size_t> index(found_atoms.size());
  for (size_t k = 0; k < index.size(); ++k) index[k] = k;
  std::sort(index.begin(), index.end(), [&](size_t x, size_t y) {
    if (found_atoms[x].size() != found_atoms[y].size()) return found_atoms[x].size() < found_atoms[y].size();
    std::vector<int32_t> a = found_atoms[x], b = found_atoms[y];
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return a < b;
  });
  for (size_t k : index) {
    rings.atoms.push_back(found_atoms[k]);
    rings.bonds.push_back(found_bonds[k]);
  }
  return rings;
}

}  // namespace urpe::data
