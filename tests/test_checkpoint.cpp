// What the autograd graph keeps alive for backward. Activation checkpointing
// (autograd/checkpoint.h) and the FFN that uses it (models/layers.cpp): the replayed backward gives
// the same bits as the recorded graph, a finite-difference check passes through it, and NoGrad
// records nothing. And the graph's edges (autograd/node.h): an input whose values no backward
// reads (a bias add's GEMM output, a permute's input) is freed after the forward.
#include <vector>

#include "autograd/checkpoint.h"
#include "autograd/node.h"
#include "models/layers.h"
#include "ops/activation.h"
#include "ops/dropout.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "tensor/host_allocator.h"
#include "test_util.h"

using namespace urpe;
using test::check_gradients;
using test::random_param;
using test::random_values;

namespace {

// gelu → dropout → linear, the FFN's second half, written as plain recorded ops.
Tensor act_drop_linear(const std::vector<Tensor>& in, bool drop, uint64_t seed) {
  Tensor a = gelu(in[0]);
  if (drop) a = dropout(a, 0.25f, seed, true);
  return linear(a, in[1], in[2]);
}

struct Grads {
  std::vector<float> out, h, w, b;
};

Grads run(bool checkpointed, bool drop) {
  // Odd sizes: (2, 7, 19) hidden activations into 5 outputs.
  Tensor h = random_param({2, 7, 19}, 11), w = random_param({5, 19}, 12), b = random_param({5}, 13);
  const uint64_t seed = 77;
  auto fn = [drop, seed](const std::vector<Tensor>& in) { return act_drop_linear(in, drop, seed); };
  const Tensor out = checkpointed ? autograd::checkpoint("test_checkpoint", fn, {h, w, b}) : fn({h, w, b});
  out.backward(random_values({2, 7, 5}, 14));
  return {out.to_vector_f32(), h.grad().to_vector_f32(), w.grad().to_vector_f32(), b.grad().to_vector_f32()};
}

}  // namespace

TEST_CASE("checkpoint: output and every gradient bit-identical to the recorded graph, with and without dropout") {
  for (bool drop : {false, true}) {
    INFO("dropout " << drop);
    const Grads plain = run(false, drop), replayed = run(true, drop);
    CHECK(plain.out == replayed.out);
    CHECK(plain.h == replayed.h);
    CHECK(plain.w == replayed.w);
    CHECK(plain.b == replayed.b);
    // Not all zeros: the comparison could fail.
    double norm = 0;
    for (float g : replayed.h) norm += static_cast<double>(g) * g;
    CHECK(norm > 0);
  }
}

TEST_CASE("checkpoint: finite-difference gradients of every input") {
  Tensor h = random_param({3, 6}, 21), w = random_param({4, 6}, 22), b = random_param({4}, 23);
  check_gradients(
      [](const std::vector<Tensor>& v) {
        return autograd::checkpoint(
            "test_checkpoint", [](const std::vector<Tensor>& in) { return act_drop_linear(in, false, 0); }, v);
      },
      {h, w, b});
}

TEST_CASE("checkpoint: one node in the graph; under NoGrad nothing is recorded and the values agree") {
  Tensor h = random_param({4, 9}, 31), w = random_param({3, 9}, 32), b = random_param({3}, 33);
  auto fn = [](const std::vector<Tensor>& in) { return act_drop_linear(in, false, 0); };
  const Tensor out = autograd::checkpoint("test_checkpoint", fn, {h, w, b});
  REQUIRE(out.grad_fn() != nullptr);
  CHECK(out.grad_fn()->op == "test_checkpoint");
  CHECK(out.grad_fn()->inputs.size() == 3);  // h, w, b: gelu(h) is not kept
  autograd::NoGrad no_grad;
  const Tensor plain = autograd::checkpoint("test_checkpoint", fn, {h, w, b});
  CHECK(plain.grad_fn() == nullptr);
  CHECK(plain.to_vector_f32() == out.to_vector_f32());
}

TEST_CASE("FFN: the checkpointed activation keeps one hidden-sized tensor for backward, not two") {
  // The FFN's forward output alive with its graph holds: fc1's output h (kept for the replay)
  // and the output; gelu(h) is gone. Recorded plainly, gelu(h) would add another hidden-sized
  // (4, 33, 64) tensor of 33792 bytes.
  ParameterSet params;
  Rng rng(5);
  InitSpec init;
  init.rng = &rng;
  init.std = 0.1f;
  const FeedForward ffn(params, "ffn", 16, 64, init, true);
  const Tensor x = random_param({4, 33, 16}, 41);
  const size_t before = host::in_use_bytes();
  Tensor out = ffn.forward(x, 0.0f, nullptr, true);
  const size_t kept = host::in_use_bytes() - before;
  const size_t hidden_bytes = 4 * 33 * 64 * sizeof(float), out_bytes = 4 * 33 * 16 * sizeof(float);
  CHECK(kept >= hidden_bytes + out_bytes);
  CHECK(kept < 2 * hidden_bytes + out_bytes);
  out.backward(random_values({4, 33, 16}, 42));
  CHECK(x.grad().defined());
  CHECK(ffn.fc2.weight.grad().defined());
  CHECK(ffn.fc1.bias.grad().defined());
}

TEST_CASE("graph edges: a bias add's GEMM output and a permute's input are not kept for backward") {
  const Tensor x = random_param({64, 32}, 51), w = random_param({48, 32}, 52), b = random_param({48}, 53);
  const size_t bytes = 64 * 48 * sizeof(float);  // one (64, 48) activation
  const size_t before = host::in_use_bytes();
  // linear = matmul, then add(bias): add's backward reads no values, so x·Wᵀ goes once y exists.
  Tensor y = linear(x, w, b);
  CHECK(host::in_use_bytes() - before == bytes);
  // permute copies; its backward needs the inverse order only, so y's data goes with y itself.
  Tensor z = permute(y, {1, 0});
  const size_t with_z = host::in_use_bytes() - before;
  CHECK(with_z == 2 * bytes);  // y is still named here
  y = Tensor();
  CHECK(host::in_use_bytes() - before == bytes);  // z alone: the graph keeps no copy of y
  // Gradients still reach every leaf, with the values of the formulas: ∂b = Σ_rows g.
  const Tensor g = random_values({48, 64}, 54);
  z.backward(g);
  const std::vector<float> gb = b.grad().to_vector_f32(), gv = g.to_vector_f32();
  for (int64_t j = 0; j < 48; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < 64; ++i) sum += gv[j * 64 + i];
    CHECK(gb[j] == doctest::Approx(sum).epsilon(1e-5));
  }
  CHECK(x.grad().defined());
  CHECK(w.grad().defined());
}
