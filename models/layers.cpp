// Building blocks: parameter creation and forward passes composed from ops.
#include "models/layers.h"

#include "ops/activation.h"
#include "ops/dropout.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/matmul.h"

namespace urpe {

static Tensor draw_normal(const Shape& shape, const InitSpec& init) {
  URPE_CHECK(init.rng != nullptr, "layer initialisation needs a random stream");
  return Tensor::normal(shape, 0.0f, init.std, *init.rng, init.device);
}

Linear::Linear(ParameterSet& params, const std::string& name, int64_t in, int64_t out,
               const InitSpec& init, bool with_bias) {
  weight = params.add(name + ".weight", draw_normal({out, in}, init));
  dtype = init.linear_dtype;
  if (with_bias) bias = params.add(name + ".bias", Tensor::zeros({out}, DType::f32, init.device));
}

Tensor linear_in(DType dtype, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return linear(x, weight, bias, dtype);
}

Tensor Linear::forward(const Tensor& x) const { return linear_in(dtype, x, weight, bias); }

Tensor Linear::forward(const Tensor& x, DType out, const Tensor& x_rounded) const {
  return linear(x, weight, bias, dtype, out, x_rounded);
}

EmbeddingTable::EmbeddingTable(ParameterSet& params, const std::string& name, int64_t count,
                               int64_t dim, const InitSpec& init) {
  table = params.add(name + ".weight", draw_normal({count, dim}, init));
}

Tensor EmbeddingTable::forward(const Tensor& ids) const { return embedding(table, ids); }

LayerNorm::LayerNorm(ParameterSet& params, const std::string& name, int64_t dim, const Device& device) {
  gamma = params.add(name + ".weight", Tensor::ones({dim}, device));
  beta = params.add(name + ".bias", Tensor::zeros({dim}, DType::f32, device));
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, gamma, beta, eps); }

FeedForward::FeedForward(ParameterSet& params, const std::string& name, int64_t dim, int64_t hidden,
                         const InitSpec& init, bool gelu_activation)
    : fc1(params, name + ".fc1", dim, hidden, init),
      fc2(params, name + ".fc2", hidden, dim, init),
      use_gelu(gelu_activation) {}

Tensor FeedForward::forward(const Tensor& x, float activation_dropout, Rng* dropout_rng,
                            bool training) const {
  Tensor h = fc1.forward(x, fc1.dtype);  // bf16 under precision=bf16, else f32
  h = use_gelu ? gelu(h) : relu(h);
  if (training && activation_dropout > 0.0f)
    h = dropout(h, activation_dropout, take_dropout_seed(*dropout_rng), true);
  return fc2.forward(h);
}

}  // namespace urpe
