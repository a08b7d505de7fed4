// CPU fast paths checked against their one-element-at-a-time references: the caching host
// allocator, permute's run copies, broadcasting without modulo, the autograd engine adopting
// (not copying) a gradient it exclusively owns, the vectorisable float exp/erfc/GELU of
// ops/fast_math_cpu.h against double libm over dense grids (the error bounds quoted there), the
// large GEMMs urpe splits over its threads (ops/matmul_cpu.cpp) against a double reference, and
// the vectorised kernels giving the same bits for any thread count.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#if defined(_OPENMP)
#include <omp.h>
#endif

#include "ops/activation.h"
#include "ops/elementwise.h"
#include "ops/fast_math_cpu.h"
#include "ops/layer_norm.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/urpe_attention.h"
#include "tensor/host_allocator.h"
#include "test_util.h"

using namespace urpe;
using urpe::test::random_param;
using urpe::test::random_values;

TEST_CASE("host allocator: size classes, reuse and the cache bound") {
  CHECK(host::size_class(1) == 64);
  CHECK(host::size_class(4096) == 4096);
  CHECK(host::size_class(4097) == 5120);          // 4 KiB + a quarter
  CHECK(host::size_class(8192 + 1) == 10240);
  for (size_t bytes : {size_t(100), size_t(5000), size_t(123457), size_t(3) << 20}) {
    const size_t c = host::size_class(bytes);
    CHECK(c >= bytes);
    CHECK(c % 64 == 0);
    CHECK(c <= bytes + bytes / 4 + 64);  // at most 25% slack (+ the 64-byte rounding)
  }

  host::empty_cache();
  CHECK(host::cache_stats().cached_bytes == 0);
  const size_t bytes = 1 << 20;
  void* first = host::allocate(bytes);
  CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
  host::release(first, bytes);
  CHECK(host::cache_stats().cached_bytes == host::size_class(bytes));
  const size_t hits = host::cache_stats().hits;
  void* second = host::allocate(bytes - 100);  // same class: the same block comes back
  CHECK(second == first);
  CHECK(host::cache_stats().hits == hits + 1);
  CHECK(host::cache_stats().cached_bytes == 0);
  host::release(second, bytes - 100);

  // The bound: freeing more than kMaxCachedBytes leaves at most that much cached.
  std::vector<void*> blocks;
  const size_t big = host::kMaxCachedBytes / 4;
  for (int k = 0; k < 6; ++k) blocks.push_back(host::allocate(big));
  for (void* b : blocks) host::release(b, big);
  CHECK(host::cache_stats().cached_bytes <= host::kMaxCachedBytes);
  host::empty_cache();
  CHECK(host::cache_stats().cached_blocks == 0);

  // Tensors go through it: a freed tensor's storage is reused by the next of its class.
  const void* storage = nullptr;
  { Tensor t = Tensor::zeros({256, 256}); storage = t.f32(); }
  Tensor u = Tensor::zeros({256, 256});
  CHECK(u.f32() == storage);
  CHECK(u.to_vector_f32() == std::vector<float>(256 * 256, 0.0f));
}

// The reference permute, one element at a time.
static std::vector<float> permute_reference(const Tensor& x, const std::vector<int>& order) {
  const Shape& in = x.shape();
  const int d = x.dim();
  Shape out_shape(d);
  for (int k = 0; k < d; ++k) out_shape[k] = in[order[k]];
  std::vector<int64_t> in_stride(d, 1);
  for (int k = d - 2; k >= 0; --k) in_stride[k] = in_stride[k + 1] * in[k + 1];
  const std::vector<float> src = x.to_vector_f32();
  std::vector<float> out(src.size());
  for (int64_t flat = 0; flat < static_cast<int64_t>(out.size()); ++flat) {
    int64_t rest = flat, offset = 0;
    for (int k = d - 1; k >= 0; --k) {
      offset += (rest % out_shape[k]) * in_stride[order[k]];
      rest /= out_shape[k];
    }
    out[flat] = src[offset];
  }
  return out;
}

TEST_CASE("permute: every 4-D order against the per-element reference, small and parallel sizes") {
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{8, 33, 4, 32}}) {  // 120 and 33792 elements
    Tensor x = random_values(shape, 7);
    std::vector<int> order{0, 1, 2, 3};
    do {
      CAPTURE(order[0]); CAPTURE(order[1]); CAPTURE(order[2]); CAPTURE(order[3]);
      CHECK(permute(x, order).to_vector_f32() == permute_reference(x, order));
    } while (std::next_permutation(order.begin(), order.end()));
  }
  Tensor ids = Tensor::arange(24).view({2, 3, 4});  // i32 shares the 32-bit word copy
  std::vector<int32_t> expected;
  for (int k = 0; k < 4; ++k) for (int i = 0; i < 2; ++i) for (int j = 0; j < 3; ++j)
    expected.push_back(i * 12 + j * 4 + k);
  CHECK(permute(ids, {2, 0, 1}).to_vector_i32() == expected);
}

TEST_CASE("broadcasting: forward and backward against k % n indexing") {
  for (int64_t rows : {int64_t(3), int64_t(5000)}) {  // serial and parallel sizes
    const int64_t cols = 17, n = rows * cols;
    Tensor a = random_param({rows, cols}, 11);
    Tensor b = random_param({cols}, 12, 0.5f, 1.5f);
    const std::vector<float> av = a.to_vector_f32(), bv = b.to_vector_f32();
    for (int swap = 0; swap < 2; ++swap) {
      const Tensor& lhs = swap ? b : a;
      const Tensor& rhs = swap ? a : b;
      const std::vector<float>& lv = swap ? bv : av;
      const std::vector<float>& rv = swap ? av : bv;
      const std::vector<float> sum = add(lhs, rhs).to_vector_f32();
      const std::vector<float> quotient = div(lhs, rhs).to_vector_f32();
      for (int64_t k = 0; k < n; ++k) {
        CHECK(sum[k] == lv[k % lv.size()] + rv[k % rv.size()]);
        CHECK(quotient[k] == lv[k % lv.size()] / rv[k % rv.size()]);
      }
    }
    // ∂b of a·b sums a over the rows, in row order, in double.
    Tensor product = mul(a, b);
    sum_all(product).backward();
    const std::vector<float> gb = b.grad().to_vector_f32();
    for (int64_t j = 0; j < cols; ++j) {
      double total = 0;
      for (int64_t r = 0; r < rows; ++r) total += av[r * cols + j];
      CHECK(gb[j] == static_cast<float>(total));
    }
    const std::vector<float> ga = a.grad().to_vector_f32();
    for (int64_t k = 0; k < n; ++k) CHECK(ga[k] == bv[k % cols]);
  }
}

TEST_CASE("autograd: gradients adopted without a copy are still summed correctly") {
  Tensor x = random_param({4, 6}, 21);
  const std::vector<float> xv = x.to_vector_f32();
  // x reaches the loss four ways: twice through one mul, through a reshape (a view of the
  // gradient), and directly. ∂/∂x of Σ(x·x + reshape(x) + x) = 2x + 2.
  Tensor y = add(add(mul(x, x), reshape(reshape(x, {24}), {4, 6})), x);
  sum_all(y).backward();
  const std::vector<float> g = x.grad().to_vector_f32();
  for (size_t k = 0; k < xv.size(); ++k) CHECK(g[k] == doctest::Approx(2.0 * xv[k] + 2.0).epsilon(1e-6));
  CHECK(!x.grad().requires_grad());
  CHECK(!x.grad().grad_fn());
  // A second backward adds into the existing .grad (which must not alias anything).
  Tensor z = mul(x, x);
  sum_all(z).backward();
  const std::vector<float> g2 = x.grad().to_vector_f32();
  for (size_t k = 0; k < xv.size(); ++k) CHECK(g2[k] == doctest::Approx(4.0 * xv[k] + 2.0).epsilon(1e-6));
}

// ---- vectorisable float maths (ops/fast_math_cpu.h) against double libm ----

namespace {

// Every `stride`-th float from lo to hi (lo < 0 < hi), walking the bit patterns: as dense in
// each binade as in any other, so both tails and the region around 0 are covered. The stride is
// 997 (a few million points, well under a second); URPE_FAST_MATH_STRIDE=1 checks every float
// (minutes), which is how the bounds quoted in ops/fast_math_cpu.h were measured.
uint32_t float_grid_stride() {
  const char* env = std::getenv("URPE_FAST_MATH_STRIDE");
  const long stride = env != nullptr ? std::atol(env) : 0;
  return stride > 0 ? static_cast<uint32_t>(stride) : 997u;
}

// Calls f(chunk) on the grid in chunks of at most 2^20 floats.
template <typename F>
void for_floats_between(float lo, float hi, F f) {
  const int64_t stride = float_grid_stride();
  std::vector<float> chunk;
  auto push = [&](int64_t bits) {
    chunk.push_back(kernels::fast::float_of(static_cast<uint32_t>(bits)));
    if (chunk.size() == (size_t(1) << 20)) { f(chunk); chunk.clear(); }
  };
  for (int64_t b = kernels::fast::bits_of(lo); b >= int64_t(0x80000000u); b -= stride) push(b);
  for (int64_t b = 0; b <= int64_t(kernels::fast::bits_of(hi)); b += stride) push(b);
  if (!chunk.empty()) f(chunk);
}

constexpr double kFloatMin = 1.17549435e-38;      // smallest normal float
constexpr double kFloatTrueMin = 1.40129846e-45;  // smallest subnormal float

}  // namespace

TEST_CASE("fast exp: relative error against double exp over [-104, 89], special values") {
  double max_rel = 0, max_subnormal = 0;
  int64_t points = 0;
  bool overflow_is_inf = true;
  for_floats_between(-104.0f, 89.0f, [&](const std::vector<float>& xs) {
    std::vector<float> ys(xs.size());
    for (size_t k = 0; k < xs.size(); ++k) ys[k] = kernels::fast::exp_fast(xs[k]);  // vectorised
    for (size_t k = 0; k < xs.size(); ++k) {
      const double ref = std::exp(static_cast<double>(xs[k]));
      if (ref > 3.40282347e+38) overflow_is_inf = overflow_is_inf && std::isinf(ys[k]);
      else if (ref >= kFloatMin) max_rel = std::max(max_rel, std::fabs(ys[k] - ref) / ref);
      else max_subnormal = std::max(max_subnormal, std::fabs(ys[k] - ref));
    }
    points += static_cast<int64_t>(xs.size());
  });
  MESSAGE("exp_fast: ", points, " points, max relative error ", max_rel,
          ", subnormal results max absolute error ", max_subnormal);
  CHECK(max_rel <= 1.5e-7);               // ≈ 2 ulp
  CHECK(max_subnormal <= kFloatTrueMin);  // 1 subnormal ulp
  CHECK(overflow_is_inf);
  CHECK(kernels::fast::exp_fast(0.0f) == 1.0f);
  CHECK(kernels::fast::exp_fast(-INFINITY) == 0.0f);  // masked softmax keys
  CHECK(kernels::fast::exp_fast(-200.0f) == 0.0f);
  CHECK(std::isinf(kernels::fast::exp_fast(INFINITY)));
  CHECK(std::isinf(kernels::fast::exp_fast(100.0f)));
  CHECK(std::isnan(kernels::fast::exp_fast(NAN)));
  CHECK(std::isnan(kernels::fast::exp_fast(-NAN)));
}

TEST_CASE("fast erfc: relative error against double erfc over [-10, 10], both tails") {
  double max_rel = 0, max_tiny = 0;
  int64_t points = 0;
  for_floats_between(-10.0f, 10.0f, [&](const std::vector<float>& xs) {
    std::vector<float> ys(xs.size());
    for (size_t k = 0; k < xs.size(); ++k) ys[k] = kernels::fast::erfc_fast(xs[k]);
    for (size_t k = 0; k < xs.size(); ++k) {
      const double ref = std::erfc(static_cast<double>(xs[k]));
      if (ref >= kFloatMin) max_rel = std::max(max_rel, std::fabs(ys[k] - ref) / ref);
      else max_tiny = std::max(max_tiny, std::fabs(ys[k] - ref));  // x > 9.1: subnormal or 0
    }
    points += static_cast<int64_t>(xs.size());
  });
  MESSAGE("erfc_fast: ", points, " points, max relative error ", max_rel,
          ", below FLT_MIN max absolute error ", max_tiny);
  CHECK(max_rel <= 5e-7);
  CHECK(max_tiny <= 2 * kFloatTrueMin);
  CHECK(kernels::fast::erfc_fast(0.0f) == 1.0f);
  CHECK(kernels::fast::erfc_fast(INFINITY) == 0.0f);
  CHECK(kernels::fast::erfc_fast(-INFINITY) == 2.0f);
  CHECK(std::isnan(kernels::fast::erfc_fast(NAN)));
}

TEST_CASE("gelu kernels: value and slope against the double formulas over [-13, 13]") {
  // Through the real kernels (parallel, vectorised); the slope is the backward with g = 1.
  double max_value_rel = 0, max_slope_err = 0;
  int64_t points = 0;
  for_floats_between(-13.0f, 13.0f, [&](const std::vector<float>& xv) {
    const int64_t n = static_cast<int64_t>(xv.size());
    Tensor x = Tensor::from_vector(xv, {n});
    Tensor y = Tensor::empty({n}), slope = Tensor::empty({n});
    kernels::activation_forward_cpu(kernels::Activation::gelu, x, y);
    kernels::activation_backward_cpu(kernels::Activation::gelu, x, Tensor::full({n}, 1.0f), slope);
    const std::vector<float> yv = y.to_vector_f32(), sv = slope.to_vector_f32();
    for (int64_t k = 0; k < n; ++k) {
      const double v = xv[k];
      const double cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
      const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2.0 * 3.14159265358979323846);
      const double value = v * cdf;
      if (cdf >= kFloatMin && std::fabs(value) >= kFloatMin)  // Φ(x) and x·Φ(x) normal floats
        max_value_rel = std::max(max_value_rel, std::fabs(yv[k] - value) / std::fabs(value));
      // The slope Φ + x·φ crosses 0 at x ≈ −0.75: its error is measured against Φ + |x|·φ.
      const double slope_scale = cdf + std::fabs(v) * pdf;
      max_slope_err = std::max(max_slope_err, std::fabs(sv[k] - (cdf + v * pdf)) / slope_scale);
    }
    points += n;
  });
  MESSAGE("gelu: ", points, " points, value max relative error ", max_value_rel,
          ", slope max error / (Φ + |x|φ) ", max_slope_err);
  CHECK(max_value_rel <= 6e-7);
  CHECK(max_slope_err <= 6e-7);

  Tensor special = Tensor::from_vector(std::vector<float>{INFINITY, NAN, -30.0f, 30.0f}, {4});
  Tensor ys = Tensor::empty({4});
  kernels::activation_forward_cpu(kernels::Activation::gelu, special, ys);
  const std::vector<float> s = ys.to_vector_f32();
  CHECK(std::isinf(s[0]));
  CHECK(std::isnan(s[1]));
  CHECK(s[2] == 0.0f);  // −30·Φ(−30) underflows (to −0)
  CHECK(s[3] == 30.0f);
}

TEST_CASE("layer norm's float passes keep the double expression's accuracy for rows far from 0") {
  // Rows of mean 10^4 and spread 1: float(μ) alone is off by up to half an ulp of 10^4 (5e-4),
  // which would shift every x̂ by that much; μ as float hi + lo keeps x̂ within float rounding.
  const int64_t rows = 64, d = 96;
  std::vector<float> values(rows * d);
  Rng rng(331);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < d; ++k) values[r * d + k] = 1.0e4f + static_cast<float>(r % 7) + (2 * rng.uniform() - 1);
  const Tensor x = Tensor::from_vector(values, {rows, d});
  const Tensor gamma = random_values({d}, 332, 0.5f, 1.5f), beta = random_values({d}, 333);
  Tensor y = Tensor::empty({rows, d}), mean = Tensor::empty({rows}), rstd = Tensor::empty({rows});
  kernels::layer_norm_forward_cpu(x, gamma, beta, 1e-5f, y, mean, rstd);
  const std::vector<float> out = y.to_vector_f32(), g = gamma.to_vector_f32(), b = beta.to_vector_f32();
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t k = 0; k < d; ++k) mu += values[r * d + k];
    mu /= d;
    for (int64_t k = 0; k < d; ++k) var += (values[r * d + k] - mu) * (values[r * d + k] - mu);
    const double inv = 1.0 / std::sqrt(var / d + 1e-5);
    for (int64_t k = 0; k < d; ++k)
      worst = std::max(worst, std::fabs(out[r * d + k] - (g[k] * (values[r * d + k] - mu) * inv + b[k])));
  }
  CHECK(worst < 2e-5);
}

namespace {

// C = α·op(A)·op(B) + β·C0 by gemm_cpu, for stored A, B (row-major, transposed per the flags).
struct GemmCase {
  bool ta, tb;
  int64_t m, n, k;
  float beta;
};

std::vector<float> run_gemm_case(const GemmCase& c, const Tensor& a, const Tensor& b, const Tensor& c0) {
  Tensor out = c0.detach().clone();
  kernels::GemmArgs g;
  g.trans_a = c.ta;
  g.trans_b = c.tb;
  g.m = c.m;
  g.n = c.n;
  g.k = c.k;
  g.alpha = 0.5f;
  g.beta = c.beta;
  g.a = a.f32();
  g.lda = c.ta ? c.m : c.k;
  g.b = b.f32();
  g.ldb = c.tb ? c.k : c.n;
  g.c = out.f32();
  g.ldc = c.n;
  kernels::gemm_cpu(g);
  return out.to_vector_f32();
}

// Shapes past the split thresholds: a row split (m·n·k ≥ 2^20, m ≥ 128; 1100 rows in parts of 144
// with a short last one) and a depth split (m·n·k ≥ 2^24, k ≥ 2048 and ≥ 8·max(m, n)), each with
// either transpose.
const std::vector<GemmCase> kSplitCases = {
    {false, true, 1100, 70, 300, 0.0f}, {true, false, 1100, 70, 300, 1.0f},
    {true, false, 64, 72, 4500, 0.0f},  {false, true, 64, 72, 4500, 1.0f}, {true, true, 70, 64, 4200, 1.0f}};

}  // namespace

TEST_CASE("large GEMMs split over the threads by rows or depth: against a double reference") {
  for (const GemmCase& c : kSplitCases) {
    CAPTURE(c.m);
    CAPTURE(c.k);
    CAPTURE(c.ta);
    const Tensor a = random_values(c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k}, 311);
    const Tensor b = random_values(c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n}, 312);
    const Tensor c0 = random_values({c.m, c.n}, 313);
    const std::vector<float> out = run_gemm_case(c, a, b, c0);
    const std::vector<float> pa = a.to_vector_f32(), pb = b.to_vector_f32(), pc = c0.to_vector_f32();
    int64_t bad = 0;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          const double x = c.ta ? pa[p * c.m + i] : pa[i * c.k + p];
          const double y = c.tb ? pb[j * c.k + p] : pb[p * c.n + j];
          sum += x * y;
          magnitude += std::fabs(x * y);
        }
        const double ref = 0.5 * sum + c.beta * pc[i * c.n + j];
        // float accumulation over k terms: within k·ε of Σ|x·y| (a loose bound, far above the
        // typical error, far below any indexing mistake's)
        if (std::fabs(out[i * c.n + j] - ref) > 1e-5 + 1e-6 * static_cast<double>(c.k) * magnitude) ++bad;
      }
    CHECK(bad == 0);
  }
}

#if defined(_OPENMP)
// The vectorised loops must not make results depend on where a thread's chunk (and so its vector
// loop and scalar remainder) starts: 1 and 3 threads give the same bits. Odd sizes, above the
// kernels' OpenMP thresholds.
TEST_CASE("large GEMMs split over the threads give the same bits for any thread count") {
  test::check_same_bits_with_1_and_3_threads([] {
    std::vector<std::vector<float>> out;
    for (const GemmCase& c : kSplitCases) {
      const Tensor a = random_values(c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k}, 321);
      const Tensor b = random_values(c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n}, 322);
      out.push_back(run_gemm_case(c, a, b, random_values({c.m, c.n}, 323)));
    }
    return out;
  });
}

TEST_CASE("gelu and the urpe attention core are bit-identical for any thread count") {
  test::check_same_bits_with_1_and_3_threads([] {
    std::vector<std::vector<float>> out;
    const int64_t n = 100003;
    Tensor x = random_values({n}, 301, -6.0f, 6.0f), g = random_values({n}, 302);
    Tensor y = Tensor::empty({n}), gx = Tensor::empty({n});
    kernels::activation_forward_cpu(kernels::Activation::gelu, x, y);
    kernels::activation_backward_cpu(kernels::Activation::gelu, x, g, gx);
    out.push_back(y.to_vector_f32());
    out.push_back(gx.to_vector_f32());

    const int64_t bsz = 3, heads = 2, len = 37;
    UrpeAttentionParams p;
    p.scale = 0.3f;
    p.bias_table = random_values({heads, 2 * len - 1}, 303);
    p.bias_map = toeplitz_map(len, len);
    p.c_table = random_values({heads, 2 * len - 1}, 304, 0.5f, 1.5f);
    p.c_map = p.bias_map;
    std::vector<int32_t> padding(bsz * len, 0);
    for (int64_t j = 30; j < len; ++j) padding[2 * len + j] = 1;  // batch item 2: 7 padded keys
    p.key_padding = Tensor::from_vector(padding, {bsz, len});
    for (bool causal : {false, true}) {
      p.causal = causal;
      Tensor scores = random_values({bsz, heads, len, len}, 305, -4.0f, 4.0f);
      Tensor probs = Tensor::empty(scores.shape()), a = Tensor::empty(scores.shape());
      kernels::urpe_attention_forward_cpu(scores, p, probs, a);
      Tensor gs = Tensor::empty(scores.shape());
      Tensor gb = Tensor::empty(p.bias_table.shape()), gc = Tensor::empty(p.c_table.shape());
      kernels::urpe_attention_backward_cpu(random_values(scores.shape(), 306), probs, p, gs, &gb, &gc);
      for (const Tensor& t : {probs, a, gs, gb, gc}) out.push_back(t.to_vector_f32());
    }
    return out;
  });
}
#endif
