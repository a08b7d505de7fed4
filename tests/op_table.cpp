// The op table's rows: one per op case (tests/op_table.h says what a row holds and which checks
// it drives). Sizes: rows with every check are small enough for finite differences over every
// element; rows "at parity sizes" are odd and larger (rows not a multiple of 32, D = 67, more
// elements than one simulated grid, above the CPU kernels' OpenMP thresholds of ~32k elements)
// and leave the gradient check to the small row of the same op.
#include "op_table.h"

#include <cmath>
#include <limits>

#include "ops/activation.h"
#include "ops/cast.h"
#include "ops/dispatch.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/linear_cross_entropy.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/optimizer_kernels.h"
#include "ops/reduce.h"
#include "ops/relative_shift.h"
#include "ops/rotary.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "ops/urpe_attention.h"
#include "ops/urpe_flash_attention.h"
#include "ops/urpe_self_attention.h"
#include "autograd/node.h"
#include "models/positional.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace urpe::test {

// ---- building blocks ----

DTypeColumn f32(Tolerance forward, Tolerance backward, autograd::GradcheckOptions gradcheck) {
  return {DType::f32, forward, backward, gradcheck, {}};
}

DTypeColumn bf16_column(Tolerance forward, Tolerance backward, std::vector<size_t> cast_inputs) {
  return {DType::bf16, forward, backward, {}, std::move(cast_inputs)};
}

OpInput uniform(const std::string& name, const Shape& shape, float low, float high) {
  return {name, [=](uint64_t seed) {
            Rng rng(seed);
            return Tensor::uniform(shape, low, high, rng);
          },
          true};
}

OpInput signed_uniform(const std::string& name, const Shape& shape, float low, float high) {
  return {name, [=](uint64_t seed) {
            Rng rng(seed);
            Tensor t = Tensor::uniform(shape, low, high, rng);
            Rng signs(seed ^ 0x5157u);
            const Tensor s = Tensor::uniform(shape, -1.0f, 1.0f, signs);
            float* p = t.f32();
            const float* q = s.f32();
            for (int64_t k = 0; k < t.numel(); ++k) p[k] = q[k] < 0 ? -p[k] : p[k];
            return t;
          },
          true};
}

OpInput ids(const std::string& name, const Shape& shape, int32_t upper) {
  return {name, [=](uint64_t seed) {
            Rng rng(seed);
            std::vector<int32_t> v(static_cast<size_t>(shape_numel(shape)));
            for (auto& id : v) id = static_cast<int32_t>(rng.below(upper));
            return Tensor::from_vector(v, shape);
          },
          false};
}

OpInput given(const std::string& name, std::function<Tensor(uint64_t seed)> make) {
  return {name, std::move(make), false};
}

OpInput constant(OpInput input) {
  input.grad = false;
  return input;
}

OpRow row(std::string name, std::string op, std::vector<OpInput> inputs, OpCall call, DTypeColumn f32_column,
          CostFormula cost) {
  OpRow r;
  r.name = std::move(name);
  r.op = std::move(op);
  r.inputs = std::move(inputs);
  r.call = std::move(call);
  r.dtypes = {f32_column};
  r.cost = std::move(cost);
  return r;
}

// FNV-1a of the row's name: each row draws its own values, the same on every machine.
static uint64_t name_seed(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<Tensor> make_inputs(const OpRow& r) {
  std::vector<Tensor> out;
  const uint64_t base = name_seed(r.name);
  for (size_t k = 0; k < r.inputs.size(); ++k) out.push_back(r.inputs[k].make(base + 7919 * (k + 1)));
  return out;
}

namespace {

using In = std::vector<Tensor>;
using kernels::BinaryOp;
using profile::Cost;

int64_t rows_of(const Tensor& t) { return t.numel() / t.size(-1); }

// ---- cost formulas that mirror an op's calls (ops/*.cpp) ----

// add and sub hand g over to an operand that has the output's shape (no kernel, no cost).
OpCosts binary_costs(BinaryOp op, const Tensor& a, const Tensor& b) {
  const Shape out = a.numel() >= b.numel() ? a.shape() : b.shape();
  const bool reads_values = op == BinaryOp::mul || op == BinaryOp::div;
  const bool pass_a = !reads_values && a.shape() == out;
  const bool pass_b = !pass_a && op == BinaryOp::add && b.shape() == out;
  OpCosts c{binary_forward_cost(a.numel(), b.numel()), {}};
  if (!pass_a || !pass_b) c.backward = binary_backward_cost(op, a.numel(), b.numel(), !pass_a, !pass_b);
  return c;
}

// The operands of ops/matmul.cpp's GEMMs: rows × cols, batch stride (0: one matrix for all).
struct Operand {
  int64_t rows, cols, stride;
};
// bf16: the operands are bf16 (2 bytes an element; gemm_cost reads only whether they are set).
Cost gemm(const Operand& x, bool tx, const Operand& y, bool ty, int64_t batch, bool accumulate, bool bf16_operands = false) {
  static const bf16 marker{};
  kernels::GemmArgs g;
  if (bf16_operands) g.a_bf16 = g.b_bf16 = &marker;
  g.trans_a = tx;
  g.trans_b = ty;
  g.m = tx ? x.cols : x.rows;
  g.k = tx ? x.rows : x.cols;
  g.n = ty ? y.rows : y.cols;
  g.stride_a = x.stride;
  g.stride_b = y.stride;
  g.batch = batch;
  g.beta = accumulate ? 1.0f : 0.0f;
  return gemm_cost(g);
}

OpCosts matmul_costs(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const bool shared = b.dim() == 2;
  const int64_t m = ta ? a.size(-1) : a.size(-2), n = tb ? b.size(-2) : b.size(-1);
  const int64_t batch = a.numel() / (a.size(-2) * a.size(-1));
  const Operand oa{a.size(-2), a.size(-1), a.size(-2) * a.size(-1)};
  const Operand ob{b.size(-2), b.size(-1), shared ? 0 : b.size(-2) * b.size(-1)};
  const Operand og{m, n, m * n};
  OpCosts c;
  c.forward = shared && !ta ? gemm({oa.rows * batch, oa.cols, oa.stride}, false, ob, tb, 1, false)
                            : gemm(oa, ta, ob, tb, batch, false);
  // ∂A
  if (!ta) c.backward += gemm(shared ? Operand{m * batch, n, 0} : og, false, ob, !tb, shared ? 1 : batch, false);
  else c.backward += gemm(ob, tb, og, true, batch, false);
  // ∂B
  if (shared && !ta) {
    const Operand a_rows{oa.rows * batch, oa.cols, 0}, g_rows{m * batch, n, 0};
    c.backward += tb ? gemm(g_rows, true, a_rows, false, 1, false) : gemm(a_rows, true, g_rows, false, 1, false);
  } else {
    const int64_t calls = shared ? batch : 1, per_call = shared ? 1 : batch;
    for (int64_t i = 0; i < calls; ++i)
      c.backward += tb ? gemm(og, true, oa, ta, per_call, i > 0) : gemm(oa, !ta, og, false, per_call, i > 0);
  }
  return c;
}

OpCosts linear_costs(const Tensor& x, const Tensor& w) {
  const int64_t rows = rows_of(x), in = w.size(1), out = w.size(0);
  const Operand x_rows{rows, in, 0}, wo{out, in, 0}, g_rows{rows, out, 0};
  return {broadcast_axis_cost(1, rows, out, 1.0f) + gemm(x_rows, false, wo, true, 1, true),
          gemm(g_rows, false, wo, false, 1, false) + gemm(g_rows, true, x_rows, false, 1, false) +
              sum_axis_cost(1, rows, out)};
}

// linear(x, W, b, bf16) from f32 x and W: both rounded, the bf16 GEMMs (β = 1 onto the bias, or
// β = 0 without one); backward rounds g, then the two GEMMs, whose f32 outputs are the gradients.
// A bf16 output (out_bf16): y rounded once after the bias (one cast pass), and its gradient
// arrives in bf16, so backward rounds nothing; a bias sum widens it first (one cast pass). A bf16
// x (the FFN's second layer) is not rounded again; its ∂x is the GEMM's sum rounded (one pass).
OpCosts linear_bf16_costs(const Tensor& x, const Tensor& w, bool with_bias, bool out_bf16 = false) {
  const int64_t rows = rows_of(x), in = w.size(1), out = w.size(0);
  const Operand x_rows{rows, in, 0}, wo{out, in, 0}, g_rows{rows, out, 0};
  const bool x_bf16 = x.dtype() == DType::bf16;
  OpCosts c{cast_cost(w.numel()) + gemm(x_rows, false, wo, true, 1, with_bias, true),
            gemm(g_rows, false, wo, false, 1, false, true) + gemm(g_rows, true, x_rows, false, 1, false, true)};
  if (!x_bf16) c.forward += cast_cost(x.numel());
  if (x_bf16) c.backward += cast_cost(x.numel());
  if (out_bf16) c.forward += cast_cost(rows * out);
  if (out_bf16 && with_bias) c.forward += cast_cost(out);  // the bias rounded to bf16 (b̃)
  if (!out_bf16 || with_bias) c.backward += cast_cost(rows * out);
  if (with_bias) {
    c.forward += broadcast_axis_cost(1, rows, out, 1.0f);
    c.backward += sum_axis_cost(1, rows, out);
  }
  return c;
}

OpCosts reduce_costs(const Tensor& x, int axis, bool average) {
  const int a = axis < 0 ? axis + x.dim() : axis;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < x.dim(); ++d) {
    if (d < a) outer *= x.size(d);
    if (d > a) inner *= x.size(d);
  }
  const int64_t n = x.size(a);
  return {sum_axis_cost(outer, n, inner), broadcast_axis_cost(outer, n, inner, average ? 1.0f / float(n) : 1.0f)};
}

OpCosts same_both_ways(Cost c) { return {c, c}; }

// ---- the attention rows: scores (or q, k, v), the tables, then the maps and the padding ----

struct AttentionSpec {
  int64_t batch, heads, nq, nk;
  bool bias, c;
  int map_kind;  // 0: Toeplitz (Nq, Nk); 1: per-batch Toeplitz; 2: random buckets (Nq, Nk);
                 // 3: random buckets (Bsz, Nq, Nk); 4: T5 buckets; 5: random relative buckets
                 // (Nq + Nk − 1,); 6: the Toeplitz relative map (Nq + Nk − 1,) (fused op only)
  int64_t buckets;  // kinds 2, 3 and 5
  bool padding, causal;
  int64_t causal_offset;
  AttentionNorm norm;
  float scale;
};

int64_t table_size(const AttentionSpec& s) {
  if (s.map_kind == 4) return relative_bucket_count(s.nq, RelativeKind::bucketed);
  if (s.map_kind <= 1 || s.map_kind == 6) return s.nq + s.nk - 1;
  return s.buckets;
}

Tensor attention_map(const AttentionSpec& s, uint64_t seed) {
  Rng rng(seed);
  auto random_map = [&](const Shape& shape) {
    std::vector<int32_t> v(static_cast<size_t>(shape_numel(shape)));
    for (auto& e : v) e = static_cast<int32_t>(rng.below(static_cast<int32_t>(s.buckets)));
    return Tensor::from_vector(v, shape);
  };
  switch (s.map_kind) {
    case 0: return toeplitz_map(s.nq, s.nk);
    case 1: {
      const std::vector<int32_t> one = toeplitz_map(s.nq, s.nk).to_vector_i32();
      std::vector<int32_t> v;
      for (int64_t b = 0; b < s.batch; ++b) v.insert(v.end(), one.begin(), one.end());
      return Tensor::from_vector(v, {s.batch, s.nq, s.nk});
    }
    case 2: return random_map({s.nq, s.nk});
    case 3: return random_map({s.batch, s.nq, s.nk});
    case 4: return relative_bucket_map(s.nq, RelativeKind::bucketed, true);
    case 5: return random_map({s.nq + s.nk - 1});
    default: return toeplitz_relative_map(s.nq, s.nk);
  }
}

// Batch item 0 fully padded (its rows are fully masked), the others their last 3 keys.
Tensor padding_mask(const AttentionSpec& s) {
  std::vector<int32_t> pad(static_cast<size_t>(s.batch * s.nk), 0);
  for (int64_t j = 0; j < s.nk; ++j) pad[j] = 1;
  for (int64_t b = 1; b < s.batch; ++b)
    for (int64_t j = std::max<int64_t>(0, s.nk - 3); j < s.nk; ++j) pad[b * s.nk + j] = 1;
  return Tensor::from_vector(pad, {s.batch, s.nk});
}

// The table, map and padding inputs after the `first` leading ones, and the params built back
// from them on whatever device they are.
std::vector<OpInput> attention_extras(const AttentionSpec& s) {
  std::vector<OpInput> in;
  const int64_t k = table_size(s);
  if (s.bias) in.push_back(uniform("bias_table", {s.heads, k}, -2.0f, 2.0f));
  if (s.c) in.push_back(signed_uniform("c_table", {s.heads, k}, 0.2f, 1.8f));
  if (s.bias) in.push_back(given("bias_map", [s](uint64_t seed) { return attention_map(s, seed); }));
  if (s.c) in.push_back(given("c_map", [s](uint64_t seed) { return attention_map(s, seed); }));
  if (s.padding) in.push_back(given("key_padding", [s](uint64_t) { return padding_mask(s); }));
  return in;
}

UrpeAttentionParams attention_params(const AttentionSpec& s, const In& v, size_t first) {
  UrpeAttentionParams p;
  p.scale = s.scale;
  size_t k = first;
  if (s.bias) p.bias_table = v[k++];
  if (s.c) p.c_table = v[k++];
  if (s.bias) p.bias_map = v[k++];
  if (s.c) p.c_map = v[k++];
  if (s.padding) p.key_padding = v[k++];
  p.causal = s.causal;
  p.causal_offset = s.causal_offset;
  p.norm = s.norm;
  return p;
}

// The core's bf16 column (bf16 scores; P, A, ∂S bf16; the tables f32). Forward: P and A are FP32
// values (the CPU's exp_fast against CUDA's expf, 1e-7 apart) rounded once, so one bf16 step
// (2⁻⁷ relative) where they straddle a rounding boundary. Backward: each device reads its own
// rounded P, and a P one step apart moves the row's r = Σ P·dP by up to 2⁻⁸·P·|dP| (|dP| ≤ 1.8
// here), which dZ = P·(dP − r) carries in absolute terms and the table gradients sum over their
// cells: 10⁻³ absolute (against values of order 1) plus two bf16 steps (2⁻⁶: ∂S is rounded after
// an FP32 value that already differs by one step of P).
DTypeColumn attention_bf16_column() { return bf16_column({1e-6, 0x1p-7}, {1e-3, 0x1p-6}, {0}); }

OpRow attention_row(const std::string& what, const AttentionSpec& s, Tolerance fwd, Tolerance bwd,
                    autograd::GradcheckOptions g = {}) {
  std::vector<OpInput> in{uniform("scores", {s.batch, s.heads, s.nq, s.nk}, -3.0f, 3.0f)};
  for (OpInput& e : attention_extras(s)) in.push_back(e);
  return row("urpe_attention, " + what, "urpe_attention", in,
             [s](const In& v, const Device&) { return urpe_attention(v[0], attention_params(s, v, 1)); },
             f32(fwd, bwd, g), [s](const In& v) {
               const UrpeAttentionParams p = attention_params(s, v, 1);
               const AttentionCostSizes z = attention_cost_sizes(s.batch, s.heads, s.nq, s.nk, p);
               return OpCosts{urpe_attention_forward_cost(z, true), urpe_attention_backward_cost(z, s.bias, s.c)};
             })
      .with(attention_bf16_column());
}

// The fused attention's bf16 column (bf16 q, k, v; O, ∂q, ∂k, ∂v bf16; L and the tables' gradients
// f32), CPU against the scalar CUDA path, both of which widen q, k, v, compute in FP32 and round
// O and the gradients once. Forward: O is an FP32 value (CPU and CUDA 1e-6 apart) rounded once,
// so one bf16 step (2⁻⁷ relative) where the two straddle a rounding boundary. Backward: each
// device reads its own rounded O in D_i = dO_i·O_i, one step apart at most, which moves dZ =
// P·(C·κ·dA − D) by up to 2⁻⁸·P·|dO|·|O| in absolute terms and the table gradients by the sum of
// that over their cells: the core's column's bound, 10⁻³ absolute plus two bf16 steps (2⁻⁶).
// (CPU bf16 against CPU f32: test_urpe_flash_attention; the BF16 tiles: the tensor-core suite.)
DTypeColumn flash_bf16_column() { return bf16_column({1e-5, 0x1p-7}, {1e-3, 0x1p-6}, {0, 1, 2}); }

OpRow flash_row(const std::string& what, const AttentionSpec& s, int64_t dh, int64_t dv, float dropout,
                Tolerance fwd, Tolerance bwd, autograd::GradcheckOptions g = {}) {
  std::vector<OpInput> in{uniform("q", {s.batch, s.heads, s.nq, dh}, -1.5f, 1.5f),
                          uniform("k", {s.batch, s.heads, s.nk, dh}, -1.5f, 1.5f),
                          uniform("v", {s.batch, s.heads, s.nk, dv})};
  for (OpInput& e : attention_extras(s)) in.push_back(e);
  const AttentionDropout drop{dropout, 161};
  return row("urpe_flash_attention, " + what, "urpe_flash_attention", in,
             [s, drop](const In& v, const Device&) {
               return urpe_flash_attention(v[0], v[1], v[2], attention_params(s, v, 3), drop);
             },
             f32(fwd, bwd, g), [s, dh, dv](const In& v) {
               const UrpeAttentionParams p = attention_params(s, v, 3);
               const AttentionCostSizes z = attention_cost_sizes(s.batch, s.heads, s.nq, s.nk, p);
               return OpCosts{urpe_flash_attention_forward_cost(z, dh, dv, true),
                              urpe_flash_attention_backward_cost(z, dh, dv, s.bias, s.c)};
             })
      .with(flash_bf16_column());
}

// The encoder's fused self-attention block: x, the projections, [L,] then the attention extras.
OpRow self_attention_row(const std::string& what, const AttentionSpec& s, int64_t d, int64_t D, bool logit) {
  std::vector<OpInput> in{uniform("x", {s.batch, s.nq, d})};
  for (const char* w : {"wq", "wk", "wv"}) in.push_back(uniform(w, {D, d}, -0.7f, 0.7f));
  for (const char* b : {"bq", "bk", "bv"}) in.push_back(uniform(b, {D}, -0.2f, 0.2f));
  if (logit) in.push_back(uniform("logit_bias", {s.batch, s.heads, s.nq, s.nk}));
  for (OpInput& e : attention_extras(s)) in.push_back(e);
  const size_t first = logit ? 8 : 7;
  return row("urpe_self_attention, " + what, "urpe_self_attention", in,
             [s, logit, first](const In& v, const Device&) {
               return urpe_self_attention(v[0], {v[1], v[2], v[3], v[4], v[5], v[6]}, s.heads,
                                          attention_params(s, v, first), logit ? v[7] : Tensor());
             },
             f32({1e-5, 1e-4}, {1e-5, 1e-4}), [s, d, D, logit, first](const In& v) {
               const AttentionCostSizes z = attention_cost_sizes(s.batch, s.heads, s.nq, s.nk, attention_params(s, v, first));
               const int64_t rows = s.batch * s.nq, dh = D / s.heads;
               return OpCosts{urpe_self_attention_forward_cost(rows, d, dh, z, true, logit),
                              urpe_self_attention_backward_cost(rows, d, dh, z, s.bias, s.c, logit)};
             });
}

// ---- argmax_last's input: random rows with planted ties and NaNs ----

Tensor with_ties_and_nans(const Shape& shape, uint64_t seed) {
  Rng rng(seed);
  Tensor x = Tensor::uniform(shape, -1.0f, 1.0f, rng);
  float* p = x.f32();
  const int64_t cols = shape.back(), rows = x.numel() / cols;
  for (int64_t r = 0; r < rows; ++r) {  // two equal maxima, and a NaN at the front of every third row
    p[r * cols + (r * 7) % cols] = 2.0f;
    p[r * cols + (r * 13 + 1) % cols] = 2.0f;
    if (r % 3 == 0) p[r * cols] = std::numeric_limits<float>::quiet_NaN();
  }
  return x;
}

// ---- softmax's input: masked entries (−∞) and one fully masked row ----

Tensor with_masked_entries(const Shape& shape, uint64_t seed) {
  Rng rng(seed);
  Tensor x = Tensor::uniform(shape, -5.0f, 5.0f, rng);
  float* p = x.f32();
  const int64_t n = shape.back();
  for (int64_t k = 0; k < x.numel(); k += 7) p[k] = -INFINITY;
  for (int64_t j = 0; j < n; ++j) p[5 * n + j] = -INFINITY;
  return x;
}

// ---- the rows ----

std::vector<OpRow> build_table() {
  std::vector<OpRow> t;
  const Tolerance exact{0, 0};

  // ---- elementwise (ops/elementwise.h) ----
  const struct { BinaryOp op; const char* name; Tensor (*fn)(const Tensor&, const Tensor&); } binaries[] = {
      {BinaryOp::add, "add", add}, {BinaryOp::sub, "sub", sub}, {BinaryOp::mul, "mul", mul}, {BinaryOp::div, "div", div}};
  for (const auto& b : binaries) {
    auto fn = b.fn;
    const BinaryOp op = b.op;
    // Small, every check: a against a trailing-dims operand and against a vector (both orders),
    // values in ±[0.5, 1.5) (away from 0 for div).
    for (const Shape& partner : {Shape{3, 5}, Shape{5}})
      for (int swap = 0; swap < 2; ++swap) {
        const OpInput big = signed_uniform("a", {2, 3, 5}, 0.5f, 1.5f), small = signed_uniform("b", partner, 0.5f, 1.5f);
        t.push_back(row(std::string(b.name) + " (2, 3, 5) with " + shape_str(partner) + (swap ? ", swapped" : ""),
                        b.name, swap ? std::vector<OpInput>{small, big} : std::vector<OpInput>{big, small},
                        [fn](const In& v, const Device&) { return fn(v[0], v[1]); },
                        f32({1e-6, 1e-6}, {1e-5, 1e-5}),
                        [op](const In& v) { return binary_costs(op, v[0], v[1]); }));
      }
    // At parity sizes: every broadcast partner of (3, 37, 67), both orders.
    for (const Shape& partner : {Shape{3, 37, 67}, Shape{37, 67}, Shape{67}})
      for (int swap = 0; swap < 2; ++swap) {
        if (swap && partner.size() == 3) continue;  // the same shapes: swapping changes nothing
        const OpInput big = signed_uniform("a", {3, 37, 67}, 0.5f, 1.5f), small = signed_uniform("b", partner, 0.5f, 1.5f);
        t.push_back(row(std::string(b.name) + " (3, 37, 67) with " + shape_str(partner) + (swap ? ", swapped" : ""),
                        b.name, swap ? std::vector<OpInput>{small, big} : std::vector<OpInput>{big, small},
                        [fn](const In& v, const Device&) { return fn(v[0], v[1]); },
                        f32({1e-6, 1e-6}, {1e-5, 1e-5}),
                        [op](const In& v) { return binary_costs(op, v[0], v[1]); })
                        .without(kGradcheck));
      }
  }
  // Only b differentiated: the backward kernels asked for one gradient (∂a not written).
  for (const auto& b : binaries) {
    auto fn = b.fn;
    const BinaryOp op = b.op;
    t.push_back(row(std::string(b.name) + " (3, 37, 67) with (37, 67), only b differentiated", b.name,
                    {constant(signed_uniform("a", {3, 37, 67}, 0.5f, 1.5f)), signed_uniform("b", {37, 67}, 0.5f, 1.5f)},
                    [fn](const In& v, const Device&) { return fn(v[0], v[1]); }, f32({1e-6, 1e-6}, {1e-5, 1e-5}),
                    [op](const In& v) {
                      return OpCosts{binary_forward_cost(v[0].numel(), v[1].numel()),
                                     binary_backward_cost(op, v[0].numel(), v[1].numel(), false, true)};
                    })
                    .without(kGradcheck));
  }
  // bf16 operands (ops/elementwise.h): both bf16 (a bf16 result, FP32 arithmetic rounded once:
  // one bf16 step where the devices' FP32 values could straddle a boundary, though both compute
  // the same IEEE operation), or one bf16 and one f32 (promoted to f32: exact). The gradients sum
  // a broadcast operand's repeats in the same order in double on both devices.
  for (const auto& b : binaries) {
    auto fn = b.fn;
    const BinaryOp op = b.op;
    for (const Shape& partner : {Shape{3, 37, 67}, Shape{67}}) {
      const OpInput big = signed_uniform("a", {3, 37, 67}, 0.5f, 1.5f), small = signed_uniform("b", partner, 0.5f, 1.5f);
      t.push_back(row(std::string(b.name) + " (3, 37, 67) with " + shape_str(partner) + ", bf16 operands", b.name,
                      {big, small}, [fn](const In& v, const Device&) { return fn(v[0], v[1]); },
                      f32({1e-6, 1e-6}, {1e-5, 1e-5}), [op](const In& v) { return binary_costs(op, v[0], v[1]); })
                      .without(kGradcheck)
                      .with(bf16_column({1e-6, 0x1p-7}, {1e-5, 0x1p-7}, {0, 1}))    // bf16 ∘ bf16 → bf16
                      .with(bf16_column({1e-6, 1e-6}, {1e-5, 0x1p-7}, {1})));      // f32 ∘ bf16 → f32
    }
  }
  // add over more elements than one simulated grid (43 × 1031 = 44,333), broadcast rows.
  t.push_back(row("add (43, 1031) with (1031,)", "add", {uniform("a", {43, 1031}), uniform("b", {1031})},
                  [](const In& v, const Device&) { return add(v[0], v[1]); }, f32({1e-6, 1e-5}, {1e-4, 1e-4}),
                  [](const In& v) { return binary_costs(BinaryOp::add, v[0], v[1]); })
                  .without(kGradcheck));
  // A broadcast operand of few elements and many repeats (37 elements, 3000 repeats: pass 1 sums
  // chunks of 2 repeats), f32 and bf16: Transformer-XL's head biases beside its bf16 q are this shape.
  t.push_back(row("add (3000, 37) with (37,)", "add", {uniform("a", {3000, 37}), uniform("b", {37})},
                  [](const In& v, const Device&) { return add(v[0], v[1]); }, f32({1e-6, 1e-5}, {1e-4, 1e-4}),
                  [](const In& v) { return binary_costs(BinaryOp::add, v[0], v[1]); })
                  .without(kGradcheck)
                  .with(bf16_column({1e-6, 0x1p-7}, {1e-5, 0x1p-7}, {0, 1}))    // bf16 + bf16 → bf16
                  .with(bf16_column({1e-6, 1e-6}, {1e-5, 0x1p-7}, {0})));       // bf16 + f32 → f32
  // affine: y = αx + β.
  t.push_back(row("affine (2, 3, 5)", "affine", {uniform("x", {2, 3, 5})},
                  [](const In& v, const Device&) { return affine(v[0], -1.5f, 0.25f); },
                  f32({1e-6, 1e-6}, {1e-5, 1e-5}),
                  [](const In& v) { return OpCosts{affine_cost(v[0].numel(), false), affine_cost(v[0].numel(), true)}; })
                  .with(bf16_column({1e-6, 0x1p-7}, {1e-6, 0x1p-7}, {0})));
  // affine over a million elements (many grid-stride turns), forward only: its backward is the
  // same kernel, which the row above checks.
  t.push_back(row("affine (1000003,)", "affine", {constant(uniform("x", {1000003}))},
                  [](const In& v, const Device&) { return affine(v[0], 0.75f, -2.0f); },
                  f32({1e-6, 1e-6}, {1e-6, 1e-6}),
                  [](const In& v) { return OpCosts{affine_cost(v[0].numel(), false), {}}; })
                  .without(kGradcheck)
                  .no_backward());

  // ---- matmul and linear (ops/matmul.h) ----
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int shared = 0; shared < 2; ++shared)
        for (int big = 0; big < 2; ++big) {
          // Small: (2, 3, 5)·(5, 4); at parity sizes (2, 37, 45)·(45, 67). B batched or shared.
          const int64_t M = big ? 37 : 3, K = big ? 45 : 5, N = big ? 67 : 4;
          const Shape a = ta ? Shape{2, K, M} : Shape{2, M, K};
          const Shape b = shared ? (tb ? Shape{N, K} : Shape{K, N}) : (tb ? Shape{2, N, K} : Shape{2, K, N});
          const std::string name = std::string("matmul, ") + (ta ? "Aᵀ" : "A") + "·" + (tb ? "Bᵀ" : "B") +
                                   (shared ? ", shared B" : ", batched") + (big ? ", (37, 45, 67)" : ", (3, 5, 4)");
          OpRow r = row(name, "matmul", {uniform("a", a), uniform("b", b)},
                        [ta, tb](const In& v, const Device&) { return matmul(v[0], v[1], ta, tb); },
                        f32({1e-4, 1e-4}, {1e-4, 1e-4}),
                        [ta, tb](const In& v) { return matmul_costs(v[0], v[1], ta, tb); });
          if (big) r.without(kGradcheck);
          // bf16 operands: both sides multiply the same rounded inputs exactly and sum in FP32
          // (forward: f32 bounds); ∂A and ∂B are rounded to bf16, where a sum that differs in
          // its last f32 bits may round the other way: one bf16 ulp, 2⁻⁷ relative at most.
          r.with(bf16_column({1e-4, 1e-4}, {1e-4, 0x1p-7}, {0, 1}));
          t.push_back(r);
        }
  // One operand in two products, C = A·B + A·D: A's gradient is the sum of two (in the bf16
  // column, of two bf16 gradients, summed in FP32 and rounded once: autograd's accumulation).
  t.push_back(row("matmul, A·B + A·D, A used twice", "matmul",
                  {uniform("a", {2, 9, 13}), uniform("b", {13, 11}), uniform("d", {13, 11})},
                  [](const In& v, const Device&) { return add(matmul(v[0], v[1]), matmul(v[0], v[2])); },
                  f32({1e-4, 1e-4}, {1e-4, 1e-4}),
                  [](const In& v) {
                    const OpCosts p = matmul_costs(v[0], v[1], false, false), q = matmul_costs(v[0], v[2], false, false);
                    return OpCosts{p.forward + q.forward, p.backward + q.backward};
                  })
                  .with(bf16_column({1e-4, 1e-4}, {1e-4, 0x1p-6}, {0, 1, 2})));
  // linear with a bias: y = x·Wᵀ + b (small, then at parity sizes). On CUDA every linear row with
  // a bias or a bf16 output runs cuBLASLt (the bias its epilogue, β = 0; a bf16 y written by it;
  // ∂b from a bf16 g read as bf16), against the CPU's bias rows + β = 1 (+ a rounding pass): the
  // same rounded products summed in FP32 in other orders, so the bounds below are unchanged.
  for (int big = 0; big < 2; ++big) {
    const int64_t R = big ? 37 : 3, I = big ? 45 : 5, O = big ? 67 : 4;
    OpRow r = row(big ? "linear (3, 37, 45)·(67, 45)ᵀ + (67,)" : "linear (2, 3, 5)·(4, 5)ᵀ + (4,)", "linear",
                  {uniform("x", {big ? 3 : 2, R, I}), uniform("weight", {O, I}), uniform("bias", {O})},
                  [](const In& v, const Device&) { return linear(v[0], v[1], v[2]); },
                  f32({1e-4, 1e-4}, {1e-4, 1e-4}), [](const In& v) { return linear_costs(v[0], v[1]); });
    if (big) r.without(kGradcheck);
    r.with(bf16_column({1e-4, 1e-4}, {1e-4, 0x1p-7}, {0, 1}));  // x and W in bf16, the bias f32 (as matmul's)
    t.push_back(r);
  }
  // linear multiplying in bf16 from f32 x and W (precision=bf16's layers): rounded inside the op,
  // the gradients the FP32 GEMM sums themselves. Both devices multiply the same rounded values
  // and sum in FP32 (in other orders): f32 bounds both ways. No gradient check: the rounding is a
  // step function (test_bf16 checks the gradients against the cast path bit for bit).
  for (int big = 0; big < 2; ++big)
    for (int with_bias = 0; with_bias < 2; ++with_bias) {
      const int64_t R = big ? 37 : 3, I = big ? 45 : 5, O = big ? 67 : 4;
      std::vector<OpInput> in = {uniform("x", {big ? 3 : 2, R, I}), uniform("weight", {O, I})};
      if (with_bias) in.push_back(uniform("bias", {O}));
      const std::string name = std::string("linear multiplied in bf16, f32 ") +
                               (big ? "(3, 37, 45)·(67, 45)ᵀ" : "(2, 3, 5)·(4, 5)ᵀ") + (with_bias ? " + bias" : ", no bias");
      t.push_back(row(name, "linear", in,
                      [with_bias](const In& v, const Device&) {
                        return linear(v[0], v[1], with_bias ? v[2] : Tensor(), DType::bf16);
                      },
                      f32({1e-4, 1e-4}, {1e-4, 1e-4}),
                      [with_bias](const In& v) { return linear_bf16_costs(v[0], v[1], with_bias != 0); })
                      .without(kGradcheck));
    }

  // linear with a bf16 output (precision=bf16's FFN: fc1 returns bf16 for gelu, fc2 reads it):
  // y is the FP32 sum rounded once, so the two devices may differ by one bf16 step where their
  // FP32 sums (other orders) straddle a rounding boundary (2⁻⁷ relative, plus an atol for sums
  // that cancel to near zero); the gradients are FP32 sums of the same rounded operands (10⁻⁴),
  // ∂x of a bf16 x rounded once more (2⁻⁷). The row casts x itself (a cast op of its own).
  for (int x_bf16 = 0; x_bf16 < 2; ++x_bf16)
    for (int with_bias = 0; with_bias < 2; ++with_bias) {
      const bool big = x_bf16 == with_bias;
      const int64_t R = big ? 37 : 3, I = big ? 45 : 5, O = big ? 67 : 4;
      std::vector<OpInput> in = {uniform("x", {big ? 3 : 2, R, I}), uniform("weight", {O, I})};
      if (with_bias) in.push_back(uniform("bias", {O}));
      const std::string name = std::string("linear multiplied in bf16, bf16 out, ") + (x_bf16 ? "bf16 " : "f32 ") +
                               (big ? "(3, 37, 45)·(67, 45)ᵀ" : "(2, 3, 5)·(4, 5)ᵀ") + (with_bias ? " + bias" : ", no bias");
      t.push_back(row(name, "linear", in,
                      [with_bias, x_bf16](const In& v, const Device&) {
                        const Tensor x = x_bf16 ? cast(v[0], DType::bf16) : v[0];
                        return linear(x, v[1], with_bias ? v[2] : Tensor(), DType::bf16, DType::bf16);
                      },
                      f32({1e-5, 0x1p-7}, {1e-4, x_bf16 ? 0x1p-7 : 1e-4}),
                      [with_bias, x_bf16](const In& v) {
                        const Tensor x = x_bf16 ? Tensor::empty(v[0].shape(), DType::bf16) : v[0];
                        return linear_bf16_costs(x, v[1], with_bias != 0, true);
                      })
                      .without(kGradcheck));
    }

  // ---- cast (ops/cast.h) ----
  // f32 → bf16, bit-exact (round to nearest even on both devices: the simulator's <cuda_bf16.h>
  // is a second implementation), and the round trip; values over several binades. No gradient
  // check: rounding is a step function, its derivative the straight-through 1 (test_bf16 checks
  // ∂x = g exactly).
  for (int big = 0; big < 2; ++big) {
    const Shape s = big ? Shape{3, 37, 67} : Shape{2, 3, 5};
    const std::string size = big ? " (3, 37, 67)" : " (2, 3, 5)";
    t.push_back(row("cast f32 → bf16" + size, "cast", {signed_uniform("x", s, 1e-3f, 300.0f)},
                    [](const In& v, const Device&) { return cast(v[0], DType::bf16); }, f32({0, 0}, {0, 0}),
                    [](const In& v) { return same_both_ways(cast_cost(v[0].numel())); })
                    .without(kGradcheck));
    t.push_back(row("cast f32 → bf16 → f32" + size, "cast", {signed_uniform("x", s, 1e-3f, 300.0f)},
                    [](const In& v, const Device&) { return cast(cast(v[0], DType::bf16), DType::f32); },
                    f32({0, 0}, {0, 0}),
                    [](const In& v) {
                      const Cost c = cast_cost(v[0].numel());
                      return same_both_ways(c + c);
                    })
                    .without(kGradcheck));
  }

  // ---- reductions (ops/reduce.h) ----
  for (int big = 0; big < 2; ++big) {
    const Shape s = big ? Shape{3, 37, 67} : Shape{3, 4, 5};
    const std::string size = big ? " (3, 37, 67)" : " (3, 4, 5)";
    for (int axis = -3; axis < 3; ++axis) {
      OpRow r = row("sum, axis " + std::to_string(axis) + size, "sum", {uniform("x", s)},
                    [axis](const In& v, const Device&) { return sum(v[0], axis); }, f32({1e-5, 1e-5}, {1e-5, 1e-5}),
                    [axis](const In& v) { return reduce_costs(v[0], axis, false); });
      OpRow m = row("mean keepdim, axis " + std::to_string(axis) + size, "mean", {uniform("x", s)},
                    [axis](const In& v, const Device&) { return mean(v[0], axis, true); },
                    f32({1e-5, 1e-5}, {1e-5, 1e-5}), [axis](const In& v) { return reduce_costs(v[0], axis, true); });
      if (big) {
        r.without(kGradcheck).repeatable_on_device();
        m.without(kGradcheck);
      }
      t.push_back(r);
      t.push_back(m);
    }
    OpRow s_all = row("sum_all" + size, "sum_all", {uniform("x", s)},
                      [](const In& v, const Device&) { return sum_all(v[0]); }, f32({1e-4, 1e-5}, {1e-5, 1e-5}),
                      [](const In& v) { return OpCosts{sum_axis_cost(1, v[0].numel(), 1), broadcast_axis_cost(1, v[0].numel(), 1, 1.0f)}; });
    OpRow m_all = row("mean_all" + size, "mean_all", {uniform("x", s)},
                      [](const In& v, const Device&) { return mean_all(v[0]); }, f32({1e-5, 1e-5}, {1e-5, 1e-5}),
                      [](const In& v) {
                        const int64_t n = v[0].numel();
                        return OpCosts{sum_axis_cost(1, n, 1), broadcast_axis_cost(1, n, 1, 1.0f / float(n))};
                      });
    if (big) {
      s_all.without(kGradcheck).repeatable_on_device();
      m_all.without(kGradcheck);
    }
    t.push_back(s_all);
    t.push_back(m_all);
  }
  // sum over the rows of (43, 1031): more columns than one simulated grid.
  t.push_back(row("sum, axis 0 (43, 1031)", "sum", {uniform("x", {43, 1031})},
                  [](const In& v, const Device&) { return sum(v[0], 0); }, f32({1e-4, 1e-4}, {1e-6, 1e-5}),
                  [](const In& v) { return reduce_costs(v[0], 0, false); })
                  .without(kGradcheck));
  // argmax_last: i32 indices, no gradient; ties (the first index wins) and NaNs (below every
  // number) planted in every row; rows shorter than a warp, of 67, and of 30,522 (BERT's vocabulary).
  for (const Shape& s : {Shape{37, 5}, Shape{3, 11, 67}, Shape{9, 30522}})
    t.push_back(row("argmax_last " + shape_str(s), "argmax",
                    {given("x, ties and NaN", [s](uint64_t seed) { return with_ties_and_nans(s, seed); })},
                    [](const In& v, const Device&) { return argmax_last(v[0]); }, f32(exact, exact),
                    [](const In& v) { return OpCosts{argmax_rows_cost(rows_of(v[0]), v[0].size(-1)), {}}; })
                    .no_backward());

  // ---- shape ops (ops/shape.h): copies, so CUDA must match the CPU exactly ----
  for (int big = 0; big < 2; ++big) {
    const Shape x = big ? Shape{3, 5, 37} : Shape{2, 3, 4}, y = big ? Shape{3, 8, 37} : Shape{2, 5, 4};
    const std::string size = " " + shape_str(x);
    std::vector<OpRow> rows;
    const int64_t lead = big ? 5 : 4;  // (2, 3, 4) → (4, 6); (3, 5, 37) → (5, 111)
    rows.push_back(row("reshape" + size, "reshape", {uniform("x", x)},
                       [lead](const In& v, const Device&) { return reshape(v[0], {lead, -1}); }, f32(exact, exact),
                       [](const In&) { return OpCosts{}; }));  // a view: no kernel
    rows.push_back(row("permute (2, 0, 1)" + size, "permute", {uniform("x", x)},
                       [](const In& v, const Device&) { return permute(v[0], {2, 0, 1}); }, f32(exact, exact),
                       [](const In& v) { return same_both_ways(permute_cost(v[0].numel())); })
                       .with(bf16_column(exact, exact, {0})));  // bf16: a copy of 2-byte words
    rows.push_back(row("transpose (0, 2)" + size, "permute", {uniform("x", x)},
                       [](const In& v, const Device&) { return transpose(v[0], 0, 2); }, f32(exact, exact),
                       [](const In& v) { return same_both_ways(permute_cost(v[0].numel())); })
                       .with(bf16_column(exact, exact, {0})));
    // concat and slice in bf16 (Transformer-XL's q, k, v slices under precision=bf16): copies of
    // 2-byte words, and slice's ∂x zeros outside the window, exact on both devices.
    rows.push_back(row("concat, axis 1" + size + " and " + shape_str(y), "concat", {uniform("x", x), uniform("y", y)},
                       [](const In& v, const Device&) { return concat({v[0], v[1]}, 1); }, f32(exact, exact),
                       [](const In& v) {
                         return same_both_ways(copy_window_cost(v[0].numel(), false) + copy_window_cost(v[1].numel(), false));
                       })
                       .with(bf16_column(exact, exact, {0, 1})));
    rows.push_back(row("slice [1, 4) of axis 1 " + shape_str(y), "slice", {uniform("y", y)},
                       [](const In& v, const Device&) { return slice(v[0], 1, 1, 4); }, f32(exact, exact),
                       [](const In& v) {
                         const Cost window = copy_window_cost(v[0].numel() / v[0].size(1) * 3, false);
                         return OpCosts{window, fill_cost(v[0].numel()) + window};
                       })
                       .with(bf16_column(exact, exact, {0})));
    for (OpRow& r : rows) {
      if (big) r.without(kGradcheck);
      t.push_back(r);
    }
  }
  // concat and slice of bf16 tensors cast inside the call, so the cost check sees the 2-byte
  // copies (the bf16 columns above check only the parity); no gradient check (rounding).
  t.push_back(row("concat of bf16 pieces, axis 2 (3, 5, 37) and (3, 5, 8)", "concat",
                  {uniform("x", {3, 5, 37}), uniform("y", {3, 5, 8})},
                  [](const In& v, const Device&) { return concat({cast(v[0], DType::bf16), cast(v[1], DType::bf16)}, 2); },
                  f32(exact, exact),
                  [](const In& v) {
                    return same_both_ways(copy_window_cost(v[0].numel(), false, 2) + copy_window_cost(v[1].numel(), false, 2));
                  })
                  .without(kGradcheck));
  t.push_back(row("slice [2, 7) of axis 0 of a bf16 (9, 3, 37)", "slice", {uniform("x", {9, 3, 37})},
                  [](const In& v, const Device&) { return slice(cast(v[0], DType::bf16), 0, 2, 7); }, f32(exact, exact),
                  [](const In& v) {
                    const Cost window = copy_window_cost(v[0].numel() / 9 * 5, false, 2);
                    return OpCosts{window, fill_cost(v[0].numel(), 2) + window};
                  })
                  .without(kGradcheck));
  // permute of a 4-D tensor (an attention layout change). The innermost axis stays: CUDA copies
  // its rows in the widest word dividing them, 16 bytes at 16 values (f32 and bf16), 8 bytes (f32)
  // or 4 (bf16) at 6, one element at 11.
  for (const int64_t inner : {11, 16, 6}) {
    const Shape x{3, 5, 7, inner};
    t.push_back(row("permute (0, 2, 1, 3) " + shape_str(x), "permute", {uniform("x", x)},
                    [](const In& v, const Device&) { return permute(v[0], {0, 2, 1, 3}); }, f32(exact, exact),
                    [](const In& v) { return same_both_ways(permute_cost(v[0].numel())); })
                    .without(kGradcheck)
                    .with(bf16_column(exact, exact, {0})));
  }

  // ---- embedding lookups (ops/embedding.h) ----
  const auto embedding_cost = [](const In& v) {
    return OpCosts{embedding_forward_cost(v[1].numel(), v[0].size(1)),
                   embedding_backward_cost(v[1].numel(), v[0].size(0), v[0].size(1))};
  };
  // Small: repeated ids (id 4 three times, 3 never).
  t.push_back(row("embedding (7, 3) by (2, 5) ids", "embedding",
                  {uniform("table", {7, 3}), given("ids", [](uint64_t) {
                     return Tensor::from_vector(std::vector<int32_t>{4, 0, 4, 6, 2, 4, 0, 1, 6, 5}, {2, 5});
                   })},
                  [](const In& v, const Device&) { return embedding(v[0], v[1]); }, f32(exact, {1e-6, 1e-5}),
                  embedding_cost));
  // padding_idx 0: row 0 is read but never given a gradient, so finite differences through it
  // would differ by design; the table is a constant row 0 on top of the trainable rows 1..6.
  t.push_back(row("embedding (1 + 6, 4) by (2, 4) ids, padding_idx 0", "embedding",
                  {constant(uniform("row 0", {1, 4})), uniform("rows 1..6", {6, 4}), given("ids", [](uint64_t) {
                     return Tensor::from_vector(std::vector<int32_t>{0, 3, 0, 5, 2, 0, 3, 1}, {2, 4});
                   })},
                  [](const In& v, const Device&) { return embedding(concat({v[0], v[1]}, 0), v[2], 0); },
                  f32(exact, {1e-6, 1e-5}), [](const In& v) {
                    return OpCosts{embedding_forward_cost(v[2].numel(), v[1].size(1)),
                                   embedding_backward_cost(v[2].numel(), 7, v[1].size(1))};
                  }));
  // At parity sizes: 111 ids of 50 rows, D = 67 (many repeats per row).
  t.push_back(row("embedding (50, 67) by (3, 37) ids", "embedding", {uniform("table", {50, 67}), ids("ids", {3, 37}, 50)},
                  [](const In& v, const Device&) { return embedding(v[0], v[1]); }, f32(exact, {1e-6, 1e-5}),
                  embedding_cost)
                  .without(kGradcheck)
                  .repeatable_on_device());
  // Narrow tables (D < 32: the (row, column)-per-block CUDA backward) read by ~1,000 ids per row,
  // without and with a padding row; above the CPU's OpenMP threshold.
  for (const int64_t d : {1, 8, 31})
    for (const int64_t pad : {int64_t(-1), int64_t(0)})
      t.push_back(row("embedding (11, " + std::to_string(d) + ") by (7, 1601) ids" + (pad == 0 ? ", padding_idx 0" : ""),
                      "embedding", {uniform("table", {11, d}), ids("ids", {7, 1601}, 11)},
                      [pad](const In& v, const Device&) { return embedding(v[0], v[1], pad); },
                      f32(exact, {1e-5, 1e-5}), embedding_cost)
                      .without(kGradcheck)
                      .repeatable_on_device(pad < 0));
  // Tables past one shared-memory tile of the CUDA backward (V·D > 12,288): the sorted paths, the
  // segments (D ≥ 32) and the narrow one (D < 32), with and without a padding row.
  t.push_back(row("embedding (200, 67) by (3, 37) ids", "embedding", {uniform("table", {200, 67}), ids("ids", {3, 37}, 200)},
                  [](const In& v, const Device&) { return embedding(v[0], v[1]); }, f32(exact, {1e-6, 1e-5}),
                  embedding_cost)
                  .without(kGradcheck)
                  .repeatable_on_device());
  for (const int64_t pad : {int64_t(-1), int64_t(0)})
    t.push_back(row("embedding (2000, 8) by (7, 1601) ids" + std::string(pad == 0 ? ", padding_idx 0" : ""), "embedding",
                    {uniform("table", {2000, 8}), ids("ids", {7, 1601}, 40)},  // ids < 40: many repeats
                    [pad](const In& v, const Device&) { return embedding(v[0], v[1], pad); }, f32(exact, {1e-5, 1e-5}),
                    embedding_cost)
                    .without(kGradcheck)
                    .repeatable_on_device());
  // The CUDA segments past one tile with frequent ids: id 0 (the padding row when padding_idx is
  // 0) and id 7 take ~30% of the ids each, so their rows span several segments of T slots (D = 97:
  // 2 slices, T = 128; D = 768: 1 slice, 3 column passes, T = 64), the rest spread over rows
  // read once or never.
  const auto frequent_ids = [](const Shape& shape, int32_t upper) {
    return given("ids", [shape, upper](uint64_t seed) {
      Rng rng(seed);
      std::vector<int32_t> v(static_cast<size_t>(shape_numel(shape)));
      for (auto& id : v) {
        const uint64_t r = rng.below(10);
        id = r < 3 ? 0 : r < 6 ? 7 : static_cast<int32_t>(rng.below(upper));
      }
      return Tensor::from_vector(v, shape);
    });
  };
  for (const int64_t pad : {int64_t(-1), int64_t(0)})
    t.push_back(row("embedding (150, 97) by (3, 500) frequent ids" + std::string(pad == 0 ? ", padding_idx 0" : ""),
                    "embedding", {uniform("table", {150, 97}), frequent_ids({3, 500}, 150)},
                    [pad](const In& v, const Device&) { return embedding(v[0], v[1], pad); }, f32(exact, {1e-5, 1e-5}),
                    embedding_cost)
                    .without(kGradcheck)
                    .repeatable_on_device());
  t.push_back(row("embedding (40, 768) by (2, 150) frequent ids, padding_idx 0", "embedding",
                  {uniform("table", {40, 768}), frequent_ids({2, 150}, 40)},
                  [](const In& v, const Device&) { return embedding(v[0], v[1], 0); }, f32(exact, {1e-5, 1e-5}),
                  embedding_cost)
                  .without(kGradcheck)
                  .repeatable_on_device());
  // Above the CPU's OpenMP threshold: 2,001 ids of a (50, 33) table.
  t.push_back(row("embedding (50, 33) by (2001,) ids", "embedding", {uniform("table", {50, 33}), ids("ids", {2001}, 50)},
                  [](const In& v, const Device&) { return embedding(v[0], v[1]); }, f32(exact, {1e-5, 1e-5}),
                  embedding_cost)
                  .without(kGradcheck));
  // embedding_sum: S tables of (V, D), G id columns per table; columns past S·G hold -5 (never
  // read: a read would fail the range check or the parity). Graphormer's multi-hop shapes in small.
  const auto sum_ids = [](const Shape& shape, int32_t upper, int64_t read) {
    return given("ids", [shape, upper, read](uint64_t seed) {
      Rng rng(seed);
      std::vector<int32_t> v(static_cast<size_t>(shape_numel(shape)));
      for (size_t e = 0; e < v.size(); ++e)
        v[e] = int64_t(e) % shape.back() < read ? static_cast<int32_t>(rng.below(upper)) : -5;
      return Tensor::from_vector(v, shape);
    });
  };
  const auto sum_row = [&](const Shape& tables, const Shape& id_shape, int64_t group) {
    const int64_t S = tables[0], V = tables[1];
    return row("embedding_sum " + shape_str(tables) + " by " + shape_str(id_shape) + " ids, group " +
                   std::to_string(group),
               "embedding_sum", {uniform("tables", tables), sum_ids(id_shape, int32_t(V), S * group)},
               [group](const In& v, const Device&) { return embedding_sum(v[0], v[1], group); },
               f32({1e-6, 1e-5}, {1e-5, 1e-4}), [group](const In& v) {  // ∂: float partials per chunk
                 const int64_t rows = v[1].numel() / v[1].size(-1), K = v[0].size(0) * group;
                 return OpCosts{embedding_sum_forward_cost(rows, K, v[0].size(2)),
                                embedding_sum_backward_cost(rows, K, v[0].numel(), v[0].size(2))};
               });
  };
  t.push_back(sum_row({3, 5, 4}, {2, 7, 5}, 1));  // 2 unread columns
  t.push_back(sum_row({2, 6, 3}, {40, 7}, 3));    // bond-feature groups, 1 unread column
  // Several chunks of the CUDA partials (3,001 rows of 512), repeated ids: the chunk order matters.
  t.push_back(sum_row({4, 9, 8}, {3001, 4}, 1).without(kGradcheck).repeatable_on_device());
  // Past one shared-memory tile (S·V·D > 12,288): the CUDA sorted segments. Wide rows (D = 2000:
  // 8 column passes of 256), each table row read a few times.
  t.push_back(sum_row({3, 5, 2000}, {37, 3}, 1).without(kGradcheck).repeatable_on_device());
  // Graphormer's multi-hop shapes past one tile, with the padding-like id 0 in ~60% of the slots
  // and id 2 in ~20%, so their rows span several segments: PCQM4M's in small (5 hops × 3 bond
  // columns, D = 32: 8 slices, T = 512) and a wide D = 768 (1 slice, 3 column passes, T = 64)
  // with 2 tables × group 2 and an unread column.
  const auto frequent_sum_ids = [](const Shape& shape, int32_t upper, int64_t read) {
    return given("ids", [shape, upper, read](uint64_t seed) {
      Rng rng(seed);
      std::vector<int32_t> v(static_cast<size_t>(shape_numel(shape)));
      for (size_t e = 0; e < v.size(); ++e) {
        const uint64_t r = rng.below(10);
        v[e] = int64_t(e) % shape.back() >= read ? -5 : r < 6 ? 0 : r < 8 ? 2 : static_cast<int32_t>(rng.below(upper));
      }
      return Tensor::from_vector(v, shape);
    });
  };
  const auto frequent_sum_row = [&](const Shape& tables, const Shape& id_shape, int64_t group) {
    const int64_t S = tables[0], V = tables[1];
    return row("embedding_sum " + shape_str(tables) + " by " + shape_str(id_shape) + " frequent ids, group " +
                   std::to_string(group),
               "embedding_sum", {uniform("tables", tables), frequent_sum_ids(id_shape, int32_t(V), S * group)},
               [group](const In& v, const Device&) { return embedding_sum(v[0], v[1], group); },
               f32({1e-6, 1e-5}, {1e-5, 1e-4}), [group](const In& v) {
                 const int64_t rows = v[1].numel() / v[1].size(-1), K = v[0].size(0) * group;
                 return OpCosts{embedding_sum_forward_cost(rows, K, v[0].size(2)),
                                embedding_sum_backward_cost(rows, K, v[0].numel(), v[0].size(2))};
               })
        .without(kGradcheck)
        .repeatable_on_device();
  };
  t.push_back(frequent_sum_row({5, 97, 32}, {2, 300, 15}, 3));
  t.push_back(frequent_sum_row({2, 61, 768}, {90, 5}, 2));

  // unpack_ids: random 32-bit words (the sign bit set in about half), a partial last word.
  for (const int bits : {8, 16}) {
    const int64_t columns = bits == 8 ? 7 : 5;  // 2 and 3 words a row, the last one partly used
    const int64_t words = (columns + 32 / bits - 1) / (32 / bits);
    t.push_back(row("unpack_ids, " + std::to_string(bits) + "-bit fields, (3, 41) rows of " + std::to_string(columns),
                    "unpack_ids",
                    {given("packed", [words](uint64_t seed) {
                       Rng rng(seed);
                       std::vector<int32_t> v(static_cast<size_t>(3 * 41 * words));
                       for (int32_t& w : v)
                         w = static_cast<int32_t>((uint32_t(rng.below(1u << 16)) << 16) | uint32_t(rng.below(1u << 16)));
                       return Tensor::from_vector(v, {3, 41, words});
                     })},
                    [columns, bits](const In& v, const Device&) { return unpack_ids(v[0], columns, bits); },
                    f32(exact, exact),
                    [columns](const In& v) { return OpCosts{unpack_ids_cost(v[0].numel(), v[0].numel() / v[0].size(-1) * columns), {}}; })
                    .without(kGradcheck)
                    .no_backward());
  }
  // gather_table: per-head lookups through a bucket map (Toeplitz, then 5 random buckets).
  const auto gather_cost = [](const In& v) {
    return OpCosts{gather_table_forward_cost(v[0].size(0), v[0].size(1), v[1].numel()),
                   gather_table_backward_cost(v[0].size(0), v[0].size(1), v[1].numel())};
  };
  const auto gather_call = [](const In& v, const Device&) { return gather_table(v[0], v[1]); };
  t.push_back(row("gather_table (3, 8) through the (4, 5) Toeplitz map", "gather_table",
                  {uniform("table", {3, 8}), given("map", [](uint64_t) { return toeplitz_map(4, 5); })}, gather_call,
                  f32(exact, {1e-5, 1e-5}), gather_cost));
  t.push_back(row("gather_table (3, 73) through the (37, 37) Toeplitz map", "gather_table",
                  {uniform("table", {3, 73}), given("map", [](uint64_t) { return toeplitz_map(37, 37); })}, gather_call,
                  f32(exact, {1e-5, 1e-5}), gather_cost)
                  .without(kGradcheck)
                  .repeatable_on_device());
  t.push_back(row("gather_table (3, 5) through a (29, 45) map of 5 buckets", "gather_table",
                  {uniform("table", {3, 5}), ids("map", {29, 45}, 5)}, gather_call, f32(exact, {1e-5, 1e-5}),
                  gather_cost)
                  .without(kGradcheck)
                  .repeatable_on_device());
  // Above the CPU's OpenMP threshold (4 heads × 10,100 entries).
  t.push_back(row("gather_table (4, 199) through a (100, 101) map", "gather_table",
                  {uniform("table", {4, 199}), ids("map", {100, 101}, 199)}, gather_call, f32(exact, {1e-5, 1e-5}),
                  gather_cost)
                  .without(kGradcheck));

  // ---- activations (ops/activation.h) ----
  using kernels::Activation;
  // relu off its kink: magnitudes in [0.1, 1).
  t.push_back(row("relu (3, 7)", "relu", {signed_uniform("x", {3, 7}, 0.1f, 1.0f)},
                  [](const In& v, const Device&) { return relu(v[0]); }, f32(exact, exact), [](const In& v) {
                    return OpCosts{activation_forward_cost(Activation::relu, v[0].numel()),
                                   activation_backward_cost(Activation::relu, v[0].numel())};
                  })
                  .with(bf16_column(exact, exact, {0})));  // bf16 x: a select, exact on both devices
  t.push_back(row("relu (3, 37, 67)", "relu", {uniform("x", {3, 37, 67}, -4.0f, 4.0f)},
                  [](const In& v, const Device&) { return relu(v[0]); }, f32(exact, exact), [](const In& v) {
                    return OpCosts{activation_forward_cost(Activation::relu, v[0].numel()),
                                   activation_backward_cost(Activation::relu, v[0].numel())};
                  })
                  .without(kGradcheck)
                  .with(bf16_column(exact, exact, {0})));
  // gelu (exact erf) is smooth: any inputs. bf16 column: the same rounded x on both devices, Φ in
  // FP32 by two formulas (1e-5 apart), each result rounded once to bf16, so one bf16 step (2⁻⁷
  // relative) where the two FP32 values straddle a rounding boundary; atol for gelu's zero at 0.
  const DTypeColumn gelu_bf16 = bf16_column({1e-6, 0x1p-7}, {1e-6, 0x1p-7}, {0});
  const auto gelu_cost = [](const In& v) {
    return OpCosts{activation_forward_cost(Activation::gelu, v[0].numel()),
                   activation_backward_cost(Activation::gelu, v[0].numel())};
  };
  t.push_back(row("gelu (5, 3)", "gelu", {uniform("x", {5, 3}, -3.0f, 3.0f)},
                  [](const In& v, const Device&) { return gelu(v[0]); }, f32({1e-6, 1e-5}, {1e-6, 1e-5}), gelu_cost)
                  .with(gelu_bf16));
  t.push_back(row("gelu (3, 37, 67)", "gelu", {uniform("x", {3, 37, 67}, -4.0f, 4.0f)},
                  [](const In& v, const Device&) { return gelu(v[0]); }, f32({1e-6, 1e-5}, {1e-6, 1e-5}), gelu_cost)
                  .without(kGradcheck)
                  .with(gelu_bf16));
  t.push_back(row("gelu (43, 1031)", "gelu", {uniform("x", {43, 1031})},
                  [](const In& v, const Device&) { return gelu(v[0]); }, f32({1e-6, 1e-5}, {1e-6, 1e-5}), gelu_cost)
                  .without(kGradcheck)
                  .with(gelu_bf16));

  // ---- dropout (ops/dropout.h): the mask is Philox(seed, k) ≥ p on every device, so CUDA's zeros
  // must be exactly the CPU's; inputs never zero, so a 0 in the output means dropped ----
  const auto dropout_costs = [](const In& v) { return same_both_ways(dropout_cost(v[0].numel())); };
  // bf16 x: the same FP32 product x·scale on both devices, rounded once: exact.
  const DTypeColumn dropout_bf16 = bf16_column(exact, exact, {0});
  t.push_back(row("dropout p = 0.4 (3, 5, 7)", "dropout", {signed_uniform("x", {3, 5, 7}, 0.5f, 1.5f)},
                  [](const In& v, const Device&) { return dropout(v[0], 0.4f, 99, true); },
                  f32({1e-6, 1e-6}, {1e-6, 1e-6}), dropout_costs)
                  .exact_zeros()
                  .with(dropout_bf16));
  for (const float p : {0.1f, 0.3f, 0.5f, 0.9f})
    t.push_back(row("dropout p = " + std::to_string(p).substr(0, 3) + " (3, 37, 67)", "dropout",
                    {signed_uniform("x", {3, 37, 67}, 0.5f, 1.5f)},
                    [p](const In& v, const Device&) { return dropout(v[0], p, 0x5eed1234abcdull, true); },
                    f32({1e-6, 1e-6}, {1e-6, 1e-6}), dropout_costs)
                    .without(kGradcheck)
                    .exact_zeros()
                    .with(dropout_bf16));
  t.push_back(row("dropout p = 0.3 (43, 1031)", "dropout", {signed_uniform("x", {43, 1031}, 0.5f, 1.5f)},
                  [](const In& v, const Device&) { return dropout(v[0], 0.3f, 77, true); },
                  f32({1e-6, 1e-5}, {1e-6, 1e-5}), dropout_costs)
                  .without(kGradcheck)
                  .exact_zeros()
                  .with(dropout_bf16));

  // ---- layer norm (ops/layer_norm.h) ----
  const auto ln_call = [](const In& v, const Device&) { return layer_norm(v[0], v[1], v[2]); };
  const auto ln_cost = [](const In& v) {
    return OpCosts{layer_norm_forward_cost(rows_of(v[0]), v[0].size(-1)),
                   layer_norm_backward_cost(rows_of(v[0]), v[0].size(-1))};
  };
  // bf16 x (γ, β f32): the same rounded x on both devices, statistics in double (CPU) and FP32
  // (CUDA), y and ∂x rounded once to bf16: one bf16 step (2⁻⁷ relative) where the two FP32 values
  // straddle a rounding boundary, plus the f32 column's atol; ∂γ, ∂β are FP32 sums (f32 bounds).
  const DTypeColumn ln_bf16 = bf16_column({1e-4, 0x1p-7}, {1e-3, 0x1p-7}, {0});
  // Small, and with more rows than the ∂γ/∂β row block (64).
  t.push_back(row("layer_norm (2, 3, 7)", "layer_norm",
                  {uniform("x", {2, 3, 7}, -2.0f, 2.0f), uniform("gamma", {7}, 0.5f, 1.5f), uniform("beta", {7})},
                  ln_call, f32({1e-4, 1e-4}, {1e-4, 1e-3}), ln_cost)
                  .with(ln_bf16));
  t.push_back(row("layer_norm (3, 67, 5)", "layer_norm",
                  {uniform("x", {3, 67, 5}, -2.0f, 2.0f), uniform("gamma", {5}, 0.5f, 1.5f), uniform("beta", {5})},
                  ln_call, f32({1e-4, 1e-4}, {1e-4, 1e-3}), ln_cost)
                  .with(ln_bf16));
  // At parity sizes: D odd, a multiple of 4 (the float4 path), 1, and 1,000; 600 short rows.
  for (const Shape& s : {Shape{111, 67}, Shape{111, 64}, Shape{111, 1}, Shape{111, 1000}, Shape{600, 37}})
    t.push_back(row("layer_norm " + shape_str(s), "layer_norm",
                    {uniform("x", s, -2.0f, 3.0f), uniform("gamma", {s[1]}, 0.5f, 1.5f), uniform("beta", {s[1]})},
                    ln_call, f32({1e-4, 1e-4}, {1e-4, 1e-3}), ln_cost)
                    .without(kGradcheck)
                    .repeatable_on_device(s[1] == 67)
                    .with(ln_bf16));
  // Above the CPU's OpenMP threshold (301 × 129).
  t.push_back(row("layer_norm (301, 129)", "layer_norm",
                  {uniform("x", {301, 129}), uniform("gamma", {129}), uniform("beta", {129})}, ln_call,
                  f32({1e-4, 1e-4}, {1e-4, 1e-3}), ln_cost)
                  .without(kGradcheck)
                  .with(ln_bf16));

  // ---- softmax and log_softmax over the last axis (ops/softmax.h) ----
  for (int take_log = 0; take_log < 2; ++take_log) {
    const std::string name = take_log ? "log_softmax" : "softmax";
    Tensor (*fn)(const Tensor&) = take_log ? log_softmax : softmax;
    const OpCall call = [fn](const In& v, const Device&) { return fn(v[0]); };
    const CostFormula cost = [](const In& v) {
      return OpCosts{softmax_forward_cost(rows_of(v[0]), v[0].size(-1)), softmax_backward_cost(rows_of(v[0]), v[0].size(-1))};
    };
    const DTypeColumn tol = f32({take_log ? 1e-5 : 1e-6, 1e-5}, {1e-5, 1e-4});
    // bf16 x: the same rounded x on both devices, FP32 maths (sums in double; CUDA's backward sum
    // in FP32), y and ∂x rounded once: one bf16 step (2⁻⁷ relative) where the two FP32 values
    // straddle a rounding boundary, plus the f32 column's atol (10⁻⁴ for ∂x's cancellation).
    const DTypeColumn tol16 = bf16_column({take_log ? 1e-5 : 1e-6, 0x1p-7}, {1e-4, 0x1p-7}, {0});
    t.push_back(row(name + " (2, 3, 5)", name, {uniform("x", {2, 3, 5}, -4.0f, 4.0f)}, call, tol, cost).with(tol16));
    t.push_back(row(name + " (7,)", name, {uniform("x", {7}, -2.0f, 2.0f)}, call, tol, cost).with(tol16));  // one row
    t.push_back(row(name + " (3, 37, 67)", name, {uniform("x", {3, 37, 67}, -5.0f, 5.0f)}, call, tol, cost)
                    .without(kGradcheck)
                    .with(tol16));
    t.push_back(row(name + " (600, 37)", name, {uniform("x", {600, 37}, -3.0f, 3.0f)}, call, tol, cost)
                    .without(kGradcheck)
                    .with(tol16));
    // −∞ entries and a fully masked row (zeros, and a zero gradient), rows of 67, 1 and 1,000.
    // No gradient check: log_softmax is −∞ at a masked entry of a live row.
    for (const int64_t n : {67, 1, 1000})
        t.push_back(row(name + " (111, " + std::to_string(n) + "), masked", name,
                        {OpInput{"x, −∞ entries", [n](uint64_t seed) { return with_masked_entries({111, n}, seed); }, true}},
                        call, f32({1e-5, 1e-5}, {1e-5, 1e-4}), cost)
                        .without(kGradcheck)
                        .with(bf16_column({1e-5, 0x1p-7}, {1e-4, 0x1p-7}, {0})));  // −∞ stays −∞ in bf16
  }

  // ---- losses (ops/loss.h) ----
  const auto ce_cost = [](const In& v) {
    return OpCosts{cross_entropy_forward_cost(v[0].size(0), v[0].size(1)),
                   cross_entropy_backward_cost(v[0].size(0), v[0].size(1))};
  };
  // Small, one ignored row (-100), then ignore_index 0 (a padding class).
  t.push_back(row("cross_entropy (5, 7)", "cross_entropy",
                  {uniform("logits", {5, 7}, -3.0f, 3.0f), given("targets", [](uint64_t) {
                     return Tensor::from_vector(std::vector<int32_t>{3, -100, 0, 6, 2}, {5});
                   })},
                  [](const In& v, const Device&) { return cross_entropy(v[0], v[1]); },
                  f32({1e-5, 1e-5}, {1e-6, 1e-4}), ce_cost));
  t.push_back(row("cross_entropy (5, 7), ignore_index 0", "cross_entropy",
                  {uniform("logits", {5, 7}, -3.0f, 3.0f), given("targets", [](uint64_t) {
                     return Tensor::from_vector(std::vector<int32_t>{0, 4, 0, 1, 0}, {5});
                   })},
                  [](const In& v, const Device&) { return cross_entropy(v[0], v[1], 0); },
                  f32({1e-5, 1e-5}, {1e-6, 1e-4}), ce_cost));
  // Every row ignored: L = 0 and a zero gradient (not 0/0).
  t.push_back(row("cross_entropy (45, 67), every row ignored", "cross_entropy",
                  {uniform("logits", {45, 67}, -4.0f, 4.0f),
                   given("targets", [](uint64_t) { return Tensor::from_vector(std::vector<int32_t>(45, -100), {45}); })},
                  [](const In& v, const Device&) { return cross_entropy(v[0], v[1], -100); },
                  f32(exact, exact), ce_cost)
                  .without(kGradcheck));
  // At parity sizes: every 4th row ignored; 600 rows; above the CPU's OpenMP threshold.
  t.push_back(row("cross_entropy (45, 67), every 4th row ignored", "cross_entropy",
                  {uniform("logits", {45, 67}, -4.0f, 4.0f), given("targets", [](uint64_t seed) {
                     Rng rng(seed);
                     std::vector<int32_t> v(45);
                     for (size_t i = 0; i < v.size(); ++i) v[i] = i % 4 == 0 ? -100 : int32_t(rng.below(67));
                     return Tensor::from_vector(v, {45});
                   })},
                  [](const In& v, const Device&) { return cross_entropy(v[0], v[1], -100); },
                  f32({1e-5, 1e-5}, {1e-6, 1e-4}), ce_cost)
                  .without(kGradcheck));
  t.push_back(row("cross_entropy (600, 37)", "cross_entropy", {uniform("logits", {600, 37}, -3.0f, 3.0f), ids("targets", {600}, 37)},
                  [](const In& v, const Device&) { return cross_entropy(v[0], v[1], -100); },
                  f32({1e-5, 1e-5}, {1e-6, 1e-4}), ce_cost)
                  .without(kGradcheck));
  t.push_back(row("cross_entropy (257, 131)", "cross_entropy", {uniform("logits", {257, 131}), ids("targets", {257}, 131)},
                  [](const In& v, const Device&) { return cross_entropy(v[0], v[1], -100); },
                  f32({1e-5, 1e-5}, {1e-6, 1e-4}), ce_cost)
                  .without(kGradcheck));
  // bf16 logits (precision=bf16's heads): both devices read the same rounded logits, so the loss
  // (f32: lse in FP32, the sums in double) is within the f32 bounds; ∂logits is rounded once to
  // bf16, one bf16 step (2⁻⁷ relative) where the two FP32 values straddle a rounding boundary.
  for (OpRow& r : t)
    if (r.op == "cross_entropy") r.with(bf16_column({1e-5, 1e-5}, {1e-6, 0x1p-7}, {0}));
  // bf16 logits cast inside the call: the cost check sees 2 bytes a logit and a gradient.
  t.push_back(row("cross_entropy of bf16 logits (257, 131)", "cross_entropy",
                  {uniform("logits", {257, 131}), ids("targets", {257}, 131)},
                  [](const In& v, const Device&) { return cross_entropy(cast(v[0], DType::bf16), v[1], -100); },
                  f32({1e-5, 1e-5}, {1e-6, 0x1p-7}), [](const In& v) {
                    return OpCosts{cross_entropy_forward_cost(v[0].size(0), v[0].size(1), 2),
                                   cross_entropy_backward_cost(v[0].size(0), v[0].size(1), 2)};
                  })
                  .without(kGradcheck));
  // ---- linear_cross_entropy (ops/linear_cross_entropy.h): the head fused with the loss, in row chunks ----
  // Inputs h (N, d), weight (C, d), bias (C,) or none, targets (N,); the cost from the chunk count.
  const auto lce_row = [&](const std::string& name, int64_t N, int64_t d, int64_t C, bool with_bias,
                           int64_t chunk, int32_t ignore, int every_ignored) {
    std::vector<OpInput> in{uniform("h", {N, d}, -1.5f, 1.5f), uniform("weight", {C, d}, -1.0f, 1.0f)};
    if (with_bias) in.push_back(uniform("bias", {C}, -0.5f, 0.5f));
    in.push_back(given("targets", [N, C, ignore, every_ignored](uint64_t seed) {
      Rng rng(seed);
      std::vector<int32_t> v(N);
      for (int64_t i = 0; i < N; ++i)
        v[i] = every_ignored > 0 && i % every_ignored == every_ignored - 1 ? ignore : int32_t(rng.below(uint64_t(C)));
      return Tensor::from_vector(v, {N});
    }));
    const OpCall call = [with_bias, chunk, ignore](const In& v, const Device&) {
      return linear_cross_entropy(v[0], v[1], with_bias ? v[2] : Tensor(), v[with_bias ? 3 : 2], ignore, nullptr, chunk);
    };
    const CostFormula cost = [with_bias, chunk](const In& v) {
      const int64_t rows = v[0].size(0), c = v[1].size(0);
      const int64_t per = linear_cross_entropy_chunk_rows(rows, c, chunk), chunks = (rows + per - 1) / per;
      return OpCosts{linear_cross_entropy_forward_cost(rows, v[0].size(1), c, chunks, with_bias),
                     linear_cross_entropy_backward_cost(rows, v[0].size(1), c, chunks, with_bias)};
    };
    return row(name, "linear_cross_entropy", in, call, f32({1e-5, 1e-4}, {1e-5, 1e-4}), cost);
  };
  // Small, gradient-checked: three chunks (the last short), one ignored row in three; no bias and
  // chunks of one row; ignore_index 0 as a class index.
  t.push_back(lce_row("linear_cross_entropy (7, 5)·(6, 5)ᵀ + (6,), chunks of 3", 7, 5, 6, true, 3, -100, 3));
  t.push_back(lce_row("linear_cross_entropy (5, 4)·(9, 4)ᵀ, chunks of 1, ignore_index 0", 5, 4, 9, false, 1, 0, 0));
  // Every row ignored: L = 0 and zero gradients.
  t.push_back(lce_row("linear_cross_entropy (45, 8)·(30, 8)ᵀ, every row ignored", 45, 8, 30, true, 16, -100, 1)
                  .without(kGradcheck));
  // At parity sizes: chunks of 64 over 257 rows (the last of one row), every 4th row ignored; and
  // the automatic chunk (one chunk here).
  t.push_back(lce_row("linear_cross_entropy (257, 33)·(131, 33)ᵀ + (131,), chunks of 64", 257, 33, 131, true, 64, -100, 4)
                  .without(kGradcheck));
  t.push_back(lce_row("linear_cross_entropy (600, 37)·(45, 37)ᵀ + (45,), automatic chunk", 600, 37, 45, true, 0, -100, 0)
                  .without(kGradcheck));

  // l1_loss: |pred| in [0.55, 1) and |target| < 0.45, so pred − target keeps its sign (either)
  // by more than the finite-difference step; gradients to both.
  const auto l1_cost = [](const In& v) {
    const int64_t n = v[0].numel();
    return OpCosts{l1_loss_forward_cost(n), l1_loss_backward_cost(n) + affine_cost(n, true)};
  };
  t.push_back(row("l1_loss (3, 5)", "l1_loss", {signed_uniform("pred", {3, 5}, 0.55f, 1.0f), uniform("target", {3, 5}, -0.45f, 0.45f)},
                  [](const In& v, const Device&) { return l1_loss(v[0], v[1]); }, f32({1e-6, 1e-5}, {1e-9, 1e-6}),
                  l1_cost));
  for (const Shape& s : {Shape{1}, Shape{3, 37, 67}, Shape{100003}})
    t.push_back(row("l1_loss " + shape_str(s), "l1_loss", {uniform("pred", s), uniform("target", s)},
                    [](const In& v, const Device&) { return l1_loss(v[0], v[1]); }, f32({1e-6, 1e-5}, {1e-9, 1e-6}),
                    l1_cost)
                    .without(kGradcheck));

  // ---- Transformer-XL's relative shift (ops/relative_shift.h): a gather, bit-exact ----
  const auto shift_cost = [](const In& v) { return same_both_ways(relative_shift_cost(v[0].numel())); };
  // Small: with memory (7 keys for 4 queries) and without (5 × 5).
  // bf16 columns (precision=bf16's Transformer-XL scores): the same gather of 2-byte words, exact.
  for (const Shape& s : {Shape{2, 3, 4, 7}, Shape{5, 5}})
    t.push_back(row("relative_shift " + shape_str(s), "relative_shift", {uniform("x", s)},
                    [](const In& v, const Device&) { return relative_shift(v[0]); }, f32(exact, exact), shift_cost)
                    .with(bf16_column(exact, exact, {0})));
  for (const Shape& s : {Shape{2, 3, 29, 45}, Shape{37, 37}, Shape{5, 1, 67}, Shape{3, 33, 100}})
    t.push_back(row("relative_shift " + shape_str(s), "relative_shift", {uniform("x", s)},
                    [](const In& v, const Device&) { return relative_shift(v[0]); }, f32(exact, exact), shift_cost)
                    .without(kGradcheck)
                    .with(bf16_column(exact, exact, {0})));
  // A bf16 x cast inside the call: the cost check sees 2 bytes an element.
  t.push_back(row("relative_shift of a bf16 (2, 3, 29, 45)", "relative_shift", {uniform("x", {2, 3, 29, 45})},
                  [](const In& v, const Device&) { return relative_shift(cast(v[0], DType::bf16)); }, f32(exact, exact),
                  [](const In& v) { return same_both_ways(relative_shift_cost(v[0].numel(), 2)); })
                  .without(kGradcheck));

  // ---- rotary position embedding (ops/rotary.h): tables with more rows than N ----
  // The first small, every check; then at parity sizes.
  const Shape rotary_shapes[] = {{2, 3, 6, 4}, {2, 3, 29, 16}, {37, 2}, {5, 1, 67, 8}};
  for (const Shape& s : rotary_shapes) {
    const int64_t n = s[s.size() - 2], d = s.back();
    OpRow r = row("rotary " + shape_str(s), "rotary",
                  {uniform("x", s), given("cos", [n, d](uint64_t) { return rotary_tables(n + 3, d).first; }),
                   given("sin", [n, d](uint64_t) { return rotary_tables(n + 3, d).second; })},
                  [](const In& v, const Device&) { return rotary(v[0], v[1], v[2]); },
                  f32({1e-6, 1e-6}, {1e-6, 1e-6}), [](const In& v) {
                    return same_both_ways(rotary_cost(v[0].numel(), v[0].size(-2), v[0].size(-1)));
                  });
    if (&s != &rotary_shapes[0]) r.without(kGradcheck);
    // bf16 x (precision=bf16's q and k; the tables f32): the same rounded x on both devices, the
    // rotation in FP32 (a GPU may contract it into an FMA, 10⁻⁷ apart), each result rounded once:
    // one bf16 step (2⁻⁷ relative) where the two FP32 values straddle a rounding boundary.
    r.with(bf16_column({1e-6, 0x1p-7}, {1e-6, 0x1p-7}, {0}));
    t.push_back(r);
  }
  // A bf16 x cast inside the call: the cost check sees 2 bytes an x and y element.
  t.push_back(row("rotary of a bf16 (2, 3, 29, 16)", "rotary",
                  {uniform("x", {2, 3, 29, 16}), given("cos", [](uint64_t) { return rotary_tables(32, 16).first; }),
                   given("sin", [](uint64_t) { return rotary_tables(32, 16).second; })},
                  [](const In& v, const Device&) { return rotary(cast(v[0], DType::bf16), v[1], v[2]); },
                  f32({1e-6, 0x1p-7}, {1e-6, 0x1p-7}), [](const In& v) {
                    return same_both_ways(rotary_cost(v[0].numel(), v[0].size(-2), v[0].size(-1), 2));
                  })
                  .without(kGradcheck));

  // ---- the URPE attention core (ops/urpe_attention.h) ----
  const AttentionNorm sm = AttentionNorm::softmax, ex = AttentionNorm::exp;
  // Small, every check: Toeplitz causal; bucketed per-batch maps with padding; the exp norm.
  t.push_back(attention_row("Toeplitz, causal, (1, 2, 5, 5)", {1, 2, 5, 5, true, true, 0, 0, false, true, 0, sm, 0.37f},
                            {1e-6, 1e-5}, {1e-5, 1e-4}));
  t.push_back(attention_row("per-batch buckets, padding, (2, 2, 4, 5)", {2, 2, 4, 5, true, true, 3, 4, true, false, 0, sm, 0.37f},
                            {1e-6, 1e-5}, {1e-5, 1e-4}));
  t.push_back(attention_row("exp norm, Toeplitz, causal offset 2, (1, 2, 4, 6)",
                            {1, 2, 4, 6, true, true, 0, 0, false, true, 2, ex, 0.37f}, {1e-6, 1e-5}, {1e-5, 1e-4}));
  // At parity sizes (the cases of the CUDA kernels: shared, per-batch, bucketed, T5 maps). The
  // same bits on a second call: test_cuda_parity's kernel-level case, for every table gradient.
  const struct { const char* name; AttentionSpec s; } attention_cases[] = {
      {"Toeplitz, causal, shared maps", {2, 3, 37, 37, true, true, 0, 0, false, true, 0, sm, 0.37f}},
      {"Toeplitz, no mask", {2, 3, 37, 37, true, true, 0, 0, false, false, 0, sm, 0.37f}},
      {"Transformer-XL offset, per-batch maps", {2, 2, 29, 45, true, true, 1, 0, false, true, 16, sm, 0.37f}},
      {"bucketed per-batch maps with padding", {3, 2, 33, 33, true, true, 3, 7, true, false, 0, sm, 0.37f}},
      {"shared bucket maps, padding, causal", {3, 2, 33, 33, true, true, 2, 5, true, true, 0, sm, 0.37f}},
      {"C only (no bias)", {2, 3, 37, 37, false, true, 0, 0, false, true, 0, sm, 0.37f}},
      {"plain softmax (no tables), padding", {2, 3, 37, 67, false, false, 0, 0, true, false, 0, sm, 0.37f}},
      {"exp norm, causal", {2, 3, 37, 37, true, true, 0, 0, false, true, 0, ex, 0.37f}},
      {"exp norm, bucketed per-batch maps, padding", {3, 2, 33, 33, true, true, 3, 7, true, false, 0, ex, 0.37f}},
      {"Toeplitz, Transformer-XL offset, shared maps, padding", {3, 2, 29, 45, true, true, 0, 0, true, true, 16, sm, 0.37f}},
      {"T5 buckets, padding", {3, 2, 70, 70, true, true, 4, 0, true, false, 0, sm, 0.37f}},
      {"T5 buckets, causal, C only", {2, 3, 70, 70, false, true, 4, 0, false, true, 0, sm, 0.37f}},
  };
  for (const auto& c : attention_cases) {
    const AttentionSpec& s = c.s;
    t.push_back(attention_row(std::string(c.name) + " " + shape_str({s.batch, s.heads, s.nq, s.nk}), s, {1e-6, 1e-5},
                              {1e-5, 1e-4})
                    .without(kGradcheck));
  }

  // ---- the fused URPE attention, scalar path (ops/urpe_flash_attention.h) ----
  // Small, every check: Toeplitz relative map, causal; dense per-batch buckets with padding.
  t.push_back(flash_row("relative Toeplitz map, causal, (1, 2, 5, 6), dh 3, dv 2",
                        {1, 2, 5, 6, true, true, 6, 0, false, true, 1, sm, 0.29f}, 3, 2, 0.0f, {1e-6, 1e-5},
                        {1e-5, 1e-4}));
  t.push_back(flash_row("per-batch buckets, padding, dropout 0.3, (2, 1, 4, 5), dh 3, dv 3",
                        {2, 1, 4, 5, true, true, 3, 4, true, false, 0, sm, 0.29f}, 3, 3, 0.3f, {1e-6, 1e-5},
                        {1e-5, 1e-4}));
  // At parity sizes: across the CUDA tiles (32 keys or queries, 16 or 8 rows per block). The same
  // bits on a second call: test_cuda_parity's kernel-level case.
  const struct { const char* name; AttentionSpec s; int64_t dh, dv; float dropout; } flash_cases[] = {
      {"Toeplitz relative map, causal offset", {2, 2, 37, 45, true, true, 6, 0, false, true, 8, sm, 0.29f}, 19, 23, 0.0f},
      {"relative buckets, padding, dropout", {2, 3, 33, 35, true, true, 5, 6, true, false, 0, sm, 0.29f}, 16, 16, 0.3f},
      {"shared dense maps, causal", {2, 2, 35, 35, true, true, 2, 7, false, true, 0, sm, 0.29f}, 9, 33, 0.0f},
      {"per-batch dense maps, padding", {3, 2, 34, 33, true, true, 3, 5, true, false, 0, sm, 0.29f}, 40, 7, 0.0f},
      {"no tables, dropout", {2, 2, 17, 67, false, false, 5, 0, false, false, 0, sm, 0.29f}, 12, 12, 0.2f},
      // More query row tiles than the simulator's grid of 32 blocks: each block takes a second task.
      {"more row tiles than one grid", {3, 3, 65, 9, true, true, 6, 0, false, true, 4, sm, 0.29f}, 12, 10, 0.0f},
  };
  for (const auto& c : flash_cases) {
    const AttentionSpec& s = c.s;
    t.push_back(flash_row(std::string(c.name) + " " + shape_str({s.batch, s.heads, s.nq, s.nk}), s, c.dh, c.dv,
                          c.dropout, {1e-6, 1e-5}, {1e-5, 1e-4})
                    .without(kGradcheck));
  }

  // ---- the encoder's self-attention block (ops/urpe_self_attention.h): fused on the CPU; on CUDA
  // the composition of the separate ops (urpe_self_attention_reference), so parity checks one
  // against the other ----
  t.push_back(self_attention_row("Toeplitz B and C, causal, x (2, 5, 6), D 4, 2 heads",
                                 {2, 2, 5, 5, true, true, 0, 0, false, true, 0, sm, 0.7f}, 6, 4, false));
  t.push_back(self_attention_row("per-batch buckets, padding, logit bias, x (2, 4, 5), D 6, 3 heads",
                                 {2, 3, 4, 4, true, true, 3, 5, true, false, 0, sm, 0.58f}, 5, 6, true));
  t.push_back(self_attention_row("Toeplitz B and C, x (3, 37, 24), D 16, 2 heads",
                                 {3, 2, 37, 37, true, true, 0, 0, false, false, 0, sm, 0.35f}, 24, 16, false)
                  .without(kGradcheck));

  // ---- optimizer kernels (ops/optimizer_kernels.h): in place, no gradient; each row returns
  // what the call wrote ----
  const std::vector<Shape> adam_shapes{{67}, {37, 45}, {10007}, {3, 5, 7}};
  std::vector<OpInput> adam_inputs;  // per slot: param, grad, m, v
  for (size_t k = 0; k < adam_shapes.size(); ++k) {
    const std::string n = std::to_string(k);
    adam_inputs.push_back(constant(uniform("param " + n, adam_shapes[k])));
    adam_inputs.push_back(constant(uniform("grad " + n, adam_shapes[k])));
    adam_inputs.push_back(constant(uniform("m " + n, adam_shapes[k], -0.1f, 0.1f)));
    adam_inputs.push_back(constant(uniform("v " + n, adam_shapes[k], 0.0f, 0.1f)));
  }
  for (int decoupled = 0; decoupled < 2; ++decoupled)
    t.push_back(row(std::string("adam_update, ") + (decoupled ? "AdamW" : "Adam + L2") + ", (67,), (37, 45), (10007,), (3, 5, 7)",
                    "adam_update", adam_inputs,
                    [decoupled](const In& v, const Device&) {
                      std::vector<AdamSlot> slots;
                      for (size_t k = 0; k + 3 < v.size(); k += 4)
                        slots.push_back({v[k].clone(), v[k + 1], v[k + 2].clone(), v[k + 3].clone()});
                      AdamHyper h;
                      h.lr = 3e-3f;
                      h.weight_decay = 0.05f;
                      h.decoupled_weight_decay = decoupled;
                      h.step = 7;
                      adam_update(slots, h);
                      autograd::NoGrad no_grad;  // the optimizer's state is no graph
                      std::vector<Tensor> flat;  // every slot's θ, m, v after the step
                      for (const AdamSlot& s : slots)
                        for (const Tensor& x : {s.param, s.m, s.v}) flat.push_back(reshape(x, {-1}));
                      return concat(flat, 0);
                    },
                    f32({1e-8, 1e-5}, exact), [](const In& v) {
                      int64_t n = 0;
                      for (size_t k = 0; k < v.size(); k += 4) n += v[k].numel();
                      return OpCosts{adam_cost(n, true), {}};
                    })
                    .no_backward());
  // global_grad_norm: √Σg² over several tensors (a fixed order of per-block partials on CUDA).
  t.push_back(row("global_grad_norm, (67,), (37, 45), (10007,), (3, 5, 7)", "global_grad_norm",
                  {constant(uniform("g1", {67})), constant(uniform("g2", {37, 45})), constant(uniform("g3", {10007})),
                   constant(uniform("g4", {3, 5, 7}))},
                  [](const In& v, const Device& device) { return Tensor::full({}, global_grad_norm(v), device); },
                  f32({0, 1e-6}, exact),
                  [](const In& v) {
                    int64_t n = 0;
                    for (const Tensor& g : v) n += g.numel();
                    return OpCosts{sum_of_squares_cost(n), {}};
                  })
                  .no_backward()
                  .repeatable_on_device());
  // scale_grads: every gradient scaled in place (what clip_grad_norm does past max_norm).
  t.push_back(row("scale_grads by 0.3, (37, 45), (10007,)", "scale_grads",
                  {constant(uniform("g1", {37, 45})), constant(uniform("g2", {10007}))},
                  [](const In& v, const Device&) {
                    std::vector<Tensor> g{v[0].clone(), v[1].clone()};
                    scale_grads(g, 0.3f);
                    autograd::NoGrad no_grad;
                    return concat({reshape(g[0], {-1}), g[1]}, 0);
                  },
                  f32(exact, exact),
                  [](const In& v) { return OpCosts{scale_in_place_cost(v[0].numel()) + scale_in_place_cost(v[1].numel()), {}}; })
                  .no_backward());

  // clip_grad_norm_on_device: the norm before clipping (a scalar where the gradients are) and the
  // gradients scaled past max_norm = 5 (the norm here is about 68), the factor computed there.
  t.push_back(row("clip_grad_norm_on_device to 5, (37, 45), (10007,)", "clip_grad_norm",
                  {constant(uniform("g1", {37, 45})), constant(uniform("g2", {10007}))},
                  [](const In& v, const Device&) {
                    std::vector<Tensor> g{v[0].clone(), v[1].clone()};
                    const Tensor norm = clip_grad_norm_on_device(g, 5.0f);
                    autograd::NoGrad no_grad;
                    return concat({reshape(norm, {1}), reshape(g[0], {-1}), g[1]}, 0);
                  },
                  f32({1e-7, 1e-5}, exact),
                  [](const In& v) {
                    const int64_t n = v[0].numel() + v[1].numel();
                    return OpCosts{sum_of_squares_cost(n) + scale_in_place_cost(n), {}};
                  })
                  .no_backward());

  // ---- the recipe's example (docs/architecture.md#adding-an-op): a test-only op, one row ----
  t.push_back(toy_square_row(ToyMutant::none));
  return t;
}

}  // namespace

const std::vector<OpRow>& op_table() {
  static const std::vector<OpRow> table = build_table();
  return table;
}

// ---- the toy op: what its four files in ops/ (NAME.h, .cpp, _cpu.cpp, _cuda.cu) would hold ----
//   forward   y = x²            cost: 1 FLOP, read x, write y per element
//   backward  ∂x = 2·x·g        cost: 2 FLOPs, read x and g, write ∂x per element

profile::Cost toy_square_forward_cost(int64_t n) { return {double(n), 2 * profile::kElementBytes * double(n)}; }
profile::Cost toy_square_backward_cost(int64_t n) { return {2.0 * double(n), 3 * profile::kElementBytes * double(n)}; }

namespace {

void toy_square_forward_cpu(const Tensor& x, Tensor& y, ToyMutant mutant) {
  (void)mutant;
  const float* in = x.f32();
  float* out = y.f32();
  for (int64_t k = 0; k < x.numel(); ++k) out[k] = in[k] * in[k];
#if defined(_OPENMP)
  // The mutant whose result depends on how many threads ran it.
  if (mutant == ToyMutant::thread_dependent && omp_get_max_threads() > 1) out[0] += 1e-3f;
#endif
}

void toy_square_backward_cpu(const Tensor& x, const Tensor& g, Tensor& gx, ToyMutant mutant) {
  const float factor = mutant == ToyMutant::wrong_gradient ? 3.0f : 2.0f;
  const float *in = x.f32(), *gy = g.f32();
  float* out = gx.f32();
  for (int64_t k = 0; k < x.numel(); ++k) out[k] = factor * in[k] * gy[k];
}

#if defined(URPE_WITH_CUDA)
// On CUDA, the existing kernels do the arithmetic (a toy op needs no kernel of its own).
void toy_square_forward_cuda(const Tensor& x, Tensor& y, ToyMutant mutant) {
  if (mutant != ToyMutant::cuda_skips_last_row) return kernels::binary_forward_cuda(BinaryOp::mul, x, x, y);
  // The mutant that never writes the last row of y: the table's poisoned outputs catch it.
  Tensor full = Tensor::empty(x.shape(), DType::f32, x.device());
  kernels::binary_forward_cuda(BinaryOp::mul, x, x, full);
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  kernels::copy_window_cuda(full, rows, 0, y, rows, 0, 1, rows - 1, cols, false);
}
void toy_square_backward_cuda(const Tensor& x, const Tensor& g, Tensor& gx, ToyMutant mutant) {
  Tensor xg = Tensor::empty(x.shape(), DType::f32, x.device());
  kernels::binary_forward_cuda(BinaryOp::mul, x, g, xg);
  kernels::affine_cuda(xg, mutant == ToyMutant::wrong_gradient ? 3.0f : 2.0f, 0.0f, gx);
}
#endif

}  // namespace

Tensor toy_square(const Tensor& x, ToyMutant mutant) {
  constexpr const char* op = "toy_square";
  const profile::OpRange range(op, x);
  check_dtype(op, "x", x, DType::f32);
  check_dim(op, "x", x, 1, kMaxDims);
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  URPE_PROFILE_COST(toy_square_forward_cost(mutant == ToyMutant::wrong_cost ? x.numel() - 1 : x.numel()));
  URPE_DISPATCH(op, x.device(), toy_square_forward_cpu(x, y, mutant), toy_square_forward_cuda(x, y, mutant));
  return autograd::record(y, op, {x}, [x, mutant](const Tensor& g) {
    Tensor gx = Tensor::empty(x.shape(), DType::f32, g.device());
    URPE_PROFILE_COST(toy_square_backward_cost(x.numel()));
    URPE_DISPATCH(op, g.device(), toy_square_backward_cpu(x, g, gx, mutant), toy_square_backward_cuda(x, g, gx, mutant));
    return std::vector<Tensor>{gx};
  });
}

OpRow toy_square_row(ToyMutant mutant) {
  // The row an op's author adds: inputs, the call, the f32 column, the cost formula.
  return row("toy_square (3, 37, 5)", "toy_square", {uniform("x", {3, 37, 5})},
             [mutant](const In& v, const Device&) { return toy_square(v[0], mutant); },
             f32({1e-6, 1e-6}, {1e-6, 1e-6}),
             [](const In& v) { return OpCosts{toy_square_forward_cost(v[0].numel()), toy_square_backward_cost(v[0].numel())}; });
}

}  // namespace urpe::test
