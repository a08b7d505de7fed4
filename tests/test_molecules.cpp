// Molecule data layer: SMILES parser (hand cases, malformed inputs, RDKit fixture, the embedded
// set), atom typing, shortest paths and path bond sequences, the cycle penalty, CSV and split
// files, and the Graphormer collator.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "data/csv_table.h"
#include "data/molecule_dataset.h"
#include "data/molecule_graph.h"
#include "data/smiles.h"
#include "doctest/doctest.h"

using namespace urpe;
using namespace urpe::data;

namespace {

#if URPE_WITH_ZLIB
constexpr bool kNoZlib = false;
#else
constexpr bool kNoZlib = true;  // the embedded set is .gz: those cases are skipped
#endif

const std::string kAssets = std::string(URPE_SOURCE_DIR) + "/data/assets/molecules";

std::vector<BondType> bond_types(const Molecule& m) {
  std::vector<BondType> t;
  for (const Bond& b : m.bonds) t.push_back(b.type);
  return t;
}

MoleculeGraph graph_of(const std::string& smiles) {
  AtomVocabulary vocabulary;
  return molecule_graph(parse_smiles(smiles), vocabulary, /*grow_vocabulary=*/true);
}

std::string temp_file(const std::string& name, const std::string& contents) {
  const std::string path = (std::filesystem::temp_directory_path() / ("urpe_test_molecules_" + name)).string();
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

std::string error_of(const std::string& smiles, int64_t line = 1) {
  try {
    parse_smiles(smiles, line);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---- parser: well-formed input ----

TEST_CASE("SMILES: aromatic benzene, small rings, %nn closures, branches, bond orders") {
  const Molecule benzene = parse_smiles("c1ccccc1");
  CHECK(benzene.atoms.size() == 6);
  CHECK(benzene.bonds.size() == 6);
  CHECK(benzene.num_ring_closures == 1);
  for (const Atom& a : benzene.atoms) CHECK((a.element == "C" && a.aromatic && !a.bracket));
  CHECK(bond_types(benzene) == std::vector<BondType>(6, BondType::aromatic));

  const Molecule cyclopropane = parse_smiles("C1CC1");
  CHECK(cyclopropane.atoms.size() == 3);
  CHECK(cyclopropane.bonds.size() == 3);
  CHECK(cyclopropane.bonds.back().begin == 0);
  CHECK(cyclopropane.bonds.back().end == 2);
  CHECK(bond_types(cyclopropane) == std::vector<BondType>(3, BondType::single));

  const Molecule percent = parse_smiles("C%10CC%12CC%12C%10");
  CHECK(percent.atoms.size() == 6);
  CHECK(percent.bonds.size() == 7);
  CHECK(percent.num_ring_closures == 2);

  // CC(C)(C)O: the branch atoms all bond to atom 1.
  const Molecule branches = parse_smiles("CC(C)(C)O");
  REQUIRE(branches.bonds.size() == 4);
  for (int k = 1; k < 4; ++k) CHECK(branches.bonds[k].begin == 1);
  CHECK(branches.bonds[3].end == 4);

  CHECK(bond_types(parse_smiles("C=CC#N")) ==
        std::vector<BondType>{BondType::double_, BondType::single, BondType::triple});
  // A bond symbol on a ring closure (either end) sets the ring bond's order.
  CHECK(parse_smiles("C=1CCCCC1").bonds.back().type == BondType::double_);
  CHECK(parse_smiles("C1CCCCC=1").bonds.back().type == BondType::double_);
  // Explicit single between aromatic atoms, aromatic ':' between aliphatic ones.
  const Molecule biphenyl = parse_smiles("c1ccccc1-c1ccccc1");
  CHECK(biphenyl.bonds.size() == 13);
  CHECK(biphenyl.bonds[6].type == BondType::single);
  CHECK(parse_smiles("C:C").bonds[0].type == BondType::aromatic);
  // Kekulé and two-letter organic atoms.
  const Molecule kekule = parse_smiles("ClC1=CC=C(Br)C=C1");
  CHECK(kekule.atoms.front().element == "Cl");
  CHECK(kekule.atoms[5].element == "Br");
  CHECK(kekule.num_parts == 1);
}

TEST_CASE("SMILES: bracket atoms, charges, explicit H, isotopes and stereo marks") {
  const Atom ammonium = parse_smiles("[NH4+]").atoms[0];
  CHECK(ammonium.element == "N");
  CHECK(ammonium.explicit_h == 4);
  CHECK(ammonium.charge == 1);
  CHECK(ammonium.bracket);
  CHECK(atom_type_key(ammonium) == "N H4 +");

  const Atom oxide = parse_smiles("[O-]").atoms[0];
  CHECK(oxide.charge == -1);
  CHECK(atom_type_key(oxide) == "O -");

  const Atom methyl = parse_smiles("[13CH3]").atoms[0];  // isotope ignored
  CHECK(methyl.element == "C");
  CHECK(methyl.explicit_h == 3);
  CHECK(atom_type_key(methyl) == "C H3");

  CHECK(parse_smiles("[Fe+2]").atoms[0].charge == 2);
  CHECK(parse_smiles("[Fe++]").atoms[0].charge == 2);
  CHECK(parse_smiles("[Fe+3]").atoms[0].element == "Fe");
  CHECK(atom_type_key(parse_smiles("[Fe+2]").atoms[0]) == "Fe ++");
  CHECK(parse_smiles("[N+]").atoms[0].charge == 1);
  CHECK(parse_smiles("[O--]").atoms[0].charge == -2);
  CHECK(parse_smiles("[Cl-]").atoms[0].element == "Cl");

  const Atom pyrrole_n = parse_smiles("c1cc[nH]c1").atoms[3];
  CHECK((pyrrole_n.element == "N" && pyrrole_n.aromatic && pyrrole_n.explicit_h == 1));
  CHECK(parse_smiles("[se]1cccc1").atoms[0].element == "Se");

  // Stereo: @, @@, @TH2 and / \ bonds are read and ignored.
  const Molecule chiral = parse_smiles("N[C@@H](C)C(=O)O");
  CHECK(chiral.atoms.size() == 6);
  CHECK(atom_type_key(chiral.atoms[1]) == "C H1");
  CHECK(parse_smiles("N[C@H](C)O").atoms.size() == 4);
  CHECK(parse_smiles("F[C@TH2](Cl)(Br)I").atoms.size() == 5);
  CHECK(bond_types(parse_smiles("F/C=C\\F")) ==
        std::vector<BondType>{BondType::single, BondType::double_, BondType::single});
  CHECK(parse_smiles("[CH3:7]C").atoms[0].explicit_h == 3);  // atom class ignored

  // ZINC atom typing with the 28-type vocabulary.
  AtomVocabulary zinc = AtomVocabulary::zinc();
  CHECK(zinc.size() == 28);
  const MoleculeGraph g = molecule_graph(parse_smiles("C[NH3+].[O-]C(=O)[C@@H](Cl)[nH+]"), zinc);
  CHECK(g.node_type == std::vector<int32_t>{0, 10, 7, 0, 1, 4, 6, 8});
  CHECK_THROWS_WITH_AS(molecule_graph(parse_smiles("c1cc[nH]c1"), zinc),
                       doctest::Contains("atom type 'N H1' is not in the atom vocabulary (28 types"), Error);
  CHECK(zinc.size() == 28);
  molecule_graph(parse_smiles("c1cc[nH]c1"), zinc, /*grow_vocabulary=*/true);
  CHECK(zinc.find("N H1") == 28);
}

TEST_CASE("SMILES: disconnected parts") {
  const Molecule salt = parse_smiles("[Na+].[Cl-]");
  CHECK(salt.atoms.size() == 2);
  CHECK(salt.bonds.empty());
  CHECK(salt.num_parts == 2);
  CHECK(num_connected_components(graph_of("CCO.c1ccccc1.[NH4+]")) == 3);
  // A ring closure may join two dot-separated parts: one component.
  const Molecule joined = parse_smiles("C1.C1");
  CHECK(joined.num_parts == 2);
  CHECK(num_connected_components(graph_of("C1.C1")) == 1);
}

// ---- parser: malformed input, one clear error each ----

TEST_CASE("SMILES: malformed input names line, column and what was expected") {
  CHECK(error_of("C1CC", 7) == "SMILES line 7, column 5: expected ring bond 1 (opened at column 2) to be "
                               "closed: C1CC");
  CHECK(error_of("C[NH4+", 3) == "SMILES line 3, column 7: expected ']' to close the bracket atom opened "
                                 "at column 2: C[NH4+");
  CHECK(error_of("C[Xx]C") == "SMILES line 1, column 3: expected an element symbol: 'Xx' is not an "
                              "element: C[Xx]C");
  CHECK(error_of("CC)C") == "SMILES line 1, column 3: expected an atom, bond or ring closure; ')' closes "
                            "no open branch: CC)C");
  CHECK(error_of("CXC").find("column 2: expected an atom: 'X' is not an element of the organic subset") !=
        std::string::npos);
  CHECK(error_of("C[N H4+]").find("column 4: expected ']'") != std::string::npos);
  CHECK(error_of("C[]").find("column 3: expected an element symbol after '[', got ']'") != std::string::npos);
  CHECK(error_of("C(C").find("column 4: expected ')' to close the branch opened at column 2") != std::string::npos);
  CHECK(error_of("C()C").find("column 3: expected an atom inside the branch '()'") != std::string::npos);
  CHECK(error_of("C==C").find("column 3: expected an atom or ring closure after the bond '='") != std::string::npos);
  CHECK(error_of("CC=").find("column 4: expected an atom after the bond '=' at the end") != std::string::npos);
  CHECK(error_of("(C)").find("column 1: expected an atom before '('") != std::string::npos);
  CHECK(error_of("C%1C").find("column 2: expected two digits after '%'") != std::string::npos);
  CHECK(error_of("C11").find("column 3: expected a ring closure to another atom") != std::string::npos);
  CHECK(error_of("C12CC12").find("column 7: expected at most one bond between atoms 1 and 3") != std::string::npos);
  CHECK(error_of("C=1CCC#1").find("column 8: expected the same bond symbol on both ends of ring bond 1 ('=' and '#')") !=
        std::string::npos);
  CHECK(error_of("C$C").find("quadruple bonds") != std::string::npos);
  CHECK(error_of("").find("column 1: expected an atom (the SMILES is empty)") != std::string::npos);
  CHECK(error_of("C.").find("column 3: expected an atom after the '.' at the end") != std::string::npos);
  CHECK(error_of(".C").find("column 1: expected an atom before '.'") != std::string::npos);
  CHECK_THROWS_AS(parse_smiles("C1CC"), Error);
}

TEST_CASE("SMILES: charges past +-15 are one error, however many digits or signs are written") {
  // The digits used to be summed into an int before the range check: "+4294967297" wrapped to a
  // charge of +1 and "-9999999990" overflowed (undefined behaviour).
  CHECK(error_of("[N+4294967297]", 4) == "SMILES line 4, column 3: expected a charge between -15 and "
                                          "+15, got '+4294967297': [N+4294967297]");
  CHECK(error_of("C[O-9999999990").find("column 4: expected a charge between -15 and +15, got "
                                        "'-9999999990'") != std::string::npos);
  CHECK(error_of("[Fe+16]").find("column 4: expected a charge between -15 and +15, got '+16'") !=
        std::string::npos);
  CHECK(error_of("[Fe+" + std::string(40, '9') + "]")
            .find("got '+9999999999999999...'") != std::string::npos);
  CHECK(error_of("[N" + std::string(16, '+') + "]").find("column 3: expected a charge between -15 and +15") !=
        std::string::npos);
  CHECK(error_of("[N" + std::string(100000, '-') + "]").find("expected a charge between") != std::string::npos);
  CHECK(parse_smiles("[Fe+15]").atoms[0].charge == 15);
  CHECK(parse_smiles("[Fe-015]").atoms[0].charge == -15);
  CHECK(parse_smiles("[Fe+0]").atoms[0].charge == 0);
  CHECK(parse_smiles("[N" + std::string(15, '-') + "]").atoms[0].charge == -15);

  // The same through a molecule CSV: the file, its line and the column in the SMILES.
  const std::string path = temp_file("huge_charge.csv", "smiles,y\nCCO,1\nC[N+4294967297]C,2\n");
  MoleculeCsvOptions options;
  options.target_column = "y";
  options.grow_vocabulary = true;
  CHECK_THROWS_WITH_AS(load_molecule_csv(path, options),
                       doctest::Contains("huge_charge.csv: SMILES line 3, column 4: expected a charge "
                                         "between -15 and +15, got '+4294967297'"),
                       Error);
}

// ---- parser against RDKit ----

TEST_CASE("SMILES: atom, bond, aromatic-bond, ring, charge and H counts match RDKit on zim.100") {
  const CsvTable t = read_csv(kAssets + "/zim100.csv");
  REQUIRE(t.rows.size() == 100);
  const int smiles = t.column("smiles"), atoms = t.column("num_atoms"), bonds = t.column("num_bonds"),
            aromatic = t.column("num_aromatic_bonds"), rings = t.column("num_rings"),
            charge = t.column("total_charge"), hs = t.column("total_bracket_h"), penalty = t.column("cycle_penalty");
  int mismatches = 0;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::string s = t.rows[r][smiles];
    REQUIRE(s.back() == '\n');  // ZINC-250k layout: newline inside the quotes
    const Molecule m = parse_smiles(s.substr(0, s.size() - 1), t.row_line[r]);
    int n_aromatic = 0, total_charge = 0, total_h = 0;
    for (const Bond& b : m.bonds) n_aromatic += b.type == BondType::aromatic;
    for (const Atom& a : m.atoms) total_charge += a.charge, total_h += a.explicit_h;
    const MoleculeGraph g = graph_of(s.substr(0, s.size() - 1));
    const bool ok = static_cast<double>(m.atoms.size()) == t.number(r, atoms) &&
                    static_cast<double>(m.bonds.size()) == t.number(r, bonds) &&
                    n_aromatic == t.number(r, aromatic) && m.num_ring_closures == t.number(r, rings) &&
                    total_charge == t.number(r, charge) && total_h == t.number(r, hs) &&
                    cycle_penalty(g) == t.number(r, penalty);
    if (!ok) {
      ++mismatches;
      INFO("line " << t.row_line[r] << ": " << s);
      CHECK(ok);
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("ZINC-250k layout: penalized logP from logP, SAS and the C++ cycle penalty") {
  const MoleculeDataset raw = load_zinc250k_csv(kAssets + "/zim100.csv", false, true);
  const MoleculeDataset normalized = load_zinc250k_csv(kAssets + "/zim100.csv", true, true);
  const CsvTable t = read_csv(kAssets + "/zim100.csv");
  REQUIRE(raw.size() == 100);
  CHECK(raw.smiles[0] == "Cc1c(C(=O)NCCO)[n+](=O)c2ccccc2n1[O-]");  // newline trimmed
  CHECK(raw.vocabulary.size() > 28);  // aromatic [nH] etc. grew the ZINC vocabulary
  int penalised = 0;
  for (size_t r = 0; r < raw.size(); ++r) {
    const double expected = t.number(r, t.column("logP")) - t.number(r, t.column("SAS")) -
                            t.number(r, t.column("cycle_penalty"));
    CHECK(raw.targets[r] == doctest::Approx(expected).epsilon(1e-5));
    CHECK(normalized.targets[r] == doctest::Approx(penalized_logp(t.number(r, t.column("logP")),
                                                                  t.number(r, t.column("SAS")),
                                                                  cycle_penalty(raw.graphs[r]), true))
                                       .epsilon(1e-5));
    penalised += t.number(r, t.column("cycle_penalty")) > 0;
  }
  CHECK(penalised == 5);  // zim.100 holds five molecules with rings larger than six
  // JT-VAE's normalisation: the ZINC-250k mean molecule scores 0.
  CHECK(penalized_logp(2.4570953396190123, 3.0525811293166134, 0, true) ==
        doctest::Approx(0.0485696876403053 / 0.2860212110245455));
  CHECK_THROWS_WITH_AS(load_zinc250k_csv(kAssets + "/zim100.csv", false, false),
                       doctest::Contains("is not in the atom vocabulary"), Error);
}

TEST_CASE("embedded dataset: parser and cycle penalty agree with RDKit on every molecule" * doctest::skip(kNoZlib)) {
  const std::string dir = kAssets;
  const EmbeddedMolecules e = load_embedded_molecules(dir);
  const MoleculeDataset& ds = e.dataset;
  REQUIRE(ds.size() == 9997);
  CHECK(ds.vocabulary.size() == 28);  // every atom within ZINC's 28 types (loading would throw)
  CHECK(e.split.train.size() == 7997);
  CHECK(e.split.valid.size() == 999);
  CHECK(e.split.test.size() == 1001);

  // The reference columns, computed by RDKit and networkx in tools/make_molecules.py.
  const CsvTable t = read_csv(dir + "/molecules.csv.gz");
  const int atoms = t.column("num_atoms"), bonds = t.column("num_bonds"), rings = t.column("num_rings"),
            penalty = t.column("cycle_penalty"), logp = t.column("logP"), sas = t.column("SAS"),
            raw_target = t.column("penalized_logp");
  int mismatches = 0, min_atoms = 1000, max_atoms = 0, penalised = 0, aromatic_bonds = 0;
  for (size_t r = 0; r < ds.size(); ++r) {
    const MoleculeGraph& g = ds.graphs[r];
    const Molecule m = parse_smiles(ds.smiles[r]);
    const int32_t p = cycle_penalty(g);
    const double target = penalized_logp(t.number(r, logp), t.number(r, sas), p, false);
    const bool ok = g.num_nodes == t.number(r, atoms) &&
                    static_cast<double>(g.edge_type.size()) == t.number(r, bonds) &&
                    m.num_ring_closures == t.number(r, rings) && p == t.number(r, penalty) &&
                    std::fabs(target - t.number(r, raw_target)) < 2e-4 &&
                    num_connected_components(g) == 1;
    if (!ok && ++mismatches <= 5) {
      INFO("line " << t.row_line[r] << ": " << ds.smiles[r]);
      CHECK(ok);
    }
    min_atoms = std::min(min_atoms, g.num_nodes);
    max_atoms = std::max(max_atoms, g.num_nodes);
    penalised += p > 0;
    for (int32_t type : g.edge_type) aromatic_bonds += type == static_cast<int32_t>(BondType::aromatic);
  }
  CHECK(mismatches == 0);
  CHECK(min_atoms == 9);
  CHECK(max_atoms == 30);
  CHECK(penalised == 410);
  CHECK(aromatic_bonds == 0);  // Kekulé SMILES: single, double and triple bonds only, as in ZINC

  // The baseline a model must beat: predict the train mean, MAE on test (benchmark scale).
  double mean = 0, mae = 0;
  for (int64_t k : e.split.train) mean += ds.targets[k];
  mean /= e.split.train.size();
  for (int64_t k : e.split.test) mae += std::fabs(ds.targets[k] - mean);
  mae /= e.split.test.size();
  CHECK(mae == doctest::Approx(1.2371).epsilon(1e-3));
}

// ---- graph preprocessing ----

TEST_CASE("shortest paths: chain, ring and disconnected graphs against hand values") {
  const MoleculeGraph chain = graph_of("CCCC");
  const ShortestPaths pc = shortest_paths(chain);
  CHECK(pc.distance == std::vector<int32_t>{0, 1, 2, 3, 1, 0, 1, 2, 2, 1, 0, 1, 3, 2, 1, 0});
  CHECK(pc.max_distance == 3);
  CHECK(node_degrees(chain) == std::vector<int32_t>{1, 2, 2, 1});

  const MoleculeGraph ring = graph_of("C1CCCCC1");
  const ShortestPaths pr = shortest_paths(ring);
  const std::vector<int32_t> row0 = {0, 1, 2, 3, 2, 1};
  for (int j = 0; j < 6; ++j) {
    CHECK(pr.distance[j] == row0[j]);
    CHECK(pr.distance[j * 6] == row0[j]);       // symmetric
    CHECK(pr.distance[3 * 6 + j] == row0[(j + 3) % 6]);
  }
  CHECK(node_degrees(ring) == std::vector<int32_t>(6, 2));

  const MoleculeGraph parts = graph_of("CC.C");
  const ShortestPaths pp = shortest_paths(parts);
  CHECK(pp.distance == std::vector<int32_t>{0, 1, 510, 1, 0, 510, 510, 510, 0});
  CHECK(shortest_path_distances(parts) == pp.distance);
  CHECK(pp.max_distance == 1);
  CHECK(shortest_path_edge_types(parts, pp, 0, 2).empty());
  CHECK(node_degrees(parts) == std::vector<int32_t>{1, 1, 0});

  const MoleculeGraph single = graph_of("[Na+]");
  CHECK(shortest_paths(single).distance == std::vector<int32_t>{0});
}

TEST_CASE("shortest paths longer than the unreachable marker 510 stay exact") {
  // A distance of 510 used to double as "not visited yet": in a chain of more than 510 atoms the
  // BFS queued that atom twice (past the end of its queue) and reported 512 for it.
  const MoleculeGraph chain = graph_of(std::string(600, 'C') + ".C");
  const ShortestPaths p = shortest_paths(chain);
  const int32_t n = chain.num_nodes;
  CHECK(n == 601);
  CHECK(p.distance[509] == 509);
  CHECK(p.distance[510] == 510);
  CHECK(p.distance[511] == 511);
  CHECK(p.distance[599] == 599);
  CHECK(p.distance[static_cast<size_t>(599) * n] == 599);
  CHECK(p.max_distance == 599);
  CHECK(p.parent[510] == 509);
  CHECK(shortest_path_edge_types(chain, p, 0, 510).size() == 510);
  CHECK(shortest_path_edge_types(chain, p, 0, 599) == std::vector<int32_t>(599, 1));
  // The separate atom is unreachable: the marker distance, no parent, no path.
  CHECK(p.distance[600] == kUnreachableDistance);
  CHECK(p.parent[600] == -1);
  CHECK(shortest_path_edge_types(chain, p, 0, 600).empty());
}

TEST_CASE("shortest-path bond sequences follow a valid, deterministic shortest path") {
  const MoleculeGraph g = graph_of("C=CC#N");
  const ShortestPaths p = shortest_paths(g);
  CHECK(shortest_path_edge_types(g, p, 0, 3) == std::vector<int32_t>{2, 1, 3});
  CHECK(shortest_path_edge_types(g, p, 3, 0) == std::vector<int32_t>{3, 1, 2});
  CHECK(shortest_path_edge_types(g, p, 1, 1).empty());

  // Kekulé benzene: two shortest paths between opposite atoms; BFS with ascending neighbours
  // keeps 0-1-2-3 (double, single, double), not 0-5-4-3 (single, double, single).
  const MoleculeGraph benzene = graph_of("C1=CC=CC=C1");
  const ShortestPaths pb = shortest_paths(benzene);
  CHECK(shortest_path_edge_types(benzene, pb, 0, 3) == std::vector<int32_t>{2, 1, 2});
  CHECK(shortest_path_edge_types(benzene, pb, 0, 4) == std::vector<int32_t>{1, 2});
  CHECK(shortest_path_edge_types(benzene, pb, 5, 1) == std::vector<int32_t>{1, 2});

  // On a real molecule every kept path is a walk of bonds with exactly SPD hops from i to j.
  const MoleculeGraph m = graph_of("CC(C)(C)C1=CC=C(NNC(=O)C2CCC2)C=C1");
  const ShortestPaths pm = shortest_paths(m);
  const int32_t n = m.num_nodes;
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t j = 0; j < n; ++j) {
      const std::vector<int32_t> hops = shortest_path_edge_types(m, pm, i, j);
      REQUIRE(static_cast<int32_t>(hops.size()) == (i == j ? 0 : pm.distance[i * n + j]));
      int32_t node = j;
      for (size_t s = hops.size(); s-- > 0;) {
        const int32_t before = pm.parent[i * n + node];
        CHECK(m.edge_type_matrix[before * n + node] == hops[s]);
        CHECK(pm.distance[i * n + before] == static_cast<int32_t>(s));
        node = before;
      }
      CHECK(node == i);
    }
  }
}

TEST_CASE("cycle basis and the JT-VAE cycle penalty") {
  CHECK(cycle_basis(graph_of("CCO")).empty());
  CHECK(cycle_penalty(graph_of("CCO")) == 0);
  const auto decalin = cycle_basis(graph_of("C1CCC2CCCCC2C1"));
  REQUIRE(decalin.size() == 2);
  CHECK(decalin[0].size() == 6);
  CHECK(decalin[1].size() == 6);
  CHECK(cycle_penalty(graph_of("C1CCC2CCCCC2C1")) == 0);
  CHECK(cycle_penalty(graph_of("C1CCCCCCCC1")) == 3);       // nine-ring
  CHECK(cycle_penalty(graph_of("C1CCCCCC1.C1CCCCCCCCC1")) == 4);  // largest over all parts
  // Bicyclo[2.2.2]octane: three six-rings, but a cycle basis holds two (cycle rank 9 - 8 + 1).
  const auto bicyclo = cycle_basis(graph_of("C1CC2CCC1CC2"));
  REQUIRE(bicyclo.size() == 2);
  CHECK(bicyclo[0].size() + bicyclo[1].size() == 12);
}

// ---- collation ----

TEST_CASE("collation: shapes, +1 shifts, padding values and the graph token") {
  MoleculeDataset ds;
  ds.vocabulary = AtomVocabulary::zinc();
  for (const char* s : {"CC(=O)O", "C1CC1", "CC.N"}) {
    ds.smiles.push_back(s);
    ds.graphs.push_back(molecule_graph(parse_smiles(s), ds.vocabulary));
  }
  ds.targets = {1.5f, -2.0f, 0.25f};
  const float inf = std::numeric_limits<float>::infinity();

  const GraphBatch b = collate_graphs(ds, {0, 1, 2});
  CHECK(b.x.shape() == Shape{3, 4});
  CHECK(b.x.dtype() == DType::i32);
  CHECK(b.in_degree.shape() == Shape{3, 4});
  CHECK(b.spatial_pos.shape() == Shape{3, 4, 4});
  CHECK(b.attn_edge_type.shape() == Shape{3, 4, 4});
  CHECK(b.edge_input.shape() == Shape{3, 4, 4, 2});  // longest SPD 2 < multi_hop_max_dist 5
  CHECK(b.attn_bias.shape() == Shape{3, 5, 5});
  CHECK(b.attn_bias.dtype() == DType::f32);
  CHECK(b.y.to_vector_f32() == std::vector<float>{1.5f, -2.0f, 0.25f});
  CHECK(b.num_nodes.to_vector_i32() == std::vector<int32_t>{4, 3, 3});
  CHECK(b.num_dropped == 0);

  // x = type + 2 (C = 0, O = 1, N = 2), pad 0; in_degree = degree + 1, pad 0.
  CHECK(b.x.to_vector_i32() == std::vector<int32_t>{2, 2, 3, 3, 2, 2, 2, 0, 2, 2, 4, 0});
  CHECK(b.in_degree.to_vector_i32() == std::vector<int32_t>{2, 4, 2, 2, 3, 3, 3, 0, 2, 2, 1, 0});

  const std::vector<int32_t> sp = b.spatial_pos.to_vector_i32();
  // Graph 0 (acetic acid, star around atom 1): SPD + 1.
  CHECK(std::vector<int32_t>(sp.begin(), sp.begin() + 16) ==
        std::vector<int32_t>{1, 2, 3, 3, 2, 1, 2, 2, 3, 2, 1, 3, 3, 2, 3, 1});
  // Graph 1 (cyclopropane, 3 nodes): row 3 and column 3 are padding (0).
  CHECK(std::vector<int32_t>(sp.begin() + 16, sp.begin() + 32) ==
        std::vector<int32_t>{1, 2, 2, 0, 2, 1, 2, 0, 2, 2, 1, 0, 0, 0, 0, 0});
  // Graph 2 (CC.N): unreachable → 511.
  CHECK(std::vector<int32_t>(sp.begin() + 32, sp.begin() + 41) ==
        std::vector<int32_t>{1, 2, 511, 0, 2, 1, 511, 0, 511});

  const std::vector<int32_t> et = b.attn_edge_type.to_vector_i32();
  CHECK(et[0 * 16 + 0 * 4 + 1] == 3);  // single + 2
  CHECK(et[0 * 16 + 1 * 4 + 2] == 4);  // double + 2
  CHECK(et[0 * 16 + 0 * 4 + 2] == 0);  // no bond
  CHECK(et[0 * 16 + 0 * 4 + 0] == 0);

  const std::vector<int32_t> ei = b.edge_input.to_vector_i32();
  auto hop = [&](int g, int i, int j, int s) { return ei[((g * 4 + i) * 4 + j) * 2 + s]; };
  CHECK(hop(0, 0, 2, 0) == 4);  // 0-1 single + 3
  CHECK(hop(0, 0, 2, 1) == 5);  // 1=2 double + 3
  CHECK(hop(0, 0, 1, 0) == 4);
  CHECK(hop(0, 0, 1, 1) == 0);  // one hop only
  CHECK(hop(0, 2, 2, 0) == 0);  // self
  CHECK(hop(2, 0, 2, 0) == 0);  // unreachable
  CHECK(hop(1, 0, 3, 0) == 0);  // padding

  // attn_bias: 0 on real pairs (graph token included), −inf on padded keys, padded query rows
  // keep 0 over real keys.
  const std::vector<float> bias = b.attn_bias.to_vector_f32();
  auto at = [&](int g, int q, int k) { return bias[(g * 5 + q) * 5 + k]; };
  for (int q = 0; q < 5; ++q)
    for (int k = 0; k < 5; ++k) CHECK(at(0, q, k) == 0.0f);
  for (int q = 0; q < 5; ++q) {
    for (int k = 0; k < 4; ++k) CHECK(at(1, q, k) == 0.0f);
    CHECK(at(1, q, 4) == -inf);
  }

  // Options: max_nodes drops graphs, multi_hop_max_dist caps D, spatial_pos_max masks far pairs.
  CollateOptions small;
  small.max_nodes = 3;
  small.multi_hop_max_dist = 1;
  small.spatial_pos_max = 2;
  const GraphBatch s = collate_graphs(ds, {0, 1, 2}, small);
  CHECK(s.num_dropped == 1);
  CHECK(s.indices == std::vector<int64_t>{1, 2});
  CHECK(s.x.shape() == Shape{2, 3});
  CHECK(s.edge_input.shape() == Shape{2, 3, 3, 1});
  CHECK(s.attn_bias.shape() == Shape{2, 4, 4});
  const std::vector<float> sb = s.attn_bias.to_vector_f32();
  CHECK(sb[(1 * 4 + 1) * 4 + 2] == 0.0f);   // graph 2, atoms 0-1: SPD 1
  CHECK(sb[(1 * 4 + 1) * 4 + 3] == -inf);   // graph 2, atoms 0 and 2 unreachable: SPD 510 ≥ 2
  CHECK(sb[(1 * 4 + 0) * 4 + 3] == 0.0f);   // the graph token row is never masked this way

  CHECK_THROWS_WITH_AS(collate_graphs(ds, {0}, small), doctest::Contains("more than max_nodes = 3"), Error);
  CHECK_THROWS_WITH_AS(collate_graphs(ds, {7}), doctest::Contains("row 7 is outside the dataset of 3"), Error);
}

// The collator writes each pair's hops by walking BFS parents in place; shortest_path_edge_types
// is the same walk, one vector per pair: the two must agree on every pair, hop and padding entry.
TEST_CASE("collation: edge_input and spatial_pos are shortest_paths' hops and distances, pair by pair") {
  MoleculeDataset ds;
  ds.vocabulary = AtomVocabulary::zinc();
  const std::string chain(26, 'C');  // 25 hops end to end: past the cut below
  for (const std::string& s : {chain, std::string("c1ccc2ccccc2c1CC(=O)N"), std::string("C1CC2CC1C2.CCO"),
                              std::string("N#CC=CC"), std::string("C")}) {
    ds.smiles.push_back(s);
    ds.graphs.push_back(molecule_graph(parse_smiles(s), ds.vocabulary));
    ds.targets.push_back(0.0f);
  }
  for (int32_t cut : {1, 3, 20, 40}) {
    CAPTURE(cut);
    CollateOptions options;
    options.multi_hop_max_dist = cut;
    const GraphBatch b = collate_graphs(ds, {0, 1, 2, 3, 4}, options);
    const int64_t n = b.x.size(1), D = b.edge_input.size(3);
    CHECK(D == std::min(25, cut));
    const std::vector<int32_t> ei = b.edge_input.to_vector_i32(), sp = b.spatial_pos.to_vector_i32();
    for (int64_t g = 0; g < 5; ++g) {
      const MoleculeGraph& graph = ds.graphs[g];
      const ShortestPaths paths = shortest_paths(graph);
      for (int32_t i = 0; i < n; ++i)
        for (int32_t j = 0; j < n; ++j) {
          const bool real = i < graph.num_nodes && j < graph.num_nodes;
          const std::vector<int32_t> hops = real ? shortest_path_edge_types(graph, paths, i, j) : std::vector<int32_t>{};
          CHECK(sp[(g * n + i) * n + j] == (real ? paths.distance[i * graph.num_nodes + j] + 1 : 0));
          for (int64_t s = 0; s < D; ++s)
            CHECK(ei[((g * n + i) * n + j) * D + s] == (s < static_cast<int64_t>(hops.size()) ? hops[s] + 3 : 0));
        }
    }
  }
}

TEST_CASE("collation of the embedded set: GV2 offsets stay in range" * doctest::skip(kNoZlib)) {
  const EmbeddedMolecules e = load_embedded_molecules(kAssets);
  std::vector<int64_t> rows(e.split.valid.begin(), e.split.valid.begin() + 64);
  const GraphBatch b = collate_graphs(e.dataset, rows);
  CHECK(b.x.size(0) == 64);
  CHECK(b.edge_input.size(3) == 5);
  for (int32_t v : b.x.to_vector_i32()) CHECK((v == 0 || (v >= 2 && v <= 29)));
  for (int32_t v : b.edge_input.to_vector_i32()) CHECK((v == 0 || (v >= 4 && v <= 6)));
  int32_t real = 0;
  for (int32_t v : b.num_nodes.to_vector_i32()) real += v;
  int32_t nonzero = 0;
  for (int32_t v : b.x.to_vector_i32()) nonzero += v != 0;
  CHECK(nonzero == real);
}

// ---- CSV, split and vocabulary files ----

TEST_CASE("CSV: quoted fields, CRLF, blank lines and errors naming file, line and column") {
  const CsvTable t = parse_csv("a,b\r\n\"x,1\",\"say \"\"hi\"\"\"\r\n\n\"multi\nline\",2\n", "t.csv");
  CHECK(t.header == std::vector<std::string>{"a", "b"});
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0] == std::vector<std::string>{"x,1", "say \"hi\""});
  CHECK(t.rows[1][0] == "multi\nline");
  CHECK(t.row_line == std::vector<int64_t>{2, 4});
  CHECK(t.number(1, 1) == 2.0);

  CHECK_THROWS_WITH_AS(parse_csv("a,b\n1,\"open\n", "q.csv"),
                       "q.csv line 2, column 3: expected a closing '\"' for the field opened here, the "
                       "file ends first", Error);
  CHECK_THROWS_WITH_AS(parse_csv("a,b\n1,2,3\n", "f.csv"),
                       "f.csv line 2, column 1: expected 2 fields as in the header, got 3", Error);
  CHECK_THROWS_WITH_AS(parse_csv("a\n\"x\"y\n", "c.csv"),
                       "c.csv line 2, column 4: expected ',' or the end of the line after a closing quote, got 'y'",
                       Error);
  CHECK_THROWS_WITH_AS(parse_csv("a\nx\"y\n", "u.csv"), doctest::Contains("u.csv line 2, column 2"), Error);
  CHECK_THROWS_WITH_AS(parse_csv("", "e.csv"), "e.csv: expected a header line, the file is empty", Error);
  CHECK_THROWS_WITH_AS(t.column("target"),
                       "t.csv line 1: expected a column named \"target\", the header has: a, b", Error);
  CHECK_THROWS_WITH_AS(t.number(0, 1), "t.csv line 2, column \"b\": expected a number, got \"say \"hi\"\"", Error);
  CHECK_THROWS_WITH_AS(read_csv("/nonexistent/x.csv"), "/nonexistent/x.csv: cannot open the file", Error);
#if URPE_WITH_ZLIB
  // zlib would pass plain bytes through; a .gz name promises gzip, so they are an error.
  const std::string not_gz = temp_file("plain.csv.gz", "not gzip");
  CHECK_THROWS_WITH_AS(read_maybe_gzipped(not_gz),
                       doctest::Contains((not_gz + ": expected a gzip file (the name ends in .gz)").c_str()), Error);
  CHECK_THROWS_WITH_AS(read_csv("/nonexistent/x.csv.gz"), "/nonexistent/x.csv.gz: cannot open the file", Error);
#endif
}

TEST_CASE("molecule CSV: column by name, errors with file and line, vocabulary growth") {
  const std::string good = temp_file("good.csv", "id,smiles,y\n1,CCO,0.5\n2,\"c1ccccc1\",-1\n");
  MoleculeCsvOptions options;
  options.target_column = "y";
  const MoleculeDataset ds = load_molecule_csv(good, options);
  CHECK(ds.size() == 2);
  CHECK(ds.targets == std::vector<float>{0.5f, -1.0f});
  CHECK(ds.graphs[1].edge_type == std::vector<int32_t>(6, 4));

  const std::string bad_smiles = temp_file("bad_smiles.csv", "smiles,y\nCCO,1\nC1CC,2\n");
  CHECK_THROWS_WITH_AS(load_molecule_csv(bad_smiles, options),
                       doctest::Contains("bad_smiles.csv: SMILES line 3, column 5: expected ring bond 1"), Error);
  const std::string bad_target = temp_file("bad_target.csv", "smiles,y\nCCO,abc\n");
  CHECK_THROWS_WITH_AS(load_molecule_csv(bad_target, options),
                       doctest::Contains("bad_target.csv line 2, column \"y\": expected a number, got \"abc\""), Error);
  options.target_column = "logP";
  CHECK_THROWS_WITH_AS(load_molecule_csv(good, options),
                       doctest::Contains("expected a column named \"logP\", the header has: id, smiles, y"), Error);

  options.target_column = "y";
  const std::string exotic = temp_file("exotic.csv", "smiles,y\nCC,1\n[Si](C)(C)C,2\n");
  CHECK_THROWS_WITH_AS(load_molecule_csv(exotic, options),
                       doctest::Contains("exotic.csv line 3, column \"smiles\": atom type 'Si' is not in the atom vocabulary"),
                       Error);
  options.grow_vocabulary = true;
  const MoleculeDataset grown = load_molecule_csv(exotic, options);
  CHECK(grown.vocabulary.size() == 29);
  CHECK(grown.graphs[1].node_type[0] == 28);

  // The vocabulary file round-trips; duplicates and blank lines are errors with the line.
  const std::string vocab_path = temp_file("vocab.txt", "");
  grown.vocabulary.save(vocab_path);
  const AtomVocabulary loaded = AtomVocabulary::load(vocab_path);
  CHECK(loaded.size() == 29);
  CHECK(loaded.key(28) == "Si");
  CHECK(loaded.find("N H3 +") == 10);
  CHECK_THROWS_WITH_AS(AtomVocabulary::load(temp_file("dup.txt", "C\nO\nC\n")),
                       doctest::Contains("line 3: expected a new key, 'C' is already line 1"), Error);
  CHECK_THROWS_WITH_AS(AtomVocabulary::load(temp_file("blank.txt", "C\n\nO\n")),
                       doctest::Contains("line 2: expected an atom type key, got an empty line"), Error);
}

TEST_CASE("molecule CSV: a truncated .gz is an error naming the file" * doctest::skip(kNoZlib)) {
  const std::string gz = [] {
    std::ifstream in(kAssets + "/molecules.csv.gz", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  REQUIRE(gz.size() > 1000);
  for (size_t keep : {size_t{1}, size_t{30}, gz.size() / 2, gz.size() - 4}) {
    CAPTURE(keep);
    const std::string path = temp_file("cut.csv.gz", gz.substr(0, keep));
    CHECK_THROWS_WITH_AS(load_molecule_csv(path, MoleculeCsvOptions{}), doctest::Contains((path + ": expected a ").c_str()),
                         Error);
  }
}

TEST_CASE("molecule CSV: targets beyond float and split rows beyond int64 are errors, not UB") {
  MoleculeCsvOptions options;
  options.target_column = "y";
  const std::string big = temp_file("big_target.csv", "smiles,y\nCC,1\nCO,1e300\n");
  CHECK_THROWS_WITH_AS(load_molecule_csv(big, options),
                       doctest::Contains("big_target.csv line 3, column \"y\": expected a target within the "
                                         "float range"),
                       Error);
  CHECK(load_molecule_csv(temp_file("max_target.csv", "smiles,y\nCC,-3.4e38\n"), options).targets[0] ==
        -3.4e38f);
  const std::string zinc = temp_file("big_logp.csv", "smiles,logP,qed,SAS\nCC,1e308,0.5,2\n");
  CHECK_THROWS_WITH_AS(load_zinc250k_csv(zinc, false, false),
                       doctest::Contains("big_logp.csv line 2, column \"logP\": expected a penalized logP"),
                       Error);
  for (const char* row : {"1e300", "-1e300", "9.3e18", "-0.5", "2"}) {
    CAPTURE(row);
    const std::string split = temp_file("big_row.csv", std::string("row,split\n0,train\n") + row + ",test\n");
    CHECK_THROWS_WITH_AS(load_split_file(split, 2),
                         doctest::Contains("big_row.csv line 3, column \"row\": expected a row index in [0, 2)"),
                         Error);
  }
}

TEST_CASE("splits: the split file and the seeded split") {
  const std::string ok = temp_file("split_ok.csv", "row,split\n0,train\n2,test\n1,valid\n3,train\n");
  const MoleculeSplit s = load_split_file(ok, 4);
  CHECK(s.train == std::vector<int64_t>{0, 3});
  CHECK(s.valid == std::vector<int64_t>{1});
  CHECK(s.test == std::vector<int64_t>{2});
  CHECK_THROWS_WITH_AS(load_split_file(temp_file("split_dup.csv", "row,split\n0,train\n0,test\n"), 2),
                       doctest::Contains("line 3, column \"row\": expected each row once, row 0 is already on line 2"),
                       Error);
  CHECK_THROWS_WITH_AS(load_split_file(temp_file("split_name.csv", "row,split\n0,training\n"), 1),
                       doctest::Contains("line 2, column \"split\": expected train, valid or test, got \"training\""),
                       Error);
  CHECK_THROWS_WITH_AS(load_split_file(temp_file("split_range.csv", "row,split\n5,train\n"), 1),
                       doctest::Contains("expected a row index in [0, 1), got \"5\""), Error);
  CHECK_THROWS_WITH_AS(load_split_file(temp_file("split_short.csv", "row,split\n0,train\n"), 2),
                       doctest::Contains("expected one line per dataset row (2), got 1"), Error);

  const MoleculeSplit a = seeded_split(1000, 7), b = seeded_split(1000, 7), c = seeded_split(1000, 8);
  CHECK(a.train.size() == 800);
  CHECK(a.valid.size() == 100);
  CHECK(a.test.size() == 100);
  CHECK(a.train == b.train);
  CHECK(a.test == b.test);
  CHECK(a.train != c.train);
  std::set<int64_t> all(a.train.begin(), a.train.end());
  all.insert(a.valid.begin(), a.valid.end());
  all.insert(a.test.begin(), a.test.end());
  CHECK(all.size() == 1000);
}
