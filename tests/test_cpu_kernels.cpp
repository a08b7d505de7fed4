// CPU fast paths checked against their one-element-at-a-time references: the caching host
// allocator, permute's run copies, broadcasting without modulo, and the autograd engine adopting
// (not copying) a gradient it exclusively owns.
#include <algorithm>
#include <numeric>

#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
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
