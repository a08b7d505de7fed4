// The rings RDKit perceives aromaticity over: the relevant cycles of the molecular graph (RDKit's
// symmetrizeSSSR, through RingDecomposerLib), i.e. every cycle that is not a sum (edge-wise XOR)
// of strictly shorter cycles. They are the union of all minimum cycle bases: naphthalene gives its
// two 6-rings, cubane its six faces (a single SSSR would hold five), norbornane its two 5-rings.
//
// Found here by brute force that stays small on molecules: every simple cycle up to the length
// where the cycles found so far span the cycle space (E − V + components), each kept when it is
// independent (over GF(2)) of the strictly shorter cycles. Cycles are enumerated on ring bonds
// only, from their lowest atom, by depth-first search bounded by the length and pruned by BFS
// distances back to the start.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace urpe::data {

struct Rings {
  std::vector<std::vector<int32_t>> atoms;  // each ring's atoms in ring order (the lowest first)
  std::vector<std::vector<int32_t>> bonds;  // the same rings as bond indices (sorted)
  std::vector<bool> ring_bond;              // (E,) the bond lies on a cycle
};

// `bonds`: (begin, end) per bond index, atoms 0 … n_atoms − 1. Rings sorted by size, then by atoms.
Rings relevant_cycles(int32_t n_atoms, const std::vector<std::pair<int32_t, int32_t>>& bonds);

}  // namespace urpe::data
