// The encoder family's bench step (`urpe bench step --model encoder`, the registry's
// make_bench_step): the synthetic-tasks model at the bench configuration, Adam and
// position-identification data; app/bench/bench_step.cpp times it, tools/torch_bench.py is its
// PyTorch twin.
#include "data/synthetic.h"
#include "models/attention.h"
#include "models/encoder.h"
#include "train/families/model_family.h"
#include "train/optim/optimizer.h"

namespace urpe {

namespace {

constexpr float kLearningRate = 1e-4f;  // Adam's, as the PyTorch twin's

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
  // Sampled on the device, then copied into the step's buffers (the same addresses every step, as
  // a captured step needs; a device-to-device copy, before the clock starts).
  void next_batch() override {
    const SyntheticBatch fresh = task_.sample(batch_, data_rng_, device_);
    if (!data_.tokens.defined()) {
      data_.tokens = Tensor::empty(fresh.tokens.shape(), fresh.tokens.dtype(), device_);
      data_.targets = Tensor::empty(fresh.targets.shape(), fresh.targets.dtype(), device_);
    }
    data_.tokens.copy_from(fresh.tokens);
    data_.targets.copy_from(fresh.targets);
  }
  void step() override {
    optimizer_.zero_grad();
    loss().backward();
    optimizer_.step(kLearningRate);
  }
  std::string not_captured_because() const override { return ""; }
  void host_part() override {
    optimizer_.zero_grad();
    optimizer_.prepare_captured_step(kLearningRate);
  }
  void device_part() override {
    loss().backward();
    optimizer_.record_captured_step();
  }

 private:
  // The head fused with the loss, as training runs position identification: the (B·n, n) logits
  // are never whole (ops/linear_cross_entropy.h).
  Tensor loss() const {
    return model_.classify_loss(model_.encode(data_.tokens, true, nullptr), data_.targets, -100);
  }
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

}  // namespace

std::unique_ptr<StepModel> make_encoder_bench_step(const StepModelOptions& options, const Device& device) {
  return std::make_unique<EncoderStep>(options, device);
}

}  // namespace urpe
