// OGB's PCQM4M features from urpe's SMILES parser (data/ogb_features.h) against RDKit's, as
// ogb.utils.smiles2graph computed them for the 1,271 molecules of tests/fixtures/ogb_features.csv.gz
// (tools/make_ogb_fixture.py; RDKit and OGB are not needed here). Prints the match rate of every
// feature; each must stay at or above the rate documented in docs/data.md#pcqm4m-ogb-features.
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "data/csv_table.h"
#include "data/molecule_dataset.h"
#include "data/ogb_dataset.h"
#include "data/ogb_features.h"
#include "data/smiles.h"
#include "doctest/doctest.h"
#include "models/graphormer.h"
#include "scratch_dir.h"
#include "tensor/error.h"
#include "train/families/graphormer/graphormer_config.h"
#include "train/families/graphormer/graphormer_trainer.h"
#include "train/config/run_config.h"

using namespace urpe;
using namespace urpe::data;

namespace {

const std::string kFixture = std::string(URPE_SOURCE_DIR) + "/tests/fixtures/ogb_features.csv.gz";

std::vector<std::vector<int32_t>> parse_groups(const std::string& text) {
  std::vector<std::vector<int32_t>> groups;
  std::stringstream all(text);
  std::string group;
  while (std::getline(all, group, ';')) {
    std::stringstream values(group);
    std::vector<int32_t> g;
    int32_t v;
    while (values >> v) g.push_back(v);
    groups.push_back(g);
  }
  return groups;
}

struct Tally {
  int64_t match = 0, total = 0, nonzero = 0;  // nonzero: RDKit's value is not 0 (so matching it says more)
  std::vector<std::string> examples;  // the first few differences
  void add(bool same, int32_t reference, const std::string& example) {
    ++total;
    nonzero += reference != 0;
    match += same;
    if (!same && examples.size() < 3) examples.push_back(example);
  }
  double rate() const { return total ? static_cast<double>(match) / static_cast<double>(total) : 1.0; }
};

}  // namespace

TEST_CASE("ogb features: urpe's SMILES perception against RDKit's on 1,271 molecules, per feature") {
  const CsvTable table = read_csv(kFixture);
  const int smiles_col = table.column("smiles"), atoms_col = table.column("atoms"), bonds_col = table.column("bonds");
  REQUIRE(table.rows.size() >= 1000);
  std::array<Tally, kOgbAtomFeatures> atom_tally;
  std::array<Tally, kOgbBondFeatures> bond_tally;
  int64_t structure_differs = 0;
  std::vector<std::string> structure_examples;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::string& smiles = table.rows[r][smiles_col];
    const std::vector<std::vector<int32_t>> want_atoms = parse_groups(table.rows[r][atoms_col]);
    const std::vector<std::vector<int32_t>> want_bonds = parse_groups(table.rows[r][bonds_col]);
    OgbFeatures got;
    try {
      got = ogb_features(parse_smiles(smiles));
    } catch (const Error& e) {
      ++structure_differs;
      structure_examples.push_back(smiles + " (" + e.what() + ")");
      continue;
    }
    std::map<std::pair<int32_t, int32_t>, size_t> got_bond;
    for (size_t e = 0; e < got.bonds.size(); ++e)
      got_bond[{std::min(got.bond_begin[e], got.bond_end[e]), std::max(got.bond_begin[e], got.bond_end[e])}] = e;
    bool same_structure = got.atoms.size() == want_atoms.size() && got.bonds.size() == want_bonds.size();
    for (const auto& b : want_bonds)
      same_structure = same_structure && b.size() == 5 && got_bond.count({std::min(b[0], b[1]), std::max(b[0], b[1])});
    if (!same_structure) {
      ++structure_differs;
      if (structure_examples.size() < 5) structure_examples.push_back(smiles);
      continue;
    }
    for (size_t a = 0; a < want_atoms.size(); ++a) {
      REQUIRE(want_atoms[a].size() == kOgbAtomFeatures);
      for (int f = 0; f < kOgbAtomFeatures; ++f)
        atom_tally[f].add(got.atoms[a][f] == want_atoms[a][f], want_atoms[a][f], smiles + " atom " + std::to_string(a) + ": RDKit " +
                                                                   std::to_string(want_atoms[a][f]) + ", urpe " +
                                                                   std::to_string(got.atoms[a][f]));
    }
    for (const auto& b : want_bonds) {
      const size_t e = got_bond.at({std::min(b[0], b[1]), std::max(b[0], b[1])});
      for (int f = 0; f < kOgbBondFeatures; ++f)
        bond_tally[f].add(got.bonds[e][f] == b[2 + f], b[2 + f], smiles + " bond " + std::to_string(b[0]) + "-" +
                                                           std::to_string(b[1]) + ": RDKit " + std::to_string(b[2 + f]) +
                                                           ", urpe " + std::to_string(got.bonds[e][f]));
    }
  }
  std::ostringstream report;
  report << "OGB features, urpe vs RDKit on " << table.rows.size() << " molecules (" << structure_differs
         << " with another atom or bond set, left out):\n";
  char line[160];
  for (int f = 0; f < kOgbAtomFeatures; ++f) {
    std::snprintf(line, sizeof line, "  atom %-14s %6.2f%%  (%lld / %lld atoms, %lld of them not 0)\n",
                  kOgbAtomFeatureNames[f], 100.0 * atom_tally[f].rate(), static_cast<long long>(atom_tally[f].match),
                  static_cast<long long>(atom_tally[f].total), static_cast<long long>(atom_tally[f].nonzero));
    report << line;
    for (const std::string& example : atom_tally[f].examples) report << "      e.g. " << example << "\n";
  }
  for (int f = 0; f < kOgbBondFeatures; ++f) {
    std::snprintf(line, sizeof line, "  bond %-14s %6.2f%%  (%lld / %lld bonds, %lld of them not 0)\n",
                  kOgbBondFeatureNames[f], 100.0 * bond_tally[f].rate(), static_cast<long long>(bond_tally[f].match),
                  static_cast<long long>(bond_tally[f].total), static_cast<long long>(bond_tally[f].nonzero));
    report << line;
    for (const std::string& example : bond_tally[f].examples) report << "      e.g. " << example << "\n";
  }
  for (const std::string& example : structure_examples) report << "  other structure: " << example << "\n";
  std::printf("%s", report.str().c_str());  // in the CTest log too
  // Every molecule parses to RDKit's atoms and bonds, and every feature matches on all of them
  // (docs/data.md#pcqm4m-ogb-features records 100.00% for each).
  CHECK(structure_differs == 0);
  for (int f = 0; f < kOgbAtomFeatures; ++f) {
    INFO(kOgbAtomFeatureNames[f]);
    CHECK(atom_tally[f].match == atom_tally[f].total);
  }
  for (int f = 0; f < kOgbBondFeatures; ++f) {
    INFO(kOgbBondFeatureNames[f]);
    CHECK(bond_tally[f].match == bond_tally[f].total);
  }
}

TEST_CASE("ogb features: what the SMILES does not say is not perceived (Kekulé rings stay Kekulé)") {
  // RDKit perceives c1ccccc1 in C1=CC=CC=C1 (aromatic atoms, aromatic bonds); urpe reads
  // aromaticity as written, which is why PCQM4M's RDKit-canonical SMILES are what it matches.
  const OgbFeatures kekule = ogb_features(parse_smiles("C1=CC=CC=C1"));
  const OgbFeatures aromatic = ogb_features(parse_smiles("c1ccccc1"));
  CHECK(kekule.atoms[0][7] == 0);
  CHECK(aromatic.atoms[0][7] == 1);
  CHECK(kekule.bonds[0][0] == 1);    // double as written
  CHECK(aromatic.bonds[0][0] == 3);  // aromatic
  for (const OgbFeatures& f : {kekule, aromatic}) {
    CHECK(f.atoms[0][4] == 1);  // one H either way
    CHECK(f.atoms[0][6] == 1);  // SP2 either way
    CHECK(f.atoms[0][8] == 1);  // in a ring
  }
  // Dims of the one-hot tables (OGB's get_atom_feature_dims / get_bond_feature_dims).
  CHECK(kOgbAtomFeatureDims[0] == 119);
  CHECK(kOgbBondFeatureDims[1] == 6);
}

// ---- OGB features into Graphormer (PCQM4M: dataset_format = ogb) ----

namespace {

data::MoleculeDataset ogb_dataset(const std::vector<std::string>& smiles) {
  data::MoleculeDataset d;
  for (size_t k = 0; k < smiles.size(); ++k) {
    d.smiles.push_back(smiles[k]);
    d.graphs.push_back(ogb_molecule_graph(ogb_features(parse_smiles(smiles[k]))));
    d.targets.push_back(static_cast<float>(k));
  }
  return d;
}

std::string scratch() {
  static const std::string dir = urpe::test::make_scratch_dir("urpe_test_ogb");
  return dir;
}

}  // namespace

TEST_CASE("ogb graphs: the collator gives GV2's ids, 512 per feature column, hop-major edge input") {
  const data::MoleculeDataset d = ogb_dataset({"C[C@H](N)C(=O)[O-]", "C#N"});
  const GraphBatch b = collate_graphs(d, {0, 1});
  REQUIRE(b.x.shape() == Shape({2, 6, kOgbAtomFeatures}));
  CHECK(b.bond_features == kOgbBondFeatures);
  const OgbFeatures first = ogb_features(parse_smiles("C[C@H](N)C(=O)[O-]"));
  const std::vector<int32_t> x = b.x.to_vector_i32();
  for (int f = 0; f < kOgbAtomFeatures; ++f) {
    CHECK(x[1 * kOgbAtomFeatures + f] == first.atoms[1][f] + 2 + kFeatureIdOffset * f);  // atom 1, the chiral C
    CHECK(x[(6 + 2) * kOgbAtomFeatures + f] == 0);                                        // C#N has 2 atoms: pad
  }
  // The path 0 → 5 (C, C@, C, O−: atoms 0 → 1 → 3 → 5): each hop's 3 columns, then the next hop.
  const int64_t D = b.edge_input.size(3) / kOgbBondFeatures;
  const std::vector<int32_t> e = b.edge_input.to_vector_i32();
  const int64_t pair = (0 * 6 + 0) * 6 + 5;  // graph 0, atoms 0 and 5
  for (int64_t s = 0; s < 3; ++s)
    for (int f = 0; f < kOgbBondFeatures; ++f) {
      const int32_t id = e[(pair * D + s) * kOgbBondFeatures + f];
      CHECK(id >= 3 + kFeatureIdOffset * f);
      CHECK(id < 3 + kFeatureIdOffset * f + kOgbBondFeatureDims[f]);
    }
  CHECK(D == 3);  // the longest shortest path of the batch
}

TEST_CASE("ogb graphs: Graphormer sums the atom columns and averages the bond columns (GV2)") {
  // One column as (B, n, 1) and two identical bond columns give exactly the single-column model:
  // Σ over one column is that column, the mean of two equal rows is that row.
  data::MoleculeDataset d = ogb_dataset({"CC(=O)Nc1ccccc1", "OCC#N"});
  const GraphBatch full = collate_graphs(d, {0, 1});
  GraphBatch single = full, wide = full;
  single.bond_features = 1;
  wide.bond_features = 1;
  const int64_t B = full.x.size(0), n = full.x.size(1), D = full.edge_input.size(3) / kOgbBondFeatures;
  std::vector<int32_t> x1, e1, e2;
  const std::vector<int32_t> x = full.x.to_vector_i32(), e = full.edge_input.to_vector_i32();
  for (int64_t k = 0; k < B * n; ++k) x1.push_back(x[k * kOgbAtomFeatures]);  // the atomic-number column
  for (int64_t k = 0; k < B * n * n * D; ++k) {
    e1.push_back(e[k * kOgbBondFeatures]);  // the bond-type column
    e2.push_back(e[k * kOgbBondFeatures]);
    e2.push_back(e[k * kOgbBondFeatures]);
  }
  single.x = Tensor::from_vector(x1, {B, n});
  single.edge_input = Tensor::from_vector(e1, {B, n, n, D});
  wide.x = Tensor::from_vector(x1, {B, n, 1});
  wide.edge_input = Tensor::from_vector(e2, {B, n, n, 2 * D});
  wide.bond_features = 2;
  GraphormerConfig c = graphormer_preset("graphormer-tiny");
  c.dropout = c.attention_dropout = c.input_dropout = 0.0f;
  c.num_atoms = kFeatureIdOffset * kOgbAtomFeatures + 1;
  c.num_edges = kFeatureIdOffset * kOgbBondFeatures + 1;
  const Graphormer model(c, 3);
  const std::vector<float> a = model.forward(single, false, nullptr).to_vector_f32();
  const std::vector<float> w = model.forward(wide, false, nullptr).to_vector_f32();
  REQUIRE(a.size() == w.size());
  for (size_t k = 0; k < a.size(); ++k) CHECK(w[k] == doctest::Approx(a[k]).epsilon(1e-6));
  // And all 9 + 3 columns change the prediction (they are read).
  const std::vector<float> all = model.forward(full, false, nullptr).to_vector_f32();
  CHECK(std::fabs(all[0] - a[0]) > 1e-6f);
}

TEST_CASE("dataset_format = ogb: a PCQM4Mv2-layout CSV (idx,smiles,homolumogap) trains, bad rows name file and line") {
  const std::string csv = scratch() + "/data.csv";
  {
    const CsvTable fixture = read_csv(kFixture);
    std::ofstream out(csv);
    out << "idx,smiles,homolumogap\n";
    for (size_t r = 0; r < 40; ++r)
      out << r << "," << fixture.rows[r][0] << "," << 3.0 + 0.05 * static_cast<double>(r % 17) << "\n";
  }
  const std::vector<std::string> sets = {"dataset=" + csv, "dataset_format=ogb", "target_column=homolumogap"};
  const GraphormerData d = load_graphormer_data(resolve_config("graphormer-tiny", "", sets));
  CHECK(d.dataset.size() == 40);
  CHECK(d.dataset.graphs[0].atom_feature_count == kOgbAtomFeatures);
  CHECK(d.description.find("OGB features") != std::string::npos);
  const Config config = resolve_config("graphormer-tiny", "", sets);
  const GraphormerConfig model = graphormer_config_from(config);
  CHECK(model.num_atoms == 4609);  // GV2: Embedding(512 · 9 + 1)
  CHECK(model.num_edges == 1537);  // GV2: Embedding(512 · 3 + 1)

  const std::string out = scratch() + "/run";
  std::string args;
  for (const std::string& s : sets) args += " --set " + s;
  const auto r = urpe::test::run_urpe("train --preset graphormer-tiny" + args +
                                      " --set steps=2 --set warmup=1 --set batch=4 --set eval_every=2 --quiet --out " + out);
  INFO(r.output);
  CHECK(r.code == 0);
  const auto eval = urpe::test::run_urpe("eval --run " + out);
  INFO(eval.output);
  CHECK(eval.code == 0);

  // A row without a label (PCQM4Mv2's test rows) and a SMILES the parser refuses: file and line.
  {
    std::ofstream bad(scratch() + "/unlabelled.csv");
    bad << "idx,smiles,homolumogap\n0,CCO,3.1\n1,CCN,\n";
  }
  CHECK_THROWS_WITH_AS(load_ogb_molecule_csv(scratch() + "/unlabelled.csv", "smiles", "homolumogap"),
                       doctest::Contains("unlabelled.csv line 3, column \"homolumogap\": expected a number"), Error);
  {
    std::ofstream bad(scratch() + "/bad_smiles.csv");
    bad << "idx,smiles,homolumogap\n0,CCO,3.1\n1,C1CC,2.0\n";
  }
  CHECK_THROWS_WITH_AS(load_ogb_molecule_csv(scratch() + "/bad_smiles.csv", "smiles", "homolumogap"),
                       doctest::Contains("bad_smiles.csv: SMILES line 3"), Error);
}

TEST_CASE("pcqm4m_to_urpe: OGB's pcqm4m-v2 folder (data.csv.gz, split_dict.pt) → molecules.csv + split.csv → urpe train") {
  if (urpe::test::run_command("python3 -c 'import zipfile, pickle, gzip'").code != 0) {
    MESSAGE("skipped: needs python3 (standard library only) to run tools/pcqm4m_to_urpe.py");
    return;
  }
  const std::string tool = std::string(URPE_SOURCE_DIR) + "/tools/pcqm4m_to_urpe.py";
  const std::string src = std::string(URPE_SOURCE_DIR) + "/tests/fixtures/pcqm4m_v2";
  const std::string out = scratch() + "/pcqm4m";
  const auto r = urpe::test::run_command("python3 '" + tool + "' '" + src + "' '" + out + "' --test-fraction 0.2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("train 16, valid 5, test 4") != std::string::npos);  // OGB: 20 train, 5 valid, 5 unlabelled
  const std::vector<std::string> sets = {"dataset=" + out + "/molecules.csv", "dataset_format=ogb",
                                         "target_column=homolumogap", "split=" + out + "/split.csv"};
  const GraphormerData d = load_graphormer_data(resolve_config("graphormer-tiny", "", sets));
  CHECK(d.dataset.size() == 25);
  CHECK(d.split.valid == std::vector<int64_t>{20, 21, 22, 23, 24});
  CHECK(d.split.train.size() == 16);
  CHECK(d.dataset.targets[24] == doctest::Approx(5.4));
  std::string args;
  for (const std::string& s : sets) args += " --set " + s;
  const auto train = urpe::test::run_urpe("train --preset graphormer-tiny" + args +
                                          " --set steps=2 --set warmup=1 --set batch=4 --set eval_every=2 --quiet --out " +
                                          out + "/run");
  INFO(train.output);
  CHECK(train.code == 0);

  // The same indices saved as torch tensors instead of numpy arrays give the same split.
  const std::string tensors = scratch() + "/pcqm4m_tensors";
  urpe::test::run_command("mkdir -p '" + tensors + "/raw' && cp '" + src + "/raw/data.csv.gz' '" + tensors +
                          "/raw/' && cp '" + src + "/split_dict_tensors.pt' '" + tensors + "/split_dict.pt'");
  const auto again = urpe::test::run_command("python3 '" + tool + "' '" + tensors + "' '" + tensors + "/out' --test-fraction 0.2");
  INFO(again.output);
  CHECK(again.code == 0);
  CHECK(urpe::test::run_command("cmp '" + out + "/split.csv' '" + tensors + "/out/split.csv'").code == 0);

  // Bad data: a missing split_dict.pt, a truncated one; nothing written.
  urpe::test::run_command("rm '" + tensors + "/split_dict.pt'");
  const auto missing = urpe::test::run_command("python3 '" + tool + "' '" + tensors + "' '" + tensors + "/out2'");
  CHECK(missing.code == 1);
  CHECK(missing.output.find(tensors + "/split_dict.pt: missing") != std::string::npos);
  urpe::test::run_command("head -c 300 '" + src + "/split_dict.pt' > '" + tensors + "/split_dict.pt'");
  const auto cut = urpe::test::run_command("python3 '" + tool + "' '" + tensors + "' '" + tensors + "/out2'");
  CHECK(cut.code == 1);
  CHECK(cut.output.find("truncated") != std::string::npos);
  CHECK(urpe::test::run_command("test -e '" + tensors + "/out2'").code != 0);
}
