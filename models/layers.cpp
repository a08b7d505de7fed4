// Building blocks: parameter creation and forward passes composed from ops.
#include "models/layers.h"

#include "autograd/checkpoint.h"
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
  if (with_bias) bias = params.add(name + ".bias", Tensor::zeros({out}, DType::f32, init.device));
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

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

// fc2(drop(act(fc1(x)))). The activation, its dropout and fc2 run under one checkpoint: the
// graph keeps fc1's output h alone (not also act(h) and its dropped copy), and backward rebuilds
// act(h) from h (autograd/checkpoint.h; the gradients are bit-identical). The dropout seed is
// drawn here, once, so the replay draws the same mask.
Tensor FeedForward::forward(const Tensor& x, float activation_dropout, Rng* dropout_rng,
                            bool training) const {
  const Tensor h = fc1.forward(x);  // (..., hidden)
  const bool drop = training && activation_dropout > 0.0f;
  const uint64_t seed = drop ? dropout_rng->next_seed() : 0;
  const bool gelu_activation = use_gelu;
  auto act_then_fc2 = [gelu_activation, drop, activation_dropout, seed](const std::vector<Tensor>& in) {
    Tensor a = gelu_activation ? gelu(in[0]) : relu(in[0]);
    if (drop) a = dropout(a, activation_dropout, seed, true);
    return linear(a, in[1], in[2]);
  };
  return autograd::checkpoint("ffn_activation_fc2", act_then_fc2, {h, fc2.weight, fc2.bias});
}

}  // namespace urpe
