// Loading molecule CSVs and splits, and the Graphormer collator (GV2 graphormer/data/collator.py
// on top of wrapper.py's preprocess_item, with BFS in place of Floyd–Warshall).
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

// ---- collation ----

namespace {

// Bond indices along the kept shortest path i → j (bond_at: (N, N) bond index or −1), hop by hop.
std::vector<int32_t> shortest_path_bonds(const MoleculeGraph& graph, const ShortestPaths& paths,
                                         const std::vector<int32_t>& bond_at, int32_t i, int32_t j) {
  const int32_t n = graph.num_nodes;
  if (i == j || paths.parent[static_cast<size_t>(i) * n + j] < 0) return {};
  std::vector<int32_t> bonds(paths.distance[static_cast<size_t>(i) * n + j]);
  int32_t node = j;
  for (int32_t hop = static_cast<int32_t>(bonds.size()) - 1; hop >= 0; --hop) {
    const int32_t before = paths.parent[static_cast<size_t>(i) * n + node];
    bonds[hop] = bond_at[static_cast<size_t>(before) * n + node];
    node = before;
  }
  return bonds;
}

}  // namespace

GraphBatch collate_graphs(const MoleculeDataset& dataset, const std::vector<int64_t>& indices,
                          const CollateOptions& options) {
  URPE_CHECK(options.multi_hop_max_dist >= 1, "collate_graphs: expected multi_hop_max_dist >= 1, got "
                                                  << options.multi_hop_max_dist);
  GraphBatch batch;
  for (int64_t index : indices) {
    URPE_CHECK(index >= 0 && static_cast<size_t>(index) < dataset.size(),
               "collate_graphs: row " << index << " is outside the dataset of " << dataset.size() << " graphs");
    if (dataset.graphs[index].num_nodes > options.max_nodes) {
      ++batch.num_dropped;
      continue;
    }
    batch.indices.push_back(index);
  }
  URPE_CHECK(!batch.indices.empty(), "collate_graphs: every graph of the batch has more than max_nodes = "
                                         << options.max_nodes << " nodes (or the batch is empty)");

  const int64_t B = static_cast<int64_t>(batch.indices.size());
  // Feature columns: the same counts in every graph of the batch (0 = the single type).
  const int32_t F = dataset.graphs[batch.indices[0]].atom_feature_count;
  const int32_t Fe = dataset.graphs[batch.indices[0]].bond_feature_count;
  for (int64_t index : batch.indices)
    URPE_CHECK(dataset.graphs[index].atom_feature_count == F && dataset.graphs[index].bond_feature_count == Fe,
               "collate_graphs: row " << index << " has " << dataset.graphs[index].atom_feature_count << " atom and "
                                      << dataset.graphs[index].bond_feature_count << " bond feature columns, row "
                                      << batch.indices[0] << " " << F << " and " << Fe);
  const int64_t Fx = std::max(1, F), Fb = std::max(1, Fe);
  std::vector<ShortestPaths> paths;
  int32_t n = 0, longest = 0;
  for (int64_t index : batch.indices) {
    const MoleculeGraph& g = dataset.graphs[index];
    paths.push_back(shortest_paths(g));
    n = std::max(n, g.num_nodes);
    longest = std::max(longest, paths.back().max_distance);
  }
  const int32_t D = std::max(1, std::min(longest, options.multi_hop_max_dist));
  const int64_t n1 = n + 1;
  const float neg_inf = -std::numeric_limits<float>::infinity();

  std::vector<int32_t> x(B * n * Fx, 0), in_degree(B * n, 0), num_nodes(B);
  std::vector<int32_t> spatial_pos(B * n * n, 0), attn_edge_type(B * n * n, 0), edge_input(B * n * n * D * Fb, 0);
  std::vector<float> attn_bias(B * n1 * n1, 0.0f), y(B);
  for (int64_t b = 0; b < B; ++b) {
    const MoleculeGraph& g = dataset.graphs[batch.indices[b]];
    const ShortestPaths& p = paths[b];
    const int32_t N = g.num_nodes;
    num_nodes[b] = N;
    y[b] = dataset.targets[batch.indices[b]];
    const std::vector<int32_t> degree = node_degrees(g);
    for (int32_t i = 0; i < N; ++i) {
      if (F == 0) x[b * n + i] = g.node_type[i] + 2;
      for (int32_t f = 0; f < F; ++f) x[(b * n + i) * F + f] = g.atom_features[i * F + f] + 2 + kFeatureIdOffset * f;
      in_degree[b * n + i] = degree[i] + 1;
    }
    std::vector<int32_t> bond_at;  // (N, N) bond index, with feature columns
    if (Fe > 0) {
      bond_at.assign(static_cast<size_t>(N) * N, -1);
      for (size_t e = 0; e < g.edge_begin.size(); ++e)
        bond_at[static_cast<size_t>(g.edge_begin[e]) * N + g.edge_end[e]] =
            bond_at[static_cast<size_t>(g.edge_end[e]) * N + g.edge_begin[e]] = static_cast<int32_t>(e);
    }
    float* bias = &attn_bias[b * n1 * n1];  // (n+1, n+1), graph token at 0
    for (int32_t i = 0; i < N; ++i) {
      for (int32_t j = 0; j < N; ++j) {
        const int64_t ij = (b * n + i) * n + j;
        const int32_t spd = p.distance[static_cast<size_t>(i) * N + j];
        spatial_pos[ij] = spd + 1;
        const int32_t bond = g.edge_type_matrix[static_cast<size_t>(i) * N + j];
        if (bond) attn_edge_type[ij] = bond + 2;
        if (spd >= options.spatial_pos_max) bias[(i + 1) * n1 + (j + 1)] = neg_inf;
        if (Fe == 0) {
          const std::vector<int32_t> hops = shortest_path_edge_types(g, p, i, j);
          for (int32_t s = 0; s < std::min<int32_t>(D, static_cast<int32_t>(hops.size())); ++s)
            edge_input[ij * D + s] = hops[s] + 3;
        } else {
          const std::vector<int32_t> hops = shortest_path_bonds(g, p, bond_at, i, j);
          for (int32_t s = 0; s < std::min<int32_t>(D, static_cast<int32_t>(hops.size())); ++s)
            for (int32_t f = 0; f < Fe; ++f)
              edge_input[(ij * D + s) * Fe + f] = g.bond_features[hops[s] * Fe + f] + 3 + kFeatureIdOffset * f;
        }
      }
    }
    // Padding: padded keys are −inf for every query; padded query rows keep 0 over real keys.
    for (int64_t q = 0; q < n1; ++q)
      for (int64_t k = N + 1; k < n1; ++k) bias[q * n1 + k] = neg_inf;
  }

  batch.x = F == 0 ? Tensor::from_vector(x, {B, n}) : Tensor::from_vector(x, {B, n, static_cast<int64_t>(F)});
  batch.bond_features = Fb;
  batch.in_degree = Tensor::from_vector(in_degree, {B, n});
  batch.spatial_pos = Tensor::from_vector(spatial_pos, {B, n, n});
  batch.attn_edge_type = Tensor::from_vector(attn_edge_type, {B, n, n});
  batch.edge_input = Tensor::from_vector(edge_input, {B, n, n, D * Fb});
  batch.attn_bias = Tensor::from_vector(attn_bias, {B, n1, n1});
  batch.y = Tensor::from_vector(y, {B});
  batch.num_nodes = Tensor::from_vector(num_nodes, {B});
  return batch;
}

}  // namespace urpe::data
