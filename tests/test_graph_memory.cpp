// What the autograd graph keeps alive for backward (autograd/node.h): a node holds data-less
// stand-ins for its inputs, so an input whose values no backward reads (a residual sum's operands,
// a permute's input) is freed after the forward, and gradients still reach every leaf. And what a
// whole training step holds: with the fused attention, nothing that grows with n².
#include <string>
#include <vector>

#include "models/encoder.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "tensor/host_allocator.h"
#include "test_util.h"
#include "train/optim/optimizer.h"

using namespace urpe;
using test::random_param;
using test::random_values;

TEST_CASE("graph edges: linear with a bias allocates its output alone, and a permute's input is not kept for backward") {
  const Tensor x = random_param({64, 32}, 51), w = random_param({48, 32}, 52), b = random_param({48}, 53);
  const size_t bytes = 64 * 48 * sizeof(float);  // one (64, 48) activation
  const size_t before = host::in_use_bytes();
  // linear with a bias is one op whose output starts as the bias: no second (64, 48) tensor.
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

// The tensor bytes one training step of a URPE encoder allocates on top of what was live before
// it (host allocator: tensor storage only): forward, cross-entropy, backward and the Adam update
// (whose moments, made at the first step, are counted too). A narrow model with a head of fixed
// width, so that whatever grows with n² would dominate: at n = 512 one (n, n) f32 tensor is 1 MiB,
// the whole linear part of the step about a fifth of that.
// With `pi_head`, position identification's head instead: n classes, targets 0 … n − 1, and the
// loss from the head either through the whole (n, n) logits or fused with the cross-entropy in
// chunks of 64 rows (TransformerEncoder::classify_loss).
enum class Head { narrow, pi_logits, pi_chunked };
size_t step_tensor_bytes(int64_t n, AttentionPath path, RelativeKind kind, Head head = Head::narrow) {
  EncoderConfig c;
  c.seq_len = n;
  c.layers = 1;
  c.d_model = 16;
  c.heads = 4;
  c.d_ff = 32;
  c.num_classes = head == Head::narrow ? 8 : n;  // position identification: n classes, n² logits
  c.attention_dropout = 0.1f;    // the fused op's own dropout, the materialised path's mask
  c.pe = PositionalKind::urpe;   // B and C, through relative bucket maps
  c.rpe_kind = kind;
  c.urpe_kind = kind;
  c.attention = path;
  const TransformerEncoder model(c, 7);
  Adam adam(model.parameters().tensors());
  std::vector<int32_t> tokens(static_cast<size_t>(n)), targets(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    tokens[i] = static_cast<int32_t>((i * 37) % c.vocab);
    targets[i] = static_cast<int32_t>(i % c.num_classes);
  }
  const Tensor x = Tensor::from_vector(tokens, {1, n}), y = Tensor::from_vector(targets, {n});
  Rng dropout_rng(11);
  host::reset_peak();
  const size_t before = host::in_use_bytes();
  {
    adam.zero_grad();
    Tensor loss;
    if (head == Head::pi_chunked) {
      loss = model.classify_loss(model.encode(x, true, &dropout_rng), y, -100, nullptr, 64);
    } else {
      const Tensor logits = model.forward(x, true, &dropout_rng);  // (1, n, classes)
      loss = cross_entropy(reshape(logits, {n, c.num_classes}), y);
    }
    loss.backward();
    adam.step(1e-3f);
  }
  return host::peak_bytes() - before;
}

TEST_CASE("a fused training step holds nothing n × n: its tensor bytes grow about as n, the materialised step's as n²") {
  for (RelativeKind kind : {RelativeKind::unique, RelativeKind::bucketed}) {
    CAPTURE(static_cast<int>(kind));
    const size_t fused_512 = step_tensor_bytes(512, AttentionPath::fused, kind);
    const size_t fused_1024 = step_tensor_bytes(1024, AttentionPath::fused, kind);
    const size_t materialised_512 = step_tensor_bytes(512, AttentionPath::materialized, kind);
    const size_t materialised_1024 = step_tensor_bytes(1024, AttentionPath::materialized, kind);
    CAPTURE(fused_512);
    CAPTURE(fused_1024);
    CAPTURE(materialised_512);
    CAPTURE(materialised_1024);
    // Linear: twice the bytes (and a little for the tables' 2n − 1 entries); one (n, n) buffer
    // would make it 3× or more at these sizes.
    CHECK(static_cast<double>(fused_1024) < 2.2 * static_cast<double>(fused_512));
    CHECK(fused_512 < size_t(512) * 512 * sizeof(float));
    // The measure sees n²: the materialised step, with its (1, H, n, n) scores, grows 3× or more.
    CHECK(static_cast<double>(materialised_1024) > 3.0 * static_cast<double>(materialised_512));
  }
}

// Position identification's head: with the logits whole the fused step grows as n² (the (n, n)
// logits and their gradient); fused with the loss in chunks of 64 rows it grows as n.
TEST_CASE("position identification's head fused with its loss in row chunks keeps the fused step linear in n") {
  const size_t chunked_512 = step_tensor_bytes(512, AttentionPath::fused, RelativeKind::unique, Head::pi_chunked);
  const size_t chunked_1024 = step_tensor_bytes(1024, AttentionPath::fused, RelativeKind::unique, Head::pi_chunked);
  const size_t logits_512 = step_tensor_bytes(512, AttentionPath::fused, RelativeKind::unique, Head::pi_logits);
  const size_t logits_1024 = step_tensor_bytes(1024, AttentionPath::fused, RelativeKind::unique, Head::pi_logits);
  CAPTURE(chunked_512);
  CAPTURE(chunked_1024);
  CAPTURE(logits_512);
  CAPTURE(logits_1024);
  CHECK(static_cast<double>(chunked_1024) < 2.2 * static_cast<double>(chunked_512));
  CHECK(chunked_1024 < size_t(1024) * 1024 * sizeof(float));
  CHECK(static_cast<double>(logits_1024) > 3.0 * static_cast<double>(logits_512));
}
