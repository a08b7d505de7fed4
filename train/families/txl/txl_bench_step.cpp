// The txl family's bench step (`urpe bench step --model txl`, the registry's make_bench_step): a
// Transformer-XL + URPE language-model segment with its memory at the bench configuration, Adam
// and random tokens; app/bench/bench_step.cpp times it, tools/torch_bench.py is its PyTorch twin.
#include "models/transformer_xl.h"
#include "tensor/error.h"
#include "train/families/model_family.h"
#include "train/optim/optimizer.h"

namespace urpe {

namespace {

constexpr float kLearningRate = 1e-4f;  // Adam's, as the PyTorch twin's

std::vector<Tensor> parameter_tensors(const ParameterSet& params) { return params.tensors(); }

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

}  // namespace

std::unique_ptr<StepModel> make_txl_bench_step(const StepModelOptions& options, const Device& device) {
  URPE_CHECK(options.attention == "materialized",
             "option --attention: txl has one attention path (the materialized core); --attention fused is the "
             "encoder's");
  return std::make_unique<TransformerXLStep>(options, device);
}

}  // namespace urpe
