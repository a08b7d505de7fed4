// Reading a SMILES + target CSV into graphs with OGB's feature columns (data/ogb_dataset.h).
#include "data/ogb_dataset.h"

#include <cmath>
#include <limits>

#include "data/csv_table.h"
#include "tensor/error.h"

namespace urpe::data {

MoleculeGraph ogb_molecule_graph(const OgbFeatures& f) {
  std::vector<int32_t> node_type;
  for (const auto& atom : f.atoms) node_type.push_back(atom[0]);
  std::vector<Bond> bonds;
  for (size_t e = 0; e < f.bonds.size(); ++e)
    bonds.push_back({f.bond_begin[e], f.bond_end[e], static_cast<BondType>(f.bonds[e][0] + 1)});
  MoleculeGraph g = molecule_graph_from_bonds(std::move(node_type), bonds);
  g.atom_feature_count = kOgbAtomFeatures;
  for (const auto& atom : f.atoms) g.atom_features.insert(g.atom_features.end(), atom.begin(), atom.end());
  g.bond_feature_count = kOgbBondFeatures;
  for (const auto& bond : f.bonds) g.bond_features.insert(g.bond_features.end(), bond.begin(), bond.end());
  return g;
}

MoleculeDataset load_ogb_molecule_csv(const std::string& path, const std::string& smiles_column,
                                      const std::string& target_column, int64_t max_atoms) {
  const CsvTable table = read_csv(path);
  const int smiles_col = table.column(smiles_column), target_col = table.column(target_column);
  MoleculeDataset ds;
  ds.source = path;
  for (int z = 1; z <= 118; ++z) ds.vocabulary.add(element_symbol(z));
  ds.vocabulary.add("misc");
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::string& smiles = table.rows[r][smiles_col];
    try {
      const Molecule molecule = parse_smiles(smiles, table.row_line[r]);
      if (max_atoms > 0 && static_cast<int64_t>(molecule.atoms.size()) > max_atoms) {
        MoleculeGraph too_large;  // left out of every batch: its size is all that is kept
        too_large.num_nodes = static_cast<int32_t>(molecule.atoms.size());
        ds.graphs.push_back(std::move(too_large));
      } else {
        ds.graphs.push_back(ogb_molecule_graph(ogb_features(molecule)));
      }
    } catch (const Error& e) {
      throw Error(table.source + ": " + e.what());
    }
    const double target = table.number(r, target_col);  // empty, NaN or text: an error naming the field
    URPE_CHECK(std::fabs(target) <= std::numeric_limits<float>::max(),
               table.where(r, target_col) << ": expected a target within the float range (|x| <= 3.4e38), got " << target);
    ds.targets.push_back(static_cast<float>(target));
    ds.smiles.push_back(smiles);
  }
  return ds;
}

}  // namespace urpe::data
