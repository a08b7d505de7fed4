// OGB's molecule features (ogb.utils.smiles2graph, the input of Graphormer on PCQM4M: paper
// Appendix C.3.2), computed from urpe's SMILES parser without RDKit. OGB reads them from an RDKit
// molecule (Chem.MolFromSmiles: sanitised, explicit [H] atoms removed); this file rebuilds the
// pieces of RDKit's perception those features need (docs/data.md#pcqm4m-ogb-features):
//
//   atom (9)  atomic number − 1 (118 = misc, also for '*'); chirality 0 none, 1 CW, 2 CCW, 3 other
//             (RDKit's tag: the written @/@@ carried over to RDKit's bond order, where ring-closure
//             bonds come after the chain bonds, sorted by ring number, and an implicit H counts as
//             the last neighbour); total degree (heavy neighbours + H); formal charge + 5;
//             H count (bracket H, or implicit H from RDKit's valence rules, aromatic bonds 1.5);
//             radical electrons (bracket atoms below their valence, RDKit's assignRadicals);
//             hybridisation 0 SP, 1 SP2, 2 SP3, 3 SP3D, 4 SP3D2, 5 misc (S, unspecified) from
//             bonds + lone pairs (RDKit's numBondsPlusLonePairs; 4 with a conjugated bond → SP2;
//             a tetrahedral @/@@ on four neighbours → SP3); aromatic (perceived, below); in ring
//   bond (3)  type 0 single, 1 double, 2 triple, 3 aromatic, 4 misc (dative); stereo 0 none, 1 Z,
//             2 E (a double bond with / or \ on both sides, E/Z by the higher-ranked neighbour on
//             each side, ranks from RDKit's legacy CIP scheme: atomic number, then iterated
//             neighbour ranks); conjugated (aromatic bonds, and RDKit's setConjugation around
//             multiple bonds between conjugation candidates)
//
// Aromaticity is perceived as RDKit perceives it (data/aromaticity.h: the Kekulé form, the
// electron donors, Hückel's rule over fused ring systems of the relevant cycles, data/rings.h), so
// Kekulé, aromatic, canonical and non-canonical SMILES of one molecule give the same features.
// RDKit's clean-up of hypervalent halogens written with double bonds (OCl(=O)(=O)=O) is applied;
// element data are RDKit's periodic table (data/elements.h). How often each feature matches RDKit,
// and the difference that remains, is measured by tests/test_ogb_features.cpp on
// tests/fixtures/ogb_features.csv.gz (tools/make_ogb_fixture.py).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "data/smiles.h"

namespace urpe::data {

constexpr int kOgbAtomFeatures = 9;
constexpr int kOgbBondFeatures = 3;
// Names and the number of values of each feature (ogb/utils/features.py get_*_feature_dims).
extern const char* const kOgbAtomFeatureNames[kOgbAtomFeatures];
extern const char* const kOgbBondFeatureNames[kOgbBondFeatures];
extern const int32_t kOgbAtomFeatureDims[kOgbAtomFeatures];  // 119 5 12 12 10 6 6 2 2
extern const int32_t kOgbBondFeatureDims[kOgbBondFeatures];  // 5 6 2

struct OgbFeatures {
  std::vector<std::array<int32_t, kOgbAtomFeatures>> atoms;  // (N, 9): N atoms, [H] atoms folded away
  std::vector<int32_t> bond_begin, bond_end;                  // (E,) in RDKit's bond order
  std::vector<std::array<int32_t, kOgbBondFeatures>> bonds;   // (E, 3)
};

// The features of a parsed SMILES (see the top of this file).
OgbFeatures ogb_features(const Molecule& molecule);

}  // namespace urpe::data
