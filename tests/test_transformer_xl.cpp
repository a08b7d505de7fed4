// Transformer-XL and its URPE variant: the relative-shift op (definition, gradient), gradients of
// the whole model by finite differences, the segment memory (what it holds, that it carries
// information forward, that no gradient crosses it), causality, same_length, the adaptive softmax,
// and the golden fixtures of tools/torch_reference_txl.py (logits, losses and every gradient of
// two or three segments with memory; regenerate with `/usr/bin/python3 tools/torch_reference_txl.py`).
#include <cmath>
#include <string>

#include "models/encoder.h"  // alibi_slopes
#include "models/transformer_xl.h"
#include "ops/elementwise.h"
#include "ops/relative_shift.h"
#include "ops/shape.h"
#include "golden_util.h"
#include "test_util.h"
#include "base/io/safetensors.h"

using namespace urpe;

namespace {

TransformerXLConfig tiny_config(bool urpe_variant = false) {
  TransformerXLConfig c;
  c.vocab = 11;
  c.layers = 2;
  c.d_model = 8;
  c.heads = 2;
  c.d_head = 3;  // H·dh ≠ d on purpose: the projections must not assume it
  c.d_inner = 12;
  c.dropout = 0.0f;
  c.dropatt = 0.0f;
  c.tgt_len = 4;
  c.mem_len = 4;
  c.urpe = urpe_variant;
  c.init_std = 0.3f;  // large enough that attention is far from uniform
  return c;
}


// logits (qlen, B, V) of one (query position, batch item): (V,)
std::vector<float> logits_at(const Tensor& logits, int64_t i, int64_t b) {
  const std::vector<float> all = logits.to_vector_f32();
  const int64_t batch = logits.size(1), vocab = logits.size(2);
  const auto begin = all.begin() + (i * batch + b) * vocab;
  return std::vector<float>(begin, begin + vocab);
}

}  // namespace

// ---- relative shift ----

TEST_CASE("relative_shift picks the row of distance mlen + i − j and zeroes future keys") {
  const int64_t lead = 2, nq = 3, nk = 5, mlen = nk - nq;
  const Tensor x = test::random_values({lead, nq, nk}, 11);
  const Tensor y = relative_shift(x);
  const std::vector<float> vx = x.to_vector_f32(), vy = y.to_vector_f32();
  // The official _rel_shift: pad a zero column on the left, view (nk + 1, nq), drop the first
  // row, view (nq, nk). On visible keys both agree; future keys are 0 here.
  for (int64_t b = 0; b < lead; ++b) {
    std::vector<float> padded;  // (nq, nk + 1)
    for (int64_t i = 0; i < nq; ++i) {
      padded.push_back(0.0f);
      for (int64_t k = 0; k < nk; ++k) padded.push_back(vx[(b * nq + i) * nk + k]);
    }
    for (int64_t i = 0; i < nq; ++i) {
      for (int64_t j = 0; j < nk; ++j) {
        CAPTURE(b); CAPTURE(i); CAPTURE(j);
        const float got = vy[(b * nq + i) * nk + j];
        if (j <= mlen + i) {
          CHECK(got == vx[(b * nq + i) * nk + j + nq - 1 - i]);
          CHECK(got == padded[nq + i * nk + j]);  // flat index after dropping the first nq entries
        } else {
          CHECK(got == 0.0f);
        }
      }
    }
  }
}

// relative_shift's gradient check (with and without memory), CUDA parity, determinism and cost:
// its rows of the op table.
TEST_CASE("relative_shift rejects fewer keys than queries") {
  CHECK_THROWS_WITH_AS(relative_shift(Tensor::zeros({2, 4, 3})),
                       doctest::Contains("at least as many keys"), Error);
}

// ---- whole-model gradients ----

TEST_CASE("Transformer-XL loss gradient w.r.t. u, v, W_r and the URPE table (finite differences)") {
  TransformerXLConfig c = tiny_config(true);
  c.clamp_len = 5;
  TransformerXL model(c, 3);
  model.c_table().copy_from(test::random_values(model.c_table().shape(), 14, 0.5f, 1.5f));
  const Tensor tokens1 = test::random_ids({4, 2}, 11, 15), tokens2 = test::random_ids({4, 2}, 11, 16);
  const Tensor targets = test::random_ids({4, 2}, 11, 17);
  TxlMemory mems;
  {
    autograd::NoGrad no_grad;
    mems = model.forward_hidden(tokens1, {}, false, nullptr).mems;
  }
  REQUIRE(mems.size() == 3);
  const ParameterSet& p = model.parameters();
  const std::vector<Tensor> checked{p.find("r_w_bias"), p.find("r_r_bias"),
                                    p.find("layers.0.attn.r_net.weight"), p.find("urpe_c"),
                                    p.find("layers.1.attn.qkv_net.weight")};
  for (const Tensor& t : checked) REQUIRE(t.defined());
  autograd::GradcheckOptions options;
  options.eps = 1e-2f;
  options.atol = 2e-4f;
  options.rtol = 2e-2f;
  test::check_gradients(
      [&](const std::vector<Tensor>&) { return model.forward(tokens2, targets, mems, false, nullptr).loss; },
      checked, options);
}

// ---- memory ----

TEST_CASE("memory holds the last mem_len layer inputs, detached") {
  TransformerXLConfig c = tiny_config();
  c.mem_len = 7;  // longer than a segment: the second memory spans both segments
  TransformerXL model(c, 4);
  const Tensor tokens1 = test::random_ids({5, 2}, 11, 20), tokens2 = test::random_ids({5, 2}, 11, 21);
  const TxlHidden first = model.forward_hidden(tokens1, {}, false, nullptr);
  REQUIRE(first.mems.size() == static_cast<size_t>(c.layers + 1));
  for (const Tensor& m : first.mems) {
    CHECK(m.shape() == (Shape{2, 5, 8}));
    CHECK_FALSE(m.requires_grad());
    CHECK(m.grad_fn() == nullptr);
  }
  const TxlHidden second = model.forward_hidden(tokens2, first.mems, false, nullptr);
  for (const Tensor& m : second.mems) CHECK(m.shape() == (Shape{2, 7, 8}));
  // mems[0] are the embeddings E[w]·√d (no dropout): rows 0–1 from segment 1's last two tokens,
  // rows 2–6 from segment 2.
  const std::vector<float> e = model.parameters().find("word_emb.weight").to_vector_f32();
  const std::vector<float> m0 = second.mems[0].to_vector_f32();
  const std::vector<int32_t> w1 = tokens1.to_vector_i32(), w2 = tokens2.to_vector_i32();
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t r = 0; r < 7; ++r) {
      const int32_t token = r < 2 ? w1[(3 + r) * 2 + b] : w2[(r - 2) * 2 + b];
      for (int64_t k = 0; k < 8; ++k) {
        CAPTURE(b); CAPTURE(r); CAPTURE(k);
        CHECK(m0[(b * 7 + r) * 8 + k] == doctest::Approx(e[token * 8 + k] * std::sqrt(8.0f)).epsilon(1e-6));
      }
    }
  }
  // The last layer's memory is the model output (dropout off): its last 5 rows.
  CHECK(test::max_abs_diff(slice(second.mems[c.layers], 1, 2, 7), permute(second.hidden, {1, 0, 2})) == 0.0);
}

TEST_CASE("the second segment sees the first through memory only when mem_len > 0") {
  for (int64_t mem_len : {0, 4}) {
    CAPTURE(mem_len);
    TransformerXLConfig c = tiny_config();
    c.mem_len = mem_len;
    TransformerXL model(c, 5);
    const Tensor first_a = test::random_ids({4, 2}, 11, 30), first_b = test::random_ids({4, 2}, 11, 31);
    const Tensor second = test::random_ids({4, 2}, 11, 32);
    const TxlMemory mems_a = model.forward_hidden(first_a, {}, false, nullptr).mems;
    const TxlMemory mems_b = model.forward_hidden(first_b, {}, false, nullptr).mems;
    CHECK(mems_a.size() == (mem_len > 0 ? 3u : 0u));
    const Tensor out_a = model.forward_hidden(second, mems_a, false, nullptr).hidden;
    const Tensor out_b = model.forward_hidden(second, mems_b, false, nullptr).hidden;
    if (mem_len > 0)
      CHECK(test::max_abs_diff(out_a, out_b) > 1e-3);
    else
      CHECK(test::max_abs_diff(out_a, out_b) == 0.0);
  }
}

TEST_CASE("a segment's kept constants follow set_memory_options (clamp_len, same_length, mem_len)") {
  // The model keeps each segment length's maps and positional table (segment_constants); new
  // memory options must give what a model built with them gives, not the kept constants.
  for (bool urpe : {false, true}) {
    CAPTURE(urpe);
    TransformerXLConfig c = tiny_config(urpe);
    TransformerXL model(c, 9);
    const Tensor first = test::random_ids({4, 2}, 11, 40), second = test::random_ids({4, 2}, 11, 41);
    const TxlMemory mems = model.forward_hidden(first, {}, false, nullptr).mems;
    const Tensor before = model.forward_hidden(second, mems, false, nullptr).hidden;  // constants kept
    model.set_memory_options(4, 2, true);
    const Tensor after = model.forward_hidden(second, mems, false, nullptr).hidden;
    TransformerXLConfig other = c;
    other.clamp_len = 2;
    other.same_length = true;
    const TransformerXL fresh(other, 9);  // same seed: the same weights
    const Tensor expected = fresh.forward_hidden(second, mems, false, nullptr).hidden;
    CHECK(test::max_abs_diff(after, expected) == 0.0);
    CHECK(test::max_abs_diff(after, before) > 1e-4);
  }
}

TEST_CASE("no gradient flows into the memory or the previous segment") {
  const TransformerXLConfig c = tiny_config(true);
  TransformerXL model(c, 6);
  model.c_table().copy_from(test::random_values(model.c_table().shape(), 40, 0.5f, 1.5f));
  const Tensor tokens1 = test::random_ids({4, 2}, 11, 41), tokens2 = test::random_ids({4, 2}, 11, 42);
  const Tensor targets2 = test::random_ids({4, 2}, 11, 43);

  // Segment 1 with its graph recorded; segment 2 on its memory; backward of segment 2 only.
  const TxlStep step1 = model.forward(tokens1, test::random_ids({4, 2}, 11, 44), {}, true, nullptr);
  REQUIRE(step1.loss.requires_grad());
  model.parameters().zero_grad();
  model.forward(tokens2, targets2, step1.mems, true, nullptr).loss.backward();
  std::vector<Tensor> grads;
  for (const auto& [name, p] : model.parameters().items()) grads.push_back(p.grad().clone());

  // The same with a memory copied into fresh tensors (no link to segment 1 at all).
  TxlMemory copied;
  for (const Tensor& m : step1.mems) copied.push_back(m.clone());
  model.parameters().zero_grad();
  model.forward(tokens2, targets2, copied, true, nullptr).loss.backward();
  size_t k = 0;
  for (const auto& [name, p] : model.parameters().items()) {
    INFO("parameter " << name);
    CHECK(test::max_abs_diff(p.grad(), grads[k++]) == 0.0);
  }
  for (const Tensor& m : step1.mems) CHECK_FALSE(m.grad().defined());
}

TEST_CASE("memory tensors of the wrong shape are rejected") {
  TransformerXL model(tiny_config(), 7);
  const Tensor tokens = test::random_ids({4, 2}, 11, 50);
  TxlMemory mems = model.forward_hidden(tokens, {}, false, nullptr).mems;
  CHECK_THROWS_WITH_AS(model.forward_hidden(test::random_ids({4, 3}, 11, 51), mems, false, nullptr),
                       doctest::Contains("(B, mlen, d)"), Error);
  mems.pop_back();
  CHECK_THROWS_WITH_AS(model.forward_hidden(tokens, mems, false, nullptr),
                       doctest::Contains("memory has 2 tensors"), Error);
}

// ---- causality and masks ----

TEST_CASE("logits at position i do not depend on tokens after i") {
  for (bool urpe_variant : {false, true}) {
    CAPTURE(urpe_variant);
    TransformerXL model(tiny_config(urpe_variant), 8);
    if (urpe_variant) model.c_table().copy_from(test::random_values(model.c_table().shape(), 60, 0.5f, 1.5f));
    const TxlMemory mems = model.forward_hidden(test::random_ids({4, 2}, 11, 61), {}, false, nullptr).mems;
    std::vector<int32_t> tokens = test::random_ids({4, 2}, 11, 62).to_vector_i32();
    const Tensor before = model.logits(model.forward_hidden(Tensor::from_vector(tokens, {4, 2}), mems, false, nullptr).hidden);
    tokens[2 * 2 + 1] = (tokens[2 * 2 + 1] + 5) % 11;  // position 2 of batch item 1
    tokens[3 * 2 + 0] = (tokens[3 * 2 + 0] + 3) % 11;  // position 3 of batch item 0
    const Tensor after = model.logits(model.forward_hidden(Tensor::from_vector(tokens, {4, 2}), mems, false, nullptr).hidden);
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t b = 0; b < 2; ++b) {
        CAPTURE(i); CAPTURE(b);
        const bool changed_before_or_at_i = (b == 1 && i >= 2) || (b == 0 && i >= 3);
        const std::vector<float> x = logits_at(before, i, b), y = logits_at(after, i, b);
        double diff = 0;
        for (size_t k = 0; k < x.size(); ++k) diff = std::max(diff, std::fabs(double(x[k]) - y[k]));
        if (changed_before_or_at_i)
          CHECK(diff > 1e-4);
        else
          CHECK(diff == 0.0);
      }
    }
  }
}

TEST_CASE("same_length: with a full memory every query sees exactly mem_len keys") {
  TransformerXLConfig c = tiny_config();
  c.same_length = true;  // mem_len = qlen = 4: query i sees keys (i, 4 + i]
  c.layers = 1;          // deeper, the current keys would carry memory from the layer below
  TransformerXL model(c, 9);
  const Tensor second = test::random_ids({4, 2}, 11, 71);
  const TxlMemory mems_a = model.forward_hidden(test::random_ids({4, 2}, 11, 72), {}, false, nullptr).mems;
  const TxlMemory mems_b = model.forward_hidden(test::random_ids({4, 2}, 11, 73), {}, false, nullptr).mems;
  const Tensor a = model.logits(model.forward_hidden(second, mems_a, false, nullptr).hidden);
  const Tensor b = model.logits(model.forward_hidden(second, mems_b, false, nullptr).hidden);
  auto diff_at = [&](int64_t i) {
    double diff = 0;
    for (int64_t batch = 0; batch < 2; ++batch) {
      const std::vector<float> x = logits_at(a, i, batch), y = logits_at(b, i, batch);
      for (size_t k = 0; k < x.size(); ++k) diff = std::max(diff, std::fabs(double(x[k]) - y[k]));
    }
    return diff;
  };
  CHECK(diff_at(0) > 1e-4);     // sees memory rows 1–3
  CHECK(diff_at(3) == 0.0);     // sees only the current segment
  // Without same_length the last query sees the memory too.
  c.same_length = false;
  TransformerXL plain(c, 9);
  const Tensor pa = plain.logits(plain.forward_hidden(second, mems_a, false, nullptr).hidden);
  const Tensor pb = plain.logits(plain.forward_hidden(second, mems_b, false, nullptr).hidden);
  CHECK(test::max_abs_diff(slice(pa, 0, 3, 4), slice(pb, 0, 3, 4)) > 1e-4);
  CHECK_THROWS_WITH_AS(plain.set_memory_options(0, -1, true), doctest::Contains("same_length"), Error);
}

TEST_CASE("dropout: seeded, active only in training, and it reaches the memory") {
  TransformerXLConfig c = tiny_config();
  c.dropout = 0.2f;
  c.dropatt = 0.1f;
  TransformerXL model(c, 12);
  const Tensor tokens = test::random_ids({4, 2}, 11, 100), targets = test::random_ids({4, 2}, 11, 101);
  CHECK_THROWS_WITH_AS(model.forward(tokens, targets, {}, true, nullptr),
                       doctest::Contains("random stream"), Error);
  Rng r1(7), r2(7), r3(8);
  const TxlStep a = model.forward(tokens, targets, {}, true, &r1);
  const TxlStep b = model.forward(tokens, targets, {}, true, &r2);
  const TxlStep other = model.forward(tokens, targets, {}, true, &r3);
  const TxlStep eval = model.forward(tokens, targets, {}, false, nullptr);
  CHECK(a.loss.item() == b.loss.item());
  CHECK(a.loss.item() != other.loss.item());
  CHECK(a.loss.item() != eval.loss.item());
  CHECK(test::max_abs_diff(a.mems[0], b.mems[0]) == 0.0);
  CHECK(test::max_abs_diff(a.mems[0], eval.mems[0]) > 1e-3);  // h_0 is cached after dropout
  CHECK(eval.loss.item() == model.forward(tokens, targets, {}, false, nullptr).loss.item());
}

// ---- URPE ----

TEST_CASE("URPE with C = ones computes exactly the baseline; it costs H·max_klen parameters") {
  TransformerXLConfig c = tiny_config(false);
  TransformerXL base(c, 10);
  c.urpe = true;
  TransformerXL with_c(c, 10);
  CHECK(with_c.parameters().count() == base.parameters().count() + c.heads * (c.tgt_len + c.mem_len));
  CHECK(with_c.c_table().shape() == (Shape{c.heads, c.tgt_len + c.mem_len}));
  const Tensor t1 = test::random_ids({4, 2}, 11, 80), t2 = test::random_ids({4, 2}, 11, 81);
  const TxlHidden b1 = base.forward_hidden(t1, {}, false, nullptr), u1 = with_c.forward_hidden(t1, {}, false, nullptr);
  const TxlHidden b2 = base.forward_hidden(t2, b1.mems, false, nullptr), u2 = with_c.forward_hidden(t2, u1.mems, false, nullptr);
  CHECK(test::max_abs_diff(base.logits(b1.hidden), with_c.logits(u1.hidden)) == 0.0);
  CHECK(test::max_abs_diff(base.logits(b2.hidden), with_c.logits(u2.hidden)) == 0.0);
  // A learned C changes the output (so the equality above is not vacuous).
  with_c.c_table().copy_from(test::random_values(with_c.c_table().shape(), 82, 0.5f, 1.5f));
  const TxlHidden u3 = with_c.forward_hidden(t1, {}, false, nullptr);
  CHECK(test::max_abs_diff(base.logits(b1.hidden), with_c.logits(u3.hidden)) > 1e-4);
}

// ---- ALiBi ----

TEST_CASE("ALiBi: with q = 0 and u = 0 the weights are softmax(−m_h·min(δ, clamp_len)) over visible keys") {
  TransformerXLConfig c = tiny_config();
  c.alibi = true;
  c.heads = 3;  // slopes 2^-4, 2^-8 and 2^-2 (the non-power-of-two rule)
  c.layers = 1;
  c.clamp_len = 5;  // klen 8 in the second segment: distances 6 and 7 take the bias of 5
  TransformerXL model(c, 13);
  // No R, so neither r_net nor r_r_bias: H·dh + L·H·dh·d fewer parameters than the baseline.
  CHECK(!model.parameters().find("r_r_bias").defined());
  CHECK(!model.parameters().find("layers.0.attn.r_net.weight").defined());
  TransformerXLConfig base = c;
  base.alibi = false;
  CHECK(model.parameters().count() ==
        TransformerXL(base, 13).parameters().count() - c.heads * c.d_head * (1 + c.layers * c.d_model));
  // AC = (q + u)·k = 0: only the fixed bias decides A.
  const int64_t hd = c.heads * c.d_head;
  Tensor qkv = model.parameters().find("layers.0.attn.qkv_net.weight");
  std::vector<float> w = qkv.to_vector_f32();
  std::fill(w.begin(), w.begin() + hd * c.d_model, 0.0f);  // the q rows
  qkv.copy_from(Tensor::from_vector(w, qkv.shape()));
  model.parameters().find("r_w_bias").copy_from(Tensor::zeros({c.heads, c.d_head}));
  const std::vector<double> slopes = alibi_slopes(c.heads);
  const TxlMemory mems = model.forward_hidden(test::random_ids({4, 2}, 11, 120), {}, false, nullptr).mems;
  HiddenStates states;
  states.keep_attention = true;
  model.forward_hidden(test::random_ids({4, 2}, 11, 121), mems, false, nullptr, &states);
  const std::vector<float> a = states.attention.at(0).to_vector_f32();  // (B, H, qlen 4, klen 8)
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < 4; ++i) {
        double total = 0;
        for (int64_t j = 0; j <= 4 + i; ++j) total += std::exp(-slopes[h] * std::min<int64_t>(4 + i - j, 5));
        for (int64_t j = 0; j < 8; ++j) {
          const double expected = j <= 4 + i ? std::exp(-slopes[h] * std::min<int64_t>(4 + i - j, 5)) / total : 0.0;
          CHECK(a[((b * c.heads + h) * 4 + i) * 8 + j] == doctest::Approx(expected).epsilon(1e-5));
        }
      }
}

TEST_CASE("ALiBi loss gradient w.r.t. u, W_qkv and the URPE table (finite differences)") {
  TransformerXLConfig c = tiny_config(true);
  c.alibi = true;
  TransformerXL model(c, 14);
  const ParameterSet& p = model.parameters();
  p.find("urpe_c").copy_from(test::random_values(p.find("urpe_c").shape(), 15, 0.5f, 1.5f));
  const Tensor t1 = test::random_ids({4, 2}, 11, 122), t2 = test::random_ids({4, 2}, 11, 123);
  const Tensor targets = test::random_ids({4, 2}, 11, 124);
  TxlMemory mems;
  {
    autograd::NoGrad no_grad;
    mems = model.forward_hidden(t1, {}, false, nullptr).mems;
  }
  autograd::GradcheckOptions options;
  options.eps = 2e-3f;  // the loss curves enough in u that 1e-2 leaves a 5% difference
  options.atol = 2e-4f;
  options.rtol = 2e-2f;
  test::check_gradients(
      [&](const std::vector<Tensor>&) { return model.forward(t2, targets, mems, false, nullptr).loss; },
      {p.find("r_w_bias"), p.find("layers.0.attn.qkv_net.weight"), p.find("urpe_c")}, options);
}

// ---- adaptive softmax ----

TEST_CASE("adaptive softmax: a proper distribution over the vocabulary, and its gradient") {
  TransformerXLConfig c = tiny_config();
  c.cutoffs = {4, 7};  // head 0–3 (+2 cluster columns), tails 4–6 and 7–10
  TransformerXL model(c, 11);
  CHECK(model.parameters().count() == TransformerXL(tiny_config(), 11).parameters().count() + 2 * 8 + 2);
  CHECK_THROWS_WITH_AS(model.logits(Tensor::zeros({1, 1, 8})), doctest::Contains("adaptive"), Error);
  model.parameters().find("out_bias").copy_from(test::random_values({11}, 90));
  model.parameters().find("cluster_bias").copy_from(test::random_values({2}, 91));
  const Tensor hidden = test::random_param({1, 1, 8}, 92, -2.0f, 2.0f);
  double total = 0;
  for (int32_t t = 0; t < 11; ++t)
    total += std::exp(-model.loss(hidden, Tensor::from_vector(std::vector<int32_t>{t}, {1, 1})).item());
  CHECK(total == doctest::Approx(1.0).epsilon(1e-5));

  const Tensor h = test::random_param({3, 2, 8}, 93);
  const Tensor targets = Tensor::from_vector(std::vector<int32_t>{0, 5, 9, 3, 10, 6}, {3, 2});
  const ParameterSet& p = model.parameters();
  test::check_gradients([&](const std::vector<Tensor>& in) { return model.loss(in[0], targets); },
                        {h, p.find("cluster_weight"), p.find("cluster_bias"), p.find("word_emb.weight"),
                         p.find("out_bias")});
}

TEST_CASE("configuration errors name the problem") {
  TransformerXLConfig c = tiny_config();
  c.d_model = 7;
  CHECK_THROWS_WITH_AS(TransformerXL(c, 0), doctest::Contains("even"), Error);
  c = tiny_config();
  c.cutoffs = {5, 5};
  CHECK_THROWS_WITH_AS(TransformerXL(c, 0), doctest::Contains("cutoffs"), Error);
}

// ---- golden fixtures ----

namespace {

using test::meta_int;
using test::relative_error;

void check_fixture(const std::string& name) {
  const TensorFile f =
      load_safetensors(test::fixture_path("txl_" + name + ".safetensors"));
  TransformerXLConfig c;
  c.vocab = meta_int(f, "vocab");
  c.layers = meta_int(f, "layers");
  c.d_model = meta_int(f, "d_model");
  c.heads = meta_int(f, "heads");
  c.d_head = meta_int(f, "d_head");
  c.d_inner = meta_int(f, "d_inner");
  c.tgt_len = meta_int(f, "tgt_len");
  c.mem_len = meta_int(f, "mem_len");
  c.clamp_len = meta_int(f, "clamp_len");
  c.max_klen = meta_int(f, "max_klen");
  c.urpe = f.meta("urpe") == "1";
  c.same_length = f.meta("same_length") == "1";
  c.alibi = f.metadata.count("alibi") && f.meta("alibi") == "1";  // fixtures before ALiBi lack the key
  std::string cutoffs = f.meta("cutoffs");  // "5,9" or ""
  for (size_t start = 0; start < cutoffs.size();) {
    const size_t comma = std::min(cutoffs.find(',', start), cutoffs.size());
    c.cutoffs.push_back(std::stoll(cutoffs.substr(start, comma - start)));
    start = comma + 1;
  }
  c.dropout = c.dropatt = 0.0f;
  TransformerXL model(c, 0);

  test::load_fixture_parameters(f, model.parameters());

  TxlMemory mems;
  Tensor total;
  const int64_t segments = meta_int(f, "segments");
  for (int64_t segment = 1; segment <= segments; ++segment) {
    INFO("segment " << segment);
    const std::string s = std::to_string(segment);
    const TxlHidden h = model.forward_hidden(f.at("input.tokens" + s), mems, false, nullptr);
    if (c.cutoffs.empty()) CHECK(relative_error(model.logits(h.hidden), f.at("output.logits" + s)) < 1e-4);
    const Tensor loss = model.loss(h.hidden, f.at("input.targets" + s));
    test::check_fixture_loss(f, "output.loss" + s, loss);
    total = total.defined() ? add(total, loss) : loss;
    mems = h.mems;
  }
  total.backward();
  test::check_fixture_gradients(f, model.parameters());
}

}  // namespace

TEST_CASE("golden: Transformer-XL, two segments with memory") { check_fixture("base"); }
TEST_CASE("golden: Transformer-XL + URPE, two segments with memory, clamped distances") { check_fixture("urpe"); }
TEST_CASE("golden: Transformer-XL with the adaptive softmax") { check_fixture("adaptive"); }
TEST_CASE("golden: Transformer-XL + URPE, evaluation settings (long memory, clamp, same_length)") {
  check_fixture("urpe_eval");
}
TEST_CASE("golden: Transformer-XL with ALiBi in place of the relative term, two segments with memory") {
  check_fixture("alibi");
}
TEST_CASE("golden: Transformer-XL with ALiBi + URPE, evaluation settings (long memory, clamp, same_length)") {
  check_fixture("alibi_urpe_eval");
}
