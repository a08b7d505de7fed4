// OGB's 9 atom and 3 bond features from a parsed SMILES, following the RDKit perception steps OGB
// relies on (see data/ogb_features.h for the rules, tests/test_ogb_features.cpp for how well).
#include "data/ogb_features.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include "data/aromaticity.h"
#include "data/elements.h"
#include "data/rings.h"

namespace urpe::data {

const char* const kOgbAtomFeatureNames[kOgbAtomFeatures] = {
    "atomic_num", "chirality", "degree", "formal_charge", "num_h", "num_radical_e", "hybridization",
    "is_aromatic", "is_in_ring"};
const char* const kOgbBondFeatureNames[kOgbBondFeatures] = {"bond_type", "bond_stereo", "is_conjugated"};
const int32_t kOgbAtomFeatureDims[kOgbAtomFeatures] = {119, 5, 12, 12, 10, 6, 6, 2, 2};
const int32_t kOgbBondFeatureDims[kOgbBondFeatures] = {5, 6, 2};

namespace {

struct WorkAtom {
  int z = 0;
  Atom atom;
  std::vector<int32_t> bonds;  // incident bonds, ascending RDKit bond index
};

struct WorkBond {
  int32_t a = 0, b = 0;  // as in the Molecule (a written first for a chain bond; a dative bond's donor)
  BondType type = BondType::single;  // as written, then as perceived (aromatic or the Kekulé form)
  char direction = 0;
  bool dative = false;
  int32_t other(int32_t atom) const { return atom == a ? b : a; }
};

// RDKit's OGB bond-type index of a bond: single 0, double 1, triple 2, aromatic 3, dative (misc) 4.
int32_t ogb_bond_type(const WorkBond& b) { return b.dative ? 4 : static_cast<int32_t>(b.type) - 1; }

class Perception {
 public:
  explicit Perception(const Molecule& m) { fold_hydrogens(m); }

  OgbFeatures features() {
    const int32_t n = static_cast<int32_t>(atoms_.size());
    for (int32_t v = 0; v < n; ++v) clean_up_halogen(v);
    smallest_ring_.assign(bonds_.size(), 0);
    for (size_t e = 0; e < bonds_.size(); ++e) smallest_ring_[e] = ring_size(static_cast<int32_t>(e));
    valence_.resize(n), implicit_h_.resize(n), radicals_.resize(n);
    for (int32_t v = 0; v < n; ++v) valences(v);
    perceive_aromaticity_as_rdkit();
    conjugation();
    cip_ranks();

    OgbFeatures f;
    for (int32_t v = 0; v < n; ++v) {
      const WorkAtom& w = atoms_[v];
      const int total_h = w.atom.explicit_h + implicit_h_[v];
      const int degree = static_cast<int>(w.bonds.size()) + total_h;
      bool in_ring = false;
      for (int32_t e : w.bonds) in_ring = in_ring || smallest_ring_[e] > 0;
      f.atoms.push_back({w.z >= 1 && w.z <= 118 ? w.z - 1 : 118, chirality(v), std::min(degree, 11),
                         w.atom.charge >= -5 && w.atom.charge <= 5 ? w.atom.charge + 5 : 11, std::min(total_h, 9),
                         std::min(radicals_[v], 5), hybridization(v), aromatic_[v] ? 1 : 0, in_ring ? 1 : 0});
    }
    for (size_t e = 0; e < bonds_.size(); ++e) {
      const WorkBond& b = bonds_[e];
      f.bond_begin.push_back(b.a);
      f.bond_end.push_back(b.b);
      f.bonds.push_back({ogb_bond_type(b), stereo(static_cast<int32_t>(e)), conjugated_[e] ? 1 : 0});
    }
    return f;
  }

 private:
  // ---- structure: fold [H] atoms into their neighbour (RDKit's removeHs), RDKit's bond order ----

  void fold_hydrogens(const Molecule& m) {
    const int32_t n = static_cast<int32_t>(m.atoms.size());
    std::vector<int32_t> degree(n, 0);
    for (const Bond& b : m.bonds) ++degree[b.begin], ++degree[b.end];
    std::vector<int32_t> index(n, -1), folded_into(n, -1);
    for (const Bond& b : m.bonds)
      for (const auto& [h, heavy] : {std::pair{b.begin, b.end}, std::pair{b.end, b.begin}}) {
        const Atom& a = m.atoms[h];
        if (a.element == "H" && a.isotope == 0 && a.charge == 0 && a.explicit_h == 0 && degree[h] == 1 &&
            m.atoms[heavy].element != "H" && b.type == BondType::single)
          folded_into[h] = heavy;
      }
    for (int32_t v = 0; v < n; ++v) {
      if (folded_into[v] >= 0) continue;
      index[v] = static_cast<int32_t>(atoms_.size());
      atoms_.push_back({atomic_number(m.atoms[v].element), m.atoms[v], {}});
    }
    for (int32_t v = 0; v < n; ++v)
      if (folded_into[v] >= 0) ++atoms_[index[folded_into[v]]].atom.explicit_h;
    // RDKit adds ring-closure bonds after the chain bonds, in ring-number order.
    std::vector<const Bond*> order;
    for (const Bond& b : m.bonds)
      if (b.ring_number < 0) order.push_back(&b);
    std::vector<const Bond*> rings;
    for (const Bond& b : m.bonds)
      if (b.ring_number >= 0) rings.push_back(&b);
    std::stable_sort(rings.begin(), rings.end(), [](const Bond* x, const Bond* y) { return x->ring_number < y->ring_number; });
    order.insert(order.end(), rings.begin(), rings.end());
    for (const Bond* b : order) {
      if (folded_into[b->begin] >= 0 || folded_into[b->end] >= 0) continue;
      const int32_t e = static_cast<int32_t>(bonds_.size());
      bonds_.push_back({index[b->begin], index[b->end], b->type, b->direction, b->dative});
      atoms_[index[b->begin]].bonds.push_back(e);
      atoms_[index[b->end]].bonds.push_back(e);
    }
    // The written neighbour order, for chirality: folded H atoms become the marker kHydrogen.
    written_order_.resize(atoms_.size());
    for (int32_t v = 0; v < n; ++v) {
      if (index[v] < 0 || v >= static_cast<int32_t>(m.neighbour_order.size())) continue;
      std::vector<int32_t>& order_of = written_order_[index[v]];
      for (int32_t u : m.neighbour_order[v]) order_of.push_back(u < 0 ? kHydrogen : folded_into[u] >= 0 ? kHydrogen : index[u]);
      // A bracket H count sits right after the preceding atom, or first (OpenSMILES).
      const int written_h = m.atoms[v].explicit_h;
      const bool preceded = v < static_cast<int32_t>(m.has_preceding.size()) && m.has_preceding[v];
      for (int k = 0; k < written_h; ++k)
        order_of.insert(order_of.begin() + std::min<size_t>(preceded ? 1 : 0, order_of.size()), kHydrogen);
    }
  }

  // RDKit's cleanUp of a neutral Cl, Br or I of valence 3, 5 or 7 bonded to O atoms only: each
  // double bond to an O becomes single, that O −1 and the halogen +1 (OCl(=O)(=O)=O, perchloric
  // acid written with double bonds, becomes O[Cl+3]([O-])([O-])[O-]).
  void clean_up_halogen(int32_t v) {
    WorkAtom& w = atoms_[v];
    if ((w.z != 17 && w.z != 35 && w.z != 53) || w.atom.charge != 0) return;
    int valence = w.atom.explicit_h;
    for (int32_t e : w.bonds) {
      if (atoms_[bonds_[e].other(v)].z != 8 || bonds_[e].dative) return;
      valence += bonds_[e].type == BondType::double_ ? 2 : bonds_[e].type == BondType::triple ? 3 : 1;
    }
    if (valence != 3 && valence != 5 && valence != 7) return;
    for (int32_t e : w.bonds)
      if (bonds_[e].type == BondType::double_) {
        bonds_[e].type = BondType::single;
        atoms_[bonds_[e].other(v)].atom.charge = -1;
        ++w.atom.charge;
      }
  }

  // Atoms of the smallest ring through bond e (0 when e is no ring bond): BFS from one end to the
  // other without e.
  int32_t ring_size(int32_t e) const {
    const int32_t n = static_cast<int32_t>(atoms_.size()), from = bonds_[e].a, to = bonds_[e].b;
    std::vector<int32_t> distance(n, -1);
    std::deque<int32_t> queue = {from};
    distance[from] = 0;
    while (!queue.empty()) {
      const int32_t u = queue.front();
      queue.pop_front();
      for (int32_t f : atoms_[u].bonds) {
        if (f == e) continue;
        const int32_t w = bonds_[f].other(u);
        if (distance[w] >= 0) continue;
        distance[w] = distance[u] + 1;
        if (w == to) return distance[w] + 1;
        queue.push_back(w);
      }
    }
    return 0;
  }

  // ---- valences, implicit hydrogens, radicals (RDKit's calcExplicitValence, calcImplicitValence,
  //      assignRadicals) ----

  // The charge as it shifts the allowed valences: N+ gains one, O− loses one; early elements
  // (fewer than 4 outer electrons) the other way; carbon loses one for either sign.
  int valence_shift(int32_t v) const {
    const WorkAtom& w = atoms_[v];
    const int outer = element_data(w.z).outer;
    int shift = w.atom.charge;
    if (outer < 4) shift = -shift;
    if (w.z == 6) shift = -std::abs(shift);
    return shift;
  }

  // What bond e gives atom v's valence (aromatic 1.5, a dative bond 0 to its donor, 1 to its acceptor).
  double bond_valence(int32_t e, int32_t v) const {
    return valence_contribution({bonds_[e].a, bonds_[e].b, bonds_[e].type, bonds_[e].dative}, v);
  }

  void valences(int32_t v) {
    const WorkAtom& w = atoms_[v];
    const ElementData& data = element_data(w.z);
    double sum = w.atom.explicit_h;
    for (int32_t e : w.bonds) sum += bond_valence(e, v);
    const bool any_valence = data.any_valence();
    const int shift = valence_shift(v);
    if (w.atom.aromatic && !any_valence && sum > data.valences[0] + shift) {
      // An aromatic atom above its default valence takes the closest allowed valence below
      // (within 1.5): n in c1cccn1C, s in thiophene, c(=O).
      int below = data.valences[0] + shift;
      for (int allowed : data.finite_valences()) {
        if (allowed + shift > sum) break;
        below = allowed + shift;
      }
      if (sum - below <= 1.5) sum = below;
    }
    valence_[v] = static_cast<int>(std::round(sum + 0.1));  // RDKit's explicit valence
    implicit_h_[v] = 0;
    radicals_[v] = 0;
    if (any_valence || w.z <= 0) return;
    if (!w.atom.bracket) {  // organic-subset atoms get implicit H up to the next allowed valence
      if (w.atom.aromatic) {
        implicit_h_[v] = std::max(0, data.valences[0] + shift - valence_[v]);
      } else {
        for (int allowed : data.finite_valences())
          if (allowed + shift >= valence_[v]) {
            implicit_h_[v] = allowed + shift - valence_[v];
            break;
          }
      }
      return;
    }
    // Bracket atoms have exactly the H written; below their valence, the rest are radicals.
    const int base = w.z <= 2 ? 2 : 8, charge = w.atom.charge;
    int radicals = base - data.outer - valence_[v] + charge;
    if (radicals < 0) {
      radicals = 0;
      if (data.finite_valences().size() > 1)
        for (int allowed : data.finite_valences())
          if (allowed - valence_[v] + charge >= 0) {
            radicals = allowed - valence_[v] + charge;
            break;
          }
    }
    const int early = data.outer - valence_[v] - charge;
    if (early >= 0) radicals = std::min(radicals, early);
    radicals_[v] = radicals;
  }

  // ---- aromaticity: RDKit's Kekulé form and aromaticity model (data/aromaticity.h) ----

  // Sets aromatic_ and each bond's perceived type (aromatic, or single/double from the Kekulé
  // form), whichever way the SMILES wrote the rings.
  void perceive_aromaticity_as_rdkit() {
    const int32_t n = static_cast<int32_t>(atoms_.size());
    std::vector<AromaticityAtom> atoms(n);
    for (int32_t v = 0; v < n; ++v) {
      const WorkAtom& w = atoms_[v];
      atoms[v] = {w.z, w.atom.charge, w.atom.explicit_h, implicit_h_[v], radicals_[v], valence_[v], w.atom.aromatic,
                  w.atom.bracket};
    }
    std::vector<AromaticityBond> bonds;
    std::vector<std::pair<int32_t, int32_t>> ends;
    for (const WorkBond& b : bonds_) {
      bonds.push_back({b.a, b.b, b.type, b.dative});
      ends.push_back({b.a, b.b});
    }
    const PerceivedAromaticity perceived = perceive_aromaticity(atoms, bonds, relevant_cycles(n, ends));
    aromatic_ = perceived.atom_aromatic;
    for (size_t e = 0; e < bonds_.size(); ++e) bonds_[e].type = perceived.bond_type[e];
  }

  int total_h(int32_t v) const { return atoms_[v].atom.explicit_h + implicit_h_[v]; }
  int total_degree(int32_t v) const { return static_cast<int>(atoms_[v].bonds.size()) + total_h(v); }

  // ---- conjugation (RDKit's setConjugation) ----

  // Electrons an atom can give to a π system (RDKit's countAtomElec); −1 when it cannot take part.
  int pi_electrons(int32_t v) const {
    const WorkAtom& w = atoms_[v];
    const ElementData& data = element_data(w.z);
    const int dv = data.default_valence();
    if (dv <= 1) return -1;
    int degree = total_degree(v);
    for (int32_t e : w.bonds)
      if (bond_valence(e, v) == 0.0) --degree;  // a dative bond from v counts for nothing here
    if (degree > 3) return -1;
    const int lone = std::max(data.outer - dv - w.atom.charge, 0);
    int electrons = (dv - degree) + lone - radicals_[v];
    if (electrons > 1 && valence_[v] - static_cast<int>(w.bonds.size()) > 1) electrons = 1;
    return electrons;
  }

  // RDKit's isAtomConjugCand: π electrons to give, and not a P- or S-like atom beyond the first
  // row unless it is a chalcogen with one neighbour, hydrogens counted (Pc1ccccc1's P and the SH
  // of a thiophenol stay out; S=C=S's S is in).
  bool conjugation_candidate(int32_t v) const {
    const ElementData& data = element_data(atoms_[v].z);
    // A neutral atom above its first valence (S of a sulfone, P of a phosphate) is hypervalent.
    if (atoms_[v].atom.charge == 0 && data.default_valence() >= 0 &&
        valence_[v] + implicit_h_[v] > data.default_valence())
      return false;
    const int outer = data.outer;
    const bool allowed = atoms_[v].z <= 10 || (outer != 5 && outer != 6) || (outer == 6 && total_degree(v) < 2);
    return allowed && pi_electrons(v) > 0;
  }

  void conjugation() {
    conjugated_.assign(bonds_.size(), false);
    for (size_t e = 0; e < bonds_.size(); ++e) conjugated_[e] = bonds_[e].type == BondType::aromatic;
    for (int32_t v = 0; v < static_cast<int32_t>(atoms_.size()); ++v) {
      const int degree = total_degree(v);
      if (degree < 2 || degree > 3 || !conjugation_candidate(v)) continue;
      for (int32_t multiple : atoms_[v].bonds) {
        // A multiple bond to a candidate (not C=[S+] to a ring S bonded to a metal, say).
        if (bond_valence(multiple, v) < 1.5 || !conjugation_candidate(bonds_[multiple].other(v))) continue;
        for (int32_t other : atoms_[v].bonds) {
          if (other == multiple) continue;
          const int32_t u = bonds_[other].other(v);
          if (total_degree(u) > 3) continue;
          if (conjugation_candidate(u)) conjugated_[multiple] = conjugated_[other] = true;
        }
      }
    }
  }

  // ---- hybridisation (RDKit's setHybridization via numBondsPlusLonePairs) ----

  int hybridization(int32_t v) const {
    const WorkAtom& w = atoms_[v];
    if (w.z <= 0) return 5;
    const int degree = total_degree(v);
    // A tetrahedral @ / @@ on four neighbours is SP3 whatever the electrons say.
    if ((w.atom.chirality == 1 || w.atom.chirality == 2) && degree == 4) return 2;
    int orbitals = degree;
    for (int32_t e : w.bonds)
      if (bonds_[e].dative && bonds_[e].b != v) --orbitals;  // a dative bond from v is its lone pair
    const int sigma = orbitals;
    if (w.z > 1 && w.z < 89) {
      const int outer = element_data(w.z).outer, total_valence = valence_[v] + implicit_h_[v], charge = w.atom.charge;
      const int free_electrons = outer - (total_valence + charge);
      if (total_valence + outer - charge < 8) {
        orbitals = sigma + (free_electrons - radicals_[v]) / 2 + radicals_[v];
      } else {
        orbitals = sigma + free_electrons / 2;
      }
    }
    bool has_conjugated = false;
    for (int32_t e : w.bonds) has_conjugated = has_conjugated || conjugated_[e];
    switch (orbitals) {
      case 2: return 0;                                          // SP
      case 3: return 1;                                          // SP2
      case 4: return has_conjugated && degree <= 3 ? 1 : 2;      // SP3, or SP2 beside a π system
      case 5: return 3;                                          // SP3D
      case 6: return 4;                                          // SP3D2
      default: return 5;                                         // S (0, 1) and unspecified: misc
    }
  }

  // ---- stereo ----

  static constexpr int32_t kHydrogen = -2;  // an H in a neighbour list

  // RDKit's legacy CIP ranks: atomic number (isotope next), then refined by the sorted ranks of the
  // neighbours (each repeated by bond order, H counted as the lowest) until the classes settle.
  void cip_ranks() {
    const int32_t n = static_cast<int32_t>(atoms_.size());
    rank_.assign(n, 0);
    std::vector<std::vector<int64_t>> keys(n);
    for (int32_t v = 0; v < n; ++v) keys[v] = {atoms_[v].z, atoms_[v].atom.isotope};
    int32_t classes = -1;
    for (int32_t round = 0; round <= n; ++round) {
      std::vector<std::vector<int64_t>> sorted = keys;
      std::sort(sorted.begin(), sorted.end());
      sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
      for (int32_t v = 0; v < n; ++v)
        rank_[v] = 1 + static_cast<int32_t>(std::lower_bound(sorted.begin(), sorted.end(), keys[v]) - sorted.begin());
      if (static_cast<int32_t>(sorted.size()) == classes) break;
      classes = static_cast<int32_t>(sorted.size());
      for (int32_t v = 0; v < n; ++v) {
        std::vector<int64_t> around;
        for (int32_t e : atoms_[v].bonds) {
          // Twice the bond order, so that an aromatic bond (1.5) counts 3 times.
          const int repeat = static_cast<int>(2 * std::max(1.0, bond_valence(e, v)) + 0.1);
          for (int k = 0; k < repeat; ++k) around.push_back(rank_[bonds_[e].other(v)]);
        }
        for (int k = 0; k < total_h(v); ++k) around.push_back(0);
        std::sort(around.rbegin(), around.rend());
        keys[v] = {rank_[v]};
        keys[v].insert(keys[v].end(), around.begin(), around.end());
      }
    }
  }

  // The written @ / @@ carried over to RDKit's neighbour order (bonds by index, an H last).
  int chirality(int32_t v) const {
    const int written = atoms_[v].atom.chirality;
    if (written == 0) return 0;
    if (written == 3) return 3;
    std::vector<int32_t> rdkit;
    for (int32_t e : atoms_[v].bonds) rdkit.push_back(bonds_[e].other(v));
    for (int k = 0; k < total_h(v); ++k) rdkit.push_back(kHydrogen);
    const std::vector<int32_t>& smiles = written_order_[v];
    int tag = written == 1 ? 2 : 1;  // @ = anticlockwise = CCW (2), @@ = CW (1)
    if (smiles.size() != rdkit.size()) return tag;
    std::vector<int32_t> position;
    std::vector<bool> used(rdkit.size(), false);
    for (int32_t u : smiles) {
      size_t k = 0;
      while (k < rdkit.size() && (used[k] || rdkit[k] != u)) ++k;
      if (k == rdkit.size()) return tag;
      used[k] = true;
      position.push_back(static_cast<int32_t>(k));
    }
    int inversions = 0;
    for (size_t i = 0; i < position.size(); ++i)
      for (size_t j = i + 1; j < position.size(); ++j) inversions += position[i] > position[j];
    return inversions % 2 ? 3 - tag : tag;
  }

  // Whether `neighbour` is above (+1) or below (−1) the double bond at `atom`, as the '/' or '\'
  // of their bond says, read from neighbour to atom; 0 without a direction.
  int side_sign(int32_t atom, int32_t e) const {
    const WorkBond& b = bonds_[e];
    if (!b.direction) return 0;
    const int written = b.direction == '/' ? 1 : -1;
    return b.b == atom ? written : -written;  // written from b.a to b.b
  }

  int stereo(int32_t e) const {
    const WorkBond& d = bonds_[e];
    if (d.type != BondType::double_ || (smallest_ring_[e] > 0 && smallest_ring_[e] < 8)) return 0;
    // One marked neighbour and the highest-ranked neighbour on each side.
    int32_t marked[2] = {-1, -1}, best[2] = {-1, -1};
    int sign[2] = {0, 0};
    const int32_t ends[2] = {d.a, d.b};
    for (int s = 0; s < 2; ++s) {
      const int32_t v = ends[s];
      if (total_degree(v) < 2 || total_degree(v) > 3) return 0;
      std::vector<int32_t> ranks;
      for (int32_t f : atoms_[v].bonds) {
        if (f == e) continue;
        const int32_t u = bonds_[f].other(v);
        ranks.push_back(rank_[u]);
        if (best[s] < 0 || rank_[u] > rank_[best[s]]) best[s] = u;
        if (marked[s] < 0) {
          const int signed_side = side_sign(v, f);
          if (signed_side) marked[s] = u, sign[s] = s == 0 ? signed_side : -signed_side;
        }
      }
      for (int k = 0; k < total_h(v); ++k) ranks.push_back(0);
      std::sort(ranks.begin(), ranks.end());
      if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) return 0;  // two equal substituents
      if (marked[s] < 0) return 0;
    }
    // The same direction read neighbour → first end and second end → neighbour: the marked pair is
    // trans (F/C=C/F); each marked neighbour that is not its side's highest-ranked flips that.
    bool trans = sign[0] == sign[1];
    if (marked[0] != best[0]) trans = !trans;
    if (marked[1] != best[1]) trans = !trans;
    return trans ? 2 : 1;  // E : Z
  }

  std::vector<WorkAtom> atoms_;
  std::vector<WorkBond> bonds_;
  std::vector<std::vector<int32_t>> written_order_;
  std::vector<int32_t> smallest_ring_;  // (E,) atoms of the smallest ring through the bond, 0 if none
  std::vector<int> valence_, implicit_h_, radicals_;
  std::vector<bool> conjugated_;
  std::vector<bool> aromatic_;  // (N,) as perceived
  std::vector<int32_t> rank_;
};

}  // namespace

OgbFeatures ogb_features(const Molecule& molecule) { return Perception(molecule).features(); }

}  // namespace urpe::data
