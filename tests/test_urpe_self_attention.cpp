// The fused self-attention block (ops/urpe_self_attention.h) against its reference, the
// composition of the separate ops (linear, permute, matmul, urpe_attention): the output and every
// gradient (x, the six projection weights, both tables) under each map and mask variant; finite
// differences; the same bits for any thread count; no (B, H, N, N) tensor but P kept; readable
// errors for bad arguments.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/urpe_self_attention.h"
#include "tensor/host_allocator.h"
#include "test_util.h"

using namespace urpe;
using urpe::test::check_gradients;
using urpe::test::max_abs_diff;
using urpe::test::random_param;
using urpe::test::random_values;

namespace {

// x (B, N, d), the weights (D, d) / (D,), the tables (H, K), the logit bias (B, H, N, N): all
// requiring grad. C random around 1.
struct Block {
  int64_t batch, n, d, heads, D;
  Tensor x;
  SelfAttentionWeights w;
  Tensor bias_table, c_table, logit_bias;
  UrpeAttentionParams params;
  std::vector<Tensor> inputs() const {
    return {x, w.wq, w.wk, w.wv, w.bq, w.bk, w.bv, bias_table, c_table, logit_bias};
  }
};

// graphormer: Graphormer's use, a dense logit bias with −∞ on padded keys (and one far pair),
// C over a per-batch map, key padding, no bias table.
enum class Variant { toeplitz, per_batch_padded_causal, no_tables, exp_norm, graphormer };

Block make_block(int64_t batch, int64_t n, int64_t d, int64_t heads, int64_t D, Variant variant, uint64_t seed) {
  Block b{batch, n, d, heads, D, {}, {}, {}, {}, {}, {}};
  b.x = random_param({batch, n, d}, seed);
  b.w.wq = random_param({D, d}, seed + 1, -0.5f, 0.5f);
  b.w.wk = random_param({D, d}, seed + 2, -0.5f, 0.5f);
  b.w.wv = random_param({D, d}, seed + 3, -0.5f, 0.5f);
  b.w.bq = random_param({D}, seed + 4);
  b.w.bk = random_param({D}, seed + 5);
  b.w.bv = random_param({D}, seed + 6);
  b.params.scale = 1.0f / std::sqrt(static_cast<float>(D / heads));
  if (variant == Variant::no_tables) return b;
  if (variant == Variant::graphormer) {
    std::vector<float> logits = random_values({batch, heads, n, n}, seed + 9).to_vector_f32();
    std::vector<int32_t> padding(batch * n, 0), c_map(batch * n * n);
    for (int64_t j = n - 2; j < n; ++j) padding[(batch - 1) * n + j] = 1;
    for (int64_t k = 0; k < batch * heads * n * n; ++k) {
      const int64_t j = k % n, bb = k / (heads * n * n);
      if (padding[bb * n + j] != 0) logits[k] = -INFINITY;  // as the collated attn_bias
    }
    logits[n + 2] = -INFINITY;  // a far pair (SPD beyond spatial_pos_max) of item 0, head 0
    for (int64_t k = 0; k < batch * n * n; ++k) c_map[k] = static_cast<int32_t>((k * 3 + 1) % 5);
    b.logit_bias = Tensor::from_vector(logits, {batch, heads, n, n});
    b.logit_bias.set_requires_grad(true);
    b.c_table = random_param({heads, 5}, seed + 8, 0.3f, 1.7f);
    b.params.c_table = b.c_table;
    b.params.c_map = Tensor::from_vector(c_map, {batch, n, n});
    b.params.key_padding = Tensor::from_vector(padding, {batch, n});
    return b;
  }
  b.bias_table = random_param({heads, 2 * n - 1}, seed + 7);
  b.c_table = random_param({heads, 2 * n - 1}, seed + 8, 0.3f, 1.7f);
  b.params.bias_table = b.bias_table;
  b.params.c_table = b.c_table;
  b.params.bias_map = b.params.c_map = toeplitz_map(n, n);
  if (variant == Variant::exp_norm) b.params.norm = AttentionNorm::exp;
  if (variant == Variant::per_batch_padded_causal) {
    // Graphormer-like: a different map per batch item (values from its own hash), C on another
    // map, the last keys of item 1 padded, and a causal mask with an offset.
    std::vector<int32_t> bias_map(batch * n * n), c_map(batch * n * n);
    for (int64_t k = 0; k < batch * n * n; ++k) {
      bias_map[k] = static_cast<int32_t>((k * 7 + 3) % (2 * n - 1));
      c_map[k] = static_cast<int32_t>((k * 5 + 1) % (2 * n - 1));
    }
    b.params.bias_map = Tensor::from_vector(bias_map, {batch, n, n});
    b.params.c_map = Tensor::from_vector(c_map, {batch, n, n});
    std::vector<int32_t> padding(batch * n, 0);
    for (int64_t j = n - 2; j < n; ++j) padding[(batch - 1) * n + j] = 1;
    b.params.key_padding = Tensor::from_vector(padding, {batch, n});
    b.params.causal = true;
    b.params.causal_offset = 1;
  }
  return b;
}

// inputs in Block::inputs() order → the block's output, fused or composed.
autograd::TensorFn block_fn(const Block& b, bool fused) {
  return [b, fused](const std::vector<Tensor>& v) {
    UrpeAttentionParams p = b.params;
    p.bias_table = v[7];
    p.c_table = v[8];
    const SelfAttentionWeights w{v[1], v[2], v[3], v[4], v[5], v[6]};
    return fused ? urpe_self_attention(v[0], w, b.heads, p, v[9])
                 : urpe_self_attention_reference(v[0], w, b.heads, p, v[9]);
  };
}

// Output and gradients of Σ out ⊙ G for a fixed random G.
std::vector<Tensor> run_with_grads(const Block& b, bool fused) {
  std::vector<Tensor> inputs = b.inputs();
  for (Tensor& t : inputs)
    if (t.defined()) t.zero_grad();
  const Tensor out = block_fn(b, fused)(inputs);
  out.backward(random_values(out.shape(), 999));
  std::vector<Tensor> results{out.detach().clone()};
  for (const Tensor& t : inputs)
    if (t.defined()) results.push_back(t.grad().clone());
  return results;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (float v : t.to_vector_f32()) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

void check_against_reference(const Block& b) {
  const std::vector<Tensor> fused = run_with_grads(b, true), reference = run_with_grads(b, false);
  REQUIRE(fused.size() == reference.size());
  for (size_t k = 0; k < fused.size(); ++k) {
    CAPTURE(k);  // output, x, wq, wk, wv, bq, bk, bv, then the defined ones of bias_table, c_table, logit_bias
    CHECK(fused[k].shape() == reference[k].shape());
    // Both sides are float GEMMs and the same core; they differ only in how the products are
    // blocked (one packed GEMM vs three, per-head pointers vs copies): float rounding.
    CHECK(max_abs_diff(fused[k], reference[k]) <= 2e-5 * (1.0 + max_abs(reference[k])));
  }
}

}  // namespace

TEST_CASE("fused self-attention equals the composed ops: output and every gradient") {
  SUBCASE("Toeplitz B and C") { check_against_reference(make_block(3, 9, 8, 2, 8, Variant::toeplitz, 10)); }
  SUBCASE("per-batch maps, key padding, causal with an offset") {
    check_against_reference(make_block(2, 7, 6, 3, 9, Variant::per_batch_padded_causal, 20));
  }
  SUBCASE("no tables: plain softmax attention") {
    check_against_reference(make_block(2, 5, 8, 4, 8, Variant::no_tables, 30));
  }
  SUBCASE("exp instead of softmax") { check_against_reference(make_block(2, 6, 4, 2, 4, Variant::exp_norm, 40)); }
  SUBCASE("Graphormer's: a dense logit bias with -inf keys, C on a per-batch map, key padding") {
    check_against_reference(make_block(3, 8, 8, 2, 8, Variant::graphormer, 45));
  }
  SUBCASE("the bench's head size, N = 128: parts of the projection GEMM and the per-head products") {
    check_against_reference(make_block(2, 128, 32, 2, 64, Variant::toeplitz, 50));
  }
}

TEST_CASE("fused self-attention: finite-difference gradients") {
  for (Variant variant : {Variant::toeplitz, Variant::per_batch_padded_causal, Variant::graphormer}) {
    const Block b = make_block(2, 5, 4, 2, 4, variant, 60);
    autograd::GradcheckOptions options;
    options.eps = 1e-3f;
    options.atol = 3e-3f;
    options.rtol = 1e-2f;
    // gradcheck takes the defined inputs; the function puts them back in their places
    const std::vector<Tensor> all = b.inputs();
    std::vector<Tensor> defined;
    for (const Tensor& t : all)
      if (t.defined()) defined.push_back(t);
    const autograd::TensorFn fused = block_fn(b, true);
    check_gradients(
        [all, fused](const std::vector<Tensor>& v) {
          std::vector<Tensor> full = all;
          size_t next = 0;
          for (Tensor& t : full)
            if (t.defined()) t = v[next++];
          return fused(full);
        },
        defined, options);
  }
}

#if defined(_OPENMP)
TEST_CASE("fused self-attention gives the same bits for any thread count") {
  const Block b = make_block(3, 37, 8, 2, 8, Variant::per_batch_padded_causal, 70);
  test::check_same_bits_with_1_and_3_threads([&] {
    std::vector<std::vector<float>> out;
    for (const Tensor& t : run_with_grads(b, true)) out.push_back(t.to_vector_f32());
    return out;
  });
}
#endif

TEST_CASE("fused self-attention keeps P for the backward and no other (B, H, N, N) tensor") {
  const int64_t batch = 2, n = 64, heads = 2;
  const Block b = make_block(batch, n, 16, heads, 16, Variant::toeplitz, 80);
  const size_t square = static_cast<size_t>(batch * heads * n * n) * sizeof(float);
  const std::vector<Tensor> inputs = b.inputs();
  for (bool fused : {true, false}) {
    CAPTURE(fused);
    host::empty_cache();
    const size_t before = host::in_use_bytes();
    const Tensor out = block_fn(b, fused)(inputs);
    const size_t held = host::in_use_bytes() - before - static_cast<size_t>(out.numel()) * sizeof(float);
    // the composed ops keep the scores' inputs, P and A (two squares and more); the block keeps P
    // and [Q|K|V] (3·B·N·D floats, far below a square here)
    if (fused) CHECK(held < square + square / 2);
    else CHECK(held >= 2 * square);
  }
}

TEST_CASE("fused self-attention: bad arguments give one error naming the argument") {
  Block b = make_block(2, 5, 4, 2, 4, Variant::toeplitz, 90);
  auto message = [&](const SelfAttentionWeights& w, int64_t heads) {
    try {
      urpe_self_attention(b.x, w, heads, b.params);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  SelfAttentionWeights w = b.w;
  w.wk = random_values({4, 3}, 1);
  const std::string wrong_shape = message(w, 2);
  CHECK(wrong_shape.find("urpe_self_attention") != std::string::npos);
  CHECK(wrong_shape.find("wk") != std::string::npos);
  CHECK(message(b.w, 3).find("heads (3) must divide") != std::string::npos);
  w = b.w;
  w.bv = Tensor();
  CHECK(message(w, 2).find("bv is missing") != std::string::npos);
  try {
    urpe_self_attention(b.x, b.w, 2, b.params, random_values({2, 2, 5, 4}, 3));
    FAIL("a logit bias of the wrong shape was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("logit_bias") != std::string::npos);
  }
}
