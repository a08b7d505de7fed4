// Fuzz target: SMILES → Molecule (data/smiles) and on to the graph layer (data/molecule_graph,
// data/molecule_dataset's collator). Any byte string either parses to a well-formed molecule or
// is one urpe::Error "SMILES line L, column C: expected ..." with C inside the string (or just
// past its end); a parsed molecule must give a consistent graph, shortest paths and batch, and
// OGB features (data/ogb_features) within their tables, for each atom and bond left after the
// [H] atoms are folded away.
#include <cstdlib>
#include <set>
#include <utility>

#include "data/molecule_dataset.h"
#include "data/molecule_graph.h"
#include "data/ogb_features.h"
#include "data/smiles.h"
#include "tensor/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace urpe;
using namespace urpe::data;

namespace {

constexpr int64_t kLine = 7;  // any line number: it must come back in the message

void check_error_message(const std::string& smiles, const std::string& message) {
  const std::string prefix = "SMILES line " + std::to_string(kLine) + ", column ";
  FUZZ_CHECK(message.rfind(prefix, 0) == 0, "unexpected SMILES error format: " << message);
  const long column = std::strtol(message.c_str() + prefix.size(), nullptr, 10);
  FUZZ_CHECK(column >= 1 && static_cast<size_t>(column) <= smiles.size() + 1,
             "error column " << column << " outside a " << smiles.size() << "-byte SMILES: " << message);
  FUZZ_CHECK(fuzz::contains(message, ": expected "), "error without 'expected': " << message);
}

void check_molecule(const Molecule& m) {
  const int32_t n = static_cast<int32_t>(m.atoms.size());
  FUZZ_CHECK(n >= 1, "a parsed molecule without atoms");
  FUZZ_CHECK(m.num_parts >= 1 && m.num_parts <= n, "num_parts " << m.num_parts << " for " << n << " atoms");
  FUZZ_CHECK(m.num_ring_closures >= 0 && static_cast<size_t>(m.num_ring_closures) <= m.bonds.size(),
             "ring closures " << m.num_ring_closures << " with " << m.bonds.size() << " bonds");
  for (const Atom& a : m.atoms) {
    FUZZ_CHECK(!a.element.empty() && a.element.size() <= 2, "element '" << a.element << "'");
    FUZZ_CHECK(a.charge >= -15 && a.charge <= 15, "charge " << a.charge << " outside [-15, 15]");
    FUZZ_CHECK(a.explicit_h >= 0 && a.explicit_h <= 9, "explicit H " << a.explicit_h);
    FUZZ_CHECK(a.bracket || (a.charge == 0 && a.explicit_h == 0), "charge or H outside brackets");
  }
  std::set<std::pair<int32_t, int32_t>> seen;
  for (const Bond& b : m.bonds) {
    FUZZ_CHECK(b.begin >= 0 && b.begin < n && b.end >= 0 && b.end < n && b.begin != b.end,
               "bond " << b.begin << "-" << b.end << " in a molecule of " << n << " atoms");
    const int t = static_cast<int>(b.type);
    FUZZ_CHECK(t >= 1 && t <= kNumBondTypes, "bond type " << t);
    FUZZ_CHECK(seen.insert({std::min(b.begin, b.end), std::max(b.begin, b.end)}).second,
               "two bonds between atoms " << b.begin << " and " << b.end);
  }
}

void check_graph(const Molecule& m) {
  AtomVocabulary vocabulary = AtomVocabulary::zinc();
  const MoleculeGraph g = molecule_graph(m, vocabulary, /*grow_vocabulary=*/true);
  const int32_t n = g.num_nodes;
  FUZZ_CHECK(n == static_cast<int32_t>(m.atoms.size()), "graph nodes " << n);
  for (int32_t t : g.node_type) FUZZ_CHECK(t >= 0 && t < vocabulary.size(), "node type " << t);
  const std::vector<int32_t> degree = node_degrees(g);
  size_t degree_sum = 0;
  for (int32_t d : degree) degree_sum += static_cast<size_t>(d);
  FUZZ_CHECK(degree_sum == 2 * m.bonds.size(), "degree sum " << degree_sum << " for " << m.bonds.size() << " bonds");

  // All-pairs work is O(N^2) per input and more: the expensive checks stay on small molecules
  // (but above 511 atoms, where a path can be as long as the unreachable marker 510).
  if (n > 2000) return;
  const ShortestPaths p = shortest_paths(g);
  for (int32_t i = 0; i < n; ++i) {
    FUZZ_CHECK(p.distance[static_cast<size_t>(i) * n + i] == 0, "distance(i, i) != 0");
    for (int32_t j : g.neighbours[i])
      FUZZ_CHECK(p.distance[static_cast<size_t>(i) * n + j] == 1, "a bonded pair not at distance 1");
    for (int32_t j = 0; j < n; ++j) {
      const int32_t d = p.distance[static_cast<size_t>(i) * n + j];
      FUZZ_CHECK(d == p.distance[static_cast<size_t>(j) * n + i], "distances not symmetric");
      FUZZ_CHECK(d >= 0 && (d < n || d == kUnreachableDistance), "distance " << d << " among " << n << " atoms");
      if (n <= 60) {
        const std::vector<int32_t> hops = shortest_path_edge_types(g, p, i, j);
        const bool reachable = i == j || p.parent[static_cast<size_t>(i) * n + j] >= 0;
        FUZZ_CHECK(reachable == (d != kUnreachableDistance || n > kUnreachableDistance),
                   "parent and distance disagree on whether " << j << " is reachable from " << i);
        FUZZ_CHECK(hops.size() == (i == j || !reachable ? 0u : static_cast<size_t>(d)),
                   "path of " << hops.size() << " hops for distance " << d);
        for (int32_t t : hops) FUZZ_CHECK(t >= 1 && t <= kNumBondTypes, "hop bond type " << t);
      }
    }
  }
  const int32_t components = num_connected_components(g);
  FUZZ_CHECK(components >= 1 && components <= m.num_parts, components << " components, " << m.num_parts << " parts");
  size_t cycles = 0;
  for (const auto& cycle : cycle_basis(g)) {
    ++cycles;
    FUZZ_CHECK(cycle.size() >= 3, "a cycle of " << cycle.size() << " atoms");
  }
  // Euler: a simple graph has exactly E - N + components independent cycles.
  FUZZ_CHECK(cycles + n == m.bonds.size() + static_cast<size_t>(components),
             cycles << " cycles for " << n << " atoms, " << m.bonds.size() << " bonds, " << components << " components");
  FUZZ_CHECK(cycle_penalty(g) >= 0, "negative cycle penalty");

  if (n > 60) return;
  MoleculeDataset dataset;
  dataset.graphs.push_back(g);
  dataset.targets.push_back(0.5f);
  dataset.smiles.push_back("");
  const GraphBatch batch = collate_graphs(dataset, {0});
  FUZZ_CHECK(batch.x.shape() == Shape({1, n}), "x shape");
  const int64_t hops = batch.edge_input.shape().back();
  FUZZ_CHECK(hops >= 1 && hops <= CollateOptions{}.multi_hop_max_dist, "edge_input hops " << hops);
  for (int32_t v : batch.spatial_pos.to_vector_i32())
    FUZZ_CHECK(v >= 1 && v <= kUnreachableDistance + 1, "spatial_pos " << v);
  for (int32_t v : batch.edge_input.to_vector_i32()) FUZZ_CHECK(v == 0 || (v >= 4 && v <= 7), "edge_input " << v);
}

void check_ogb_features(const Molecule& m) {
  if (m.atoms.size() > 2000) return;  // its ring search is O(E (N + E))
  const OgbFeatures f = ogb_features(m);
  FUZZ_CHECK(f.atoms.size() <= m.atoms.size() && !f.atoms.empty(), f.atoms.size() << " OGB atoms of " << m.atoms.size());
  FUZZ_CHECK(f.bonds.size() == f.bond_begin.size() && f.bonds.size() == f.bond_end.size(), "OGB bond arrays differ in size");
  for (const auto& atom : f.atoms)
    for (int k = 0; k < kOgbAtomFeatures; ++k)
      FUZZ_CHECK(atom[k] >= 0 && atom[k] < kOgbAtomFeatureDims[k], kOgbAtomFeatureNames[k] << " = " << atom[k]);
  for (size_t e = 0; e < f.bonds.size(); ++e) {
    FUZZ_CHECK(f.bond_begin[e] >= 0 && static_cast<size_t>(f.bond_begin[e]) < f.atoms.size() && f.bond_end[e] >= 0 &&
                   static_cast<size_t>(f.bond_end[e]) < f.atoms.size(),
               "OGB bond " << f.bond_begin[e] << "-" << f.bond_end[e]);
    for (int k = 0; k < kOgbBondFeatures; ++k)
      FUZZ_CHECK(f.bonds[e][k] >= 0 && f.bonds[e][k] < kOgbBondFeatureDims[k], kOgbBondFeatureNames[k] << " = " << f.bonds[e][k]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string smiles = fuzz::bytes_of(data, size);
  Molecule molecule;
  try {
    molecule = parse_smiles(smiles, kLine);
  } catch (const Error& e) {
    check_error_message(smiles, e.what());
    return 0;
  }
  check_molecule(molecule);
  try {
    check_graph(molecule);
  } catch (const Error&) {
    // A parsed molecule has nothing for the graph layer to reject: an Error here is a bug.
    FUZZ_CHECK(false, "the graph layer refused a parsed molecule");
  }
  try {
    check_ogb_features(molecule);
  } catch (const Error&) {
    FUZZ_CHECK(false, "the OGB featuriser refused a parsed molecule");
  }
  return 0;
}
