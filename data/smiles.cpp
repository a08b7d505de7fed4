// SMILES parser: one left-to-right pass with a branch stack and a table of open ring bonds.
// Grammar (OpenSMILES, reduced):
//   chain   := atom ( bond? ( atom | ring_closure ) | '(' bond? chain ')' | '.' atom )*
//   atom    := organic | aromatic | '*' | '[' isotope? symbol chiral? hcount? charge? class? ']'
#include "data/smiles.h"

#include <array>
#include <cctype>
#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_set>
#include <sstream>

#include "tensor/error.h"

namespace urpe::data {

const char* bond_type_name(BondType type) {
  switch (type) {
    case BondType::single: return "single";
    case BondType::double_: return "double";
    case BondType::triple: return "triple";
    case BondType::aromatic: return "aromatic";
  }
  return "?";
}

namespace {

// Every element symbol, 1..118, for bracket atoms.
constexpr std::array<const char*, 118> kElements = {
    "H",  "He", "Li", "Be", "B",  "C",  "N",  "O",  "F",  "Ne", "Na", "Mg", "Al", "Si", "P",
    "S",  "Cl", "Ar", "K",  "Ca", "Sc", "Ti", "V",  "Cr", "Mn", "Fe", "Co", "Ni", "Cu", "Zn",
    "Ga", "Ge", "As", "Se", "Br", "Kr", "Rb", "Sr", "Y",  "Zr", "Nb", "Mo", "Tc", "Ru", "Rh",
    "Pd", "Ag", "Cd", "In", "Sn", "Sb", "Te", "I",  "Xe", "Cs", "Ba", "La", "Ce", "Pr", "Nd",
    "Pm", "Sm", "Eu", "Gd", "Tb", "Dy", "Ho", "Er", "Tm", "Yb", "Lu", "Hf", "Ta", "W",  "Re",
    "Os", "Ir", "Pt", "Au", "Hg", "Tl", "Pb", "Bi", "Po", "At", "Rn", "Fr", "Ra", "Ac", "Th",
    "Pa", "U",  "Np", "Pu", "Am", "Cm", "Bk", "Cf", "Es", "Fm", "Md", "No", "Lr", "Rf", "Db",
    "Sg", "Bh", "Hs", "Mt", "Ds", "Rg", "Cn", "Nh", "Fl", "Mc", "Lv", "Ts", "Og"};

bool is_element(const std::string& symbol) {
  for (const char* e : kElements)
    if (symbol == e) return true;
  return false;
}

class Parser {
 public:
  Parser(const std::string& text, int64_t line) : s_(text), line_(line) {}

  Molecule parse() {
    if (s_.empty()) fail(0, "an atom (the SMILES is empty)");
    int32_t previous = -1;        // atom the next atom bonds to; -1 after '.' or at the start
    char pending_bond = 0;        // bond symbol read but not yet used
    size_t pending_bond_at = 0;
    std::vector<std::pair<int32_t, size_t>> branches;  // (atom, column of '(')
    bool last_was_open_paren = false;
    mol_.num_parts = 1;

    while (pos_ < s_.size()) {
      const size_t at = pos_;
      const char c = s_[pos_];
      if (c == '(') {
        if (previous < 0) fail(at, "an atom before '('");
        if (pending_bond) fail(at, "an atom after the bond '" + std::string(1, pending_bond) + "'");
        branches.emplace_back(previous, at);
        ++pos_;
        last_was_open_paren = true;
        continue;
      }
      if (c == ')') {
        if (branches.empty()) fail(at, "an atom, bond or ring closure; ')' closes no open branch");
        if (last_was_open_paren) fail(at, "an atom inside the branch '()'");
        if (pending_bond) fail(at, "an atom after the bond '" + std::string(1, pending_bond) + "'");
        previous = branches.back().first;
        branches.pop_back();
        ++pos_;
        continue;
      }
      last_was_open_paren = false;
      if (c == '.') {
        if (previous < 0) fail(at, "an atom before '.'");
        if (pending_bond) fail(at, "an atom after the bond '" + std::string(1, pending_bond) + "'");
        if (!branches.empty()) fail(at, "')' to close the branch opened at column " +
                                            std::to_string(branches.back().second + 1) + " before '.'");
        previous = -1;
        ++mol_.num_parts;
        ++pos_;
        continue;
      }
      if (is_bond_symbol(c)) {
        // Dative bonds: "->" (from the atom before to the atom after) becomes '>', "<-" '<'.
        const char symbol = dative_at(at) ? (c == '-' ? '>' : '<') : c;
        const std::string written = symbol == '>' ? "->" : symbol == '<' ? "<-" : std::string(1, c);
        if (previous < 0) fail(at, "an atom before the bond '" + written + "'");
        if (pending_bond) fail(at, "an atom or ring closure after the bond '" + std::string(1, pending_bond) + "'");
        pending_bond = symbol;
        pending_bond_at = at;
        pos_ += written.size();
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) || c == '%') {
        if (previous < 0) fail(at, "an atom before the ring closure");
        const int number = read_ring_number();
        ring_closure(previous, number, pending_bond, at);
        pending_bond = 0;
        continue;
      }
      if (c == '$') fail(at, "a bond - = # : / \\ (quadruple bonds '$' are not supported)");
      const int32_t atom = read_atom();
      mol_.has_preceding.push_back(previous >= 0);
      if (previous >= 0) add_bond(previous, atom, pending_bond, pending_bond ? pending_bond_at : at);
      pending_bond = 0;
      previous = atom;
    }
    const size_t end = s_.size();
    if (previous < 0) fail(end, "an atom after the '.' at the end");
    if (pending_bond) fail(end, "an atom after the bond '" + std::string(1, pending_bond) + "' at the end");
    if (!branches.empty())
      fail(end, "')' to close the branch opened at column " + std::to_string(branches.back().second + 1));
    if (!open_rings_.empty()) {
      const auto& ring = *open_rings_.begin();
      fail(end, "ring bond " + std::to_string(ring.first) + " (opened at column " +
                    std::to_string(ring.second.column + 1) + ") to be closed");
    }
    return std::move(mol_);
  }

 private:
  struct OpenRing {
    int32_t atom;
    char bond;
    size_t column;
    size_t slot;  // the place of the closing atom in neighbour_order[atom]
  };

  [[noreturn]] void fail(size_t column, const std::string& expected) const {
    std::ostringstream m;
    m << "SMILES line " << line_ << ", column " << column + 1 << ": expected " << expected << ": "
      << (s_.size() > 120 ? s_.substr(0, 117) + "..." : s_);
    throw Error(m.str());
  }

  static bool is_bond_symbol(char c) {
    return c == '-' || c == '=' || c == '#' || c == ':' || c == '/' || c == '\\' || c == '<';
  }
  // Whether the text at `at` is a dative bond, "->" or "<-" ('<' alone is no bond).
  bool dative_at(size_t at) const {
    if (at + 1 >= s_.size()) {
      if (s_[at] == '<') fail(at, "'<-' (a dative bond) or an atom");
      return false;
    }
    if (s_[at] == '-' && s_[at + 1] == '>') return true;
    if (s_[at] == '<' && s_[at + 1] == '-') return true;
    if (s_[at] == '<') fail(at, "'<-' (a dative bond) or an atom");
    return false;
  }

  int read_ring_number() {
    if (s_[pos_] != '%') return s_[pos_++] - '0';
    const size_t at = pos_;
    if (pos_ + 2 >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_ + 1])) ||
        !std::isdigit(static_cast<unsigned char>(s_[pos_ + 2])))
      fail(at, "two digits after '%' (ring closure %nn)");
    pos_ += 3;
    return (s_[at + 1] - '0') * 10 + (s_[at + 2] - '0');
  }

  void ring_closure(int32_t atom, int number, char bond, size_t column) {
    auto it = open_rings_.find(number);
    if (it == open_rings_.end()) {
      open_rings_[number] = OpenRing{atom, bond, column, mol_.neighbour_order[atom].size()};
      mol_.neighbour_order[atom].push_back(-1);  // filled in when the ring closes
      return;
    }
    const OpenRing ring = it->second;
    open_rings_.erase(it);
    if (ring.atom == atom) fail(column, "a ring closure to another atom (ring bond " +
                                            std::to_string(number) + " closes on its own atom)");
    const auto plain = [](char symbol) { return symbol == '/' || symbol == '\\' ? '-' : symbol; };
    if (ring.bond && bond && plain(ring.bond) != plain(bond))
      fail(column, "the same bond symbol on both ends of ring bond " + std::to_string(number) +
                       " ('" + std::string(1, ring.bond) + "' and '" + std::string(1, bond) + "')");
    // A '/' or '\\' reads from the atom it is written at to the ring partner: on the closing
    // side it points closing → opening, the reverse of this bond's begin → end.
    const char flipped = bond == '/' ? '\\' : bond == '\\' ? '/' : bond == '>' ? '<' : bond == '<' ? '>' : bond;
    add_bond(ring.atom, atom, bond ? flipped : ring.bond, column, number);
    mol_.neighbour_order[ring.atom][ring.slot] = atom;
    mol_.neighbour_order[atom].push_back(ring.atom);
    ++mol_.num_ring_closures;
  }

  // Bond symbol (0 = none written) → type; with none, '/' or '\\': aromatic between two aromatic
  // atoms (as RDKit perceives such a bond inside an aromatic ring), else single.
  BondType bond_of(char symbol, int32_t a, int32_t b) const {
    switch (symbol) {
      case '=': return BondType::double_;
      case '#': return BondType::triple;
      case ':': return BondType::aromatic;
      case '-': return BondType::single;
      default:
        return (!mol_.atoms.empty() && mol_.atoms[a].aromatic && mol_.atoms[b].aromatic)
                   ? BondType::aromatic : BondType::single;
    }
  }

  // A chain bond (ring_number < 0) also extends both atoms' neighbour_order; a ring closure's
  // places there are set by ring_closure. The duplicate check looks the pair up in a hash set:
  // scanning every bond so far made parsing quadratic, and a 10⁶-atom line never finished.
  void add_bond(int32_t a, int32_t b, char symbol, size_t column, int ring_number = -1) {
    const uint64_t pair = (static_cast<uint64_t>(std::min(a, b)) << 32) | static_cast<uint32_t>(std::max(a, b));
    if (!bonded_pairs_.insert(pair).second)
      fail(column, "at most one bond between atoms " + std::to_string(a + 1) + " and " +
                       std::to_string(b + 1) + " (a second one is written here)");
    Bond bond{a, b, bond_of(symbol, a, b)};
    bond.ring_number = ring_number;
    if (symbol == '>' || symbol == '<') {  // dative: single for the graph, begin = donor, end = acceptor
      bond.type = BondType::single;
      bond.dative = true;
      if (symbol == '<') std::swap(bond.begin, bond.end);
    }
    if (symbol == '/' || symbol == '\\') bond.direction = symbol;
    mol_.bonds.push_back(bond);
    if (ring_number < 0) {
      mol_.neighbour_order[a].push_back(b);
      mol_.neighbour_order[b].push_back(a);
    }
  }

  int32_t read_atom() {
    const size_t at = pos_;
    Atom atom;
    const char c = s_[pos_];
    if (c == '[') {
      read_bracket_atom(atom);
    } else if (c == '*') {
      atom.element = "*";
      ++pos_;
    } else if (c == 'C' && peek(1) == 'l') {
      atom.element = "Cl", pos_ += 2;
    } else if (c == 'B' && peek(1) == 'r') {
      atom.element = "Br", pos_ += 2;
    } else if (std::string("BCNOPSFI").find(c) != std::string::npos) {
      atom.element = std::string(1, c), ++pos_;
    } else if (std::string("bcnops").find(c) != std::string::npos) {
      atom.element = std::string(1, static_cast<char>(std::toupper(c)));
      atom.aromatic = true;
      ++pos_;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      fail(at, "an atom: '" + std::string(1, c) + "' is not an element of the organic subset "
                   "(B C N O P S F Cl Br I b c n o p s); write other elements in brackets, e.g. [Na]");
    } else {
      fail(at, std::string("an atom, bond, branch or ring closure, got '") + c + "'");
    }
    mol_.atoms.push_back(atom);
    mol_.neighbour_order.emplace_back();
    return static_cast<int32_t>(mol_.atoms.size() - 1);
  }

  char peek(size_t ahead) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  bool at_digit() const { return pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])); }

  void read_bracket_atom(Atom& atom) {
    const size_t open = pos_++;
    atom.bracket = true;
    while (at_digit()) {  // isotope (capped: only "is there one" and small masses matter)
      if (atom.isotope < 100000) atom.isotope = atom.isotope * 10 + (s_[pos_] - '0');
      ++pos_;
    }
    // Element: aromatic lowercase (b c n o p s se as te), '*', or a capital plus an optional
    // lowercase letter (longest valid element wins).
    const size_t symbol_at = pos_;
    if (pos_ >= s_.size()) fail(pos_, "an element symbol after '['");
    const char c = s_[pos_];
    if (c == '*') {
      atom.element = "*", ++pos_;
    } else if (std::islower(static_cast<unsigned char>(c))) {
      const std::string two = s_.substr(pos_, 2);
      if (two == "se" || two == "as" || two == "te") {
        atom.element = std::string(1, static_cast<char>(std::toupper(two[0]))) + two[1];
        pos_ += 2;
      } else if (std::string("bcnops").find(c) != std::string::npos) {
        atom.element = std::string(1, static_cast<char>(std::toupper(c)));
        ++pos_;
      } else {
        fail(symbol_at, "an element symbol: '" + std::string(1, c) + "' is not an aromatic element "
                            "(b c n o p s se as te)");
      }
      atom.aromatic = true;
    } else if (std::isupper(static_cast<unsigned char>(c))) {
      const char next = peek(1);
      if (std::islower(static_cast<unsigned char>(next)) && is_element(std::string{c, next})) {
        atom.element = std::string{c, next}, pos_ += 2;
      } else if (is_element(std::string(1, c))) {
        atom.element = std::string(1, c), ++pos_;
      } else {
        const std::string shown = std::islower(static_cast<unsigned char>(next)) ? std::string{c, next}
                                                                                 : std::string(1, c);
        fail(symbol_at, "an element symbol: '" + shown + "' is not an element");
      }
    } else {
      fail(symbol_at, std::string("an element symbol after '[', got '") + c + "'");
    }
    // Chirality: @, @@, or @ + a class name (TH AL SP TB OH) and digits (@TH1 = @, @TH2 = @@).
    if (peek(0) == '@') {
      ++pos_;
      atom.chirality = 1;
      if (peek(0) == '@') {
        ++pos_;
        atom.chirality = 2;
      } else if (std::isupper(static_cast<unsigned char>(peek(0))) &&
                 std::isupper(static_cast<unsigned char>(peek(1)))) {
        const std::string cls = s_.substr(pos_, 2);
        if (cls != "TH" && cls != "AL" && cls != "SP" && cls != "TB" && cls != "OH")
          fail(pos_, "a chirality class TH AL SP TB or OH after '@'");
        pos_ += 2;
        if (!at_digit()) fail(pos_, "a number after the chirality class " + cls);
        const size_t digits = pos_;
        while (at_digit()) ++pos_;
        const std::string number = s_.substr(digits, pos_ - digits);
        atom.chirality = cls == "TH" && number == "1" ? 1 : cls == "TH" && number == "2" ? 2 : 3;
      }
    }
    if (peek(0) == 'H') {
      ++pos_;
      atom.explicit_h = 1;
      if (at_digit()) atom.explicit_h = s_[pos_++] - '0';
    }
    if (peek(0) == '+' || peek(0) == '-') {
      // The magnitude stops growing past kMaxCharge, so no run of digits or signs can overflow it
      // (an int that wrapped would turn "+4294967297" into +1).
      constexpr int kMaxCharge = 15;
      const size_t sign_at = pos_;
      const char sign = s_[pos_++];
      int magnitude = 1;
      if (at_digit()) {
        magnitude = 0;
        while (at_digit()) {
          if (magnitude <= kMaxCharge) magnitude = magnitude * 10 + (s_[pos_] - '0');
          ++pos_;
        }
      } else {
        while (peek(0) == sign) {  // ++ or --
          if (magnitude <= kMaxCharge) ++magnitude;
          ++pos_;
        }
      }
      if (magnitude > kMaxCharge) {
        const std::string written = s_.substr(sign_at, pos_ - sign_at);
        fail(sign_at, "a charge between -15 and +15, got '" +
                          (written.size() > 20 ? written.substr(0, 17) + "..." : written) + "'");
      }
      atom.charge = sign == '+' ? magnitude : -magnitude;
    }
    if (peek(0) == ':') {  // atom class, ignored
      ++pos_;
      if (!at_digit()) fail(pos_, "an atom class number after ':'");
      while (at_digit()) ++pos_;
    }
    if (peek(0) != ']') {
      if (pos_ >= s_.size())
        fail(pos_, "']' to close the bracket atom opened at column " + std::to_string(open + 1));
      fail(pos_, std::string("']' to close the bracket atom opened at column ") +
                     std::to_string(open + 1) + " (after the element: chirality @, H count, "
                     "charge, atom class), got '" + s_[pos_] + "'");
    }
    ++pos_;
  }

  const std::string& s_;
  int64_t line_;
  size_t pos_ = 0;
  Molecule mol_;
  std::map<int, OpenRing> open_rings_;
  std::unordered_set<uint64_t> bonded_pairs_;  // (smaller atom << 32) | larger atom, per bond
};

}  // namespace

int atomic_number(const std::string& element) {
  if (element == "*") return 0;
  for (size_t k = 0; k < kElements.size(); ++k)
    if (element == kElements[k]) return static_cast<int>(k) + 1;
  return -1;
}

const char* element_symbol(int z) { return z >= 1 && z <= 118 ? kElements[z - 1] : "*"; }

Molecule parse_smiles(const std::string& smiles, int64_t line) { return Parser(smiles, line).parse(); }

}  // namespace urpe::data
