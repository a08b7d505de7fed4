// Tensor, RNG and autograd engine, plus the basic ops (elementwise, matmul, reductions, shapes)
// where a table row cannot say it: references by hand (matmul against a naive product, linear at
// training sizes against double sums, argmax_last's ties and NaN), the errors, and overflowing
// sizes. Their gradient checks, CUDA parity, thread determinism and costs are rows of the op
// table (tests/op_table.cpp, run by test_op_table and test_cuda_parity).
#include <algorithm>
#include <cstring>
#include <limits>

#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "tensor/host_allocator.h"
#include "tensor/parallel_copy.h"
#include "test_util.h"

using namespace urpe;
using urpe::test::random_param;
using urpe::test::random_values;

TEST_CASE("tensor creation, item and printing") {
  Tensor z = Tensor::zeros({2, 3});
  CHECK(z.numel() == 6);
  CHECK(z.to_vector_f32() == std::vector<float>(6, 0.0f));
  CHECK(Tensor::full({1}, 2.5f).item() == 2.5f);
  CHECK(Tensor::arange(4).to_vector_i32() == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(shape_str({2, 3}) == "(2, 3)");
  CHECK(shape_str({5}) == "(5,)");
  CHECK(z.to_string().find("f32 (2, 3) on cpu") != std::string::npos);
  CHECK_THROWS_AS(Tensor::zeros({1, 1, 1, 1, 1}), Error);
  CHECK_THROWS_AS(Tensor::from_vector(std::vector<float>{1, 2, 3}, {2, 2}), Error);
  CHECK_THROWS_AS(z.item(), Error);
}

// Before these checks a 2^58 × 64 table (`--set vocab=2^58`) had a wrapped element count of 0,
// got a 0-byte buffer, and the first lookup into it crashed.
TEST_CASE("tensor sizes that overflow 64 bits are errors naming the shape, never a wrapped count") {
  const int64_t big = int64_t(1) << 58;
  const auto message_of = [](auto&& make) {
    try {
      make();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Element count past int64: 2^58 · 64 = 2^64 (wrapped to 0 before).
  std::string m = message_of([&] { Tensor::empty({big, 64}); });
  CHECK(m.find("(288230376151711744, 64)") != std::string::npos);
  CHECK(m.find("more elements than a 64-bit count holds") != std::string::npos);
  CHECK_THROWS_AS(shape_numel({big, 64}), Error);
  CHECK_THROWS_AS(shape_numel({int64_t(1) << 32, int64_t(1) << 31}), Error);
  CHECK(shape_numel({int64_t(1) << 31, int64_t(1) << 31}) == int64_t(1) << 62);
  // The count fits, the bytes do not: 2^62 elements × 4 bytes = 2^64 (a 0-byte buffer before).
  m = message_of([&] { Tensor::empty({int64_t(1) << 31, int64_t(1) << 31}, DType::i32); });
  CHECK(m.find("(2147483648, 2147483648) of i32") != std::string::npos);
  CHECK(m.find("more than any machine's memory") != std::string::npos);
  CHECK_THROWS_AS(tensor_bytes({int64_t(1) << 61}, DType::f32), Error);
  CHECK(tensor_bytes({int64_t(1) << 60}, DType::f32) == uint64_t(1) << 62);
  // Within 64 bits but beyond the machine: the host allocator's own message, with the size.
  m = message_of([&] { Tensor::empty({int64_t(1) << 25, int64_t(1) << 25}); });  // 4 PiB
  CHECK(m.find("out of host memory") != std::string::npos);
  CHECK(m.find("4.0 PiB") != std::string::npos);
  // The allocator itself refuses byte counts its size-class rounding would wrap (a pointer to a
  // 0-byte block came back for SIZE_MAX − 8 before).
  CHECK_THROWS_AS(host::allocate(SIZE_MAX - 8), Error);
  CHECK_THROWS_AS(host::size_class(host::kMaxAllocationBytes + 1), Error);
  CHECK(host::size_class(host::kMaxAllocationBytes) == host::kMaxAllocationBytes);
}

TEST_CASE("parallel_copy copies every byte, at sizes that split into slices and at the edges") {
  // Sizes under the threshold, at it, with a remainder that does not fill a page, and several
  // slices; each destination starts filled with a value the source never has.
  const size_t sizes[] = {0, 1, 4095, kParallelCopyMinBytes - 1, kParallelCopyMinBytes,
                          kParallelCopyMinBytes + 4097, 3 * kParallelCopyMinBytes + 12345};
  for (const size_t bytes : sizes) {
    CAPTURE(bytes);
    std::vector<unsigned char> src(bytes), dst(bytes + 64, 0xFF);
    for (size_t k = 0; k < bytes; ++k) src[k] = static_cast<unsigned char>((k * 2654435761u >> 13) % 251);
    parallel_copy(dst.data(), src.data(), bytes);
    CHECK(std::equal(src.begin(), src.end(), dst.begin()));
    CHECK(std::all_of(dst.begin() + static_cast<std::ptrdiff_t>(bytes), dst.end(), [](unsigned char c) { return c == 0xFF; }));
  }
  CHECK(parallel_copy_threads(kParallelCopyMinBytes - 1) == 1);
  CHECK(parallel_copy_threads(4 * kParallelCopyMinBytes) >= 1);
}

TEST_CASE("seeded RNG: same seed, same bits; different seed, different bits") {
  Rng a(7), b(7), c(8);
  Tensor x = Tensor::normal({5, 7}, 0, 1, a), y = Tensor::normal({5, 7}, 0, 1, b);
  Tensor w = Tensor::normal({5, 7}, 0, 1, c);
  CHECK(std::memcmp(x.f32(), y.f32(), 35 * sizeof(float)) == 0);
  CHECK(std::memcmp(x.f32(), w.f32(), 35 * sizeof(float)) != 0);
  // Draws consume the stream: a second draw differs from the first.
  Tensor x2 = Tensor::normal({5, 7}, 0, 1, a);
  CHECK(std::memcmp(x.f32(), x2.f32(), 35 * sizeof(float)) != 0);
  // Moments of a large normal draw.
  Rng r(3);
  std::vector<float> v = Tensor::normal({20000}, 1.0f, 2.0f, r).to_vector_f32();
  double m = 0, s = 0;
  for (float e : v) m += e;
  m /= v.size();
  for (float e : v) s += (e - m) * (e - m);
  s = std::sqrt(s / v.size());
  CHECK(m == doctest::Approx(1.0).epsilon(0.05));
  CHECK(s == doctest::Approx(2.0).epsilon(0.05));
}

TEST_CASE("autograd accumulates over every use and respects NoGrad") {
  Tensor x = random_param({3}, 1);
  // y = x·x + x → ∂y/∂x = 2x + 1 (x used three times).
  Tensor y = sum_all(add(mul(x, x), x));
  y.backward();
  const std::vector<float> xv = x.to_vector_f32(), g = x.grad().to_vector_f32();
  for (int k = 0; k < 3; ++k) CHECK(g[k] == doctest::Approx(2 * xv[k] + 1).epsilon(1e-5));
  // A second backward accumulates.
  sum_all(x).backward();
  CHECK(x.grad().to_vector_f32()[0] == doctest::Approx(2 * xv[0] + 2).epsilon(1e-5));
  {
    autograd::NoGrad no_grad;
    Tensor z = mul(x, x);
    CHECK_FALSE(z.requires_grad());
    CHECK_THROWS_AS(z.backward(), Error);
  }
  CHECK_THROWS_AS(mul(x, x).backward(), Error);  // not a scalar and no gradient given
}

// Gradient checks, CUDA parity, determinism and cost of every op: the op table (tests/op_table.cpp).
TEST_CASE("elementwise: shapes that do not broadcast are one error") {
  CHECK_THROWS_WITH_AS(add(random_values({2, 3, 5}, 11), random_values({2, 5}, 1)),
                       doctest::Contains("do not broadcast"), Error);
}

TEST_CASE("matmul matches a naive product, in every layout") {
  const int64_t B = 2, M = 3, K = 5, N = 4;
  Tensor a = random_values({B, M, K}, 21), b = random_values({B, K, N}, 22);
  Tensor c = matmul(a, b);
  const std::vector<float> av = a.to_vector_f32(), bv = b.to_vector_f32(), cv = c.to_vector_f32();
  for (int64_t z = 0; z < B; ++z)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double ref = 0;
        for (int64_t p = 0; p < K; ++p) ref += av[(z * M + i) * K + p] * bv[(z * K + p) * N + j];
        CHECK(cv[(z * M + i) * N + j] == doctest::Approx(ref).epsilon(1e-5));
      }
  // Transposed layouts give the same product.
  CHECK(test::max_abs_diff(matmul(transpose(a, 1, 2), b, true, false), c) < 1e-5);
  CHECK(test::max_abs_diff(matmul(a, transpose(b, 1, 2), false, true), c) < 1e-5);
  CHECK_THROWS_WITH_AS(matmul(a, random_values({B, 4, N}, 1)), doctest::Contains("inner dims"), Error);
}

// Sizes past the kernels' thread thresholds (4,096 rows): the bias is broadcast and its gradient
// summed by the threaded row loops, and the output comes from a GEMM accumulating onto the bias.
TEST_CASE("linear with a bias at training sizes: x·Wᵀ + b and every gradient against double sums") {
  const int64_t rows = 4096, in = 24, out = 130;  // 130 columns: two full column blocks and a tail
  Tensor x = random_param({2, rows / 2, in}, 37), weight = random_param({out, in}, 38), bias = random_param({out}, 39);
  Tensor y = linear(x, weight, bias);
  REQUIRE(y.shape() == Shape{2, rows / 2, out});
  const Tensor g = random_values({2, rows / 2, out}, 40);
  y.backward(g);
  const std::vector<float> xv = x.to_vector_f32(), wv = weight.to_vector_f32(), bv = bias.to_vector_f32();
  const std::vector<float> yv = y.to_vector_f32(), gv = g.to_vector_f32();
  const std::vector<float> gx = x.grad().to_vector_f32(), gw = weight.grad().to_vector_f32();
  const std::vector<float> gb = bias.grad().to_vector_f32();
  double worst_y = 0, worst_gx = 0, worst_gw = 0, worst_gb = 0;
  for (int64_t r = 0; r < rows; r += 37)  // a spread of rows for y and ∂x
    for (int64_t o = 0; o < out; ++o) {
      double want = bv[o];
      for (int64_t k = 0; k < in; ++k) want += double(xv[r * in + k]) * wv[o * in + k];
      worst_y = std::max(worst_y, std::abs(yv[r * out + o] - want) / (1.0 + std::abs(want)));
    }
  for (int64_t r = 0; r < rows; r += 37)
    for (int64_t k = 0; k < in; ++k) {
      double want = 0;
      for (int64_t o = 0; o < out; ++o) want += double(gv[r * out + o]) * wv[o * in + k];
      worst_gx = std::max(worst_gx, std::abs(gx[r * in + k] - want) / (1.0 + std::abs(want)));
    }
  for (int64_t o = 0; o < out; ++o) {
    double want_b = 0;
    for (int64_t r = 0; r < rows; ++r) want_b += gv[r * out + o];
    worst_gb = std::max(worst_gb, std::abs(gb[o] - want_b) / (1.0 + std::abs(want_b)));
    for (int64_t k = 0; k < in; ++k) {
      double want = 0;
      for (int64_t r = 0; r < rows; ++r) want += double(gv[r * out + o]) * xv[r * in + k];
      worst_gw = std::max(worst_gw, std::abs(gw[o * in + k] - want) / (1.0 + std::abs(want)));
    }
  }
  CHECK(worst_y < 1e-5);
  CHECK(worst_gx < 1e-5);
  CHECK(worst_gw < 1e-4);  // 4,096 float products summed by the GEMM
  CHECK(worst_gb < 1e-6);  // summed in double: only the final rounding
}

TEST_CASE("reductions: mean of ones, an axis out of range") {
  CHECK(mean(Tensor::ones({2, 6}), 1).to_vector_f32() == std::vector<float>{1, 1});
  CHECK_THROWS_AS(sum(random_values({3, 4, 5}, 41), 3), Error);
}

TEST_CASE("argmax_last: the first index of each row's maximum, NaN below every number, no gradient") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_vector(std::vector<float>{0.5f, 2.0f, 2.0f, -1.0f,  // tie: the first 2.0
                                                    nan, -3.0f, -2.0f, -2.5f,  // NaN first: ignored
                                                    -inf, -inf, -inf, -inf,    // all equal: index 0
                                                    nan, nan, nan, nan,        // all NaN: index 0
                                                    1.0f, 1.0f, 1.0f, 7.0f},   // the last
                                 {5, 4});
  const Tensor got = argmax_last(x);
  CHECK(got.dtype() == DType::i32);
  CHECK(got.shape() == Shape{5});
  CHECK(got.to_vector_i32() == std::vector<int32_t>{1, 2, 0, 0, 3});
  // Leading axes are rows; a random 3-D input against a plain loop.
  Tensor r = random_values({3, 7, 101}, 43);
  const std::vector<float> v = r.to_vector_f32();
  const std::vector<int32_t> idx = argmax_last(r).to_vector_i32();
  REQUIRE(idx.size() == 21);
  for (size_t row = 0; row < 21; ++row) {
    const float* p = v.data() + row * 101;
    CHECK(idx[row] == std::max_element(p, p + 101) - p);
  }
  CHECK_THROWS_AS(argmax_last(Tensor::zeros({3, 0})), Error);
}

TEST_CASE("shape ops: permute moves the right elements; bad windows, pieces and orders are errors") {
  Tensor x = random_values({2, 3, 4}, 51);
  Tensor p = permute(Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {2, 3}), {1, 0});
  CHECK(p.to_vector_f32() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK_THROWS_AS(slice(x, 1, 2, 5), Error);
  CHECK_THROWS_AS(concat({x, random_values({3, 3, 4}, 1)}, 1), Error);
  CHECK_THROWS_AS(permute(x, {0, 0, 1}), Error);
}
