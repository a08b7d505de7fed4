// The three families' bench steps (see step_models.h): each builds its model at the bench
// configuration, an Adam optimizer over its parameters and its data, and runs one step.
#include "bench/step_models.h"

#include "data/molecule_dataset.h"
#include "data/synthetic.h"
#include "models/attention.h"
#include "models/encoder.h"
#include "models/graphormer.h"
#include "models/transformer_xl.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "tensor/error.h"
#include "train/optim/optimizer.h"

namespace urpe::bench {

namespace {

constexpr float kLearningRate = 1e-4f;

std::vector<Tensor> parameter_tensors(const ParameterSet& params) { return params.tensors(); }

// ---- encoder: the synthetic-tasks bench ----

class EncoderStep final : public StepModel {
 public:
  EncoderStep(const StepModelOptions& o, const Device& device)
      : config_(make_config(o)),
        batch_(o.batch > 0 ? o.batch : 32),
        model_(config_, 0, device),
        optimizer_(parameter_tensors(model_.parameters())),
        task_(SyntheticKind::position_identification, config_.seq_len, config_.vocab),
        data_rng_(1),
        device_(device) {}

  std::string description() const override {
    return "encoder: n=" + std::to_string(config_.seq_len) + " d=" + std::to_string(config_.d_model) +
           " heads=" + std::to_string(config_.heads) + " layers=" + std::to_string(config_.layers) +
           " d_ff=" + std::to_string(config_.d_ff) + " batch=" + std::to_string(batch_) +
           " pe=urpe attention=" + attention_path_name(config_.attention);
  }
  void next_batch() override { data_ = task_.sample(batch_, data_rng_, device_); }
  void step() override {
    optimizer_.zero_grad();
    // The head fused with the loss, as training runs position identification: the (B·n, n) logits
    // are never whole (ops/linear_cross_entropy.h).
    const Tensor loss = model_.classify_loss(model_.encode(data_.tokens, true, nullptr), data_.targets, -100);
    loss.backward();
    optimizer_.step(kLearningRate);
  }

 private:
  static EncoderConfig make_config(const StepModelOptions& o) {
    EncoderConfig c;
    c.seq_len = o.seq_len > 0 ? o.seq_len : 128;
    c.vocab = 100;
    c.layers = 2;
    c.d_model = 128;
    c.heads = 4;
    c.d_ff = 512;
    c.num_classes = c.seq_len;  // position identification: one class per position
    c.pe = PositionalKind::urpe;
    c.init_std = 0.02f;
    c.attention = parse_attention_path(o.attention);
    return c;
  }

  EncoderConfig config_;
  int64_t batch_;
  TransformerEncoder model_;
  Adam optimizer_;
  SyntheticTask task_;
  Rng data_rng_;
  Device device_;
  SyntheticBatch data_;
};

// ---- Transformer-XL + URPE: a language-model segment with memory ----

class TransformerXLStep final : public StepModel {
 public:
  TransformerXLStep(const StepModelOptions& o, const Device& device)
      : config_(make_config(o)),
        batch_(o.batch > 0 ? o.batch : 16),
        model_(config_, 0, device),
        optimizer_(parameter_tensors(model_.parameters())),
        data_rng_(1),
        device_(device) {
    // The memory of a long-running model: mem_len rows per layer input (zeros), so the first
    // step already has the steady state's shapes (klen = mem_len + tgt_len).
    for (int64_t l = 0; l <= config_.layers; ++l)
      memory_.push_back(Tensor::zeros({batch_, config_.mem_len, config_.d_model}, DType::f32, device));
  }

  std::string description() const override {
    return "txl: vocab=" + std::to_string(config_.vocab) + " layers=" + std::to_string(config_.layers) +
           " d=" + std::to_string(config_.d_model) + " heads=" + std::to_string(config_.heads) +
           " d_head=" + std::to_string(config_.d_head) + " d_inner=" + std::to_string(config_.d_inner) +
           " tgt_len=" + std::to_string(config_.tgt_len) + " mem_len=" + std::to_string(config_.mem_len) +
           " batch=" + std::to_string(batch_) + " urpe, full softmax";
  }
  void next_batch() override {
    const Shape shape{config_.tgt_len, batch_};  // time-major (qlen, B), as the model takes them
    tokens_ = random_ids(shape);
    targets_ = random_ids(shape);
  }
  void step() override {
    optimizer_.zero_grad();
    TxlStep out = model_.forward(tokens_, targets_, memory_, true, nullptr);
    out.loss.backward();
    optimizer_.step(kLearningRate);
    memory_ = std::move(out.mems);
  }

 private:
  static TransformerXLConfig make_config(const StepModelOptions& o) {
    TransformerXLConfig c;
    c.vocab = 1000;
    c.layers = 2;
    c.d_model = 128;
    c.heads = 4;
    c.d_head = 32;
    c.d_inner = 512;
    c.dropout = 0.0f;
    c.dropatt = 0.0f;
    c.tgt_len = o.seq_len > 0 ? o.seq_len : 128;
    c.mem_len = c.tgt_len;
    c.urpe = true;
    c.init_std = 0.02f;
    return c;
  }
  Tensor random_ids(const Shape& shape) {
    std::vector<int32_t> ids(static_cast<size_t>(shape[0] * shape[1]));
    for (int32_t& id : ids) id = static_cast<int32_t>(data_rng_.below(config_.vocab));
    return Tensor::from_vector(ids, shape).to(device_);
  }

  TransformerXLConfig config_;
  int64_t batch_;
  TransformerXL model_;
  Adam optimizer_;
  Rng data_rng_;
  Device device_;
  TxlMemory memory_;
  Tensor tokens_, targets_;
};

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
    batch_ = data::collate_graphs(molecules, rows, collate);
    nodes_ = batch_.x.size(1);
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
  int64_t nodes_ = 0;
};

}  // namespace

namespace {

// The step model of each model family (`--model NAME`), and the options it takes.
struct StepModelEntry {
  std::string name;
  bool fused_attention;  // --attention fused (else only the materialized core)
  bool seq_len;          // --seq-len (Graphormer's molecules set their own sizes)
  std::unique_ptr<StepModel> (*make)(const StepModelOptions& options, const Device& device);
};

template <class Step>
std::unique_ptr<StepModel> make_step(const StepModelOptions& options, const Device& device) {
  return std::make_unique<Step>(options, device);
}

const std::vector<StepModelEntry>& step_model_table() {
  static const std::vector<StepModelEntry> table = {
      {"encoder", true, true, make_step<EncoderStep>},
      {"txl", false, true, make_step<TransformerXLStep>},
      {"graphormer", false, false, make_step<GraphormerStep>},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& step_model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const StepModelEntry& entry : step_model_table()) list.push_back(entry.name);
    return list;
  }();
  return names;
}

std::unique_ptr<StepModel> make_step_model(const StepModelOptions& o, const Device& device) {
  for (const StepModelEntry& entry : step_model_table()) {
    if (entry.name != o.model) continue;
    URPE_CHECK(entry.fused_attention || o.attention == "materialized",
               "option --attention: " << o.model << " has one attention path (the materialized core); "
                                      << "--attention fused is the encoder's");
    URPE_CHECK(entry.seq_len || o.seq_len == 0, "option --seq-len: " << o.model << "'s molecules set their own sizes; "
                                                                     << "use --batch for the number of graphs");
    return entry.make(o, device);
  }
  URPE_FAIL("option --model: expected encoder, txl or graphormer, got '" << o.model << "'");
}

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

}  // namespace urpe::bench
