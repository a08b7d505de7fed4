// The fused URPE attention (ops/urpe_flash_attention*): finite-difference gradients for q, k, v
// and both tables; agreement with the materialised path (QKᵀ, the URPE core, dropout, A·V) on
// the output and every gradient at sizes that cross tile boundaries, with every map kind, masks
// and dropout; bit-identical results with 1 and 3 threads; host memory that never holds an n×n
// matrix; readable errors for bad arguments.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/cast.h"
#include "ops/dropout.h"
#include "ops/matmul.h"
#include "ops/urpe_attention.h"
#include "ops/urpe_flash_attention.h"
#include "tensor/host_allocator.h"
#include "test_util.h"

using namespace urpe;
using urpe::test::check_gradients;
using urpe::test::random_ids;
using urpe::test::random_param;
using urpe::test::random_values;

namespace {

enum class MapStyle {
  toeplitz,           // relative map d ↦ d for the fused path, toeplitz_map for the materialised
  relative_buckets,   // a relative map with fewer buckets than diagonals (T5-like)
  shared_dense,       // (Nq, Nk) random buckets, given to both paths
  per_batch_dense,    // (Bsz, Nq, Nk) random buckets (Graphormer-like)
};

struct FlashCase {
  std::string name;
  int64_t bsz, heads, nq, nk, dh, dv;
  bool bias, c;
  MapStyle maps;
  bool causal;
  int64_t causal_offset;
  bool padding;
  float dropout;
};

// The same attention in both forms: `fused` has relative maps where the style allows them,
// `dense` the (Nq, Nk) or (Bsz, Nq, Nk) maps the materialised core needs.
struct Inputs {
  Tensor q, k, v, bias_table, c_table;
  UrpeAttentionParams fused, dense;
  AttentionDropout dropout;
};

// Expands a relative map (Nq + Nk − 1,) into the dense (Nq, Nk) map it stands for.
Tensor expand_relative(const Tensor& relative, int64_t nq, int64_t nk) {
  const std::vector<int32_t> r = relative.to_vector_i32();
  std::vector<int32_t> dense(static_cast<size_t>(nq * nk));
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t j = 0; j < nk; ++j) dense[i * nk + j] = r[j - i + nq - 1];
  return Tensor::from_vector(dense, {nq, nk});
}

Inputs make_inputs(const FlashCase& c, uint64_t seed) {
  Inputs in;
  in.q = random_param({c.bsz, c.heads, c.nq, c.dh}, seed, -1.5f, 1.5f);
  in.k = random_param({c.bsz, c.heads, c.nk, c.dh}, seed + 1, -1.5f, 1.5f);
  in.v = random_param({c.bsz, c.heads, c.nk, c.dv}, seed + 2);
  const int64_t diagonals = c.nq + c.nk - 1;
  auto maps = [&](uint64_t s, int64_t& buckets) -> std::pair<Tensor, Tensor> {
    switch (c.maps) {
      case MapStyle::toeplitz:
        buckets = diagonals;
        return {toeplitz_relative_map(c.nq, c.nk), toeplitz_map(c.nq, c.nk)};
      case MapStyle::relative_buckets: {
        buckets = 5;
        const Tensor relative = random_ids({diagonals}, 5, s);
        return {relative, expand_relative(relative, c.nq, c.nk)};
      }
      case MapStyle::shared_dense: {
        buckets = 7;
        const Tensor m = random_ids({c.nq, c.nk}, 7, s);
        return {m, m};
      }
      default: {
        buckets = 6;
        const Tensor m = random_ids({c.bsz, c.nq, c.nk}, 6, s);
        return {m, m};
      }
    }
  };
  for (UrpeAttentionParams* p : {&in.fused, &in.dense}) p->scale = 0.41f;
  if (c.bias) {
    int64_t buckets = 0;
    auto [fused_map, dense_map] = maps(seed + 3, buckets);
    in.bias_table = random_param({c.heads, buckets}, seed + 4, -2.0f, 2.0f);
    in.fused.bias_table = in.dense.bias_table = in.bias_table;
    in.fused.bias_map = fused_map;
    in.dense.bias_map = dense_map;
  }
  if (c.c) {
    int64_t buckets = 0;
    auto [fused_map, dense_map] = maps(seed + 5, buckets);
    in.c_table = random_param({c.heads, buckets}, seed + 6, 0.3f, 1.7f);
    in.fused.c_table = in.dense.c_table = in.c_table;
    in.fused.c_map = fused_map;
    in.dense.c_map = dense_map;
  }
  if (c.padding) {  // batch 0: every key padded (fully masked rows); the others: the last 3
    std::vector<int32_t> pad(static_cast<size_t>(c.bsz * c.nk), 0);
    for (int64_t j = 0; j < c.nk; ++j) pad[j] = 1;
    for (int64_t b = 1; b < c.bsz; ++b)
      for (int64_t j = c.nk - 3; j < c.nk; ++j) pad[b * c.nk + j] = 1;
    in.fused.key_padding = in.dense.key_padding = Tensor::from_vector(pad, {c.bsz, c.nk});
  }
  for (UrpeAttentionParams* p : {&in.fused, &in.dense}) {
    p->causal = c.causal;
    p->causal_offset = c.causal_offset;
  }
  in.dropout = AttentionDropout{c.dropout, 0x5eed0000u + seed};
  return in;
}

// Differentiable inputs of both paths, in one order: q, k, v, then the tables that exist.
std::vector<Tensor> leaves(const Inputs& in) {
  std::vector<Tensor> v{in.q, in.k, in.v};
  if (in.bias_table.defined()) v.push_back(in.bias_table);
  if (in.c_table.defined()) v.push_back(in.c_table);
  return v;
}

// Rebinds the tables of `p` to the given leaves (after q, k, v).
UrpeAttentionParams with_tables(UrpeAttentionParams p, const std::vector<Tensor>& x) {
  size_t next = 3;
  if (p.bias_table.defined()) p.bias_table = x[next++];
  if (p.c_table.defined()) p.c_table = x[next++];
  return p;
}

Tensor fused_path(const Inputs& in, const std::vector<Tensor>& x) {
  return urpe_flash_attention(x[0], x[1], x[2], with_tables(in.fused, x), in.dropout);
}

// The materialised path of the models: S = QKᵀ, A = the URPE core, Drop(A), then A·V.
Tensor materialised_path(const Inputs& in, const std::vector<Tensor>& x) {
  Tensor a = urpe_attention(matmul(x[0], x[1], false, true), with_tables(in.dense, x));
  if (in.dropout.p > 0.0f) a = dropout(a, in.dropout.p, in.dropout.seed, true);
  return matmul(a, x[2]);
}

// max |got − want| / max |want|: the error relative to the tensor's scale.
double relative_error(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector_f32(), w = want.to_vector_f32();
  REQUIRE(g.size() == w.size());
  double diff = 0, scale = 0;
  for (size_t k = 0; k < g.size(); ++k) {
    REQUIRE(std::isfinite(g[k]));
    diff = std::max(diff, std::fabs(static_cast<double>(g[k]) - w[k]));
    scale = std::max(scale, std::fabs(static_cast<double>(w[k])));
  }
  return scale == 0 ? diff : diff / scale;
}

// Output and every gradient of both paths, under the same upstream gradient.
struct Run {
  Tensor out;
  std::vector<Tensor> grads;
};

Run run(const Inputs& in, bool fused, uint64_t seed) {
  std::vector<Tensor> x;
  for (const Tensor& t : leaves(in)) {
    Tensor c = t.clone();
    c.set_requires_grad(true);
    x.push_back(c);
  }
  Run r;
  r.out = fused ? fused_path(in, x) : materialised_path(in, x);
  r.out.backward(random_values(r.out.shape(), seed));
  for (const Tensor& t : x) r.grads.push_back(t.grad());
  return r;
}

void check_parity(const FlashCase& c, uint64_t seed) {
  CAPTURE(c.name);
  const Inputs in = make_inputs(c, seed);
  const Run fused = run(in, true, seed + 9), reference = run(in, false, seed + 9);
  CHECK(relative_error(fused.out, reference.out) <= 1e-4);
  const char* names[] = {"q", "k", "v", "table 1", "table 2"};
  REQUIRE(fused.grads.size() == reference.grads.size());
  for (size_t k = 0; k < fused.grads.size(); ++k) {
    CAPTURE(names[k]);
    REQUIRE(fused.grads[k].defined());
    CHECK(relative_error(fused.grads[k], reference.grads[k]) <= 1e-4);
  }
}

}  // namespace

// ---- gradients ----

TEST_CASE("gradcheck: q, k, v, B and C through the fused op, every map kind and mask") {
  autograd::GradcheckOptions options;
  options.eps = 1e-3f;
  options.atol = 2e-3f;
  options.rtol = 1e-2f;
  const FlashCase cases[] = {
      {"toeplitz, no mask", 2, 2, 5, 5, 3, 4, true, true, MapStyle::toeplitz, false, 0, false, 0.0f},
      {"causal offset 2, Nk > Nq", 1, 2, 4, 6, 3, 2, true, true, MapStyle::toeplitz, true, 2, false, 0.0f},
      {"relative buckets, padding", 3, 1, 4, 5, 2, 3, true, true, MapStyle::relative_buckets, false, 0, true, 0.0f},
      {"per-batch dense maps", 2, 2, 3, 4, 3, 3, true, true, MapStyle::per_batch_dense, false, 0, false, 0.0f},
      {"shared dense, causal, dropout", 2, 1, 5, 5, 2, 2, true, true, MapStyle::shared_dense, true, 0, false, 0.3f},
      {"C only", 1, 2, 3, 5, 4, 3, false, true, MapStyle::toeplitz, false, 0, false, 0.0f},
      {"one key", 1, 1, 1, 1, 2, 2, true, true, MapStyle::toeplitz, false, 0, false, 0.0f},
  };
  for (const FlashCase& c : cases) {
    CAPTURE(c.name);
    const Inputs in = make_inputs(c, 500);
    check_gradients([&in](const std::vector<Tensor>& x) { return fused_path(in, x); }, leaves(in),
                    options);
  }
}

// ---- agreement with the materialised path ----

TEST_CASE("fused and materialised paths agree: output and every gradient within 1e-4") {
  // Odd sizes that cross the CPU tiles (64 queries × 128 keys) and leave partial tiles.
  const FlashCase cases[] = {
      {"toeplitz B and C, no mask", 2, 3, 71, 139, 13, 11, true, true, MapStyle::toeplitz, false, 0, false, 0.0f},
      {"toeplitz, causal", 2, 2, 131, 131, 9, 7, true, true, MapStyle::toeplitz, true, 0, false, 0.0f},
      {"causal with offset (memory), Nk > Nq", 2, 2, 67, 150, 8, 5, true, true, MapStyle::toeplitz, true, 83, false, 0.0f},
      {"padding (one batch item fully padded)", 3, 2, 65, 129, 7, 9, true, true, MapStyle::toeplitz, false, 0, true, 0.0f},
      {"relative buckets, causal and padded", 3, 2, 70, 133, 6, 6, true, true, MapStyle::relative_buckets, true, 5, true, 0.0f},
      {"shared dense maps", 2, 2, 66, 131, 5, 8, true, true, MapStyle::shared_dense, false, 0, true, 0.0f},
      {"per-batch dense maps", 3, 2, 69, 130, 7, 7, true, true, MapStyle::per_batch_dense, false, 0, false, 0.0f},
      {"without B", 2, 3, 67, 129, 9, 5, false, true, MapStyle::toeplitz, true, 0, false, 0.0f},
      {"without C", 2, 3, 67, 129, 9, 5, true, false, MapStyle::toeplitz, false, 0, true, 0.0f},
      {"without B and C (plain softmax attention)", 2, 2, 65, 140, 8, 8, false, false, MapStyle::toeplitz, false, 0, false, 0.0f},
      {"dropout 0.2, toeplitz, causal", 2, 3, 71, 139, 13, 11, true, true, MapStyle::toeplitz, true, 0, false, 0.2f},
      {"dropout 0.5, dense maps, padded", 2, 2, 66, 131, 5, 8, true, true, MapStyle::per_batch_dense, false, 0, true, 0.5f},
      {"dropout without tables", 2, 2, 65, 129, 6, 6, false, false, MapStyle::toeplitz, false, 0, false, 0.1f},
  };
  uint64_t seed = 700;
  for (const FlashCase& c : cases) check_parity(c, seed += 20);
}

TEST_CASE("a fully masked row gives O = 0 and zero gradients, not NaN") {
  const FlashCase c{"padded", 2, 2, 9, 9, 4, 4, true, true, MapStyle::toeplitz, false, 0, true, 0.0f};
  const Inputs in = make_inputs(c, 900);
  std::vector<Tensor> x = leaves(in);
  const Tensor out = fused_path(in, x);
  out.backward(random_values(out.shape(), 901));
  const std::vector<float> o = out.to_vector_f32(), dq = x[0].grad().to_vector_f32();
  const int64_t per_batch = c.heads * c.nq * c.dv;  // batch item 0 has every key padded
  for (int64_t e = 0; e < per_batch; ++e) CHECK(o[e] == 0.0f);
  for (int64_t e = 0; e < c.heads * c.nq * c.dh; ++e) CHECK(dq[e] == 0.0f);
  for (float value : o) CHECK(std::isfinite(value));
}

TEST_CASE("C ≡ 1 and no bias: the fused op is softmax attention") {
  const FlashCase c{"plain", 1, 2, 6, 9, 5, 3, false, true, MapStyle::toeplitz, false, 0, false, 0.0f};
  Inputs in = make_inputs(c, 950);
  in.c_table = Tensor::ones(in.c_table.shape());
  in.fused.c_table = in.c_table;
  const Tensor fused = urpe_flash_attention(in.q, in.k, in.v, in.fused);
  // Reference in double: softmax_j(q·k·scale)·v.
  const std::vector<float> q = in.q.to_vector_f32(), k = in.k.to_vector_f32(), v = in.v.to_vector_f32();
  const std::vector<float> o = fused.to_vector_f32();
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 6; ++i) {
      std::vector<double> z(9);
      double m = -INFINITY, total = 0;
      for (int64_t j = 0; j < 9; ++j) {
        double s = 0;
        for (int64_t d = 0; d < 5; ++d) s += double(q[(h * 6 + i) * 5 + d]) * k[(h * 9 + j) * 5 + d];
        z[j] = s * 0.41;
        m = std::max(m, z[j]);
      }
      for (double& zj : z) total += (zj = std::exp(zj - m));
      for (int64_t d = 0; d < 3; ++d) {
        double want = 0;
        for (int64_t j = 0; j < 9; ++j) want += z[j] / total * v[(h * 9 + j) * 3 + d];
        CHECK(o[(h * 6 + i) * 3 + d] == doctest::Approx(want).epsilon(1e-5));
      }
    }
}

// ---- determinism and memory ----

#if defined(_OPENMP)
TEST_CASE("the fused op gives the same bits with 1 and 3 threads (forward and backward)") {
  const FlashCase cases[] = {
      {"toeplitz, causal, dropout", 2, 3, 71, 139, 9, 7, true, true, MapStyle::toeplitz, true, 3, true, 0.25f},
      {"per-batch dense", 3, 2, 66, 131, 5, 6, true, true, MapStyle::per_batch_dense, false, 0, true, 0.0f},
  };
  for (const FlashCase& c : cases) {
    CAPTURE(c.name);
    const Inputs in = make_inputs(c, 1000);
    urpe::test::check_same_bits_with_1_and_3_threads([&in] {
      const Run r = run(in, true, 1001);
      std::vector<std::vector<float>> all{r.out.to_vector_f32()};
      for (const Tensor& g : r.grads) all.push_back(g.to_vector_f32());
      return all;
    });
  }
}
#endif

TEST_CASE("forward and backward never hold an n×n matrix in host memory") {
  // B·H·n·n floats = 1·2·512·512·4 bytes = 2 MiB: the materialised path holds several of these
  // (S, P, A); the fused one only n-sized tensors, tiles, and O(n) table partials.
  const FlashCase c{"long", 1, 2, 512, 512, 16, 16, true, true, MapStyle::toeplitz, true, 0, false, 0.1f};
  const Inputs in = make_inputs(c, 1100);
  const size_t n_by_n = static_cast<size_t>(c.bsz * c.heads * c.nq * c.nk) * sizeof(float);
  auto peak_of = [&](bool fused) {
    host::reset_peak();
    const size_t before = host::in_use_bytes();
    run(in, fused, 1101);
    return host::peak_bytes() - before;
  };
  const size_t fused_peak = peak_of(true), materialised_peak = peak_of(false);
  CAPTURE(fused_peak);
  CAPTURE(materialised_peak);
  CHECK(fused_peak < n_by_n / 2);
  CHECK(materialised_peak > 2 * n_by_n);
}

TEST_CASE("inference records nothing and saves no log-sum-exp") {
  const FlashCase c{"inference", 1, 2, 64, 64, 8, 8, true, true, MapStyle::toeplitz, false, 0, false, 0.0f};
  const Inputs in = make_inputs(c, 1200);
  autograd::NoGrad no_grad;
  const Tensor out = urpe_flash_attention(in.q, in.k, in.v, in.fused);
  CHECK(out.grad_fn() == nullptr);
  CHECK_FALSE(out.requires_grad());
}

// ---- bad arguments ----

// ---- bf16 q, k, v (precision=bf16 with the fused path) ----

// The same dtype and the same values, bit for bit (bf16 widened exactly).
bool same_values(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) return false;
  const std::vector<float> x = a.to_vector_f32(), y = b.to_vector_f32();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

// |got − want| per tensor against (max|want| + |want|), as the tensor-core suite measures; the
// largest ratio seen.
double scaled_error(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector_f32(), w = want.to_vector_f32();
  REQUIRE(g.size() == w.size());
  double scale = 0, worst = 0;
  for (float x : w) scale = std::max(scale, std::fabs(double(x)));
  for (size_t k = 0; k < g.size(); ++k) {
    REQUIRE(std::isfinite(g[k]));
    const double bound = scale + std::fabs(double(w[k]));
    worst = std::max(worst, bound > 0 ? std::fabs(double(g[k]) - w[k]) / bound : std::fabs(double(g[k])));
  }
  return worst;
}

// The same attention with q, k, v cast to bf16 (the leaves stay f32: the casts hand the bf16
// gradients back widened) against the f32 op on the same leaves and the same upstream gradient
// (bf16-representable, so both runs read the same dO). The op computes in FP32 either way; what
// differs is q, k, v rounded to 8 significant bits (relative error ≤ 2⁻⁹ each) and O, ∂q, ∂k, ∂v
// rounded once more as they are stored. The tensor-core suite's BF16 bound follows the same
// chain (docs/cuda.md#bf16-tiles): 8·2⁻⁸·(max|f32| + |f32|) per tensor, for O and every gradient
// (∂B and ∂C stay f32 but sum terms made from the rounded inputs).
TEST_CASE("bf16 q, k, v: O and their gradients in bf16, within BF16 rounding of the f32 op") {
  const double tol = 8.0 / 256.0;
  const FlashCase cases[] = {
      {"toeplitz B and C, causal with offset", 2, 2, 67, 140, 13, 11, true, true, MapStyle::toeplitz, true, 9, false, 0.0f},
      {"per-batch dense maps, padded, dropout", 2, 2, 66, 131, 8, 8, true, true, MapStyle::per_batch_dense, false, 0, true, 0.3f},
  };
  uint64_t seed = 1500;
  for (const FlashCase& c : cases) {
    CAPTURE(c.name);
    const Inputs in = make_inputs(c, seed += 20);
    const Tensor upstream =
        cast(cast(random_values({c.bsz, c.heads, c.nq, c.dv}, seed + 9), DType::bf16), DType::f32);
    Run runs[2];
    for (int bf16 = 0; bf16 < 2; ++bf16) {
      std::vector<Tensor> x;
      for (const Tensor& t : leaves(in)) {
        Tensor leaf = t.clone();
        leaf.set_requires_grad(true);
        x.push_back(leaf);
      }
      std::vector<Tensor> y = x;
      if (bf16)
        for (int e = 0; e < 3; ++e) y[e] = cast(x[e], DType::bf16);
      Run& r = runs[bf16];
      r.out = fused_path(in, y);
      CHECK(r.out.dtype() == (bf16 ? DType::bf16 : DType::f32));
      r.out.backward(bf16 ? cast(upstream, DType::bf16) : upstream);
      for (const Tensor& t : x) r.grads.push_back(t.grad());
    }
    const double worst_o = scaled_error(runs[1].out, runs[0].out);
    MESSAGE(c.name << ": O " << worst_o);
    CHECK(worst_o <= tol);
    CHECK(worst_o > 1e-4);  // the rounding is really there (f32 runs agree to ~1e-7)
    const char* names[] = {"q", "k", "v", "table 1", "table 2"};
    for (size_t k = 0; k < runs[0].grads.size(); ++k) {
      CAPTURE(names[k]);
      const double e = scaled_error(runs[1].grads[k], runs[0].grads[k]);
      MESSAGE(c.name << ": gradient of " << std::string(names[k]) << " " << e);
      CHECK(e <= tol);
    }
  }
}

TEST_CASE("bf16 q, k, v: the kernels write bf16 O, ∂q, ∂k, ∂v and f32 L, ∂B, ∂C") {
  const FlashCase c{"dtypes", 1, 2, 5, 7, 3, 4, true, true, MapStyle::toeplitz, true, 0, false, 0.0f};
  const Inputs in = make_inputs(c, 1600);
  const Tensor q = cast(in.q.detach(), DType::bf16), k = cast(in.k.detach(), DType::bf16),
               v = cast(in.v.detach(), DType::bf16);
  const Tensor out = urpe_flash_attention(q, k, v, in.fused);  // tables f32, requiring grad
  REQUIRE(out.dtype() == DType::bf16);
  // The public op's backward allocates each gradient in its tensor's dtype; bf16 leaves do not
  // exist (parameters are f32), so call the kernels with bf16 gradient tensors as the op does.
  Tensor lse = Tensor::empty({1, 2, 5}), o = Tensor::empty({1, 2, 5, 4}, DType::bf16);
  kernels::urpe_flash_attention_forward_cpu(q, k, v, in.fused, {}, o, lse);
  CHECK(same_values(o, out));
  Tensor gq = Tensor::empty(q.shape(), DType::bf16), gk = Tensor::empty(k.shape(), DType::bf16),
         gv = Tensor::empty(v.shape(), DType::bf16);
  Tensor gb = Tensor::empty(in.bias_table.shape()), gc = Tensor::empty(in.c_table.shape());
  const Tensor go = cast(random_values(o.shape(), 1601), DType::bf16);
  kernels::urpe_flash_attention_backward_cpu(q, k, v, o, lse, go, in.fused, {}, gq, gk, gv, &gb, &gc);
  // The bf16 results are the f32 kernels' on the widened values, rounded once.
  const Tensor qw = cast(q, DType::f32), kw = cast(k, DType::f32), vw = cast(v, DType::f32);
  Tensor lse_w = Tensor::empty({1, 2, 5}), o_w = Tensor::empty({1, 2, 5, 4});
  kernels::urpe_flash_attention_forward_cpu(qw, kw, vw, in.fused, {}, o_w, lse_w);
  CHECK(same_values(o, cast(o_w, DType::bf16)));
  CHECK(same_values(lse, lse_w));
  Tensor gq_w = Tensor::empty(q.shape()), gk_w = Tensor::empty(k.shape()), gv_w = Tensor::empty(v.shape());
  Tensor gb_w = Tensor::empty(gb.shape()), gc_w = Tensor::empty(gc.shape());
  kernels::urpe_flash_attention_backward_cpu(qw, kw, vw, cast(o, DType::f32), lse, cast(go, DType::f32), in.fused,
                                             {}, gq_w, gk_w, gv_w, &gb_w, &gc_w);
  CHECK(same_values(gq, cast(gq_w, DType::bf16)));
  CHECK(same_values(gk, cast(gk_w, DType::bf16)));
  CHECK(same_values(gv, cast(gv_w, DType::bf16)));
  CHECK(same_values(gb, gb_w));
  CHECK(same_values(gc, gc_w));
}

TEST_CASE("bad arguments are one clear error naming the argument") {
  const FlashCase c{"errors", 2, 2, 5, 6, 3, 4, true, true, MapStyle::toeplitz, false, 0, false, 0.0f};
  const Inputs in = make_inputs(c, 1300);
  auto fails_with = [&](const UrpeAttentionParams& p, const Tensor& q, const Tensor& k,
                        const Tensor& v, const AttentionDropout& d, const char* text) {
    const std::string expected = text;
    CAPTURE(expected);
    std::string message = "(no error)";
    try {
      urpe_flash_attention(q, k, v, p, d);
    } catch (const Error& e) {
      message = e.what();
    }
    CAPTURE(message);
    CHECK(message.rfind("urpe_flash_attention: ", 0) == 0);  // the op's name, also from the shared checks
    CHECK(message.find(text) != std::string::npos);
  };
  UrpeAttentionParams p = in.fused;
  p.bias_map = toeplitz_relative_map(5, 5);  // (9,), not (10,)
  fails_with(p, in.q, in.k, in.v, {}, "bias_map i32 (9,) on cpu must have shape (Nq + Nk − 1,) = (10,)");
  p = in.fused;
  std::vector<int32_t> values = p.c_map.to_vector_i32();
  values[4] = 99;
  p.c_map = Tensor::from_vector(values, {10});
  fails_with(p, in.q, in.k, in.v, {}, "has value 99 at flat index 4");
  fails_with(in.fused, in.q, random_values({2, 2, 6, 5}, 1), in.v, {}, "k f32 (2, 2, 6, 5)");
  fails_with(in.fused, in.q, in.k, random_values({2, 2, 5, 4}, 1), {}, "v f32 (2, 2, 5, 4)");
  fails_with(in.fused, in.q, in.k, in.v, {1.0f, 1}, "dropout probability must be in [0, 1)");
  fails_with(in.fused, cast(in.q.detach(), DType::bf16), in.k, in.v, {},
             "q, k and v must have one dtype (f32 or bf16), got q bf16 (2, 2, 5, 3)");
  fails_with(in.fused, in.q, in.k, Tensor::zeros({2, 2, 6, 4}, DType::i32), {}, "must be f32 or bf16, got i32");
  p = in.fused;
  p.key_padding = Tensor::zeros({2, 5}, DType::i32);
  fails_with(p, in.q, in.k, in.v, {},
             "key_padding i32 (2, 5) on cpu must have shape (Bsz, Nk) = (2, 6) to match q f32 (2, 2, 5, 3) on cpu and k "
             "f32 (2, 2, 6, 3) on cpu");
  p = in.fused;
  p.bias_table = random_values({3, p.bias_table.size(1)}, 2);  // 3 heads, q has 2
  fails_with(p, in.q, in.k, in.v, {}, "bias_table f32 (3, 10) on cpu must have shape (H, K) with H = 2 heads, like q");
  p = in.fused;
  p.c_map = Tensor();
  fails_with(p, in.q, in.k, in.v, {},
             "c_table f32 (2, 10) on cpu is given but c_map is missing (an i32 map of shape (Nq + Nk − 1,) = (10,) "
             "(relative: bucket of j − i), (Nq, Nk) = (5, 6) or (Bsz, Nq, Nk) = (2, 5, 6))");
  p = in.fused;
  p.c_table = Tensor();
  fails_with(p, in.q, in.k, in.v, {}, "c_map i32 (10,) on cpu is given without a c_table");
}
