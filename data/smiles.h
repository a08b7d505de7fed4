// SMILES → Molecule: a from-scratch parser for the subset of OpenSMILES that molecule datasets
// (ZINC, PCQM4M, the embedded set) use. Heavy atoms only; hydrogens stay counts on their atom.
//
// Accepted:
//   atoms     organic subset  B C N O P S F Cl Br I, aromatic b c n o p s, and '*' (element "*");
//             bracket atoms   [isotope? symbol chirality? H-count? charge? class?], any element of
//                             the periodic table, aromatic b c n o p s se as te; the isotope and
//                             chirality (@, @@, @TH1, @OH12, …) are kept on the atom
//                             (data/ogb_features.h reads them); the atom class is read and ignored.
//   bonds     - = # :   and stereo / \ (single, direction kept); none written = single, or aromatic
//             between two aromatic atoms; dative -> and <- (single, `dative` set, begin = the donor:
//             the atom the arrow points from).
//   structure branches ( … ), ring closures 0-9 and %nn (a bond symbol may sit on either end),
//             '.' between disconnected parts.
// Not accepted (clear error): '$' quadruple bonds. A bracket [H] stays an atom with element "H"
// (RDKit would fold it into its neighbour; data/ogb_features.cpp does, the graph layer does not).
//
// Every error is a urpe::Error "SMILES line L, column C: expected …: <the SMILES>", columns
// 1-based, the line number given by the caller (the CSV line, or 1).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace urpe::data {

// Values are the ids the graph layer uses as raw bond types (0 means "no bond").
enum class BondType : int32_t { single = 1, double_ = 2, triple = 3, aromatic = 4 };
constexpr int kNumBondTypes = 4;
const char* bond_type_name(BondType type);  // "single", "double", "triple", "aromatic"

struct Atom {
  std::string element;   // capitalised symbol: "C", "Cl", "N" (also for aromatic "n")
  int charge = 0;        // formal charge
  int explicit_h = 0;    // H count written in a bracket atom ([NH4+] → 4); 0 outside brackets
  bool aromatic = false; // written lowercase
  bool bracket = false;  // written inside [ ]
  int isotope = 0;       // mass number written in a bracket atom ([2H] → 2); 0 when none
  int chirality = 0;     // 0 none, 1 '@' (anticlockwise), 2 '@@' (clockwise), 3 another class (@TH1, @OH12, …)
};

struct Bond {
  int32_t begin = 0, end = 0;  // atom indices; a chain bond's begin is written first
  BondType type = BondType::single;
  char direction = 0;    // '/' or '\\' as written (from begin to end), else 0
  bool dative = false;   // written -> or <- (type single; begin is the donor, end the acceptor)
  int ring_number = -1;  // the ring-closure number that wrote this bond, -1 for a chain bond
};

struct Molecule {
  std::vector<Atom> atoms;    // in the order they appear in the string (= RDKit's atom order)
  std::vector<Bond> bonds;    // in the order they are closed in the string
  int num_ring_closures = 0;  // ring-closure bonds (digits and %nn pairs)
  int num_parts = 0;          // '.'-separated parts (a ring closure may still join two of them)
  // Per atom, its neighbours in the order the string writes them (OpenSMILES' order for
  // chirality: the atom it follows, its ring closures where their digits stand, then branches
  // and the next atom); has_preceding[a] says whether the first one is the atom a follows.
  std::vector<std::vector<int32_t>> neighbour_order;  // (N, degree)
  std::vector<bool> has_preceding;                     // (N,)
};

// Atomic number of an element symbol ("C" → 6, "Cl" → 17), 0 for "*", -1 for anything else.
int atomic_number(const std::string& element);
// The symbol of atomic number z in [1, 118] ("C" for 6); "*" otherwise.
const char* element_symbol(int z);

// Parses one SMILES string. `line` only labels error messages.
Molecule parse_smiles(const std::string& smiles, int64_t line = 1);

}  // namespace urpe::data
