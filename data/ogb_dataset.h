// Molecules as Graphormer reads them on PCQM4M: a CSV of SMILES and a target (PCQM4Mv2's
// smiles,homolumogap, or the file tools/pcqm4m_to_urpe.py writes), each molecule's graph carrying
// OGB's 9 atom and 3 bond features as its feature columns (data/ogb_features.h), so the collator
// gives Graphormer GV2's multi-feature ids (data/molecule_dataset.h).
#pragma once
#include <string>

#include "data/molecule_dataset.h"
#include "data/ogb_features.h"

namespace urpe::data {

// The graph of one molecule: OGB's features as feature columns, node_type = atomic number − 1
// (feature 0), raw bond types = OGB bond type + 1 (1 single … 4 aromatic), heavy atoms only.
MoleculeGraph ogb_molecule_graph(const OgbFeatures& features);

// A CSV (plain or .gz) with a header; SMILES and target columns by name. A SMILES error or a target
// that is empty or not a finite number is an error naming the file and line. The vocabulary lists
// element symbols by atomic number − 1 (the node types).
// max_atoms > 0: a molecule with more atoms keeps only its atom count (no features, bonds or (N, N)
// tables), as in load_molecule_csv: Graphormer's max_nodes leaves it out of every batch.
MoleculeDataset load_ogb_molecule_csv(const std::string& path, const std::string& smiles_column,
                                      const std::string& target_column, int64_t max_atoms = 0);

}  // namespace urpe::data
