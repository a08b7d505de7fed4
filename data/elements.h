// The periodic table as RDKit reads molecules with it (RDKit 2026.09.1's PeriodicTable:
// GetNOuterElecs, GetValenceList), the data behind urpe's valences, implicit hydrogens, radicals,
// aromaticity and hybridisation (data/ogb_features.h, data/aromaticity.h).
#pragma once
#include <vector>

namespace urpe::data {

struct ElementData {
  int outer = 0;                     // outer-shell electrons (0 for '*'); transition metals too (Cu 11, Zn 2)
  std::vector<int> valences = {-1};  // allowed valences, the first the default; -1: any (a trailing -1:
                                     // any beyond the ones listed, Li 1 then any)
  int default_valence() const { return valences.front(); }
  bool any_valence() const { return valences.front() < 0; }
  // The listed valences without the trailing "any" (-1) entry.
  std::vector<int> finite_valences() const;
};

// Atomic number 0 ('*') … 118; any other number gets ElementData{} (no outer electrons, any valence).
const ElementData& element_data(int z);

}  // namespace urpe::data
