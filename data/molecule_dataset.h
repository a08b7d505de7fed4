// Molecule datasets for Graphormer: CSV files of SMILES and a regression target, train/valid/test
// splits, and batch collation into padded tensors (docs/graphormer.md#collation-and-padding,
// GV2 collator.py; the collator is data/molecule_collate.cpp).
//
// Files
//   * any CSV with a header: a SMILES column and a target column chosen by name (plain or .gz);
//   * the ZINC-250k layout (smiles,logP,qed,SAS): target = logP − SAS − cycle penalty, computed
//     here (cycle penalty from the graph, JT-VAE's definition), optionally normalised with
//     JT-VAE's ZINC-250k constants (the benchmark's scale);
//   * the embedded set data/assets/molecules (tools/make_molecules.py): molecules.csv.gz,
//     atom_types.txt, split.csv (row,split).
//
// Collated batch (B graphs, n = most nodes in the batch, D hops), one feature column per atom
// and per bond, so GV2's trailing feature axis (size 1) is dropped:
//   x              i32 (B, n)           atom type + 2, pad 0 (GV2: convert_to_single_emb + 1)
// With feature columns (graphs with atom_feature_count F > 0 and bond_feature_count Fe > 0, the
// OGB features of PCQM4M), GV2's ids: column f of value v is v + 2 + 512·f for atoms and
// v + 3 + 512·f for the hops of edge_input:
//   x              i32 (B, n, F)
//   edge_input     i32 (B, n, n, D·Fe)  hop-major: [.., s·Fe + f]
//   in_degree      i32 (B, n)           degree + 1, pad 0 (out_degree is the same tensor)
//   spatial_pos    i32 (B, n, n)        SPD + 1 (self 1, neighbour 2, unreachable 511), pad 0
//   attn_edge_type i32 (B, n, n)        bond type + 2 on bonded pairs, 0 elsewhere and on pads
//   edge_input     i32 (B, n, n, D)     bond type + 3 of hop s of the kept shortest path, 0 for
//                                       missing hops; D = min(longest finite SPD, multi_hop_max_dist),
//                                       at least 1 (GV2 counts 510 for a disconnected graph, so
//                                       its D is then multi_hop_max_dist; the extra hops are 0)
//   attn_bias      f32 (B, n+1, n+1)    graph token at index 0; 0 on real pairs, −inf on padded
//                                       keys, padded query rows 0 over real keys; −inf on real
//                                       pairs with SPD ≥ spatial_pos_max
//   y              f32 (B,)             targets
//   num_nodes      i32 (B,)             real nodes per graph
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/graph_batch_maps.h"
#include "data/molecule_graph.h"
#include "tensor/tensor.h"

namespace urpe::data {

struct MoleculeDataset {
  std::string source;                // file it came from
  std::vector<std::string> smiles;   // (M,)
  std::vector<MoleculeGraph> graphs; // (M,)
  std::vector<float> targets;        // (M,)
  AtomVocabulary vocabulary;         // the one the graphs' node types index
  size_t size() const { return graphs.size(); }
};

struct MoleculeCsvOptions {
  std::string smiles_column = "smiles";
  std::string target_column = "penalized_logp_normalized";
  bool grow_vocabulary = false;  // unknown atom types: false = error, true = append to the vocabulary
  // > 0: a molecule with more atoms keeps only its atom count (num_nodes; no types, bonds or the
  // (N, N) bond table, which for a 10⁶-atom line is terabytes): Graphormer's max_nodes leaves it
  // out of every batch anyway, and nothing quadratic in its size is ever computed.
  int64_t max_atoms = 0;
};

// A CSV (plain or .gz) with a header. SMILES errors and unknown atom types name the file and line.
MoleculeDataset load_molecule_csv(const std::string& path, const MoleculeCsvOptions& options,
                                  AtomVocabulary vocabulary = AtomVocabulary::zinc());

// JT-VAE's normalisation of the three terms (statistics of 250k_rndm_zinc_drugs_clean).
double penalized_logp(double logp, double sas, int32_t cycle_penalty, bool normalized);

// The ZINC-250k CSV layout (smiles,logP,qed,SAS): target = penalized logP computed from the logP
// and SAS columns and the cycle penalty of each SMILES' graph; normalized = benchmark scale.
// Aromatic SMILES type [nH] as "N H1", which ZINC's 28 types lack: grow_vocabulary decides.
// max_atoms as in MoleculeCsvOptions (a molecule past it keeps only its atom count and gets no
// cycle penalty: it is left out of every batch).
MoleculeDataset load_zinc250k_csv(const std::string& path, bool normalized, bool grow_vocabulary,
                                  AtomVocabulary vocabulary = AtomVocabulary::zinc(), int64_t max_atoms = 0);

struct MoleculeSplit {
  std::vector<int64_t> train, valid, test;  // row indices into the dataset
};

// split.csv: header "row,split", one line per dataset row, split ∈ {train, valid, test}. Every row
// must appear exactly once; errors name the file and line.
MoleculeSplit load_split_file(const std::string& path, size_t num_rows);
// A seeded shuffle (urpe::Rng) cut into train/valid/test by fractions; the rest goes to test.
MoleculeSplit seeded_split(size_t num_rows, uint64_t seed, double train_fraction = 0.8,
                           double valid_fraction = 0.1);

// The dataset shipped in data/assets/molecules, relative to the repository root.
constexpr const char* kEmbeddedMoleculesPath = "data/assets/molecules";
// Finds it from the working directory or the running executable's folder and its parents; the
// error names the places looked at.
std::string embedded_molecules_dir();

struct EmbeddedMolecules {
  MoleculeDataset dataset;
  MoleculeSplit split;
};
// molecules.csv.gz + atom_types.txt + split.csv from `dir`, target column by name
// ("penalized_logp_normalized" = benchmark scale, "penalized_logp", "logP", "SAS").
EmbeddedMolecules load_embedded_molecules(const std::string& dir,
                                          const std::string& target_column = "penalized_logp_normalized");

struct CollateOptions {
  int32_t max_nodes = 128;           // larger graphs are left out of the batch
  int32_t multi_hop_max_dist = 5;    // GV2 ZINC default; the paper's GV1 used 20
  int32_t spatial_pos_max = 1024;    // real pairs with SPD ≥ this get −inf bias
  // When set, the batch also carries the model's host-side index maps for these settings
  // (graph_batch_maps.h), made by whichever thread collates.
  std::optional<GraphMapOptions> maps;
  // Fixed shapes (a captured training step, cuda_graph = on: docs/cuda.md#cuda-graphs), all three
  // set or none: every batch is padded to n = fixed_nodes (a graph with more nodes is an error, not
  // left out) and D = fixed_hops; the hops s ≥ the batch's own D (the D it would have unpadded)
  // hold absent_hop_id in every pair, an id the model reads as a row of zeros (models/graphormer.h),
  // so the padding changes no graph's multi-hop sum.
  int32_t fixed_nodes = 0, fixed_hops = 0, absent_hop_id = 0;
};

// GV2's convert_to_single_emb: feature column f owns ids [512·f, 512·(f+1)) of one table.
constexpr int32_t kFeatureIdOffset = 512;

struct GraphBatch {
  Tensor x, in_degree, spatial_pos, attn_edge_type, edge_input, attn_bias, y, num_nodes;
  int64_t bond_features = 1;  // Fe: the feature columns of each hop in edge_input
  std::vector<int64_t> indices;  // dataset rows in the batch, in order
  int64_t num_dropped = 0;       // graphs left out for having more than max_nodes nodes
  GraphBatchMaps maps;           // made when CollateOptions::maps was set (graph_batch_maps.h)
  // > 0: a fixed-shape batch (CollateOptions::fixed_nodes): the id of the hops past the batch's own
  // D in edge_input (every feature column), read as zeros. 0: missing hops are id 0 (GV1's padding row).
  int32_t absent_hop_id = 0;
};

// Collates dataset rows `indices` into CPU tensors (see the table at the top).
GraphBatch collate_graphs(const MoleculeDataset& dataset, const std::vector<int64_t>& indices,
                          const CollateOptions& options = {});

}  // namespace urpe::data
