// The small building blocks of every model here: linear, embedding table, layer norm, and the
// position-wise feed-forward block. Each owns its parameters (registered in a ParameterSet) and
// has a forward() built from differentiable ops, so backward comes from autograd.
#pragma once
#include <string>

#include "models/parameters.h"
#include "tensor/rng.h"

namespace urpe {

// How a layer draws its initial weights: N(0, std) for weights, zeros for biases; and the dtype
// its linear layers multiply in (the run's `precision`: bf16, or f32 for fp32 and tf32).
struct InitSpec {
  float std = 0.02f;
  Rng* rng = nullptr;
  Device device;
  DType linear_dtype = DType::f32;
};

// y = x·Wᵀ + b multiplied in `dtype` (autocast style: W stays the f32 parameter, its bf16 copy
// lives for this forward and backward only; the bias and y stay f32; the gradients of x and W are
// the GEMMs' FP32 sums, never rounded to bf16: linear's multiply_in, ops/matmul.h).
// f32: linear(x, W, b) itself.
Tensor linear_in(DType dtype, const Tensor& x, const Tensor& weight, const Tensor& bias);

struct Linear {
  Tensor weight;  // (out, in)
  Tensor bias;    // (out,) or undefined
  DType dtype = DType::f32;  // what the GEMM multiplies in (InitSpec::linear_dtype)
  Linear() = default;
  Linear(ParameterSet& params, const std::string& name, int64_t in, int64_t out, const InitSpec& init,
         bool with_bias = true);
  Tensor forward(const Tensor& x) const;  // (..., in) → (..., out), f32
  // The same with the output in `out`: bf16 where the consumer reads bf16 (needs dtype = bf16;
  // f32 is forward(x)). x_rounded: bf16(x) shared by several layers reading x (ops/matmul.h).
  Tensor forward(const Tensor& x, DType out, const Tensor& x_rounded = Tensor()) const;
};

struct EmbeddingTable {
  Tensor table;  // (count, dim)
  EmbeddingTable() = default;
  EmbeddingTable(ParameterSet& params, const std::string& name, int64_t count, int64_t dim,
                 const InitSpec& init);
  Tensor forward(const Tensor& ids) const;  // i32 (...) → (..., dim)
};

struct LayerNorm {
  Tensor gamma, beta;  // (dim,), initialised to 1 and 0
  float eps = 1e-5f;
  LayerNorm() = default;
  LayerNorm(ParameterSet& params, const std::string& name, int64_t dim, const Device& device);
  Tensor forward(const Tensor& x) const;
};

// y = W2·act(W1·x + b1) + b2, act = GELU (RoBERTa, Graphormer) or ReLU (Transformer-XL).
// Under precision=bf16 the hidden activation is bf16 from W1's GEMM to W2's (linear → act →
// dropout → linear, each computing in FP32): the (…, hidden) tensors the block saves for backward
// take half the bytes, and W2 reads it without a rounding pass. y is f32: the residual stream
// and layer norm stay FP32 (docs/cuda.md#mixed-precision).
struct FeedForward {
  Linear fc1, fc2;
  bool use_gelu = true;
  FeedForward() = default;
  FeedForward(ParameterSet& params, const std::string& name, int64_t dim, int64_t hidden,
              const InitSpec& init, bool use_gelu);
  Tensor forward(const Tensor& x, float activation_dropout, Rng* dropout_rng, bool training) const;
};

}  // namespace urpe
