// Golden-fixture tests: the encoder (every positional encoding, and URPE on top of each) against the independent PyTorch
// reference in tools/torch_reference.py — logits, loss and every parameter gradient. The fixtures
// are float64 PyTorch results stored as f32; regenerate with `python3 tools/torch_reference.py`.
#include <string>

#include "models/encoder.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "golden_util.h"
#include "test_util.h"
#include "base/io/safetensors.h"

using namespace urpe;

namespace {

using test::meta_int;
using test::relative_error;


void check_fixture(const std::string& name, AttentionPath attention = AttentionPath::materialized) {
  const TensorFile f =
      load_safetensors(test::fixture_path("encoder_" + name + ".safetensors"));
  EncoderConfig c;
  c.vocab = meta_int(f, "vocab");
  c.seq_len = meta_int(f, "seq_len");
  c.layers = meta_int(f, "layers");
  c.d_model = meta_int(f, "d_model");
  c.heads = meta_int(f, "heads");
  c.d_ff = meta_int(f, "d_ff");
  c.num_classes = meta_int(f, "num_classes");
  const PositionalSpec pe = parse_positional_spec(f.meta("pe"));
  c.pe = pe.base;
  c.urpe_on_top = pe.urpe_on_top;
  if (f.metadata.count("shaw_clip")) c.shaw_clip = meta_int(f, "shaw_clip");
  c.rpe_kind = parse_relative_kind(f.meta("rpe_kind"));
  c.urpe_kind = parse_relative_kind(f.meta("urpe_kind"));
  c.attention = attention;
  TransformerEncoder model(c, 0);

  test::load_fixture_parameters(f, model.parameters());

  const Tensor tokens = f.at("input.tokens"), targets = f.at("input.targets");
  const Tensor logits = model.forward(tokens, false, nullptr);
  CHECK(relative_error(logits, f.at("output.logits")) < 1e-4);
  const int64_t rows = tokens.numel();
  const Tensor loss = cross_entropy(reshape(logits, {rows, c.num_classes}), reshape(targets, {rows}), -100);
  test::check_fixture_loss(f, "output.loss", loss);
  loss.backward();
  test::check_fixture_gradients(f, model.parameters());
}

}  // namespace

TEST_CASE("golden: encoder without positions") { check_fixture("none"); }
TEST_CASE("golden: encoder with learned absolute positions") { check_fixture("ape"); }
TEST_CASE("golden: encoder with unique RPE") { check_fixture("rpe"); }
TEST_CASE("golden: encoder with unique URPE (Toeplitz C)") { check_fixture("urpe"); }
TEST_CASE("golden: encoder with T5-bucketed RPE and URPE") { check_fixture("urpe_bucketed"); }
TEST_CASE("golden: encoder with sinusoidal positions") { check_fixture("sinusoidal"); }
TEST_CASE("golden: encoder with ALiBi (fixed bias)") { check_fixture("alibi"); }
TEST_CASE("golden: encoder with RoPE") { check_fixture("rope"); }
TEST_CASE("golden: encoder with Shaw's clipped relative embeddings (n > 2k + 1)") { check_fixture("shaw"); }
TEST_CASE("golden: encoder with RoPE + URPE") { check_fixture("rope_urpe"); }
TEST_CASE("golden: encoder with ALiBi + URPE") { check_fixture("alibi_urpe"); }
TEST_CASE("golden: encoder with sinusoidal + URPE") { check_fixture("sinusoidal_urpe"); }
TEST_CASE("golden: encoder with Shaw + bucketed URPE") { check_fixture("shaw_urpe_bucketed"); }
TEST_CASE("golden, fused attention: the same fixtures through ops/urpe_flash_attention") {
  for (const char* name : {"none", "rpe", "urpe", "urpe_bucketed"}) {
    CAPTURE(name);
    check_fixture(name, AttentionPath::fused);
  }
}

TEST_CASE("T5 buckets match the published boundaries") {
  // docs/urpe_attention.md#t5-buckets, bidirectional: |rel| 0–7 exact; 8–11→8; 12–15→9; 16–22→10;
  // 23–31→11; 32–45→12;
  // 46–63→13; 64–90→14; ≥91→15; +16 when rel > 0.
  const int expected[][2] = {{7, 7}, {8, 8}, {11, 8}, {12, 9}, {16, 10}, {22, 10}, {23, 11},
                             {32, 12}, {45, 12}, {46, 13}, {64, 14}, {90, 14}, {91, 15}, {500, 15}};
  for (const auto& [distance, bucket] : expected) {
    CAPTURE(distance);
    CHECK(t5_relative_bucket(-distance, true) == bucket);
    if (distance > 0) CHECK(t5_relative_bucket(distance, true) == bucket + 16);
  }
  // Causal: n = i − j; 0–15 exact; 16–18→16; 99–112→30; ≥113→31; future keys → 0.
  CHECK(t5_relative_bucket(-15, false) == 15);
  CHECK(t5_relative_bucket(-16, false) == 16);
  CHECK(t5_relative_bucket(-18, false) == 16);
  CHECK(t5_relative_bucket(-112, false) == 30);
  CHECK(t5_relative_bucket(-113, false) == 31);
  CHECK(t5_relative_bucket(5, false) == 0);
}

TEST_CASE("URPE starts identical to RPE (C initialised to ones)") {
  EncoderConfig c;
  c.vocab = 13; c.seq_len = 9; c.layers = 2; c.d_model = 16; c.heads = 2; c.d_ff = 24; c.num_classes = 9;
  c.pe = PositionalKind::rpe;
  TransformerEncoder rpe(c, 5);
  c.pe = PositionalKind::urpe;
  TransformerEncoder urpe_model(c, 5);
  CHECK(urpe_model.parameters().count() == rpe.parameters().count() + c.heads * (2 * c.seq_len - 1));
  const Tensor tokens = test::random_ids({3, 9}, 13, 8);
  CHECK(test::max_abs_diff(rpe.forward(tokens, false, nullptr), urpe_model.forward(tokens, false, nullptr)) == 0.0);
}

TEST_CASE("fused and materialized encoders agree in training (attention dropout, n < seq_len)") {
  for (RelativeKind kind : {RelativeKind::unique, RelativeKind::bucketed}) {
    CAPTURE(relative_kind_name(kind));
    EncoderConfig c;
    c.vocab = 17; c.seq_len = 40; c.layers = 2; c.d_model = 24; c.heads = 3; c.d_ff = 32; c.num_classes = 7;
    c.pe = PositionalKind::urpe;
    c.rpe_kind = c.urpe_kind = kind;
    c.dropout = 0.1f;
    c.attention_dropout = 0.2f;
    const Tensor tokens = test::random_ids({3, 29}, 17, 12);  // shorter than seq_len: sliced maps
    const Tensor targets = test::random_ids({3, 29}, 7, 13);
    std::vector<Tensor> logits, grads;
    std::vector<std::string> names;
    for (AttentionPath path : {AttentionPath::materialized, AttentionPath::fused}) {
      c.attention = path;
      TransformerEncoder model(c, 3);
      Tensor table = model.c_table();  // C away from 1, so a path that ignored it would show
      table.copy_from(test::random_values(table.shape(), 14, 0.5f, 1.5f));
      Rng dropout_rng(15);
      const Tensor out = model.forward(tokens, true, &dropout_rng);
      cross_entropy(reshape(out, {3 * 29, 7}), reshape(targets, {3 * 29})).backward();
      logits.push_back(out);
      for (const auto& [pname, p] : model.parameters().items()) {
        if (path == AttentionPath::materialized) names.push_back(pname);
        grads.push_back(p.grad());
      }
    }
    CHECK(relative_error(logits[1], logits[0]) < 1e-4);
    const size_t count = names.size();
    REQUIRE(grads.size() == 2 * count);
    for (size_t k = 0; k < count; ++k) {
      INFO("gradient of " << names[k]);
      CHECK(relative_error(grads[count + k], grads[k]) < 1e-4);
    }
  }
}
