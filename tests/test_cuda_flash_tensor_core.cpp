// The fused URPE attention on the tensor cores (TF32 mma.sync, selected by the context's TF32
// switch) against the CPU reference, and the instruction it is built from:
//   * one m16n8k8 tile through ops/mma_tf32.cuh against a plain matrix product of the TF32-rounded
//     inputs, and every deliberately wrong fragment layout giving a wrong product (so a kernel
//     that indexed its fragments wrongly could not pass);
//   * cvt.rna.tf32.f32 against an independent rounding (ties away from zero);
//   * forward (O, L) and backward (dQ, dK, dV, dB, dC) of every map kind, causal with an offset,
//     key padding, dropout, no tables, each head-dim class (32, 64, 128), with NaN-poisoned
//     outputs, within TF32's tolerance; the same bits from a second backward and from the table
//     partials summed in chunks; the public op with autograd on both devices.
// Tolerance: TF32 keeps 10 mantissa bits (unit roundoff u = 2^-11 ≈ 4.9e-4 per rounded input);
// logits, weights and gradient terms each pass through one or two roundings and sums of tens to
// hundreds of terms, so |cuda − cpu| ≤ 4e-3·(max|cpu| + |cpu|) per tensor (docs/cuda.md). The
// errors seen are about a quarter of that; an FP32 kernel (the scalar path) stays within 1e-4.
//
// Without a CUDA device the suite exits 77 (CTest: skipped). Built against the CUDA simulator as
// test_cuda_sim_flash_tensor_core, where the mma is the simulator's warp-collective emulation and
// every launch runs under two schedules with racecheck, memcheck and initcheck.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "ops/mma_tile.h"
#include "tensor/cuda_backend.h"
#include "test_util.h"

using namespace urpe;
using urpe::test::random_ids;
using urpe::test::random_values;

namespace {

struct SkipWithoutCuda {
  SkipWithoutCuda() {
    if (cuda::device_count() == 0) {
      std::printf("no CUDA device: tensor-core suite skipped\n");
      std::fflush(stdout);
      std::exit(77);
    }
  }
} skip_without_cuda;

}  // namespace

#if defined(URPE_WITH_CUDA)

namespace {

const Device& gpu() {
  static const Device device = Device::cuda(cuda::create_context(0));
  return device;
}

// The TF32 switch of the test's context, on inside the scope (the tensor-core kernels), off after.
struct Tf32Scope {
  Tf32Scope() { cuda::set_tf32(gpu().context(), true); }
  ~Tf32Scope() { cuda::set_tf32(gpu().context(), false); }
};

const float kNaN = std::numeric_limits<float>::quiet_NaN();
Tensor poisoned(const Shape& shape) { return Tensor::full(shape, kNaN, gpu()); }

// FNV-1a over a tensor's bytes: printed per case, so two runs of the suite (bench/gpu_session.sh
// attention_tc) can be compared bit for bit, not only two calls within one run.
uint64_t bits_hash(const Tensor& t) {
  uint64_t h = 1469598103934665603ull;
  for (float x : t.to_vector_f32()) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    for (int byte = 0; byte < 4; ++byte) h = (h ^ ((u >> (8 * byte)) & 0xffu)) * 1099511628211ull;
  }
  return h;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector_f32(), y = b.to_vector_f32();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

// Every element finite where the reference is (−∞ matched exactly), and within
// tol·(max|ref| + |ref|). Returns the largest |diff| / (max|ref| + |ref|) seen.
double check_tf32(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.shape() == want.shape());
  const std::vector<float> g = got.to_vector_f32(), w = want.to_vector_f32();
  double scale = 0;
  for (float x : w)
    if (std::isfinite(x)) scale = std::max(scale, double(std::fabs(x)));
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (size_t k = 0; k < g.size(); ++k) {
    bool ok;
    if (!std::isfinite(w[k])) {
      ok = g[k] == w[k];
    } else {
      const double bound = scale + std::fabs(w[k]);
      const double ratio = bound > 0 ? std::fabs(double(g[k]) - w[k]) / bound : std::fabs(g[k]);
      ok = std::isfinite(g[k]) && ratio <= tol;
      if (std::isfinite(g[k])) worst = std::max(worst, ratio);
    }
    if (!ok && first < 0) first = int64_t(k);
    bad += !ok;
  }
  std::ostringstream msg;
  msg << bad << " of " << g.size() << " elements beyond " << tol << "·(max|cpu| + |cpu|), worst ratio " << worst;
  if (first >= 0) msg << "; first at " << first << ": cuda " << g[first] << ", cpu " << w[first];
  INFO(msg.str());
  CHECK(bad == 0);
  MESSAGE(what << ": worst |cuda − cpu| / (max|cpu| + |cpu|) = " << worst);
  return worst;
}

// ---- the instruction ----

// TF32 rounding written independently of the kernels' bit trick: the value rounded to a
// multiple of its binade's TF32 spacing 2^(e − 10), halves away from zero (std::round).
float round_tf32_reference(float x) {
  if (x == 0.0f || !std::isfinite(x)) return x;
  int e;
  std::frexp(x, &e);  // |x| in [2^(e−1), 2^e)
  const double spacing = std::ldexp(1.0, e - 1 - 10);
  return static_cast<float>(std::round(double(x) / spacing) * spacing);
}

// d = a·b + c in double from TF32-rounded a and b; `magnitude` gets Σ|a·b| + |c| per element.
void tile_reference(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& c,
                    std::vector<double>& d, std::vector<double>& magnitude) {
  d.assign(16 * 8, 0.0);
  magnitude.assign(16 * 8, 0.0);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double sum = c[i * 8 + j], mag = std::fabs(c[i * 8 + j]);
      for (int k = 0; k < 8; ++k) {
        const double term = double(round_tf32_reference(a[i * 8 + k])) * round_tf32_reference(b[k * 8 + j]);
        sum += term;
        mag += std::fabs(term);
      }
      d[i * 8 + j] = sum;
      magnitude[i * 8 + j] = mag;
    }
}

// The largest |d − reference| / (Σ|a·b| + |c|) of one tile product on the device.
double tile_error(const Tensor& a, const Tensor& b, const Tensor& c, kernels::MmaFragmentLayout layout) {
  Tensor d = poisoned({16, 8});
  kernels::mma_tf32_tile_cuda(a.to(gpu()), b.to(gpu()), c.to(gpu()), d, layout);
  std::vector<double> ref, mag;
  tile_reference(a.to_vector_f32(), b.to_vector_f32(), c.to_vector_f32(), ref, mag);
  const std::vector<float> got = d.to_vector_f32();
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double e = std::fabs(got[k] - ref[k]) / mag[k];
    worst = std::isfinite(e) ? std::max(worst, e) : 1e30;  // NaN: an unwritten element
  }
  return worst;
}

}  // namespace

TEST_CASE("tensor cores: one m16n8k8 TF32 tile against a plain matrix product") {
  for (uint64_t seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    const Tensor a = random_values({16, 8}, 10 * seed, -2.0f, 2.0f);
    const Tensor b = random_values({8, 8}, 10 * seed + 1, -2.0f, 2.0f);
    const Tensor c = random_values({16, 8}, 10 * seed + 2, -1.0f, 1.0f);
    // The PTX ISA's layout: the product of the rounded inputs, to FP32 accumulation.
    CHECK(tile_error(a, b, c, kernels::MmaFragmentLayout::ptx) < 1e-6);
    // Each wrong layout multiplies other elements: far off (seen: 0.1–1).
    for (auto wrong : {kernels::MmaFragmentLayout::a_rows_swapped, kernels::MmaFragmentLayout::b_rows_swapped,
                       kernels::MmaFragmentLayout::c_columns_swapped}) {
      CAPTURE(static_cast<int>(wrong));
      CHECK(tile_error(a, b, c, wrong) > 1e-2);
    }
  }
}

TEST_CASE("tensor cores: the inputs really are rounded to TF32 (cvt.rna.tf32.f32)") {
  // Random values, and exact ties of the 13 dropped bits on both sides of zero (ties go away
  // from zero), and their neighbours one bit below and above.
  std::vector<float> xs;
  const Tensor r = random_values({200}, 77, -3.0f, 3.0f);
  for (float x : r.to_vector_f32()) xs.push_back(x);
  for (uint32_t base : {0x3f800000u, 0x3fa3c000u, 0x42c80000u, 0x3c23e000u})
    for (uint32_t low : {0x0fffu, 0x1000u, 0x1001u, 0x3000u})
      for (uint32_t sign : {0u, 0x80000000u}) {
        const uint32_t bits = sign | base | low;
        float x;
        std::memcpy(&x, &bits, sizeof x);
        xs.push_back(x);
      }
  const Tensor x = Tensor::from_vector(xs, {int64_t(xs.size())});
  Tensor out = poisoned(x.shape());
  kernels::round_tf32_cuda(x.to(gpu()), out);
  const std::vector<float> got = out.to_vector_f32();
  int64_t bad = 0;
  for (size_t k = 0; k < xs.size(); ++k) bad += got[k] != round_tf32_reference(xs[k]);
  CHECK(bad == 0);
  // A tile of the same products in FP32 differs from the TF32 one: the rounding is really there.
  const Tensor a = random_values({16, 8}, 5, -2.0f, 2.0f), b = random_values({8, 8}, 6, -2.0f, 2.0f);
  Tensor d = poisoned({16, 8});
  kernels::mma_tf32_tile_cuda(a.to(gpu()), b.to(gpu()), Tensor::zeros({16, 8}).to(gpu()), d);
  const std::vector<float> av = a.to_vector_f32(), bv = b.to_vector_f32(), dv = d.to_vector_f32();
  double largest = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double exact = 0;
      for (int k = 0; k < 8; ++k) exact += double(av[i * 8 + k]) * bv[k * 8 + j];
      largest = std::max(largest, std::fabs(dv[i * 8 + j] - exact));
    }
  CHECK(largest > 1e-5);
  CHECK(largest < 2e-2);
}

#endif  // URPE_WITH_CUDA
