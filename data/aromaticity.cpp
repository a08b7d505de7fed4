// RDKit's Kekulé form and aromaticity model (see aromaticity.h for the rules).
#include "data/aromaticity.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "data/elements.h"

namespace urpe::data {

double valence_contribution(const AromaticityBond& bond, int32_t atom) {
  if (bond.dative) return atom == bond.b ? 1.0 : 0.0;
  switch (bond.type) {
    case BondType::single: return 1.0;
    case BondType::double_: return 2.0;
    case BondType::triple: return 3.0;
    case BondType::aromatic: return 1.5;
  }
  return 1.0;
}

namespace {

enum class Donor { vacant, one, two, one_or_two, any, none };

class Perceiver {
 public:
  Perceiver(const std::vector<AromaticityAtom>& atoms, const std::vector<AromaticityBond>& bonds, const Rings& rings)
      : atoms_(atoms), bonds_(bonds), rings_(rings), incident_(atoms.size()) {
    for (size_t e = 0; e < bonds_.size(); ++e) {
      incident_[bonds_[e].a].push_back(static_cast<int32_t>(e));
      incident_[bonds_[e].b].push_back(static_cast<int32_t>(e));
    }
  }

  PerceivedAromaticity run() {
    PerceivedAromaticity out;
    out.atom_aromatic.assign(atoms_.size(), false);
    out.bond_type.resize(bonds_.size());
    for (size_t e = 0; e < bonds_.size(); ++e) out.bond_type[e] = bonds_[e].type;
    if (!kekulize()) {  // RDKit would refuse the SMILES; keep what it says
      out.kekulized = false;
      for (size_t v = 0; v < atoms_.size(); ++v) out.atom_aromatic[v] = atoms_[v].written_aromatic;
      return out;
    }
    aromaticity();
    out.atom_aromatic = aromatic_atom_;
    out.bond_type = kekule_;
    for (size_t e = 0; e < bonds_.size(); ++e)
      if (aromatic_bond_[e]) out.bond_type[e] = BondType::aromatic;
    return out;
  }

 private:
  // ---- step 1: the Kekulé form (RDKit's markDbondCands and a perfect matching) ----

  int heavy_degree(int32_t v) const { return static_cast<int>(incident_[v].size()); }
  int total_h(int32_t v) const { return atoms_[v].explicit_h + atoms_[v].implicit_h; }

  // Whether aromatic atom v needs a double bond among its aromatic bonds.
  bool needs_double_bond(int32_t v) const {
    const AromaticityAtom& a = atoms_[v];
    const ElementData& data = element_data(a.z);
    if (a.z == 0 || data.any_valence()) return false;
    int sbo = 0, ignored = 0;
    for (int32_t e : incident_[v]) {
      if (bonds_[e].type == BondType::aromatic && !bonds_[e].dative) {
        ++sbo;
        continue;
      }
      const int c = static_cast<int>(std::lround(valence_contribution(bonds_[e], v)));
      sbo += c;
      ignored += c == 0;
    }
    sbo += total_h(v);
    int charge = a.charge;
    if (data.outer < 4) charge = -charge;  // early atoms: a charge works the other way
    if (a.z == 6 && charge > 0) charge = -charge;
    int dv = data.default_valence() + charge;
    const int total_valence = a.explicit_valence + a.implicit_h;
    const std::vector<int>& list = data.valences;
    for (size_t k = 1; total_valence > dv && k < list.size() && list[k] > 0; ++k) dv = list[k] + charge;
    const int degree = heavy_degree(v) + a.implicit_h - ignored;
    if (degree + a.radicals >= dv) return false;
    if (dv == sbo + 1 + a.radicals) return true;
    return a.radicals == 0 && a.bracket && dv == sbo + 2;
  }

  bool kekulize() {
    kekule_.resize(bonds_.size());
    for (size_t e = 0; e < bonds_.size(); ++e)
      kekule_[e] = bonds_[e].type == BondType::aromatic ? BondType::single : bonds_[e].type;
    std::vector<bool> candidate(atoms_.size(), false);
    bool any = false;
    for (size_t v = 0; v < atoms_.size(); ++v) {
      bool has_aromatic_bond = false;
      for (int32_t e : incident_[v]) has_aromatic_bond = has_aromatic_bond || bonds_[e].type == BondType::aromatic;
      if (atoms_[v].written_aromatic || has_aromatic_bond) {
        candidate[v] = needs_double_bond(static_cast<int32_t>(v));
        any = true;
      }
    }
    if (!any) return true;
    matched_.assign(atoms_.size(), false);
    for (size_t v = 0; v < atoms_.size(); ++v) matched_[v] = !candidate[v];
    steps_ = 0;
    return match();
  }

  // Every unmatched candidate gets one aromatic bond to another as its double bond: the atom with
  // the fewest open choices first, backtracking when one is left without.
  bool match() {
    if (++steps_ > 200000) return false;
    int32_t pick = -1;
    size_t fewest = 0;
    for (size_t v = 0; v < atoms_.size(); ++v) {
      if (matched_[v]) continue;
      size_t options = 0;
      for (int32_t e : incident_[v])
        if (bonds_[e].type == BondType::aromatic && !matched_[other(e, static_cast<int32_t>(v))]) ++options;
      if (pick < 0 || options < fewest) pick = static_cast<int32_t>(v), fewest = options;
      if (options == 0) return false;
    }
    if (pick < 0) return true;
    for (int32_t e : incident_[pick]) {
      const int32_t w = other(e, pick);
      if (bonds_[e].type != BondType::aromatic || matched_[w]) continue;
      matched_[pick] = matched_[w] = true;
      kekule_[e] = BondType::double_;
      if (match()) return true;
      kekule_[e] = BondType::single;
      matched_[pick] = matched_[w] = false;
    }
    return false;
  }

  int32_t other(int32_t e, int32_t v) const { return bonds_[e].a == v ? bonds_[e].b : bonds_[e].a; }

  // ---- step 2: electron donors on the Kekulé form (RDKit's countAtomElec, getAtomDonorTypeArom) ----

  double kekule_contribution(int32_t e, int32_t v) const {
    AromaticityBond b = bonds_[e];
    b.type = kekule_[e];
    return valence_contribution(b, v);
  }

  // π electrons atom v can give, or −1 when it cannot take part.
  int count_electrons(int32_t v) const {
    const AromaticityAtom& a = atoms_[v];
    const ElementData& data = element_data(a.z);
    const int dv = data.default_valence();
    if (dv <= 1) return -1;
    int degree = heavy_degree(v) + total_h(v);
    for (int32_t e : incident_[v])
      if (kekule_contribution(e, v) == 0.0) --degree;
    if (degree > 3) return -1;
    const int lone = std::max(data.outer - dv - a.charge, 0);
    int electrons = (dv - degree) + lone - a.radicals;
    if (electrons > 1 && a.explicit_valence - heavy_degree(v) > 1) electrons = 1;
    return electrons;
  }

  bool in_ring(int32_t e) const { return rings_.ring_bond[e]; }

  // An exocyclic multiple bond of v, and its other atom (−1 when none).
  int32_t exocyclic_multiple_partner(int32_t v) const {
    for (int32_t e : incident_[v])
      if (!in_ring(e) && kekule_contribution(e, v) >= 2.0) return other(e, v);
    return -1;
  }
  bool cyclic_multiple_bond(int32_t v) const {
    for (int32_t e : incident_[v])
      if (in_ring(e) && kekule_contribution(e, v) >= 2.0) return true;
    return false;
  }
  bool any_multiple_bond(int32_t v) const {
    int degree = heavy_degree(v) + atoms_[v].explicit_h;
    for (int32_t e : incident_[v])
      if (std::lround(kekule_contribution(e, v)) == 0) --degree;
    return atoms_[v].explicit_valence != degree;
  }
  // RDKit's PeriodicTable::moreElectroNegative: more outer electrons, then the lighter element.
  static bool more_electronegative(int z1, int z2) {
    const int n1 = element_data(z1).outer, n2 = element_data(z2).outer;
    return n1 > n2 || (n1 == n2 && z1 < z2);
  }

  Donor donor_type(int32_t v) const {
    if (atoms_[v].z == 0) return cyclic_multiple_bond(v) ? Donor::one : Donor::any;
    int electrons = count_electrons(v);
    const int32_t partner = exocyclic_multiple_partner(v);
    if (electrons < 0) return Donor::none;
    if (electrons == 0) {
      if (partner >= 0) return Donor::vacant;
      return cyclic_multiple_bond(v) ? Donor::one : Donor::none;
    }
    if (electrons == 1) {
      if (partner >= 0) return more_electronegative(atoms_[partner].z, atoms_[v].z) ? Donor::vacant : Donor::one;
      if (any_multiple_bond(v)) return Donor::one;
      return atoms_[v].charge == 1 ? Donor::vacant : Donor::none;  // tropylium, cyclopropenyl cations
    }
    if (partner >= 0 && more_electronegative(atoms_[partner].z, atoms_[v].z)) --electrons;
    return electrons % 2 == 1 ? Donor::one : Donor::two;
  }

  // RDKit's isAtomCandForArom.
  bool candidate(int32_t v, Donor donor) const {
    const AromaticityAtom& a = atoms_[v];
    if (a.z > 18 && a.z != 34 && a.z != 52) return false;
    if (donor == Donor::none) return false;
    const ElementData& data = element_data(a.z);
    if (data.default_valence() > 0) {
      const int shifted = a.z - a.charge;
      const int allowed = shifted >= 0 && shifted <= 118 ? element_data(shifted).default_valence() : -1;
      if (a.explicit_valence + a.implicit_h > allowed) return false;
    }
    if (a.radicals && (a.z != 6 || a.charge)) return false;
    if (a.explicit_valence - heavy_degree(v) > 1) {
      int multiple = 0;
      for (int32_t e : incident_[v])
        if (!bonds_[e].dative && (kekule_[e] == BondType::double_ || kekule_[e] == BondType::triple)) ++multiple;
      if (multiple > 1) return false;
    }
    return true;
  }

  static void electron_range(Donor d, int& low, int& high) {
    switch (d) {
      case Donor::any:
      case Donor::one_or_two: low = 1, high = 2; return;
      case Donor::one: low = high = 1; return;
      case Donor::two: low = high = 2; return;
      default: low = high = 0; return;
    }
  }

  // Hückel's rule on the atoms of a ring or fused combination.
  bool huckel(const std::vector<int32_t>& ring_atoms) const {
    int low = 0, high = 0, any = 0;
    for (int32_t v : ring_atoms) {
      if (donor_[v] == Donor::any && ++any > 1) return false;
      int l, h;
      electron_range(donor_[v], l, h);
      low += l, high += h;
    }
    if (high >= 6) {
      for (int n = low; n <= high; ++n)
        if ((n - 2) % 4 == 0) return true;
      return false;
    }
    return high == 2;
  }

  // ---- step 3: candidate rings, fused systems, Hückel on their combinations ----

  void aromaticity() {
    const size_t n = atoms_.size();
    aromatic_atom_.assign(n, false);
    aromatic_bond_.assign(bonds_.size(), false);
    donor_.assign(n, Donor::none);
    std::vector<bool> seen(n, false), is_candidate(n, false);
    std::vector<size_t> candidate_rings;  // indices into rings_
    for (size_t r = 0; r < rings_.atoms.size(); ++r) {
      const std::vector<int32_t>& ring = rings_.atoms[r];
      bool all = true, all_dummy = true;
      for (int32_t v : ring) {
        all_dummy = all_dummy && atoms_[v].z == 0;
        if (seen[v]) {
          all = all && is_candidate[v];
          continue;
        }
        seen[v] = true;
        Donor d = donor_type(v);
        // Ether O and S of a macrocycle (9 atoms or more) bridge; they give no π electrons.
        if (d == Donor::two && ring.size() >= 9 && (atoms_[v].z == 8 || atoms_[v].z == 16) && heavy_degree(v) == 2 &&
            atoms_[v].charge == 0) {
          bool multiple = false;
          for (int32_t e : incident_[v]) multiple = multiple || kekule_[e] == BondType::double_ || kekule_[e] == BondType::triple;
          if (!multiple) d = Donor::none;
        }
        donor_[v] = d;
        is_candidate[v] = candidate(v, d);
        all = all && is_candidate[v];
      }
      if (all && !all_dummy) candidate_rings.push_back(r);
    }
    const size_t count = candidate_rings.size();
    // Neighbouring rings: both of at most 24 atoms, exactly one bond in common.
    std::vector<std::vector<size_t>> neighbours(count);
    for (size_t i = 0; i < count; ++i)
      for (size_t j = i + 1; j < count; ++j) {
        const auto& bi = rings_.bonds[candidate_rings[i]];
        const auto& bj = rings_.bonds[candidate_rings[j]];
        if (bi.size() > 24 || bj.size() > 24) continue;
        size_t shared = 0;
        for (int32_t e : bi) shared += std::binary_search(bj.begin(), bj.end(), e);
        if (shared == 1) neighbours[i].push_back(j), neighbours[j].push_back(i);
      }
    std::vector<bool> done(count, false);
    for (size_t start = 0; start < count; ++start) {
      if (done[start]) continue;
      std::vector<size_t> system;  // depth-first from `start`
      std::vector<size_t> stack = {start};
      done[start] = true;
      while (!stack.empty()) {
        const size_t r = stack.back();
        stack.pop_back();
        system.push_back(r);
        for (auto it = neighbours[r].rbegin(); it != neighbours[r].rend(); ++it)
          if (!done[*it]) done[*it] = true, stack.push_back(*it);
      }
      fused_system(system, candidate_rings, neighbours);
    }
  }

  // Whether the rings `chosen` (indices into the candidate list) are connected through neighbours.
  static bool connected(const std::vector<size_t>& chosen, const std::vector<std::vector<size_t>>& neighbours) {
    std::vector<size_t> reached = {chosen.front()}, stack = {chosen.front()};
    while (!stack.empty()) {
      const size_t r = stack.back();
      stack.pop_back();
      for (size_t w : neighbours[r])
        if (std::find(chosen.begin(), chosen.end(), w) != chosen.end() &&
            std::find(reached.begin(), reached.end(), w) == reached.end())
          reached.push_back(w), stack.push_back(w);
    }
    return reached.size() == chosen.size();
  }

  void fused_system(const std::vector<size_t>& system, const std::vector<size_t>& candidate_rings,
                    const std::vector<std::vector<size_t>>& neighbours) {
    const size_t rings = system.size();
    std::set<int32_t> system_bonds, done_bonds;
    for (size_t r : system)
      for (int32_t e : rings_.bonds[candidate_rings[r]]) system_bonds.insert(e);
    for (size_t size = 1; size <= std::min<size_t>(rings, 6); ++size) {
      if (done_bonds.size() >= system_bonds.size()) break;
      if (size == 3 && rings > 300) break;
      std::vector<size_t> pick(size);
      for (size_t k = 0; k < size; ++k) pick[k] = k;
      while (true) {
        std::vector<size_t> chosen;
        for (size_t k : pick) chosen.push_back(system[k]);
        if (connected(chosen, neighbours)) test_combination(chosen, candidate_rings, done_bonds);
        // The next combination of `size` out of `rings`, in lexicographic order.
        size_t k = size;
        while (k > 0 && pick[k - 1] == rings - size + k - 1) --k;
        if (k == 0) break;
        ++pick[k - 1];
        for (size_t j = k; j < size; ++j) pick[j] = pick[j - 1] + 1;
      }
    }
  }

  void test_combination(const std::vector<size_t>& chosen, const std::vector<size_t>& candidate_rings,
                        std::set<int32_t>& done_bonds) {
    std::map<int32_t, int> atom_count, bond_count;
    for (size_t r : chosen) {
      for (int32_t v : rings_.atoms[candidate_rings[r]]) ++atom_count[v];
      for (int32_t e : rings_.bonds[candidate_rings[r]]) ++bond_count[e];
    }
    std::vector<int32_t> counted;  // atoms in one or two of the rings (not buried deeper)
    for (const auto& [v, c] : atom_count)
      if (c == 1 || c == 2) counted.push_back(v);
    if (!huckel(counted)) return;
    for (const auto& [e, c] : bond_count) {
      if (c != 1) continue;
      if (kekule_[e] == BondType::single || kekule_[e] == BondType::double_) {
        aromatic_bond_[e] = true;
        aromatic_atom_[bonds_[e].a] = aromatic_atom_[bonds_[e].b] = true;
      }
      done_bonds.insert(e);
    }
  }

  const std::vector<AromaticityAtom>& atoms_;
  const std::vector<AromaticityBond>& bonds_;
  const Rings& rings_;
  std::vector<std::vector<int32_t>> incident_;
  std::vector<BondType> kekule_;
  std::vector<bool> matched_;
  int64_t steps_ = 0;
  std::vector<Donor> donor_;
  std::vector<bool> aromatic_atom_, aromatic_bond_;
};

}  // namespace

PerceivedAromaticity perceive_aromaticity(const std::vector<AromaticityAtom>& atoms,
                                          const std::vector<AromaticityBond>& bonds, const Rings& rings) {
  return Perceiver(atoms, bonds, rings).run();
}

}  // namespace urpe::data
