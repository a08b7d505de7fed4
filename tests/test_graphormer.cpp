// Graphormer (+ URPE) tests: the model of models/graphormer.h against the independent PyTorch
// reference (tools/torch_reference_graphormer.py: predictions, L1 loss, every gradient), finite
// differences through the whole model for the tables only Graphormer has, the invariances a
// graph model must have (padding, atom renumbering), URPE with C = 1 being the baseline, and the
// parameter counts of the presets against the formula and the paper.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "data/molecule_dataset.h"
#include "data/smiles.h"
#include "models/graphormer.h"
#include "ops/embedding.h"
#include "ops/shape.h"
#include "golden_util.h"
#include "test_util.h"
#include "base/io/safetensors.h"

using namespace urpe;

namespace {

using test::meta_int;
using test::relative_error;
std::string fixture_path(const std::string& name) { return test::fixture_path("graphormer_" + name + ".safetensors"); }



GraphormerConfig fixture_config(const TensorFile& f) {
  GraphormerConfig c;
  c.layers = meta_int(f, "layers");
  c.d_model = meta_int(f, "d_model");
  c.d_ffn = meta_int(f, "d_ffn");
  c.heads = meta_int(f, "heads");
  c.multi_hop_max_dist = meta_int(f, "multi_hop_max_dist");
  c.num_atoms = meta_int(f, "num_atoms");
  c.num_edges = meta_int(f, "num_edges");
  c.num_spatial = meta_int(f, "num_spatial");
  c.num_degree = meta_int(f, "num_degree");
  c.num_edge_dis = meta_int(f, "num_edge_dis");
  c.urpe = meta_int(f, "urpe") != 0;
  c.max_spd = meta_int(f, "max_spd");
  c.dropout = c.attention_dropout = c.input_dropout = 0.0f;
  return c;
}

data::GraphBatch fixture_batch(const TensorFile& f) {
  data::GraphBatch b;
  b.x = f.at("input.x");
  b.in_degree = f.at("input.in_degree");
  b.spatial_pos = f.at("input.spatial_pos");
  b.edge_input = f.at("input.edge_input");
  b.attn_bias = f.at("input.attn_bias");
  b.y = f.at("input.y");
  b.num_nodes = f.at("input.num_nodes");
  return b;
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A dataset of SMILES (ZINC atom types) with targets 0, 1, 2, ...
data::MoleculeDataset dataset_of(const std::vector<std::string>& smiles) {
  data::MoleculeDataset d;
  d.vocabulary = data::AtomVocabulary::zinc();
  for (size_t k = 0; k < smiles.size(); ++k) {
    d.smiles.push_back(smiles[k]);
    d.graphs.push_back(data::molecule_graph(data::parse_smiles(smiles[k]), d.vocabulary));
    d.targets.push_back(static_cast<float>(k));
  }
  return d;
}

data::GraphBatch collate(const data::MoleculeDataset& d, const std::vector<int64_t>& rows, int32_t hops) {
  data::CollateOptions options;
  options.multi_hop_max_dist = hops;
  return data::collate_graphs(d, rows, options);
}

// Tiny model with O(1) weights (GV1's 0.02-scale init would make every gradient ~1e-4, and a
// finite-difference check at atol 1e-3 would pass on zeros).
GraphormerConfig tiny_config(bool urpe) {
  GraphormerConfig c;
  c.layers = 2;
  c.d_model = 8;
  c.d_ffn = 12;
  c.heads = 2;
  c.multi_hop_max_dist = 3;
  c.num_atoms = 16;
  c.num_edges = 8;
  c.num_spatial = 8;
  c.num_degree = 6;
  c.num_edge_dis = 4;
  c.urpe = urpe;
  c.max_spd = 3;
  c.dropout = c.attention_dropout = c.input_dropout = 0.0f;
  return c;
}

void randomise(const Graphormer& model, uint64_t seed) {
  Rng rng(seed);
  for (const auto& [name, p] : model.parameters().items()) {
    const bool gain = name.find("norm.weight") != std::string::npos || name == "final_ln.weight";
    const Tensor fresh = name == "urpe_c" ? Tensor::uniform(p.shape(), 0.5f, 1.5f, rng)
                         : gain           ? Tensor::uniform(p.shape(), 0.8f, 1.2f, rng)
                                          : Tensor::uniform(p.shape(), -0.6f, 0.6f, rng);
    p.copy_from(fresh);
  }
}

void check_golden(const std::string& name) {
  const TensorFile f = load_safetensors(fixture_path(name));
  const GraphormerConfig c = fixture_config(f);
  Graphormer model(c, 0);

  test::load_fixture_parameters(f, model.parameters());

  const data::GraphBatch batch = fixture_batch(f);
  // The fixture exercises the cut to multi_hop_max_dist and unreachable pairs.
  REQUIRE(batch.edge_input.size(3) > c.multi_hop_max_dist);
  const Tensor predictions = model.forward(batch, false, nullptr);
  CHECK(relative_error(predictions, f.at("output.predictions")) < 1e-4);
  const Tensor loss = model.loss(predictions, batch);
  test::check_fixture_loss(f, "output.loss", loss);
  loss.backward();
  test::check_fixture_gradients(f, model.parameters());
}

void check_equal_i32(const char* what, const Tensor& a, const Tensor& b) {
  INFO(what << ": " << a.describe() << " vs " << b.describe());
  REQUIRE(a.shape() == b.shape());
  CHECK(a.to_vector_i32() == b.to_vector_i32());
}

}  // namespace

TEST_CASE("golden: graphormer baseline against PyTorch (predictions, loss, every gradient)") {
  check_golden("base");
}

TEST_CASE("golden: graphormer + URPE (random C over SPD) against PyTorch") { check_golden("urpe"); }

TEST_CASE("the fixture's inputs are what data/ collates from the same SMILES") {
  // The Python script builds its own collation; the C++ model is only meaningful on what the
  // C++ data layer produces, so the two must agree exactly.
  const TensorFile f = load_safetensors(fixture_path("base"));
  const std::vector<std::string> smiles = split_words(f.meta("smiles"));
  REQUIRE(smiles.size() == 4);
  const data::MoleculeDataset d = dataset_of(smiles);
  const data::GraphBatch b = collate(d, {0, 1, 2, 3}, static_cast<int32_t>(meta_int(f, "collate_hops")));
  check_equal_i32("x", b.x, f.at("input.x"));
  check_equal_i32("in_degree", b.in_degree, f.at("input.in_degree"));
  check_equal_i32("spatial_pos", b.spatial_pos, f.at("input.spatial_pos"));
  check_equal_i32("edge_input", b.edge_input, f.at("input.edge_input"));
  check_equal_i32("num_nodes", b.num_nodes, f.at("input.num_nodes"));
  const std::vector<float> bias = b.attn_bias.to_vector_f32(), want = f.at("input.attn_bias").to_vector_f32();
  REQUIRE(bias.size() == want.size());
  for (size_t k = 0; k < bias.size(); ++k) CHECK(bias[k] == want[k]);  // 0 or −∞
}

TEST_CASE("graphormer: finite differences of the loss through the whole model") {
  for (bool urpe : {false, true}) {
    CAPTURE(urpe);
    const GraphormerConfig c = tiny_config(urpe);
    Graphormer model(c, 3);
    randomise(model, 4);
    const TensorFile f = load_safetensors(fixture_path("base"));
    data::GraphBatch batch = fixture_batch(f);
    // Targets 2 away from the predictions keep |pred − y| smooth under the ±ε steps.
    {
      const std::vector<float> p = model.forward(batch, false, nullptr).to_vector_f32();
      std::vector<float> y(p.size());
      for (size_t k = 0; k < p.size(); ++k) y[k] = p[k] + (k % 2 ? 2.0f : -2.0f);
      batch.y = Tensor::from_vector(y, {static_cast<int64_t>(y.size())});
    }
    // edge_encoder.weight is checked below: its padding row 0 moves the loss (missing hops read
    // it) but, as in GV1, gets no gradient, so finite differences cover rows 1 … only.
    std::vector<std::string> names = {"spatial_pos_encoder.weight", "edge_dis_encoder.weight",
                                      "graph_token_virtual_distance.weight", "graph_token.weight"};
    if (urpe) names.push_back("urpe_c");
    std::vector<Tensor> inputs;
    for (const std::string& n : names) inputs.push_back(model.parameters().find(n));
    autograd::GradcheckOptions options;
    options.eps = 1e-2f;
    options.atol = 1e-3f;
    options.rtol = 1e-2f;
    test::check_gradients(
        [&](const std::vector<Tensor>&) { return model.loss(model.forward(batch, false, nullptr), batch); },
        inputs, options);
    // Not a pass on zeros: every checked table gets a visible gradient.
    for (size_t k = 0; k < inputs.size(); ++k) {
      INFO("gradient of " << names[k]);
      REQUIRE(inputs[k].grad().defined());
      std::vector<float> g = inputs[k].grad().to_vector_f32();
      double largest = 0;
      for (float v : g) largest = std::max(largest, static_cast<double>(std::fabs(v)));
      CHECK(largest > 1e-3);
    }

    // The edge table by hand: central differences per element, the padding row's gradient 0.
    const Tensor edge = model.parameters().find("edge_encoder.weight");  // (num_edges, H)
    edge.zero_grad();
    model.loss(model.forward(batch, false, nullptr), batch).backward();
    const std::vector<float> analytic = edge.grad().to_vector_f32(), start = edge.to_vector_f32();
    const int64_t width = edge.size(1);
    auto loss_with = [&](size_t k, float delta) {
      std::vector<float> moved = start;
      moved[k] += delta;
      edge.copy_from(Tensor::from_vector(moved, edge.shape()));
      return static_cast<double>(model.loss(model.forward(batch, false, nullptr), batch).item());
    };
    double largest_row0 = 0;
    for (size_t k = 0; k < start.size(); ++k) {
      const double numeric = (loss_with(k, options.eps) - loss_with(k, -options.eps)) / (2.0 * options.eps);
      INFO("edge_encoder.weight element " << k << ": analytic " << analytic[k] << ", numeric " << numeric);
      if (static_cast<int64_t>(k) < width) {
        CHECK(analytic[k] == 0.0f);
        largest_row0 = std::max(largest_row0, std::fabs(numeric));
      } else {
        CHECK(std::fabs(analytic[k] - numeric) <= options.atol + options.rtol * std::fabs(numeric));
      }
    }
    edge.copy_from(Tensor::from_vector(start, edge.shape()));
    CHECK(largest_row0 > 1e-3);  // the row is used: only padding_idx keeps it untrained
  }
}

TEST_CASE("graphormer: padding nodes do not change another graph's prediction") {
  // Butane (SPD 3) makes both batches use the model's 3 hops, so only the padding differs (see
  // the next test for what a different hop count does).
  const data::MoleculeDataset d =
      dataset_of({"CC(=O)O", "N#C[NH3+]", "CCCC", "CC(C)(C)C1=CC=C(NNC(=O)C2CCC2)C=C1"});
  for (bool urpe : {false, true}) {
    CAPTURE(urpe);
    Graphormer model(tiny_config(urpe), 5);
    randomise(model, 6);
    const data::GraphBatch small = collate(d, {0, 1, 2}, 5);
    const data::GraphBatch padded = collate(d, {0, 1, 2, 3}, 5);  // 18 atoms: the others get padding
    REQUIRE(padded.x.size(1) > small.x.size(1));
    const std::vector<float> a = model.forward(small, false, nullptr).to_vector_f32();
    const std::vector<float> b = model.forward(padded, false, nullptr).to_vector_f32();
    REQUIRE(b.size() == 4);
    for (int k = 0; k < 3; ++k) CHECK(b[k] == doctest::Approx(a[k]).epsilon(1e-5));
    CHECK(std::fabs(b[3] - b[0]) > 1e-3);  // and the model does tell molecules apart
  }
}

TEST_CASE("graphormer: fixed-shape batches (cuda_graph = on) give each graph's loss and gradients as its own batch does") {
  // fixed_shapes pads every training batch to one n and D (docs/cuda.md#cuda-graphs). Padded
  // nodes are masked keys and never the readout's token; hops past the batch's own D read the
  // model's zero row, so GV1's per-batch hop count (the quirk test below) is kept. Acetic acid and
  // ammonium cyanide alone have D = 2: padded to n = 9, D = 5 beside nothing else, the loss and
  // every gradient must be those of the unpadded batch up to float rounding (summation orders
  // over longer rows and more hops of +0), here 1e-5 relative.
  const data::MoleculeDataset d = dataset_of({"CC(=O)O", "N#C[NH3+]", "CC(C)(C)C1=CC=C(NNC(=O)C2CCC2)C=C1"});
  for (bool urpe : {false, true}) {
    CAPTURE(urpe);
    GraphormerConfig c = tiny_config(urpe);
    c.multi_hop_max_dist = 5;
    c.num_edge_dis = 5;
    Graphormer model(c, 5);
    randomise(model, 6);
    data::CollateOptions fixed;
    fixed.multi_hop_max_dist = 5;
    fixed.fixed_nodes = 9;
    fixed.fixed_hops = 5;
    fixed.absent_hop_id = model.absent_hop_id();
    const data::GraphBatch own = collate(d, {0, 1}, 5);
    const data::GraphBatch padded = data::collate_graphs(d, {0, 1}, fixed);
    REQUIRE(own.edge_input.size(3) == 2);
    CHECK(padded.x.shape() == Shape{2, 9});
    CHECK(padded.edge_input.shape() == Shape{2, 9, 9, 5});
    CHECK(padded.absent_hop_id == c.num_edges);
    // Hops 2..4 of every pair are absent; hops 0..1 of the real pairs are the unpadded batch's.
    const std::vector<int32_t> a = own.edge_input.to_vector_i32(), b = padded.edge_input.to_vector_i32();
    const int64_t n = own.x.size(1);
    for (int64_t g = 0; g < 2; ++g)
      for (int64_t i = 0; i < 9; ++i)
        for (int64_t j = 0; j < 9; ++j)
          for (int64_t s = 0; s < 5; ++s) {
            const int32_t value = b[(((g * 9 + i) * 9 + j) * 5) + s];
            if (s >= 2) CHECK(value == c.num_edges);
            else if (i < n && j < n) CHECK(value == a[(((g * n + i) * n + j) * 2) + s]);
          }

    auto loss_and_grads = [&](const data::GraphBatch& batch) {
      for (const auto& [name, p] : model.parameters().items()) p.zero_grad();
      const Tensor loss = model.loss(model.forward(batch, false, nullptr), batch);
      loss.backward();
      std::vector<std::vector<float>> grads;
      for (const auto& [name, p] : model.parameters().items())
        grads.push_back(p.grad().defined() ? p.grad().to_vector_f32() : std::vector<float>());
      return std::make_pair(static_cast<double>(loss.item()), grads);
    };
    const auto [loss_own, grads_own] = loss_and_grads(own);
    const auto [loss_padded, grads_padded] = loss_and_grads(padded);
    CHECK(std::fabs(loss_padded - loss_own) <= 1e-5 * std::fabs(loss_own));
    REQUIRE(grads_own.size() == grads_padded.size());
    double largest = 0;
    for (size_t k = 0; k < grads_own.size(); ++k) {
      REQUIRE(grads_own[k].size() == grads_padded[k].size());
      for (size_t e = 0; e < grads_own[k].size(); ++e) {
        CHECK(std::fabs(grads_padded[k][e] - grads_own[k][e]) <= 1e-6 + 1e-5 * std::fabs(grads_own[k][e]));
        largest = std::max(largest, static_cast<double>(std::fabs(grads_own[k][e])));
      }
    }
    CHECK(largest > 1e-2);  // not a comparison of zeros

    // A graph larger than the fixed shape is one clear error, not a dropped molecule.
    CHECK_THROWS_WITH_AS(data::collate_graphs(d, {0, 2}, fixed),
                         doctest::Contains("row 2 has 18 nodes, more than the fixed batch shape's 9"), Error);
    // The three settings go together.
    data::CollateOptions half = fixed;
    half.absent_hop_id = 0;
    CHECK_THROWS_WITH_AS(data::collate_graphs(d, {0}, half), doctest::Contains("all positive"), Error);
  }
}

TEST_CASE("graphormer: maps made by the collator are the model's own, and used only when made for it") {
  // The prefetch thread collates with the model's map options (data/graph_batch_maps.h): the
  // batch then carries the four host maps, which must be what the model would make, and give the
  // same predictions bit for bit. Maps made for other settings are ignored.
  const data::MoleculeDataset d =
      dataset_of({"CC(=O)O", "N#C[NH3+]", "CCCC", "CC(C)(C)C1=CC=C(NNC(=O)C2CCC2)C=C1"});
  for (bool urpe : {false, true}) {
    CAPTURE(urpe);
    Graphormer model(tiny_config(urpe), 21);
    randomise(model, 22);
    data::CollateOptions plain;
    plain.multi_hop_max_dist = 5;
    data::CollateOptions ahead = plain;
    ahead.maps = model.map_options();
    const data::GraphBatch without = data::collate_graphs(d, {0, 1, 2, 3}, plain);
    const data::GraphBatch with = data::collate_graphs(d, {0, 1, 2, 3}, ahead);
    CHECK_FALSE(without.maps.made);
    REQUIRE(with.maps.made);
    const data::GraphBatchMaps own = data::graph_batch_maps(without, model.map_options());
    CHECK(with.maps.joint_ids.to_vector_i32() == own.joint_ids.to_vector_i32());
    CHECK(with.maps.divisor.to_vector_f32() == own.divisor.to_vector_f32());
    CHECK(with.maps.c_map.to_vector_i32() == own.c_map.to_vector_i32());
    CHECK(with.maps.key_padding.to_vector_i32() == own.key_padding.to_vector_i32());
    CHECK(model.urpe_c_map(with).to_vector_i32() == own.c_map.to_vector_i32());
    const std::vector<float> reference = model.forward(without, false, nullptr).to_vector_f32();
    CHECK(model.forward(with, false, nullptr).to_vector_f32() == reference);

    // Maps made for another model (num_spatial 2: every pair would read row 1) are not used.
    data::CollateOptions other = plain;
    other.maps = model.map_options();
    other.maps->num_spatial = 2;
    const data::GraphBatch foreign = data::collate_graphs(d, {0, 1, 2, 3}, other);
    REQUIRE(foreign.maps.made);
    CHECK(foreign.maps.joint_ids.to_vector_i32() != own.joint_ids.to_vector_i32());
    CHECK(model.forward(foreign, false, nullptr).to_vector_f32() == reference);

    // The collator measured the edge ids' bounds (so the model need not read them back from a GPU);
    // graph_batch_maps alone does not.
    const std::vector<int32_t> hops = with.edge_input.to_vector_i32();
    REQUIRE(with.maps.edge_ids_bounded);
    CHECK(with.maps.edge_id_low == *std::min_element(hops.begin(), hops.end()));
    CHECK(with.maps.edge_id_high == *std::max_element(hops.begin(), hops.end()));
    CHECK_FALSE(own.edge_ids_bounded);

    // Packed for a GPU's upload (map_options().pack_edge_ids on a CUDA model): the bounds, and
    // fields that unpack (ops/embedding.h unpack_ids) to edge_input exactly; a CPU model ignores them.
    data::CollateOptions packing = plain;
    packing.maps = model.map_options();
    CHECK_FALSE(packing.maps->pack_edge_ids);  // a CPU model's options
    packing.maps->pack_edge_ids = true;
    const data::GraphBatch packed = data::collate_graphs(d, {0, 1, 2, 3}, packing);
    REQUIRE(packed.maps.edge_ids_bounded);
    REQUIRE(packed.maps.edge_ids_packed.defined());
    CHECK(packed.maps.edge_id_bits == 8);  // ZINC-style bond ids < 256
    CHECK(packed.maps.edge_id_high == with.maps.edge_id_high);
    const int64_t L = packed.edge_input.size(3);
    CHECK(packed.maps.edge_ids_packed.size(3) == (L + 3) / 4);
    CHECK(unpack_ids(packed.maps.edge_ids_packed, L, 8).to_vector_i32() == hops);
    CHECK(unpack_ids(data::pack_ids(packed.edge_input, 16), L, 16).to_vector_i32() == hops);
    CHECK_FALSE(model.map_options() == *packing.maps);  // so the model makes its own maps for it
    CHECK(model.forward(packed, false, nullptr).to_vector_f32() == reference);
  }
  // Ids that do not fit the fields are one error naming them.
  CHECK_THROWS_WITH(data::pack_ids(Tensor::from_vector(std::vector<int32_t>{3, 256}, {1, 2}), 8),
                    doctest::Contains("id 256 at flat index 1 does not fit 8 bits"));
  // Bounds past the model's edge table still give the named error (the check runs then).
  GraphormerConfig narrow = tiny_config(false);
  narrow.num_edges = 2;
  Graphormer small_table(narrow, 23);
  data::CollateOptions ahead;
  ahead.multi_hop_max_dist = 5;
  ahead.maps = small_table.map_options();
  const data::GraphBatch batch = data::collate_graphs(d, {0, 1, 2, 3}, ahead);
  REQUIRE(batch.maps.edge_id_high >= 2);
  CHECK_THROWS_WITH_AS(small_table.forward(batch, false, nullptr),
                       doctest::Contains("outside the table of num_edges = 2 rows"), Error);
}

TEST_CASE("pack_ids and id_range: the fields and bounds of a plain reference loop, bit for bit") {
  // The collator's thread packs a GPU batch's multi-hop ids and measures their range (the fast
  // loops of data/graph_batch_maps.cpp); this reference is the definition: word k / per of a row,
  // bits [bits·(k mod per), …), zero beyond the row's end. Random ids over each width's whole
  // range, rows whose length is not a multiple of per (a partial last word), and a row of one id.
  Rng rng(37);
  for (int32_t bits : {8, 16}) {
    for (int64_t L : {int64_t(1), int64_t(5), int64_t(20), int64_t(21), int64_t(23)}) {
      CAPTURE(bits);
      CAPTURE(L);
      const int64_t rows = 13, per = 32 / bits, W = (L + per - 1) / per;
      std::vector<int32_t> ids(rows * L);
      for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(int64_t(1) << bits));
      ids[5 % ids.size()] = (1 << bits) - 1;  // the largest id that fits
      std::vector<int32_t> expected(rows * W, 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < L; ++k)
          expected[r * W + k / per] = static_cast<int32_t>(static_cast<uint32_t>(expected[r * W + k / per]) |
                                                           uint32_t(ids[r * L + k]) << (bits * (k % per)));
      const Tensor packed = data::pack_ids(Tensor::from_vector(ids, {rows, L}), bits);
      CHECK(packed.shape() == Shape{rows, W});
      CHECK(packed.to_vector_i32() == expected);
      const data::IdRange range = data::id_range(ids.data(), static_cast<int64_t>(ids.size()));
      CHECK(range.low == *std::min_element(ids.begin(), ids.end()));
      CHECK(range.high == *std::max_element(ids.begin(), ids.end()));
    }
  }
  // A negative id, or one past the width, is named with its flat index (the first of several).
  CHECK_THROWS_WITH(data::pack_ids(Tensor::from_vector(std::vector<int32_t>{3, 4, -1, 70000}, {2, 2}), 16),
                    doctest::Contains("id -1 at flat index 2 does not fit 16 bits"));
  CHECK_THROWS_WITH(data::pack_ids(Tensor::from_vector(std::vector<int32_t>{3, 4, 9, 70000}, {2, 2}), 16),
                    doctest::Contains("id 70000 at flat index 3 does not fit 16 bits"));
  const std::vector<int32_t> one{-7};
  CHECK(data::id_range(one.data(), 1).low == -7);
  CHECK(data::id_range(one.data(), 1).high == -7);
}

TEST_CASE("graphormer (GV1 quirk): a graph's prediction depends on the batch's hop count") {
  // Missing hops are edge id 0, and GV1 never zeroes the padding row of the edge table (it is
  // padding_idx, so untrained, but keeps its random init; docs/graphormer.md#initialisation), so
  // every missing hop s < D adds EdgeEmb[0]·W_s to the
  // multi-hop sum: acetic
  // acid (longest SPD 2) alone gets D = 2, beside butane D = 3. With row 0 zeroed, it does not.
  const data::MoleculeDataset d = dataset_of({"CC(=O)O", "CCCC"});
  Graphormer model(tiny_config(false), 14);
  randomise(model, 15);
  const data::GraphBatch alone = collate(d, {0}, 5), beside = collate(d, {0, 1}, 5);
  REQUIRE(alone.edge_input.size(3) == 2);
  REQUIRE(beside.edge_input.size(3) == 3);
  const float a = model.forward(alone, false, nullptr).item();
  CHECK(std::fabs(model.forward(beside, false, nullptr).to_vector_f32()[0] - a) > 1e-4);
  const Tensor edge = model.parameters().find("edge_encoder.weight");  // (num_edges, H)
  std::vector<float> rows = edge.to_vector_f32();
  std::fill(rows.begin(), rows.begin() + edge.size(1), 0.0f);
  edge.copy_from(Tensor::from_vector(rows, edge.shape()));
  const float zeroed = model.forward(alone, false, nullptr).item();
  CHECK(model.forward(beside, false, nullptr).to_vector_f32()[0] == doctest::Approx(zeroed).epsilon(1e-5));
}

TEST_CASE("graphormer: renumbering the atoms of a molecule leaves its prediction unchanged") {
  // Three atom orders of acetanilide. Shortest paths between two atoms are unique outside the
  // ring and all-aromatic inside it, so the multi-hop edge input does not depend on which of
  // several equal paths the BFS keeps (with Kekulé ring bonds it could, in Graphormer too).
  const data::MoleculeDataset d = dataset_of({"CC(=O)Nc1ccccc1", "c1ccc(NC(C)=O)cc1", "O=C(C)Nc1ccccc1"});
  for (bool urpe : {false, true}) {
    CAPTURE(urpe);
    Graphormer model(tiny_config(urpe), 7);
    randomise(model, 8);
    const std::vector<float> p = model.forward(collate(d, {0, 1, 2}, 5), false, nullptr).to_vector_f32();
    CHECK(p[1] == doctest::Approx(p[0]).epsilon(1e-5));
    CHECK(p[2] == doctest::Approx(p[0]).epsilon(1e-5));
    // Each alone (no padding at all) gives the same number too.
    const float alone = model.forward(collate(d, {1}, 5), false, nullptr).item();
    CHECK(alone == doctest::Approx(p[0]).epsilon(1e-5));
  }
}

TEST_CASE("graphormer + URPE with C = 1 computes exactly the baseline") {
  const GraphormerConfig base_config = graphormer_preset("graphormer-tiny");
  GraphormerConfig urpe_config = base_config;
  urpe_config.urpe = true;
  const Graphormer base(base_config, 9), with_c(urpe_config, 9);  // same draws: C takes none
  const data::MoleculeDataset d = dataset_of({"CC(=O)O", "C1=CC=CC=C1F", "CO.N"});
  const data::GraphBatch batch = collate(d, {0, 1, 2}, 5);
  const Tensor a = base.forward(batch, false, nullptr), b = with_c.forward(batch, false, nullptr);
  CHECK(test::max_abs_diff(a, b) == 0.0);
  // A different C changes the predictions: the table is wired in.
  with_c.c_table().copy_from(Tensor::full(with_c.c_table().shape(), 1.5f));
  CHECK(test::max_abs_diff(a, with_c.forward(batch, false, nullptr)) > 1e-4);
}

TEST_CASE("graphormer: bias layout and URPE buckets") {
  GraphormerConfig c = tiny_config(true);
  Graphormer model(c, 10);
  randomise(model, 11);
  const data::MoleculeDataset d = dataset_of({"CC(=O)O", "N#C[NH3+]"});
  const data::GraphBatch batch = collate(d, {0, 1}, 5);
  const int64_t n1 = batch.x.size(1) + 1, H = c.heads;  // n = 4
  const std::vector<float> bias = model.attention_bias(batch).to_vector_f32();  // (B, H, n+1, n+1)
  const std::vector<float> t = model.parameters().find("graph_token_virtual_distance.weight").to_vector_f32();
  for (int64_t g = 0; g < 2; ++g)
    for (int64_t h = 0; h < H; ++h) {
      const float* b = &bias[(g * H + h) * n1 * n1];
      CHECK(b[0] == t[h]);                              // (0, 0): t once
      for (int64_t j = 1; j < n1; ++j) {
        const bool padded = g == 1 && j > 3;            // the second graph has 3 atoms
        if (padded) {
          CHECK(std::isinf(b[j]));
          CHECK(std::isinf(b[j * n1 + j]));
        } else {
          CHECK(b[j] == t[h]);                          // graph token → node
          CHECK(b[j * n1] == t[h]);                     // node → graph token
        }
      }
    }
  // C buckets: SPD clamped to max_spd = 3, then graph token → node, node → graph token, itself.
  const std::vector<int32_t> map = model.urpe_c_map(batch).to_vector_i32();  // (B, n+1, n+1)
  CHECK(map[0] == 6);
  CHECK(map[1] == 4);
  CHECK(map[1 * n1] == 5);
  CHECK(map[1 * n1 + 1] == 0);  // atom 0 itself
  CHECK(map[1 * n1 + 2] == 1);  // atoms 0–1 bonded
  CHECK(map[1 * n1 + 3] == 2);  // atoms 0–2 two bonds apart
}

TEST_CASE("graphormer: dropout is seeded and only active in training") {
  GraphormerConfig c = graphormer_preset("graphormer-tiny");
  Graphormer model(c, 12);
  const data::MoleculeDataset d = dataset_of({"CC(=O)O", "C1=CC=CC=C1F"});
  const data::GraphBatch batch = collate(d, {0, 1}, 5);
  Rng r1(77), r2(77);
  const Tensor a = model.forward(batch, true, &r1), b = model.forward(batch, true, &r2);
  CHECK(test::max_abs_diff(a, b) == 0.0);
  const Tensor eval = model.forward(batch, false, nullptr);
  CHECK(test::max_abs_diff(a, eval) > 0.0);
  CHECK_THROWS_WITH_AS(model.forward(batch, true, nullptr), doctest::Contains("random stream"), Error);
}

TEST_CASE("graphormer: parameter counts (formula, presets, paper Table 2)") {
  for (const std::string& name : graphormer_preset_names()) {
    CAPTURE(name);
    const GraphormerConfig c = graphormer_preset(name);
    const Graphormer model(c, 1);
    CHECK(model.parameters().count() == graphormer_parameter_count(c));
  }
  const int64_t slim = graphormer_parameter_count(graphormer_preset("graphormer-slim"));
  const int64_t slim_urpe = graphormer_parameter_count(graphormer_preset("graphormer-slim-urpe"));
  // Hand count of GV1 ZINC slim: embeddings 64·80 (atoms) + 2·64·80 (degrees) + 64·8 (edges)
  // + 40·8·8 (edge_dis) + 40·8 (spatial) + 80 + 8 = 18,840; 12 layers × 39,200; final LN 160 and
  // the 81-weight head.
  CHECK(slim == 489481);
  CHECK(slim_urpe - slim == 8 * (298 + 4));  // one (H, max_spd + 4) table shared by all layers: Table 2's 2,416
  std::printf("graphormer-slim: %lld parameters (paper Table 2: 489,321; difference %+lld)\n",
              static_cast<long long>(slim), static_cast<long long>(slim - 489321));
  std::printf("graphormer-slim-urpe: %lld parameters (paper: 491,737; difference %+lld); URPE adds %lld "
              "(paper: 2,416)\n",
              static_cast<long long>(slim_urpe), static_cast<long long>(slim_urpe - 491737),
              static_cast<long long>(slim_urpe - slim));
  CHECK_THROWS_WITH_AS(graphormer_preset("graphormer-huge"), doctest::Contains("graphormer-slim"), Error);
}

TEST_CASE("graphormer: bad batches are errors that name the tensor") {
  Graphormer model(tiny_config(false), 13);
  const data::MoleculeDataset d = dataset_of({"CC(=O)O"});
  data::GraphBatch batch = collate(d, {0}, 5);
  batch.spatial_pos = Tensor::zeros({1, 2, 2}, DType::i32);
  CHECK_THROWS_WITH_AS(model.forward(batch, false, nullptr), doctest::Contains("batch.spatial_pos"), Error);
  batch = collate(d, {0}, 5);
  batch.x = Tensor::full({1, 4}, 1.0f);
  CHECK_THROWS_WITH_AS(model.forward(batch, false, nullptr), doctest::Contains("batch.x"), Error);
  batch = collate(d, {0}, 5);
  batch.x = Tensor::from_vector(std::vector<int32_t>{2, 2, 16, 3}, {1, 4});  // num_atoms = 16
  CHECK_THROWS_WITH_AS(model.forward(batch, false, nullptr), doctest::Contains("num_atoms = 16"), Error);
  // The first id out of range is named, below the table as well as past it.
  for (const auto& [bad, where] : {std::pair<int32_t, int>{-1, 5}, {8, 7}, {9, 0}}) {
    batch = collate(d, {0}, 5);
    std::vector<int32_t> hops = batch.edge_input.to_vector_i32();
    hops[where] = bad;
    hops.back() = -3;  // a later one is not the one named
    batch.edge_input = Tensor::from_vector(hops, batch.edge_input.shape());
    const std::string message = "has id " + std::to_string(bad) + " at flat index " + std::to_string(where) +
                                ", outside the table of num_edges = 8 rows";
    CHECK_THROWS_WITH_AS(model.forward(batch, false, nullptr), doctest::Contains(message.c_str()), Error);
  }
}
