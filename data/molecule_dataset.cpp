// Loading molecule CSVs and splits (the Graphormer collator is data/molecule_collate.cpp).
#include "data/molecule_dataset.h"

#include "data/asset_path.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unistd.h>

#include "data/csv_table.h"
#include "tensor/error.h"
#include "tensor/rng.h"

namespace urpe::data {

// ---- loading ----

namespace {

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Parses row r's SMILES and builds its graph; errors gain the file name.
MoleculeGraph row_graph(const CsvTable& table, size_t r, int column, AtomVocabulary& vocabulary,
                        bool grow, std::string* smiles_out, int64_t max_atoms = 0) {
  const std::string smiles = trimmed(table.rows[r][column]);
  *smiles_out = smiles;
  try {
    const Molecule molecule = parse_smiles(smiles, table.row_line[r]);
    if (max_atoms > 0 && static_cast<int64_t>(molecule.atoms.size()) > max_atoms) {
      MoleculeGraph too_large;  // left out of every batch: its size is all that is kept
      too_large.num_nodes = static_cast<int32_t>(molecule.atoms.size());
      return too_large;
    }
    return molecule_graph(molecule, vocabulary, grow);
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.rfind("SMILES line", 0) == 0) throw Error(table.source + ": " + message);
    throw Error(table.where(r, column) + ": " + message + ": " + smiles);
  }
}

// Targets are stored as float: a value past float's range would become infinity (and the
// conversion is undefined behaviour), so it is an error naming the field.
float float_target(double value, const CsvTable& table, size_t r, int column, const char* what) {
  URPE_CHECK(std::fabs(value) <= std::numeric_limits<float>::max(),
             table.where(r, column) << ": expected " << what << " within the float range (|x| <= 3.4e38), got "
                                    << value);
  return static_cast<float>(value);
}

}  // namespace

MoleculeDataset load_molecule_csv(const std::string& path, const MoleculeCsvOptions& options,
                                  AtomVocabulary vocabulary) {
  const CsvTable table = read_csv(path);
  const int smiles_col = table.column(options.smiles_column);
  const int target_col = table.column(options.target_column);
  MoleculeDataset ds;
  ds.source = path;
  ds.vocabulary = std::move(vocabulary);
  ds.smiles.resize(table.rows.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    ds.graphs.push_back(
        row_graph(table, r, smiles_col, ds.vocabulary, options.grow_vocabulary, &ds.smiles[r], options.max_atoms));
    ds.targets.push_back(float_target(table.number(r, target_col), table, r, target_col, "a target"));
  }
  return ds;
}

double penalized_logp(double logp, double sas, int32_t cycle_penalty, bool normalized) {
  if (!normalized) return logp - sas - cycle_penalty;
  constexpr double logp_mean = 2.4570953396190123, logp_std = 1.434324401111988;
  constexpr double sa_mean = -3.0525811293166134, sa_std = 0.8335207024513095;
  constexpr double cycle_mean = -0.0485696876403053, cycle_std = 0.2860212110245455;
  return (logp - logp_mean) / logp_std + (-sas - sa_mean) / sa_std +
         (-cycle_penalty - cycle_mean) / cycle_std;
}

MoleculeDataset load_zinc250k_csv(const std::string& path, bool normalized, bool grow_vocabulary,
                                  AtomVocabulary vocabulary, int64_t max_atoms) {
  const CsvTable table = read_csv(path);
  const int smiles_col = table.column("smiles"), logp_col = table.column("logP"),
            sas_col = table.column("SAS");
  MoleculeDataset ds;
  ds.source = path;
  ds.vocabulary = std::move(vocabulary);
  ds.smiles.resize(table.rows.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    ds.graphs.push_back(
        row_graph(table, r, smiles_col, ds.vocabulary, grow_vocabulary, &ds.smiles[r], max_atoms));
    const MoleculeGraph& graph = ds.graphs.back();
    const bool kept = max_atoms <= 0 || graph.num_nodes <= max_atoms;  // else only its atom count is kept
    const double target = penalized_logp(table.number(r, logp_col), table.number(r, sas_col),
                                         kept ? cycle_penalty(graph) : 0, normalized);
    ds.targets.push_back(float_target(target, table, r, logp_col, "a penalized logP"));
  }
  return ds;
}

// ---- splits ----

MoleculeSplit load_split_file(const std::string& path, size_t num_rows) {
  const CsvTable table = read_csv(path);
  const int row_col = table.column("row"), split_col = table.column("split");
  MoleculeSplit split;
  std::vector<int64_t> seen_at(num_rows, 0);
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const double value = table.number(r, row_col);
    // Range first: casting a double outside int64's range (1e300) is undefined behaviour.
    const bool in_range = value >= 0 && value < static_cast<double>(num_rows);
    const int64_t row = in_range ? static_cast<int64_t>(value) : -1;
    URPE_CHECK(in_range && value == static_cast<double>(row),
               table.where(r, row_col) << ": expected a row index in [0, " << num_rows << "), got \""
                                       << table.rows[r][row_col] << "\"");
    URPE_CHECK(seen_at[row] == 0, table.where(r, row_col) << ": expected each row once, row " << row
                                                          << " is already on line " << seen_at[row]);
    seen_at[row] = table.row_line[r];
    const std::string& name = table.rows[r][split_col];
    if (name == "train") split.train.push_back(row);
    else if (name == "valid") split.valid.push_back(row);
    else if (name == "test") split.test.push_back(row);
    else URPE_FAIL(table.where(r, split_col) << ": expected train, valid or test, got \"" << name << "\"");
  }
  URPE_CHECK(table.rows.size() == num_rows, path << ": expected one line per dataset row (" << num_rows
                                                 << "), got " << table.rows.size());
  return split;
}

MoleculeSplit seeded_split(size_t num_rows, uint64_t seed, double train_fraction, double valid_fraction) {
  URPE_CHECK(train_fraction >= 0 && valid_fraction >= 0 && train_fraction + valid_fraction <= 1,
             "seeded_split: expected fractions with train + valid <= 1, got " << train_fraction << " and "
                                                                             << valid_fraction);
  std::vector<int64_t> order(num_rows);
  for (size_t k = 0; k < num_rows; ++k) order[k] = static_cast<int64_t>(k);
  Rng rng(seed);
  for (size_t k = num_rows; k > 1; --k) std::swap(order[k - 1], order[rng.below(static_cast<int64_t>(k))]);
  const size_t n_train = static_cast<size_t>(train_fraction * num_rows);
  const size_t n_valid = static_cast<size_t>(valid_fraction * num_rows);
  MoleculeSplit split;
  split.train.assign(order.begin(), order.begin() + n_train);
  split.valid.assign(order.begin() + n_train, order.begin() + n_train + n_valid);
  split.test.assign(order.begin() + n_train + n_valid, order.end());
  for (auto* part : {&split.train, &split.valid, &split.test}) std::sort(part->begin(), part->end());
  return split;
}

// ---- the embedded dataset ----

std::string embedded_molecules_dir() {
  return find_asset_dir(kEmbeddedMoleculesPath, "molecules.csv.gz", "the embedded molecule data set",
                        "/usr/bin/python3 tools/make_molecules.py");
}

EmbeddedMolecules load_embedded_molecules(const std::string& dir, const std::string& target_column) {
  EmbeddedMolecules e;
  MoleculeCsvOptions options;
  options.target_column = target_column;
  e.dataset = load_molecule_csv(dir + "/molecules.csv.gz", options,
                                AtomVocabulary::load(dir + "/atom_types.txt"));
  e.split = load_split_file(dir + "/split.csv", e.dataset.size());
  return e;
}

}  // namespace urpe::data
