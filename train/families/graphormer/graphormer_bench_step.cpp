// The graphormer family's bench step (`urpe bench step --model graphormer`, the registry's
// make_bench_step): Graphormer + URPE at the bench configuration, Adam and one batch of synthetic
// molecules; app/bench/bench_step.cpp times it, tools/torch_bench.py is its PyTorch twin.
#include "data/molecule_dataset.h"
#include "models/graphormer.h"
#include "tensor/error.h"
#include "train/families/model_family.h"
#include "train/optim/optimizer.h"

namespace urpe {

namespace {

constexpr float kLearningRate = 1e-4f;  // Adam's, as the PyTorch twin's

std::vector<Tensor> parameter_tensors(const ParameterSet& params) { return params.tensors(); }

// The bench's synthetic molecules, a pure function of (count), so the PyTorch twin builds the
// same graphs (tools/torch_bench.py: bench_molecules): molecule g has N = 20 + (7·g mod 19) atoms
// of type (g + 3·i) mod 9, a chain of bonds i–(i+1) of type 1 + ((g + i) mod 3), and a ring
// closure i–(i+5) (single) at every i ≡ 0 (mod 6) with i + 5 < N; targets
// y_g = ((g mod 10) − 4.5) / 3.
std::vector<data::MoleculeGraph> bench_molecules(int64_t count) {
  std::vector<data::MoleculeGraph> graphs;
  for (int64_t g = 0; g < count; ++g) {
    const int32_t n = static_cast<int32_t>(20 + (7 * g) % 19);
    std::vector<int32_t> types(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) types[static_cast<size_t>(i)] = static_cast<int32_t>((g + 3 * i) % 9);
    std::vector<data::Bond> bonds;
    for (int32_t i = 0; i + 1 < n; ++i) {
      data::Bond b;
      b.begin = i;
      b.end = i + 1;
      b.type = static_cast<data::BondType>(1 + (g + i) % 3);
      bonds.push_back(b);
    }
    for (int32_t i = 0; i + 5 < n; i += 6) {
      data::Bond b;
      b.begin = i;
      b.end = i + 5;
      b.type = data::BondType::single;
      bonds.push_back(b);
    }
    graphs.push_back(data::molecule_graph_from_bonds(std::move(types), bonds));
  }
  return graphs;
}

std::vector<float> bench_molecule_targets(int64_t count) {
  std::vector<float> y(static_cast<size_t>(count));
  for (int64_t g = 0; g < count; ++g) y[static_cast<size_t>(g)] = static_cast<float>((g % 10) - 4.5) / 3.0f;
  return y;
}

// ---- Graphormer + URPE: one batch of synthetic molecules ----

class GraphormerStep final : public StepModel {
 public:
  GraphormerStep(const StepModelOptions& o, const Device& device)
      : config_(make_config()), model_(config_, 0, device), optimizer_(parameter_tensors(model_.parameters())) {
    const int64_t count = o.batch > 0 ? o.batch : 128;
    data::MoleculeDataset molecules;
    molecules.source = "bench_molecules";
    molecules.graphs = bench_molecules(count);
    molecules.targets = bench_molecule_targets(count);
    molecules.smiles.assign(static_cast<size_t>(count), "");
    std::vector<int64_t> rows(static_cast<size_t>(count));
    for (int64_t g = 0; g < count; ++g) rows[static_cast<size_t>(g)] = g;
    data::CollateOptions collate;
    collate.multi_hop_max_dist = static_cast<int32_t>(config_.multi_hop_max_dist);
    collate.maps = model_.map_options();  // the host maps made once, as the trainer's collator makes them ahead
    batch_ = data::collate_graphs(molecules, rows, collate);
    nodes_ = batch_.x.size(1);
    // The capture's static inputs (--set cuda_graph=on): the batch's inputs, checked on the host
    // once and uploaded once; every step reads the same buffers (one batch, as the eager step).
    const GraphormerInputs host = model_.inputs(batch_);
    std::vector<Tensor> on_device;
    for (const Tensor& t : host.tensors()) on_device.push_back(t.to(device));
    inputs_ = host.with_tensors(on_device);
  }

  std::string description() const override {
    return "graphormer: layers=" + std::to_string(config_.layers) + " d=" + std::to_string(config_.d_model) +
           " d_ffn=" + std::to_string(config_.d_ffn) + " heads=" + std::to_string(config_.heads) +
           " multi_hop=" + std::to_string(config_.multi_hop_max_dist) + " batch=" +
           std::to_string(batch_.x.size(0)) + " graphs of 20-38 atoms (n+1=" + std::to_string(nodes_ + 1) +
           ") urpe";
  }
  void next_batch() override {}  // one batch, every step (the twin does the same)
  void step() override {
    optimizer_.zero_grad();
    const Tensor loss = model_.loss(model_.forward(batch_, true, nullptr), batch_);
    loss.backward();
    optimizer_.step(kLearningRate);
  }
  // The same update split for a capture: the forward reads the uploaded inputs (no host check,
  // no upload), Adam's launch reads its scalars from the buffer host_part wrote.
  std::string not_captured_because() const override { return ""; }
  void host_part() override {
    optimizer_.zero_grad();
    optimizer_.prepare_captured_step(kLearningRate);
  }
  void device_part() override {
    model_.loss(model_.forward(inputs_, true, nullptr), inputs_).backward();
    optimizer_.record_captured_step();
  }

 private:
  static GraphormerConfig make_config() {
    GraphormerConfig c;  // embedding tables: urpe's defaults (GV1 ZINC)
    c.layers = 2;
    c.d_model = 128;
    c.d_ffn = 512;
    c.heads = 8;
    c.dropout = c.attention_dropout = c.input_dropout = 0.0f;
    c.multi_hop_max_dist = 5;
    c.urpe = true;
    return c;
  }

  GraphormerConfig config_;
  Graphormer model_;
  Adam optimizer_;
  data::GraphBatch batch_;
  GraphormerInputs inputs_;  // batch_'s inputs on the model's device
  int64_t nodes_ = 0;
};

}  // namespace

std::unique_ptr<StepModel> make_graphormer_bench_step(const StepModelOptions& options, const Device& device) {
  URPE_CHECK(options.attention == "materialized",
             "option --attention: graphormer has one attention path (the materialized core); --attention fused is "
             "the encoder's");
  URPE_CHECK(options.seq_len == 0,
             "option --seq-len: graphormer's molecules set their own sizes; use --batch for the number of graphs");
  return std::make_unique<GraphormerStep>(options, device);
}

}  // namespace urpe
