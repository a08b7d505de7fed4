// SMILES → Molecule: a from-scratch parser for the subset of OpenSMILES that molecule datasets
// (ZINC, PCQM4M, the embedded set) use. Heavy atoms only; hydrogens stay counts on their atom.
//
// Accepted:
//   atoms     organic subset  B C N O P S F Cl Br I, aromatic b c n o p s, and '*' (element "*");
//             bracket atoms   [isotope? symbol chirality? H-count? charge? class?], any element of
//                             the periodic table, aromatic b c n o p s se as te; the isotope,
//                             chirality (@, @@, @TH1, @OH12, …) and atom class are read and ignored.
//   bonds     - = # :   and stereo / \ (read as single); none written = single, or aromatic
//             between two aromatic atoms.
//   structure branches ( … ), ring closures 0-9 and %nn (a bond symbol may sit on either end),
//             '.' between disconnected parts.
// Not accepted (clear error): '$' quadruple bonds. A bracket [H] stays an atom with element "H"
// (RDKit would fold it into its neighbour; the datasets here have none).
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
};

struct Bond {
  int32_t begin = 0, end = 0;  // atom indices (order of the SMILES string)
  BondType type = BondType::single;
};

struct Molecule {
  std::vector<Atom> atoms;    // in the order they appear in the string (= RDKit's atom order)
  std::vector<Bond> bonds;    // in the order they are closed in the string
  int num_ring_closures = 0;  // ring-closure bonds (digits and %nn pairs)
  int num_parts = 0;          // '.'-separated parts (a ring closure may still join two of them)
};

// Parses one SMILES string. `line` only labels error messages.
Molecule parse_smiles(const std::string& smiles, int64_t line = 1);

}  // namespace urpe::data
