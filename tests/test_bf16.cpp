// BF16 on the CPU (docs/cuda.md#mixed-precision): the storage type and its rounding against
// hand-derived bit patterns (tests/bf16_cases.h), bf16 tensors through creation, copies and
// printing, the cast op's straight-through gradient, bf16 GEMMs against the f32 GEMM within a
// bound derived from the rounding, gradients of a bf16 tensor used twice, and the clear errors
// (mixed operands, checkpoints that stay FP32). CUDA against the CPU: test_cuda_parity (the op
// table's bf16 columns and the same bit patterns on the device).
#include <cmath>
#include <cstring>
#include <functional>

#include "bf16_cases.h"
#include "data/molecule_dataset.h"
#include "data/smiles.h"
#include "doctest/doctest.h"
#include "models/encoder.h"
#include "models/graphormer.h"
#include "models/transformer_xl.h"
#include "ops/cast.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "tensor/host_allocator.h"
#include "test_util.h"
#include "train/optim/optimizer.h"
#include "base/io/safetensors.h"

using namespace urpe;
using namespace urpe::test;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// |x| element by element (a new tensor, no autograd).
Tensor abs_of(const Tensor& t) {
  std::vector<float> v = t.to_vector_f32();
  for (float& e : v) e = std::fabs(e);
  return Tensor::from_vector(v, t.shape());
}

}  // namespace

TEST_CASE("bf16: round to nearest even from float, exact back, on hand-derived bit patterns") {
  for (const Bf16Case& c : bf16_cases()) {
    INFO(c.what);
    CHECK(float_to_bf16_bits(from_bits(c.f32_bits)) == c.bf16_bits);
    // Widening is exact: the 16 bits shifted up (a NaN stays NaN).
    const float back = bf16_bits_to_float(c.bf16_bits);
    CHECK(bits_of(back) == uint32_t(c.bf16_bits) << 16);
  }
  // Every bf16 value survives the round trip bf16 → f32 → bf16 unchanged (NaNs become the
  // canonical one).
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = bf16_bits_to_float(uint16_t(b));
    const uint16_t again = float_to_bf16_bits(f);
    if (std::isnan(f)) CHECK(again == 0x7FFFu);
    else if (again != b) FAIL_CHECK("bf16 " << b << " does not survive the round trip");
  }
}

TEST_CASE("bf16: tensors: size, creation, copies, fill, printing") {
  CHECK(dtype_size(DType::bf16) == 2);
  CHECK(std::string(dtype_name(DType::bf16)) == "bf16");
  CHECK(tensor_bytes({3, 5}, DType::bf16) == 30);
  std::vector<float> v;
  for (const Bf16Case& c : bf16_cases()) v.push_back(from_bits(c.f32_bits));
  const Tensor x = Tensor::from_vector(v, {int64_t(v.size())});
  const Tensor y = cast(x, DType::bf16);
  CHECK(y.dtype() == DType::bf16);
  CHECK(y.impl().storage->bytes == v.size() * 2);
  const std::vector<float> w = y.to_vector_f32();
  for (size_t k = 0; k < v.size(); ++k) {
    INFO(bf16_cases()[k].what);
    CHECK(bits_of(w[k]) == uint32_t(bf16_cases()[k].bf16_bits) << 16);
  }
  const Tensor z = y.clone();
  CHECK(std::memcmp(z.impl().storage->data, y.impl().storage->data, v.size() * 2) == 0);
  Tensor e = Tensor::empty(y.shape(), DType::bf16);
  e.copy_from(y);
  CHECK(std::memcmp(e.impl().storage->data, y.impl().storage->data, v.size() * 2) == 0);
  CHECK_THROWS_WITH_AS(e.copy_from(x), doctest::Contains("copy_from"), Error);
  e.fill(1.00390625f);  // 1 + 2⁻⁸: a tie, rounds to 1
  CHECK(e.to_vector_f32() == std::vector<float>(v.size(), 1.0f));
  CHECK(Tensor::zeros({4}, DType::bf16).to_vector_f32() == std::vector<float>(4, 0.0f));
  CHECK(Tensor::arange(3, DType::bf16).to_vector_f32() == std::vector<float>{0, 1, 2});
  CHECK(cast(Tensor::full({1}, 2.5f), DType::bf16).item() == 2.5f);
  CHECK(cast(Tensor::from_vector(std::vector<float>{1.5f, -2.0f}, {2}), DType::bf16).to_string() ==
        "tensor bf16 (2,) on cpu [1.5, -2]");
  CHECK(y.describe().rfind("bf16 (", 0) == 0);
  // Leaves are the f32 masters: a bf16 tensor gets a gradient only through a cast.
  CHECK_THROWS_WITH_AS(Tensor::zeros({2}, DType::bf16).set_requires_grad(true),
                       doctest::Contains("only f32 tensors"), Error);
}

TEST_CASE("bf16: cast: the gradient is the output gradient in the input's dtype") {
  const Tensor x = random_param({3, 7}, 11, -40.0f, 40.0f);
  const Tensor y = cast(x, DType::bf16);
  CHECK(cast(x, DType::f32).same_as(x));  // a cast to its own dtype is x itself
  const Tensor g = cast(random_values({3, 7}, 12), DType::bf16);
  y.backward(g);
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == DType::f32);
  CHECK(x.grad().to_vector_f32() == g.to_vector_f32());  // exact: bf16 widens exactly
  // bf16 → f32: the f32 gradient rounded to nearest even.
  const Tensor x2 = random_param({5}, 13);
  const Tensor back = cast(cast(x2, DType::bf16), DType::f32);
  const Tensor g2 = random_values({5}, 14);
  back.backward(g2);
  CHECK(x2.grad().to_vector_f32() == cast(g2, DType::bf16).to_vector_f32());
  CHECK_THROWS_WITH_AS(cast(Tensor::arange(3), DType::bf16), doctest::Contains("only f32 ↔ bf16"), Error);
  CHECK_THROWS_WITH_AS(y.backward(random_values({3, 7}, 15)), doctest::Contains("must have its dtype"), Error);
}

// bf16 inputs rounded from a and b (unit roundoff u = 2⁻⁸: 8 significant bits) change each product
// a·b by at most |a·b|·(2u + u²); the FP32 sums (k terms) add at most k·2⁻²⁴·Σ|a||b| on either
// side. So, element by element, |C_bf16 − C_f32| ≤ (2u + u² + 2k·2⁻²⁴)·(|A|·|B|): a bound that
// holds for every input, not a statistical one, and that k scales (the √k typical growth of
// random rounding errors is well inside it).
TEST_CASE("bf16: matmul and linear against the f32 product within the rounding bound, every layout") {
  const double u = 0x1p-8;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int64_t k : {5, 64, 300}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(k);
        const int64_t m = 7, n = 9;
        const Tensor a = random_values(ta ? Shape{2, k, m} : Shape{2, m, k}, 20 + k, -2.0f, 2.0f);
        const Tensor b = random_values(tb ? Shape{n, k} : Shape{k, n}, 21 + k, -2.0f, 2.0f);
        const Tensor want = matmul(a, b, ta, tb);
        const Tensor got = matmul(cast(a, DType::bf16), cast(b, DType::bf16), ta, tb);
        CHECK(got.dtype() == DType::f32);
        const std::vector<float> bound = matmul(abs_of(a), abs_of(b), ta, tb).to_vector_f32();
        const std::vector<float> w = want.to_vector_f32(), g = got.to_vector_f32();
        const double factor = 2 * u + u * u + 2.0 * double(k) * 0x1p-24;
        int bad = 0;
        double worst = 0;
        for (size_t e = 0; e < w.size(); ++e) {
          bad += std::fabs(double(g[e]) - w[e]) > factor * bound[e];
          worst = std::max(worst, std::fabs(double(g[e]) - w[e]) / bound[e]);
        }
        CHECK(bad == 0);
        // ... and the rounding is there: the bf16 product is not the f32 one.
        CHECK(worst > 0.0);
      }
  // linear: x and W in bf16, the bias f32.
  const Tensor x = random_values({3, 4, 33}, 30), w = random_values({6, 33}, 31), bias = random_values({6}, 32);
  const Tensor want = linear(x, w, bias);
  const Tensor got = linear(cast(x, DType::bf16), cast(w, DType::bf16), bias);
  const std::vector<float> bound = matmul(abs_of(x), abs_of(w), false, true).to_vector_f32();
  const std::vector<float> wv = want.to_vector_f32(), gv = got.to_vector_f32();
  for (size_t e = 0; e < wv.size(); ++e)
    CHECK(std::fabs(double(gv[e]) - wv[e]) <= (2 * u + u * u + 2 * 33 * 0x1p-24) * bound[e] + 1e-6);
  CHECK_THROWS_WITH_AS(matmul(cast(x, DType::bf16), w, false, true), doctest::Contains("both f32 or both bf16"), Error);
  CHECK_THROWS_WITH_AS(linear(x, cast(w, DType::bf16), bias), doctest::Contains("both f32 or both bf16"), Error);
}

// The CPU reference is exactly the f32 GEMM of the widened inputs (same code, same order).
TEST_CASE("bf16: the CPU's bf16 GEMM is the f32 GEMM of the rounded inputs, bit for bit") {
  const Tensor a = random_values({2, 37, 45}, 40), b = random_values({45, 67}, 41);
  const Tensor a16 = cast(a, DType::bf16), b16 = cast(b, DType::bf16);
  const Tensor got = matmul(a16, b16);
  const Tensor want = matmul(cast(a16, DType::f32), cast(b16, DType::f32));
  CHECK(got.to_vector_f32() == want.to_vector_f32());
}

// Backward with bf16 operands: g rounded to bf16, the gradient GEMMs in FP32, ∂A and ∂B rounded
// to bf16, then widened to the f32 leaves by the casts: the f32 reference, rounded where it says.
TEST_CASE("bf16: matmul backward rounds g, then each gradient, and a bf16 tensor used twice sums in FP32") {
  const Tensor a = random_param({4, 6}, 50), b = random_param({6, 5}, 51), c = random_param({6, 5}, 52);
  const Tensor a16 = cast(a, DType::bf16);
  // a16 feeds two products: its gradient is the bf16 sum of the two bf16 gradients.
  const Tensor out = add(matmul(a16, cast(b, DType::bf16)), matmul(a16, cast(c, DType::bf16)));
  const Tensor g = random_values({4, 5}, 53);
  out.backward(g);
  const auto round = [](const Tensor& t) { return cast(cast(t, DType::bf16), DType::f32); };
  const Tensor g16 = round(g), b16 = round(b), c16 = round(c), a16f = round(a);
  std::vector<float> want;
  {
    autograd::NoGrad no_grad;
    const std::vector<float> p = round(matmul(g16, b16, false, true)).to_vector_f32();
    const std::vector<float> q = round(matmul(g16, c16, false, true)).to_vector_f32();
    for (size_t k = 0; k < p.size(); ++k) want.push_back(to_float(to_bf16(p[k] + q[k])));
    CHECK(b.grad().to_vector_f32() == round(matmul(a16f, g16, true, false)).to_vector_f32());
  }
  CHECK(a.grad().to_vector_f32() == want);
}

// precision=bf16's linear layers: linear(x, W, b, bf16) with f32 x and W rounds them inside the op
// and hands back the gradient GEMMs' FP32 sums. Against linear(cast(x), cast(W), b) (the same
// GEMMs on the same rounded values, in the same order on the CPU): the output bit for bit, and
// gradients whose bf16 rounding is the cast path's, bit for bit: the fused op drops exactly the
// rounding of ∂x and ∂W (and the two passes that made and widened it), nothing else.
TEST_CASE("bf16: linear multiplying in bf16 from f32 x and W: the cast path's output, its gradients unrounded") {
  const auto round = [](const Tensor& t) { return cast(cast(t, DType::bf16), DType::f32); };
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    CAPTURE(with_bias);
    const Tensor x = random_param({3, 4, 33}, 70), w = random_param({6, 33}, 71), b = random_param({6}, 72);
    const Tensor xc = random_param({3, 4, 33}, 70), wc = random_param({6, 33}, 71), bc = random_param({6}, 72);
    const Tensor fused = linear(x, w, with_bias ? b : Tensor(), DType::bf16);
    const Tensor cast_path = linear(cast(xc, DType::bf16), cast(wc, DType::bf16), with_bias ? bc : Tensor());
    CHECK(fused.dtype() == DType::f32);
    CHECK(fused.to_vector_f32() == cast_path.to_vector_f32());
    const Tensor g = random_values({3, 4, 6}, 73);
    fused.backward(g);
    cast_path.backward(g);
    REQUIRE(x.grad().dtype() == DType::f32);
    REQUIRE(w.grad().dtype() == DType::f32);
    autograd::NoGrad no_grad;
    CHECK(round(x.grad()).to_vector_f32() == xc.grad().to_vector_f32());
    CHECK(round(w.grad()).to_vector_f32() == wc.grad().to_vector_f32());
    // ... and are the FP32 products of the rounded g, W and x themselves (not rounded again).
    CHECK(x.grad().to_vector_f32() == matmul(round(g), round(w)).to_vector_f32());
    CHECK(x.grad().to_vector_f32() != xc.grad().to_vector_f32());
    if (with_bias) CHECK(b.grad().to_vector_f32() == bc.grad().to_vector_f32());
  }
  const Tensor x = random_values({2, 5}, 74), w = random_values({3, 5}, 75);
  CHECK_THROWS_WITH_AS(linear(x, w, Tensor(), DType::i32), doctest::Contains("multiplies in f32 or bf16"), Error);
  // bf16 operands multiplying in bf16 are the plain bf16 call (gradients in bf16: their dtype).
  const Tensor x16 = cast(x, DType::bf16), w16 = cast(w, DType::bf16);
  CHECK(linear(x16, w16, Tensor(), DType::bf16).to_vector_f32() == linear(x16, w16, Tensor()).to_vector_f32());
}

TEST_CASE("bf16: checkpoints stay FP32: a bf16 tensor is refused by the safetensors writer") {
  const Tensor w = cast(random_values({2, 3}, 60), DType::bf16);
  CHECK_THROWS_WITH_AS(safetensors_header({{"w", w}}, {}), doctest::Contains("checkpoints keep the FP32 master"), Error);
}

// ---- activation memory (precision=bf16's policy, docs/cuda.md#mixed-precision) ----

// The peak tensor storage of one training step (forward, loss, backward, Adam) above what was live
// before it, from the host allocator's own high-water mark: deterministic, whatever the machine.
// A first step runs before, so Adam's moments and the parameter gradients' first allocations are
// not charged to the measured one; what remains is the activations the graph keeps for backward
// plus the step's transient tensors.
struct StepSize {
  int64_t layers, d_model, heads, d_ff, batch, n;
  float attention_dropout;
};
// Two steps of `loss_of` (forward and loss), backward and Adam on `params`; the second step's peak
// above what was live before it.
size_t two_step_peak(const ParameterSet& params, const std::function<Tensor()>& loss_of) {
  Adam adam(params.tensors());
  size_t peak = 0;
  for (int step = 0; step < 2; ++step) {
    adam.zero_grad();
    host::reset_peak();
    const size_t before = host::in_use_bytes();
    {
      Tensor loss = loss_of();
      loss.backward();
      adam.step(1e-3f);
    }
    peak = host::peak_bytes() - before;
  }
  return peak;
}

size_t step_peak_bytes(const StepSize& z, DType linear_dtype) {
  EncoderConfig c;
  c.seq_len = z.n;
  c.vocab = 11;
  c.layers = z.layers;
  c.d_model = z.d_model;
  c.heads = z.heads;
  c.d_ff = z.d_ff;
  c.num_classes = 8;
  c.dropout = 0.1f;
  c.attention_dropout = z.attention_dropout;
  c.pe = PositionalKind::urpe;
  c.attention = AttentionPath::materialized;
  c.linear_dtype = linear_dtype;
  const TransformerEncoder model(c, 7);
  Adam adam(model.parameters().tensors());
  const Tensor x = random_ids({z.batch, z.n}, c.vocab, 81), y = random_ids({z.batch * z.n}, c.num_classes, 82);
  Rng dropout_rng(11);
  size_t peak = 0;
  for (int step = 0; step < 2; ++step) {
    adam.zero_grad();
    host::reset_peak();
    const size_t before = host::in_use_bytes();
    {
      const Tensor logits = model.forward(x, true, &dropout_rng);  // (B, n, classes)
      Tensor loss = cross_entropy(reshape(logits, {z.batch * z.n, c.num_classes}), y);
      loss.backward();
      adam.step(1e-3f);
    }
    peak = host::peak_bytes() - before;
  }
  return peak;
}

TEST_CASE("bf16: activation memory: the peak tensor bytes of a training step, bf16 against fp32") {
  // A small encoder with every bf16 path (the FFN; the materialised attention with and without
  // attention dropout: without, the fp32 CPU runs the fused self-attention block, which keeps
  // no A, so fp32 holds less there). The sizes are deterministic (tensor storage, 64-byte size
  // classes): measured 0.830 without and 0.734 with attention dropout; the bounds say "bf16 saves
  // at least a tenth / a fifth" and fail if an activation falls back to f32. At this size the
  // parameter gradients and the f32 residual stream weigh more than at the mid-size below.
  for (const float attention_dropout : {0.0f, 0.1f}) {
    const StepSize z{2, 64, 4, 256, 4, 64, attention_dropout};
    const size_t fp32 = step_peak_bytes(z, DType::f32), bf16 = step_peak_bytes(z, DType::bf16);
    const double ratio = double(bf16) / double(fp32);
    MESSAGE("2 layers, d 64, 4 heads, d_ff 256, batch 4, n 64, attention dropout " << attention_dropout
            << ": fp32 " << fp32 << " B, bf16 " << bf16 << " B, ratio " << ratio);
    CHECK(ratio < (attention_dropout > 0 ? 0.8 : 0.9));
  }
}

// Transformer-XL's training step (relative attention with URPE's C, a memory as long as the
// segment, dropout and dropatt on), the step's segment reading the memory of one made before.
size_t txl_step_peak_bytes(int64_t layers, int64_t d_model, int64_t heads, int64_t batch, int64_t len, DType linear_dtype) {
  TransformerXLConfig c;
  c.vocab = 97;
  c.layers = layers;
  c.d_model = d_model;
  c.heads = heads;
  c.d_head = d_model / heads;
  c.d_inner = 4 * d_model;
  c.dropout = 0.1f;
  c.dropatt = 0.1f;
  c.tgt_len = c.mem_len = len;
  c.urpe = true;
  c.linear_dtype = linear_dtype;
  const TransformerXL model(c, 7);
  const Tensor tokens = random_ids({len, batch}, 97, 83), targets = random_ids({len, batch}, 97, 84);
  TxlMemory mems;
  {
    const autograd::NoGrad no_grad;
    mems = model.forward(tokens, targets, {}, false, nullptr).mems;
  }
  Rng dropout_rng(12);
  return two_step_peak(model.parameters(), [&] { return model.forward(tokens, targets, mems, true, &dropout_rng).loss; });
}

// Graphormer's training step (URPE, GV1's dropouts) on a batch of `graphs` copies of a drug-like
// molecule (25 atoms, 26 rows with the graph token).
size_t graphormer_step_peak_bytes(int64_t layers, int64_t d_model, int64_t heads, int64_t graphs, DType linear_dtype) {
  data::MoleculeDataset d;
  d.vocabulary = data::AtomVocabulary::zinc();
  const std::string smiles = "CC(C)(C)C1=CC=C(NNC(=O)C2CCC2)C=C1CC(=O)NC1CC1";
  std::vector<int64_t> rows;
  for (int64_t k = 0; k < graphs; ++k) {
    d.smiles.push_back(smiles);
    d.graphs.push_back(data::molecule_graph(data::parse_smiles(smiles), d.vocabulary));
    d.targets.push_back(0.25f * static_cast<float>(k));
    rows.push_back(k);
  }
  GraphormerConfig c;
  c.layers = layers;
  c.d_model = c.d_ffn = d_model;
  c.heads = heads;
  c.multi_hop_max_dist = 5;
  c.urpe = true;
  c.linear_dtype = linear_dtype;
  data::CollateOptions options;
  options.multi_hop_max_dist = 5;
  const data::GraphBatch batch = data::collate_graphs(d, rows, options);
  const Graphormer model(c, 7);
  Rng dropout_rng(13);
  return two_step_peak(model.parameters(), [&] { return model.loss(model.forward(batch, true, &dropout_rng), batch); });
}

TEST_CASE("bf16: activation memory of Transformer-XL's and Graphormer's training steps, bf16 against fp32") {
  // Deterministic sizes (tensor storage, the host allocator's size classes); the bounds fail if
  // the attention or the FFN falls back to f32 activations.
  {
    const size_t fp32 = txl_step_peak_bytes(2, 64, 4, 4, 32, DType::f32), bf16 = txl_step_peak_bytes(2, 64, 4, 4, 32, DType::bf16);
    const double ratio = double(bf16) / double(fp32);
    MESSAGE("Transformer-XL, 2 layers, d 64, 4 heads, d_inner 256, batch 4, tgt_len = mem_len 32: fp32 " << fp32
            << " B, bf16 " << bf16 << " B, ratio " << ratio);
    CHECK(ratio < 0.8);
  }
  {
    const size_t fp32 = graphormer_step_peak_bytes(2, 64, 4, 16, DType::f32),
                 bf16 = graphormer_step_peak_bytes(2, 64, 4, 16, DType::bf16);
    const double ratio = double(bf16) / double(fp32);
    MESSAGE("Graphormer, 2 layers, d 64, 4 heads, d_ffn 64, 16 graphs of 25 atoms: fp32 " << fp32 << " B, bf16 "
            << bf16 << " B, ratio " << ratio);
    CHECK(ratio < 0.8);
  }
}

// The same at larger sizes (docs/cuda.md#mixed-precision's table; a few seconds a step):
// test_bf16 --test-case="*larger Transformer-XL*" --no-skip
TEST_CASE("bf16: activation memory at a larger Transformer-XL and Graphormer" * doctest::skip()) {
  const size_t t32 = txl_step_peak_bytes(4, 256, 8, 8, 128, DType::f32), t16 = txl_step_peak_bytes(4, 256, 8, 8, 128, DType::bf16);
  MESSAGE("Transformer-XL, 4 layers, d 256, 8 heads, d_inner 1024, batch 8, tgt_len = mem_len 128: fp32 " << t32
          << " B, bf16 " << t16 << " B, ratio " << double(t16) / double(t32));
  const size_t g32 = graphormer_step_peak_bytes(12, 80, 8, 64, DType::f32),
               g16 = graphormer_step_peak_bytes(12, 80, 8, 64, DType::bf16);
  MESSAGE("Graphormer, 12 layers, d 80, 8 heads, d_ffn 80 (graphormer-slim), 64 graphs of 25 atoms: fp32 " << g32
          << " B, bf16 " << g16 << " B, ratio " << double(g16) / double(g32));
}

// The mid-size measurement of docs/cuda.md#mixed-precision (a few seconds per step on one core):
// test_bf16 --test-case="*mid-size*" --no-skip
TEST_CASE("bf16: activation memory at a mid-size encoder (4 layers, d 256, batch 8, n 256)" * doctest::skip()) {
  for (const float attention_dropout : {0.0f, 0.1f}) {
    const StepSize z{4, 256, 4, 1024, 8, 256, attention_dropout};
    const size_t fp32 = step_peak_bytes(z, DType::f32), bf16 = step_peak_bytes(z, DType::bf16);
    MESSAGE("4 layers, d 256, 4 heads, d_ff 1024, batch 8, n 256, attention dropout " << attention_dropout
            << ": fp32 " << fp32 << " B, bf16 " << bf16 << " B, ratio " << double(bf16) / double(fp32));
  }
}

TEST_CASE("bf16: linear with a shared bf16 copy of x (x_rounded) is the same op: output and gradients bit for bit") {
  for (const DType out : {DType::f32, DType::bf16}) {
    const Tensor x = random_param({2, 5, 33}, 90), w = random_param({7, 33}, 91), b = random_param({7}, 92);
    const Tensor xs = random_param({2, 5, 33}, 90), ws = random_param({7, 33}, 91), bs = random_param({7}, 92);
    Tensor x16;
    {
      const autograd::NoGrad no_grad;
      x16 = cast(xs, DType::bf16);
    }
    const Tensor own = linear(x, w, b, DType::bf16, out), shared = linear(xs, ws, bs, DType::bf16, out, x16);
    CHECK(own.dtype() == out);
    CHECK(own.to_vector_f32() == shared.to_vector_f32());
    const Tensor g = cast(random_values({2, 5, 7}, 93), out);
    own.backward(g);
    shared.backward(g);
    REQUIRE(xs.grad().dtype() == DType::f32);  // the FP32 sum, handed to the f32 x
    CHECK(x.grad().to_vector_f32() == xs.grad().to_vector_f32());
    CHECK(w.grad().to_vector_f32() == ws.grad().to_vector_f32());
    CHECK(b.grad().to_vector_f32() == bs.grad().to_vector_f32());
  }
  const Tensor x = random_values({2, 5}, 94), w = random_values({3, 5}, 95);
  CHECK_THROWS_WITH_AS(linear(x, w, Tensor(), DType::bf16, DType::f32, x), doctest::Contains("x_rounded"), Error);
  CHECK_THROWS_WITH_AS(linear(x, w, Tensor(), DType::f32, DType::bf16), doctest::Contains("needs multiply_in = bf16"),
                       Error);
}
