// Aromaticity perceived as RDKit perceives it when it reads a SMILES (MolOps::Kekulize, then
// MolOps::setAromaticity with its default "RDKit" model), so that a Kekulé SMILES (C1=CC=CC=C1)
// and an aromatic one (c1ccccc1) give the same atoms and bonds (data/ogb_features.h).
//
//  1. Kekulé form: the bonds written aromatic become single or double, one double bond on every
//     aromatic atom that can take one (RDKit's rule: default valence, charge and H count; c and n
//     can, [nH], o, s and c(=O) cannot), found by a backtracking perfect matching. With none the
//     written aromaticity is kept (RDKit refuses such a SMILES: "Can't kekulize").
//  2. Each atom of a ring gets an electron-donor type from its Kekulé bonds (countAtomElec): a
//     ring double bond gives one π electron; a lone pair two (pyrrole N, furan O); an exocyclic
//     double bond to a more electronegative atom none (the C of C=O); ring O and S of rings of 9 or
//     more atoms with two single bonds none. Atoms beyond the second row (but Se, Te), above
//     their default valence, heteroatoms with radicals, or with two multiple bonds are out.
//  3. Rings (data/rings.h: the relevant cycles) whose atoms are all candidates form fused systems
//     (rings of at most 24 atoms sharing exactly one bond). Every connected combination of 1 … 6
//     rings of a system is tested with Hückel's rule on the atoms in one or two of its rings: the
//     π electrons, each atom's between its fewest and most, can make 4n + 2 (or 2 for a 3-ring).
//     An aromatic combination makes the bonds in exactly one of its rings aromatic, with their atoms
//     (so azulene's shared bond stays single: only the 10-atom perimeter passes).
#pragma once
#include <cstdint>
#include <vector>

#include "data/rings.h"
#include "data/smiles.h"

namespace urpe::data {

// One atom as RDKit's perception sees it, after valences and hydrogens are known.
struct AromaticityAtom {
  int z = 0;               // atomic number (0 for '*')
  int charge = 0;
  int explicit_h = 0;      // H written in the bracket (or folded [H] atoms): RDKit's getNumExplicitHs
  int implicit_h = 0;
  int radicals = 0;
  int explicit_valence = 0;  // RDKit's explicit valence (bond orders, aromatic 1.5, plus explicit_h)
  bool written_aromatic = false;
  bool bracket = false;    // RDKit's noImplicit
};

struct AromaticityBond {
  int32_t a = 0, b = 0;    // b is the acceptor of a dative bond
  BondType type = BondType::single;  // as written
  bool dative = false;
};

// The valence a bond gives `atom` (one of its ends): its order (aromatic 1.5); a dative bond 0 to
// its donor, 1 to its acceptor (RDKit's Bond::getValenceContrib).
double valence_contribution(const AromaticityBond& bond, int32_t atom);

struct PerceivedAromaticity {
  std::vector<bool> atom_aromatic;     // (N,)
  std::vector<BondType> bond_type;     // (E,) aromatic, or single/double/triple (Kekulé form)
  bool kekulized = true;               // false: no Kekulé form; the written aromaticity is kept
};

PerceivedAromaticity perceive_aromaticity(const std::vector<AromaticityAtom>& atoms,
                                          const std::vector<AromaticityBond>& bonds, const Rings& rings);

}  // namespace urpe::data
