// CUDA-vs-CPU parity for every op, forward and backward: the CPU kernels are the reference.
// Each check draws random inputs (never zeros) with odd shapes (rows not a multiple of 32, D = 67),
// poisons the CUDA outputs with NaN before the call so an unwritten element fails, and compares
// with a per-op bound |cuda − cpu| ≤ atol + rtol·|cpu|. Dropout masks must be bit-identical.
// Kernel-level checks call kernels::*_cuda directly; op-level checks run the public op (dispatch,
// validation and autograd) on CUDA tensors and compare outputs and every input gradient.
//
// Without a CUDA device (or in a build without the CUDA backend) the suite exits with code 77
// before any test runs (a static initialiser, before doctest's main), which CTest reports as
// SKIPPED, never as passed. The same file is also built against the CUDA simulator
// (tests/cuda_sim) as test_cuda_sim_parity, which runs every check with the kernels on the CPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>

#include "bench/cuda_peaks.h"
#include "models/encoder.h"
#include "models/positional.h"
#include "ops/activation.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/optimizer_kernels.h"
#include "ops/reduce.h"
#include "ops/relative_shift.h"
#include "ops/rotary.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "ops/urpe_attention.h"
#include "ops/urpe_attention_checks.h"
#include "ops/urpe_flash_attention.h"
#include "tensor/cuda_backend.h"
#include "test_util.h"

using namespace urpe;
using urpe::test::random_ids;
using urpe::test::random_values;

namespace {

// ---- skip the whole suite when no GPU is visible ----

struct SkipWithoutCuda {
  SkipWithoutCuda() {
#if defined(URPE_CUDA_SIM)
    std::printf("CUDA simulator build: the kernels run on the CPU (tests/cuda_sim); this checks "
                "their logic, not a GPU\n");
#endif
    if (cuda::device_count() == 0) {
      std::printf("no CUDA device: parity suite skipped\n");
      std::fflush(stdout);
      std::exit(77);
    }
  }
} skip_without_cuda;

}  // namespace

// A build without the CUDA backend has no *_cuda kernels to link against: there the suite is only
// the skip above (device_count() is 0, so the executable exits 77 before any test).
#if defined(URPE_WITH_CUDA)

namespace {

// ---- helpers ----

const Device& gpu() {
  static const Device device = Device::cuda(cuda::create_context(0));
  return device;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor poisoned(const Shape& shape) { return Tensor::full(shape, kNaN, gpu()); }

Tensor poisoned_i32(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::i32, gpu());
  t.fill(-777.0f);
  return t;
}

struct Tolerance {
  double atol = 1e-5, rtol = 1e-4;
};

// Every element: finite where the reference is finite, and within atol + rtol·|ref|.
void check_close(const Tensor& got, const Tensor& want, Tolerance tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.shape() == want.shape());
  const std::vector<float> g = got.to_vector_f32(), w = want.to_vector_f32();
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (size_t k = 0; k < g.size(); ++k) {
    const double ref = w[k], val = g[k];
    bool ok;
    if (std::isnan(ref)) ok = std::isnan(val);
    else if (std::isinf(ref)) ok = val == ref;
    else ok = std::isfinite(val) && std::fabs(val - ref) <= tol.atol + tol.rtol * std::fabs(ref);
    if (!ok) {
      if (first < 0) first = static_cast<int64_t>(k);
      ++bad;
    }
    if (std::isfinite(ref) && std::isfinite(val)) worst = std::max(worst, std::fabs(val - ref));
  }
  std::ostringstream msg;
  msg << bad << " of " << g.size() << " elements out of bounds (atol " << tol.atol << ", rtol "
      << tol.rtol << "), max |diff| " << worst;
  if (first >= 0) msg << "; first at " << first << ": cuda " << g[first] << ", cpu " << w[first];
  INFO(msg.str());
  CHECK(bad == 0);
}

void check_equal_i32(const Tensor& got, const Tensor& want, const std::string& what) {
  INFO(what);
  CHECK(got.to_vector_i32() == want.to_vector_i32());
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector_f32(), y = b.to_vector_f32();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

// A CPU f32 tensor uniform in [low, high), with a sign flip on every third element so ranges
// like [0.5, 1.5) still give both signs when `both_signs`.
Tensor values(const Shape& shape, uint64_t seed, float low = -1.0f, float high = 1.0f,
              bool both_signs = false) {
  Tensor t = random_values(shape, seed, low, high);
  if (both_signs) {
    float* p = t.f32();
    for (int64_t k = 0; k < t.numel(); k += 3) p[k] = -p[k];
  }
  return t;
}

// Runs fn on CPU inputs and on CUDA copies of them, compares the outputs, then back-propagates
// the same random output gradient on both devices and compares every f32 input's gradient.
// fn gets the device so it can move its own integer inputs (ids, maps) there.
using OpFn = std::function<Tensor(const std::vector<Tensor>&, const Device&)>;

void check_op(const std::string& name, const OpFn& fn, const std::vector<Tensor>& cpu_inputs,
              Tolerance forward_tol, Tolerance backward_tol, uint64_t seed = 99) {
  std::vector<Tensor> on_cpu, on_gpu;
  for (const Tensor& t : cpu_inputs) {
    Tensor c = t.clone(), d = t.to(gpu());
    if (t.dtype() == DType::f32) {
      c.set_requires_grad(true);
      d.set_requires_grad(true);
    }
    on_cpu.push_back(c);
    on_gpu.push_back(d);
  }
  const Tensor want = fn(on_cpu, Device::cpu());
  const Tensor got = fn(on_gpu, gpu());
  CHECK(got.device().is_cuda());
  check_close(got, want, forward_tol, name + " forward (public op)");
  if (!want.requires_grad()) return;
  const Tensor upstream = values(want.shape(), seed);
  want.backward(upstream);
  got.backward(upstream.to(gpu()));
  for (size_t k = 0; k < on_cpu.size(); ++k) {
    if (on_cpu[k].dtype() != DType::f32) continue;
    REQUIRE(on_cpu[k].grad().defined());
    REQUIRE(on_gpu[k].grad().defined());
    check_close(on_gpu[k].grad(), on_cpu[k].grad(), backward_tol,
                name + " backward (public op), input " + std::to_string(k));
  }
}

}  // namespace

// ---- the device primitives ----

TEST_CASE("cuda context: copies, fill, accumulate, allocator statistics, errors") {
  CHECK(cuda::built_with_cuda());
  CHECK(cuda::device_count() > 0);
  Tensor x = values({3, 37, 67}, 1);
  Tensor d = x.to(gpu());
  CHECK(bitwise_equal(d, x));
  CHECK(bitwise_equal(d.clone(), x));
  CHECK(Tensor::full({1000}, 2.5f, gpu()).to_vector_f32() == std::vector<float>(1000, 2.5f));
  Tensor ids = Tensor::zeros({77}, DType::i32, gpu());
  ids.fill(7.0f);
  CHECK(ids.to_vector_i32() == std::vector<int32_t>(77, 7));
  // accumulate (autograd's gradient sum): x used twice → gradient 2.
  Tensor leaf = values({101}, 2).to(gpu());
  leaf.set_requires_grad(true);
  sum_all(add(leaf, leaf)).backward();
  CHECK(leaf.grad().to_vector_f32() == std::vector<float>(101, 2.0f));

  cuda::Context* ctx = gpu().context();
  cuda::synchronize(ctx);
  cuda::reset_peak(ctx);
  const size_t before = cuda::bytes_in_use(ctx);
  {
    Tensor big = Tensor::empty({1 << 20}, DType::f32, gpu());
    CHECK(cuda::bytes_in_use(ctx) >= before + (size_t(4) << 20));
  }
  CHECK(cuda::bytes_in_use(ctx) == before);
  CHECK(cuda::peak_bytes(ctx) >= before + (size_t(4) << 20));
  CHECK_THROWS_WITH_AS(Tensor::empty({int64_t(1) << 50}, DType::f32, gpu()),
                       doctest::Contains("out of memory"), Error);
  CHECK_FALSE(cuda::device_name(ctx).empty());
  CHECK_THROWS_AS(cuda::create_context(cuda::device_count()), Error);
  CHECK_NOTHROW(cuda::profiler_start());
  CHECK_NOTHROW(cuda::profiler_stop());
}

TEST_CASE("CUDA event timer and measured device ceilings") {
  cuda::Context* ctx = gpu().context();
  // On the simulator the timings mean nothing and its checked kernels are slow: smaller sizes
  // exercise the same code.
#if defined(URPE_CUDA_SIM)
  const int64_t fill_elements = 1 << 14, sgemm_n = 64;
  const size_t copy_bytes = size_t(1) << 20;
#else
  const int64_t fill_elements = 1 << 20, sgemm_n = 512;
  const size_t copy_bytes = size_t(64) << 20;
#endif
  Tensor x = Tensor::empty({fill_elements}, DType::f32, gpu());
  const bench::CudaTiming t = bench::time_cuda(ctx, [&] { x.fill(1.5f); }, 7, 2, true);
  CHECK(t.runs == 7);
  CHECK(t.min_ms > 0);
  CHECK(t.min_ms <= t.median_ms);
  CHECK(t.median_ms <= t.max_ms);
  CHECK(bench::measure_copy_bandwidth_gbs(ctx, copy_bytes) > 0);
  CHECK(bench::measure_sgemm_tflops(ctx, int(sgemm_n), false) > 0);
  CHECK(bench::measure_sgemm_tflops(ctx, int(sgemm_n), true) > 0);
}

// ---- elementwise ----

TEST_CASE("parity: binary ops with broadcasting, forward and backward kernels") {
  using kernels::BinaryOp;
  const Shape big{3, 37, 67};
  const std::vector<Shape> partners{{3, 37, 67}, {37, 67}, {67}, {1}};
  const BinaryOp ops[] = {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div};
  for (const Shape& small : partners)
    for (BinaryOp op : ops)
      for (int swap = 0; swap < 2; ++swap) {
        CAPTURE(shape_str(small));
        CAPTURE(static_cast<int>(op));
        CAPTURE(swap);
        Tensor a = values(big, 10, 0.5f, 1.5f, true), b = values(small, 11, 0.5f, 1.5f, true);
        if (swap) std::swap(a, b);
        const Shape out_shape = a.numel() >= b.numel() ? a.shape() : b.shape();
        Tensor want = Tensor::empty(out_shape);
        kernels::binary_forward_cpu(op, a, b, want);
        Tensor got = poisoned(out_shape);
        kernels::binary_forward_cuda(op, a.to(gpu()), b.to(gpu()), got);
        check_close(got, want, {1e-6, 1e-6}, "binary forward");

        Tensor g = values(out_shape, 12);
        Tensor ga = Tensor::empty(a.shape()), gb = Tensor::empty(b.shape());
        kernels::binary_backward_cpu(op, a, b, g, &ga, &gb);
        Tensor ga_d = poisoned(a.shape()), gb_d = poisoned(b.shape());
        kernels::binary_backward_cuda(op, a.to(gpu()), b.to(gpu()), g.to(gpu()), &ga_d, &gb_d);
        check_close(ga_d, ga, {1e-5, 1e-5}, "binary backward, grad a");
        check_close(gb_d, gb, {1e-5, 1e-5}, "binary backward, grad b");
        // Only one gradient wanted.
        Tensor gb_only = poisoned(b.shape());
        kernels::binary_backward_cuda(op, a.to(gpu()), b.to(gpu()), g.to(gpu()), nullptr, &gb_only);
        CHECK(bitwise_equal(gb_only, gb_d));
      }
}

TEST_CASE("parity: public elementwise ops and affine") {
  const Tolerance fwd{1e-6, 1e-6}, bwd{1e-5, 1e-5};
  Tensor a = values({2, 37, 67}, 20, 0.5f, 1.5f, true), b = values({67}, 21, 0.5f, 1.5f, true);
  check_op("add", [](const std::vector<Tensor>& v, const Device&) { return add(v[0], v[1]); }, {a, b}, fwd, bwd);
  check_op("sub", [](const std::vector<Tensor>& v, const Device&) { return sub(v[1], v[0]); }, {a, b}, fwd, bwd);
  check_op("mul", [](const std::vector<Tensor>& v, const Device&) { return mul(v[0], v[1]); }, {a, b}, fwd, bwd);
  check_op("div", [](const std::vector<Tensor>& v, const Device&) { return div(v[0], v[1]); }, {a, b}, fwd, bwd);
  check_op("affine", [](const std::vector<Tensor>& v, const Device&) { return affine(v[0], -1.5f, 0.25f); }, {a}, fwd, bwd);
  Tensor x = values({1000003}, 22);
  Tensor want = Tensor::empty(x.shape()), got = poisoned(x.shape());
  kernels::affine_cpu(x, 0.75f, -2.0f, want);
  kernels::affine_cuda(x.to(gpu()), 0.75f, -2.0f, got);
  check_close(got, want, {1e-6, 1e-6}, "affine kernel, 1M elements");
}

// ---- matmul ----

TEST_CASE("parity: gemm_cuda against gemm_cpu, every layout, batched, shared, accumulate") {
  const int64_t M = 37, N = 67, K = 45, B = 3;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int shared_b = 0; shared_b < 2; ++shared_b)
        for (int accumulate = 0; accumulate < 2; ++accumulate) {
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(shared_b);
          CAPTURE(accumulate);
          Tensor a = values(ta ? Shape{B, K, M} : Shape{B, M, K}, 30);
          Tensor b = values(shared_b ? (tb ? Shape{N, K} : Shape{K, N}) : (tb ? Shape{B, N, K} : Shape{B, K, N}), 31);
          Tensor c0 = values({B, M, N}, 32);
          kernels::GemmArgs g;
          g.trans_a = ta;
          g.trans_b = tb;
          g.m = M; g.n = N; g.k = K;
          g.alpha = 1.25f;
          g.beta = accumulate ? 0.5f : 0.0f;
          g.lda = ta ? M : K; g.stride_a = M * K;
          g.ldb = tb ? K : N; g.stride_b = shared_b ? 0 : K * N;
          g.ldc = N; g.stride_c = M * N;
          g.batch = B;
          Tensor want = c0.clone();
          g.a = a.f32(); g.b = b.f32(); g.c = want.f32();
          kernels::gemm_cpu(g);
          Tensor a_d = a.to(gpu()), b_d = b.to(gpu());
          Tensor got = accumulate ? c0.to(gpu()) : poisoned({B, M, N});
          g.a = a_d.f32(); g.b = b_d.f32(); g.c = got.f32();
          kernels::gemm_cuda(gpu(), g);
          check_close(got, want, {1e-4, 1e-4}, "gemm");
        }
  // TF32 tensor cores (the --tf32 flag): the same product to TF32 accuracy; off again after.
  {
    Tensor a = values({1, 130, 257}, 33), b = values({257, 67}, 34);
    Tensor want = matmul(a, b);
    cuda::set_tf32(gpu().context(), true);
    Tensor got = matmul(a.to(gpu()), b.to(gpu()));
    cuda::set_tf32(gpu().context(), false);
    check_close(got, want, {5e-2, 1e-2}, "gemm with TF32");
    check_close(matmul(a.to(gpu()), b.to(gpu())), want, {1e-4, 1e-4}, "gemm after TF32 is off");
  }
  // Empty contraction: C = beta·C (beta = 0 overwrites NaN with zeros).
  kernels::GemmArgs e;
  e.m = 5; e.n = 7; e.k = 0; e.ldc = 7; e.lda = 1; e.ldb = 7;
  Tensor c = poisoned({5, 7});
  e.c = c.f32();
  kernels::gemm_cuda(gpu(), e);
  CHECK(c.to_vector_f32() == std::vector<float>(35, 0.0f));
}

TEST_CASE("parity: public matmul and linear with autograd") {
  const Tolerance tol{1e-4, 1e-4};
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      CAPTURE(ta);
      CAPTURE(tb);
      Tensor a = values(ta ? Shape{2, 45, 37} : Shape{2, 37, 45}, 40);
      Tensor b = values(tb ? Shape{2, 67, 45} : Shape{2, 45, 67}, 41);
      Tensor w = values(tb ? Shape{67, 45} : Shape{45, 67}, 42);
      auto f = [ta, tb](const std::vector<Tensor>& v, const Device&) { return matmul(v[0], v[1], ta, tb); };
      check_op("matmul batched", f, {a, b}, tol, tol);
      check_op("matmul shared", f, {a, w}, tol, tol);
    }
  Tensor x = values({3, 37, 45}, 43), weight = values({67, 45}, 44), bias = values({67}, 45);
  check_op("linear", [](const std::vector<Tensor>& v, const Device&) { return linear(v[0], v[1], v[2]); },
           {x, weight, bias}, tol, tol);
}

// ---- reductions ----

TEST_CASE("parity: sum_axis and broadcast_axis kernels") {
  struct Case { int64_t outer, n, inner; };
  const Case cases[] = {{1, 1, 1}, {3, 37, 67}, {111, 67, 1}, {2, 20011, 1}, {1, 100003, 1},
                        {5, 3001, 3}, {1, 7, 70001}, {4, 0, 5}};
  for (const Case& c : cases) {
    CAPTURE(c.outer);
    CAPTURE(c.n);
    CAPTURE(c.inner);
    Tensor x = values({c.outer, c.n, c.inner}, 50);
    Tensor want = Tensor::empty({c.outer, c.inner}), got = poisoned({c.outer, c.inner});
    kernels::sum_axis_cpu(x, c.outer, c.n, c.inner, 0.5f, want);
    kernels::sum_axis_cuda(x.to(gpu()), c.outer, c.n, c.inner, 0.5f, got);
    check_close(got, want, {1e-4, 1e-5}, "sum_axis");
    Tensor g = values({c.outer, c.inner}, 51);
    Tensor bwant = Tensor::empty({c.outer, c.n, c.inner}), bgot = poisoned({c.outer, c.n, c.inner});
    kernels::broadcast_axis_cpu(g, c.outer, c.n, c.inner, 0.25f, bwant);
    kernels::broadcast_axis_cuda(g.to(gpu()), c.outer, c.n, c.inner, 0.25f, bgot);
    check_close(bgot, bwant, {0, 0}, "broadcast_axis");
  }
}

TEST_CASE("parity: public sum, mean, sum_all, mean_all") {
  const Tolerance tol{1e-5, 1e-5};
  Tensor x = values({3, 37, 67}, 55);
  for (int axis = -3; axis < 3; ++axis) {
    CAPTURE(axis);
    check_op("sum", [axis](const std::vector<Tensor>& v, const Device&) { return sum(v[0], axis); }, {x}, tol, tol);
    check_op("mean", [axis](const std::vector<Tensor>& v, const Device&) { return mean(v[0], axis, true); }, {x}, tol, tol);
  }
  check_op("sum_all", [](const std::vector<Tensor>& v, const Device&) { return sum_all(v[0]); }, {x}, {1e-4, 1e-5}, tol);
  check_op("mean_all", [](const std::vector<Tensor>& v, const Device&) { return mean_all(v[0]); }, {x}, tol, tol);
}

TEST_CASE("parity: argmax_last, ties, NaN and rows longer than a block") {
  for (const Shape& shape : {Shape{37, 5}, Shape{3, 11, 67}, Shape{9, 30522}}) {
    CAPTURE(shape.back());
    Tensor x = values(shape, 57);
    float* p = x.f32();
    const int64_t cols = shape.back(), rows = x.numel() / cols;
    for (int64_t r = 0; r < rows; ++r) {  // ties, and a NaN at the front of every third row
      p[r * cols + (r * 7) % cols] = 2.0f;
      p[r * cols + (r * 13 + 1) % cols] = 2.0f;
      if (r % 3 == 0) p[r * cols] = kNaN;
    }
    const Tensor want = argmax_last(x);
    Shape out_shape = shape;
    out_shape.pop_back();
    Tensor got = poisoned_i32(out_shape);
    kernels::argmax_rows_cuda(x.to(gpu()), rows, cols, got);
    CHECK(got.to(Device::cpu()).to_vector_i32() == want.to_vector_i32());
    CHECK(argmax_last(x.to(gpu())).to(Device::cpu()).to_vector_i32() == want.to_vector_i32());
  }
}

// ---- shape ----

TEST_CASE("parity: permute and copy_window kernels, f32 and i32") {
  Tensor x = values({3, 5, 7, 11}, 60);
  const std::vector<std::vector<int>> orders{{2, 0, 3, 1}, {3, 2, 1, 0}, {0, 1, 2, 3}, {1, 0, 2, 3}};
  for (const auto& order : orders) {
    Shape out_shape(4);
    for (int d = 0; d < 4; ++d) out_shape[d] = x.shape()[order[d]];
    Tensor want = Tensor::empty(out_shape), got = poisoned(out_shape);
    kernels::permute_cpu(x, order, want);
    kernels::permute_cuda(x.to(gpu()), order, got);
    check_close(got, want, {0, 0}, "permute f32");
  }
  Tensor ids = random_ids({4, 37, 67}, 1000, 61);
  Tensor iwant = Tensor::empty({67, 4, 37}, DType::i32), igot = poisoned_i32({67, 4, 37});
  kernels::permute_cpu(ids, {2, 0, 1}, iwant);
  kernels::permute_cuda(ids.to(gpu()), {2, 0, 1}, igot);
  check_equal_i32(igot, iwant, "permute i32");

  // A window of 9 rows from src axis 37 (start 5) into dst axis 20 (start 3), inner 67.
  for (int accumulate = 0; accumulate < 2; ++accumulate) {
    Tensor src = values({3, 37, 67}, 62), dst0 = values({3, 20, 67}, 63);
    Tensor want = dst0.clone(), got = dst0.to(gpu());
    kernels::copy_window_cpu(src, 37, 5, want, 20, 3, 3, 9, 67, accumulate);
    kernels::copy_window_cuda(src.to(gpu()), 37, 5, got, 20, 3, 3, 9, 67, accumulate);
    check_close(got, want, {1e-6, 1e-6}, accumulate ? "copy_window accumulate" : "copy_window");
  }
}

TEST_CASE("parity: public permute, transpose, concat, slice") {
  const Tolerance tol{0, 0};
  Tensor x = values({3, 5, 37}, 65), y = values({3, 8, 37}, 66);
  check_op("permute", [](const std::vector<Tensor>& v, const Device&) { return permute(v[0], {2, 0, 1}); }, {x}, tol, tol);
  check_op("transpose", [](const std::vector<Tensor>& v, const Device&) { return transpose(v[0], 0, 2); }, {x}, tol, tol);
  check_op("concat", [](const std::vector<Tensor>& v, const Device&) { return concat({v[0], v[1]}, 1); }, {x, y}, tol, tol);
  check_op("slice", [](const std::vector<Tensor>& v, const Device&) { return slice(v[0], 1, 2, 7); }, {y}, tol, tol);
}

TEST_CASE("parity: Transformer-XL relative_shift kernels and op (bit-exact gather)") {
  const std::vector<Shape> shapes{{2, 3, 29, 45}, {37, 37}, {5, 1, 67}, {3, 33, 100}};
  for (const Shape& shape : shapes) {
    CAPTURE(shape_str(shape));
    Tensor x = values(shape, 67);
    Tensor want = Tensor::empty(shape), got = poisoned(shape);
    kernels::relative_shift_forward_cpu(x, want);
    kernels::relative_shift_forward_cuda(x.to(gpu()), got);
    check_close(got, want, {0, 0}, "relative_shift forward");
    Tensor g = values(shape, 68);
    Tensor gwant = Tensor::empty(shape), ggot = poisoned(shape);
    kernels::relative_shift_backward_cpu(g, gwant);
    kernels::relative_shift_backward_cuda(g.to(gpu()), ggot);
    check_close(ggot, gwant, {0, 0}, "relative_shift backward");
    check_op("relative_shift", [](const std::vector<Tensor>& v, const Device&) { return relative_shift(v[0]); },
             {x}, {0, 0}, {0, 0});
  }
}

TEST_CASE("parity: rotary kernels (forward and inverse) and op") {
  const std::vector<Shape> shapes{{2, 3, 29, 16}, {37, 2}, {5, 1, 67, 8}};
  for (const Shape& shape : shapes) {
    CAPTURE(shape_str(shape));
    const auto [c, s] = rotary_tables(shape[shape.size() - 2] + 3, shape.back());  // more rows than N
    Tensor x = values(shape, 69);
    for (int inverse = 0; inverse < 2; ++inverse) {
      Tensor want = Tensor::empty(shape), got = poisoned(shape);
      kernels::rotary_cpu(x, c, s, inverse, want);
      kernels::rotary_cuda(x.to(gpu()), c.to(gpu()), s.to(gpu()), inverse, got);
      check_close(got, want, {1e-6, 1e-6}, inverse ? "rotary inverse" : "rotary forward");
    }
    check_op("rotary", [c = c, s = s](const std::vector<Tensor>& v, const Device& device) {
      return rotary(v[0], c.to(device), s.to(device));
    }, {x}, {1e-6, 1e-6}, {1e-6, 1e-6});
  }
}

TEST_CASE("parity: the encoder with each issue-13 encoding (logits and every gradient)") {
  for (const std::string pe : {"sinusoidal", "alibi", "rope", "shaw", "rope+urpe"}) {
    CAPTURE(pe);
    EncoderConfig c;
    c.vocab = 7; c.seq_len = 9; c.layers = 2; c.d_model = 16; c.heads = 2; c.d_ff = 24; c.num_classes = 9;
    c.shaw_clip = 3;
    c.init_std = 0.3f;
    const PositionalSpec spec = parse_positional_spec(pe);
    c.pe = spec.base;
    c.urpe_on_top = spec.urpe_on_top;
    const TransformerEncoder host(c, 5), device(c, 5, gpu());
    for (size_t k = 0; k < host.parameters().items().size(); ++k)
      device.parameters().items()[k].second.copy_from(host.parameters().items()[k].second);
    const Tensor tokens = random_ids({3, 8}, 7, 81), targets = random_ids({24}, 9, 82);
    const Tensor want = host.forward(tokens, false, nullptr), got = device.forward(tokens.to(gpu()), false, nullptr);
    check_close(got, want, {1e-5, 1e-4}, pe + " logits");
    cross_entropy(reshape(want, {24, 9}), targets, -100).backward();
    cross_entropy(reshape(got, {24, 9}), targets.to(gpu()), -100).backward();
    for (size_t k = 0; k < host.parameters().items().size(); ++k) {
      const auto& [name, p] = host.parameters().items()[k];
      check_close(device.parameters().items()[k].second.grad(), p.grad(), {1e-5, 1e-3}, pe + " gradient of " + name);
    }
  }
}

// ---- embedding and gather_table ----

TEST_CASE("parity: embedding kernels and op, deterministic backward, bad ids on CUDA") {
  const int64_t V = 50, D = 67;
  Tensor table = values({V, D}, 70);
  Tensor ids = random_ids({3, 37}, static_cast<int32_t>(V), 71);  // 111 ids: many repeats
  Tensor want = Tensor::empty({3, 37, D}), got = poisoned({3, 37, D});
  kernels::embedding_forward_cpu(table, ids, want);
  kernels::embedding_forward_cuda(table.to(gpu()), ids.to(gpu()), got);
  check_close(got, want, {0, 0}, "embedding forward");

  Tensor g = values({3, 37, D}, 72);
  Tensor gwant = Tensor::empty({V, D}), ggot = poisoned({V, D}), ggot2 = poisoned({V, D});
  kernels::embedding_backward_cpu(ids, g, gwant);
  kernels::embedding_backward_cuda(ids.to(gpu()), g.to(gpu()), ggot);
  kernels::embedding_backward_cuda(ids.to(gpu()), g.to(gpu()), ggot2);
  check_close(ggot, gwant, {1e-6, 1e-5}, "embedding backward");
  CHECK(bitwise_equal(ggot, ggot2));  // deterministic

  check_op("embedding",
           [ids](const std::vector<Tensor>& v, const Device& d) { return embedding(v[0], ids.to(d)); },
           {table}, {0, 0}, {1e-6, 1e-5});

  // padding_idx: the CUDA kernel zeroes the same row as the CPU one (the first id's row, so used).
  const int32_t pad = ids.to_vector_i32()[0];
  Tensor pwant = Tensor::empty({V, D}), pgot = poisoned({V, D});
  kernels::embedding_backward_cpu(ids, g, pwant, pad);
  kernels::embedding_backward_cuda(ids.to(gpu()), g.to(gpu()), pgot, pad);
  check_close(pgot, pwant, {1e-6, 1e-5}, "embedding backward, padding_idx");
  const std::vector<float> prow = pgot.to(Device::cpu()).to_vector_f32();
  for (int64_t d = 0; d < D; ++d) CHECK(prow[pad * D + d] == 0.0f);
  check_op("embedding padding_idx",
           [ids, pad](const std::vector<Tensor>& v, const Device& d) { return embedding(v[0], ids.to(d), pad); },
           {table}, {0, 0}, {1e-6, 1e-5});

  // The public op range-checks CUDA ids too, before any kernel runs.
  Tensor bad = Tensor::from_vector(std::vector<int32_t>{1, 2, static_cast<int32_t>(V), 3}, {4}, gpu());
  CHECK_THROWS_WITH_AS(embedding(table.to(gpu()), bad), doctest::Contains("50"), Error);
  Tensor negative = Tensor::from_vector(std::vector<int32_t>{1, -1}, {2}, gpu());
  CHECK_THROWS_AS(embedding(table.to(gpu()), negative), Error);
}

TEST_CASE("index bounds of CUDA indices: min and max over sizes with partial blocks and many blocks") {
  for (const int64_t n : {int64_t(1), int64_t(255), int64_t(257), int64_t(100003)}) {
    CAPTURE(n);
    Tensor ids = random_ids({n}, 1000, 75);
    std::vector<int32_t> v = ids.to_vector_i32();
    v[static_cast<size_t>(n / 2)] = -5;  // one negative id in the middle
    v[static_cast<size_t>(n - 1)] = n > 1 ? 4321 : v[static_cast<size_t>(n - 1)];
    const Tensor d = Tensor::from_vector(v, {n}, gpu());
    const kernels::IndexBounds b = kernels::index_bounds_cuda(d);
    CHECK(b.low == *std::min_element(v.begin(), v.end()));
    CHECK(b.high == *std::max_element(v.begin(), v.end()));
  }
}

TEST_CASE("parity: embedding backward of a narrow table read by many ids (Graphormer's bias tables)") {
  // D < 32 takes the (row, column)-per-block kernel; ~1,000 ids per row cross several strides of
  // its 256 threads, and row 0 is the padding row.
  for (const int64_t D : {1, 8, 31}) {
    CAPTURE(D);
    const int64_t V = 11;
    Tensor ids = random_ids({7, 1601}, static_cast<int32_t>(V), 73);
    Tensor g = values({7, 1601, D}, 74);
    for (const int64_t pad : {int64_t(-1), int64_t(0)}) {
      CAPTURE(pad);
      Tensor want = Tensor::empty({V, D}), got = poisoned({V, D}), again = poisoned({V, D});
      kernels::embedding_backward_cpu(ids, g, want, pad);
      kernels::embedding_backward_cuda(ids.to(gpu()), g.to(gpu()), got, pad);
      kernels::embedding_backward_cuda(ids.to(gpu()), g.to(gpu()), again, pad);
      check_close(got, want, {1e-5, 1e-5}, "narrow embedding backward");
      CHECK(bitwise_equal(got, again));  // deterministic
    }
  }
}

TEST_CASE("parity: gather_table kernels and op, Toeplitz and bucketed maps") {
  const int64_t H = 3, n = 37;
  struct MapCase { Tensor map; int64_t buckets; const char* name; };
  std::vector<MapCase> maps;
  maps.push_back({toeplitz_map(n, n), 2 * n - 1, "toeplitz"});
  maps.push_back({random_ids({29, 45}, 5, 73), 5, "5 buckets"});
  for (const MapCase& mc : maps) {
    CAPTURE(mc.name);
    Tensor table = values({H, mc.buckets}, 74);
    const Shape out_shape{H, mc.map.size(0), mc.map.size(1)};
    Tensor want = Tensor::empty(out_shape), got = poisoned(out_shape);
    kernels::gather_table_forward_cpu(table, mc.map, want);
    kernels::gather_table_forward_cuda(table.to(gpu()), mc.map.to(gpu()), got);
    check_close(got, want, {0, 0}, "gather_table forward");
    Tensor g = values(out_shape, 75);
    Tensor gwant = Tensor::empty({H, mc.buckets}), ggot = poisoned({H, mc.buckets});
    kernels::gather_table_backward_cpu(mc.map, g, gwant);
    kernels::gather_table_backward_cuda(mc.map.to(gpu()), g.to(gpu()), ggot);
    check_close(ggot, gwant, {1e-5, 1e-5}, "gather_table backward");
    const Tensor map = mc.map;
    check_op("gather_table",
             [map](const std::vector<Tensor>& v, const Device& d) { return gather_table(v[0], map.to(d)); },
             {table}, {0, 0}, {1e-5, 1e-5});
  }
  // toeplitz_map built on the device equals the CPU one.
  check_equal_i32(toeplitz_map(29, 45, gpu()), toeplitz_map(29, 45), "toeplitz_map");
}

// ---- activations and dropout ----

TEST_CASE("parity: relu and gelu, kernels and ops") {
  using kernels::Activation;
  Tensor x = values({3, 37, 67}, 80, -4.0f, 4.0f);
  Tensor g = values({3, 37, 67}, 81);
  for (Activation kind : {Activation::relu, Activation::gelu}) {
    CAPTURE(static_cast<int>(kind));
    Tensor want = Tensor::empty(x.shape()), got = poisoned(x.shape());
    kernels::activation_forward_cpu(kind, x, want);
    kernels::activation_forward_cuda(kind, x.to(gpu()), got);
    check_close(got, want, {1e-6, 1e-5}, "activation forward");
    Tensor gwant = Tensor::empty(x.shape()), ggot = poisoned(x.shape());
    kernels::activation_backward_cpu(kind, x, g, gwant);
    kernels::activation_backward_cuda(kind, x.to(gpu()), g.to(gpu()), ggot);
    check_close(ggot, gwant, {1e-6, 1e-5}, "activation backward");
  }
  check_op("relu", [](const std::vector<Tensor>& v, const Device&) { return relu(v[0]); }, {x}, {0, 0}, {0, 0});
  check_op("gelu", [](const std::vector<Tensor>& v, const Device&) { return gelu(v[0]); }, {x}, {1e-6, 1e-5}, {1e-6, 1e-5});
}

TEST_CASE("parity: dropout masks are bit-identical to the CPU's") {
  const uint64_t seed = 0x5eed1234abcdull;
  for (float p : {0.1f, 0.3f, 0.5f, 0.9f}) {
    CAPTURE(p);
    Tensor x = values({3, 37, 67}, 90, 0.5f, 1.5f, true);  // never zero: 0 in the output = dropped
    Tensor want = Tensor::empty(x.shape()), got = poisoned(x.shape());
    kernels::dropout_apply_cpu(x, p, seed, want);
    kernels::dropout_apply_cuda(x.to(gpu()), p, seed, got);
    const std::vector<float> w = want.to_vector_f32(), c = got.to_vector_f32();
    int64_t mask_mismatch = 0, kept = 0;
    for (size_t k = 0; k < w.size(); ++k) {
      mask_mismatch += (w[k] == 0.0f) != (c[k] == 0.0f);
      kept += w[k] != 0.0f;
    }
    CHECK(mask_mismatch == 0);
    CHECK(kept > 0);
    CHECK(kept < static_cast<int64_t>(w.size()));
    check_close(got, want, {1e-6, 1e-6}, "dropout values");
  }
  Tensor x = values({5, 67}, 91, 0.5f, 1.5f, true);
  check_op("dropout", [seed](const std::vector<Tensor>& v, const Device&) { return dropout(v[0], 0.4f, seed, true); },
           {x}, {1e-6, 1e-6}, {1e-6, 1e-6});
}

// ---- layer norm ----

TEST_CASE("parity: layer_norm kernels (scalar and float4 paths) and op") {
  for (int64_t D : {67, 64, 1, 1000}) {
    CAPTURE(D);
    const int64_t rows = 111;
    Tensor x = values({rows, D}, 100, -2.0f, 3.0f);
    Tensor gamma = values({D}, 101, 0.5f, 1.5f, true), beta = values({D}, 102);
    Tensor y = Tensor::empty({rows, D}), mean = Tensor::empty({rows}), rstd = Tensor::empty({rows});
    kernels::layer_norm_forward_cpu(x, gamma, beta, 1e-5f, y, mean, rstd);
    Tensor yd = poisoned({rows, D}), meand = poisoned({rows}), rstdd = poisoned({rows});
    const Tensor xd = x.to(gpu()), gammad = gamma.to(gpu());
    kernels::layer_norm_forward_cuda(xd, gammad, beta.to(gpu()), 1e-5f, yd, meand, rstdd);
    check_close(yd, y, {1e-4, 1e-4}, "layer_norm y");
    check_close(meand, mean, {1e-5, 1e-5}, "layer_norm mean");
    check_close(rstdd, rstd, {1e-4, 1e-4}, "layer_norm rstd");

    Tensor g = values({rows, D}, 103);
    Tensor gx = Tensor::empty({rows, D}), gg = Tensor::empty({D}), gb = Tensor::empty({D});
    kernels::layer_norm_backward_cpu(x, gamma, mean, rstd, g, gx, gg, gb);
    Tensor gxd = poisoned({rows, D}), ggd = poisoned({D}), gbd = poisoned({D});
    kernels::layer_norm_backward_cuda(xd, gammad, mean.to(gpu()), rstd.to(gpu()), g.to(gpu()), gxd, ggd, gbd);
    check_close(gxd, gx, {1e-4, 1e-3}, "layer_norm grad x");
    check_close(ggd, gg, {1e-4, 1e-4}, "layer_norm grad gamma");
    check_close(gbd, gb, {1e-4, 1e-4}, "layer_norm grad beta");
  }
  Tensor x = values({3, 37, 67}, 104), gamma = values({67}, 105, 0.5f, 1.5f), beta = values({67}, 106);
  check_op("layer_norm",
           [](const std::vector<Tensor>& v, const Device&) { return layer_norm(v[0], v[1], v[2]); },
           {x, gamma, beta}, {1e-4, 1e-4}, {1e-4, 1e-3});
}

// ---- softmax ----

TEST_CASE("parity: softmax and log_softmax kernels and ops, masked entries and rows") {
  for (int64_t n : {67, 1, 1000}) {
    CAPTURE(n);
    const int64_t rows = 111;
    Tensor x = values({rows, n}, 110, -5.0f, 5.0f);
    float* p = x.f32();
    for (int64_t k = 0; k < rows * n; k += 7) p[k] = -INFINITY;  // masked entries
    for (int64_t j = 0; j < n; ++j) p[5 * n + j] = -INFINITY;  // a fully masked row
    for (int log = 0; log < 2; ++log) {
      CAPTURE(log);
      const Tensor& in = x;
      Tensor want = Tensor::empty(in.shape()), got = poisoned(in.shape());
      if (log) {
        kernels::log_softmax_forward_cpu(in, want);
        kernels::log_softmax_forward_cuda(in.to(gpu()), got);
      } else {
        kernels::softmax_forward_cpu(in, want);
        kernels::softmax_forward_cuda(in.to(gpu()), got);
      }
      check_close(got, want, {1e-5, 1e-5}, "softmax forward");
      const std::vector<float> y = got.to_vector_f32();
      for (int64_t j = 0; j < n; ++j) CHECK(y[5 * n + j] == 0.0f);  // fully masked → zeros
      Tensor g = values(in.shape(), 111);
      Tensor gwant = Tensor::empty(in.shape()), ggot = poisoned(in.shape());
      if (log) {
        kernels::log_softmax_backward_cpu(want, g, gwant);
        kernels::log_softmax_backward_cuda(want.to(gpu()), g.to(gpu()), ggot);
      } else {
        kernels::softmax_backward_cpu(want, g, gwant);
        kernels::softmax_backward_cuda(want.to(gpu()), g.to(gpu()), ggot);
      }
      check_close(ggot, gwant, {1e-5, 1e-4}, "softmax backward");
      const std::vector<float> gx = ggot.to_vector_f32();
      for (int64_t j = 0; j < n; ++j) CHECK(gx[5 * n + j] == 0.0f);  // and a zero gradient
    }
  }
  // NaN is never mistaken for a masked row: it propagates, as on the CPU.
  Tensor with_nan = values({3, 67}, 113);
  with_nan.f32()[67 + 10] = std::numeric_limits<float>::quiet_NaN();
  Tensor want = Tensor::empty({3, 67}), got = poisoned({3, 67});
  kernels::softmax_forward_cpu(with_nan, want);
  kernels::softmax_forward_cuda(with_nan.to(gpu()), got);
  check_close(got, want, {1e-6, 1e-5}, "softmax with a NaN row");
  Tensor relu_want = Tensor::empty({3, 67}), relu_got = poisoned({3, 67});
  kernels::activation_forward_cpu(kernels::Activation::relu, with_nan, relu_want);
  kernels::activation_forward_cuda(kernels::Activation::relu, with_nan.to(gpu()), relu_got);
  check_close(relu_got, relu_want, {0, 0}, "relu lets NaN through");
  Tensor x = values({3, 37, 67}, 112, -5.0f, 5.0f);
  check_op("softmax", [](const std::vector<Tensor>& v, const Device&) { return softmax(v[0]); }, {x}, {1e-6, 1e-5}, {1e-5, 1e-4});
  check_op("log_softmax", [](const std::vector<Tensor>& v, const Device&) { return log_softmax(v[0]); }, {x}, {1e-5, 1e-5}, {1e-5, 1e-4});
}

// ---- losses ----

TEST_CASE("parity: cross_entropy kernels and op, ignored rows, bad targets") {
  const int64_t N = 45, C = 67;
  const int32_t ignore = -100;
  Tensor logits = values({N, C}, 120, -4.0f, 4.0f);
  std::vector<int32_t> t = random_ids({N}, static_cast<int32_t>(C), 121).to_vector_i32();
  for (int64_t i = 0; i < N; i += 4) t[i] = ignore;
  Tensor targets = Tensor::from_vector(t, {N});
  Tensor loss = Tensor::empty({}), lse = Tensor::empty({N});
  int64_t count = -1, count_d = -1;
  kernels::cross_entropy_forward_cpu(logits, targets, ignore, loss, lse, count);
  Tensor loss_d = poisoned({}), lse_d = poisoned({N});
  const Tensor logits_d = logits.to(gpu()), targets_d = targets.to(gpu());
  kernels::cross_entropy_forward_cuda(logits_d, targets_d, ignore, loss_d, lse_d, count_d);
  CHECK(count_d == count);
  CHECK(count == N - (N + 3) / 4);
  check_close(loss_d, loss, {1e-5, 1e-5}, "cross_entropy loss");
  // lse is compared on counted rows (what backward reads).
  const std::vector<float> l = lse.to_vector_f32(), ld = lse_d.to_vector_f32();
  for (int64_t i = 0; i < N; ++i)
    if (t[i] != ignore) CHECK(ld[i] == doctest::Approx(l[i]).epsilon(1e-5));

  Tensor grad_loss = Tensor::full({}, 1.7f);
  Tensor g = poisoned({N, C}), gwant = Tensor::empty({N, C});
  kernels::cross_entropy_backward_cpu(logits, targets, ignore, lse, count, grad_loss, gwant);
  kernels::cross_entropy_backward_cuda(logits_d, targets_d, ignore, lse_d, count_d, grad_loss.to(gpu()), g);
  check_close(g, gwant, {1e-6, 1e-4}, "cross_entropy grad logits");

  check_op("cross_entropy",
           [targets](const std::vector<Tensor>& v, const Device& d) { return cross_entropy(v[0], targets.to(d), -100); },
           {logits}, {1e-5, 1e-5}, {1e-6, 1e-4});

  // Every row ignored: loss 0, count 0, zero gradient.
  Tensor ai = Tensor::from_vector(std::vector<int32_t>(N, ignore), {N}, gpu());
  Tensor loss0 = poisoned({}), lse0 = poisoned({N}), g0 = poisoned({N, C});
  int64_t count0 = -1;
  kernels::cross_entropy_forward_cuda(logits_d, ai, ignore, loss0, lse0, count0);
  CHECK(count0 == 0);
  CHECK(loss0.item() == 0.0f);
  kernels::cross_entropy_backward_cuda(logits_d, ai, ignore, lse0, count0, grad_loss.to(gpu()), g0);
  CHECK(g0.to_vector_f32() == std::vector<float>(N * C, 0.0f));

  // A CUDA target outside [0, C) that is not ignore_index is an error naming it (public op).
  std::vector<int32_t> tb = t;
  tb[7] = static_cast<int32_t>(C) + 3;
  Tensor bad = Tensor::from_vector(tb, {N}, gpu());
  CHECK_THROWS_WITH_AS(cross_entropy(logits_d, bad, ignore), doctest::Contains("70"), Error);
}

TEST_CASE("parity: l1_loss kernels and op") {
  for (int64_t n : {int64_t(1), int64_t(3 * 37 * 67), int64_t(100003)}) {
    CAPTURE(n);
    Tensor pred = values({n}, 130), target = values({n}, 131);
    Tensor loss = Tensor::empty({}), loss_d = poisoned({});
    kernels::l1_loss_forward_cpu(pred, target, loss);
    kernels::l1_loss_forward_cuda(pred.to(gpu()), target.to(gpu()), loss_d);
    check_close(loss_d, loss, {1e-6, 1e-5}, "l1 loss");
    Tensor grad_loss = Tensor::full({}, -0.7f);
    Tensor g = Tensor::empty({n}), gd = poisoned({n});
    kernels::l1_loss_backward_cpu(pred, target, grad_loss, g);
    kernels::l1_loss_backward_cuda(pred.to(gpu()), target.to(gpu()), grad_loss.to(gpu()), gd);
    check_close(gd, g, {1e-9, 1e-6}, "l1 grad");
  }
  Tensor pred = values({3, 37, 67}, 132), target = values({3, 37, 67}, 133);
  check_op("l1_loss", [](const std::vector<Tensor>& v, const Device&) { return l1_loss(v[0], v[1]); },
           {pred, target}, {1e-6, 1e-5}, {1e-9, 1e-6});
}

// ---- the URPE attention core ----

namespace {

struct AttentionCase {
  const char* name;
  int64_t batch, heads, nq, nk;
  bool bias, c, per_batch_maps, padding, causal;
  int64_t causal_offset, buckets;  // buckets = 0: Toeplitz maps
  bool exp_norm = false;           // AttentionNorm::exp: no softmax denominator
  bool t5 = false;                 // T5-bucketed relative maps (shared, Nq = Nk): many diagonals per bucket

  // Maps whose value depends on j − i alone, shared by the batch: the CUDA table gradients sum
  // them along diagonals once the public op's check has read them.
  bool diagonal_maps() const { return !per_batch_maps && (buckets == 0 || t5); }
};

// Builds the params on the CPU (tables random, maps Toeplitz or random buckets, padding with one
// fully padded batch item so fully masked rows are exercised).
UrpeAttentionParams make_params(const AttentionCase& c, uint64_t seed) {
  UrpeAttentionParams p;
  p.scale = 0.37f;
  const int64_t buckets = c.t5 ? relative_bucket_count(c.nq, RelativeKind::bucketed)
                          : c.buckets ? c.buckets : c.nq + c.nk - 1;
  auto map = [&](uint64_t s) {
    if (c.t5) return relative_bucket_map(c.nq, RelativeKind::bucketed, true);
    if (c.buckets == 0) {
      Tensor m = toeplitz_map(c.nq, c.nk);
      if (!c.per_batch_maps) return m;
      std::vector<int32_t> v;
      for (int64_t b = 0; b < c.batch; ++b) {
        const std::vector<int32_t> one = m.to_vector_i32();
        v.insert(v.end(), one.begin(), one.end());
      }
      return Tensor::from_vector(v, {c.batch, c.nq, c.nk});
    }
    return c.per_batch_maps ? random_ids({c.batch, c.nq, c.nk}, static_cast<int32_t>(buckets), s)
                            : random_ids({c.nq, c.nk}, static_cast<int32_t>(buckets), s);
  };
  if (c.bias) {
    p.bias_table = values({c.heads, buckets}, seed + 1, -2.0f, 2.0f);
    p.bias_map = map(seed + 2);
  }
  if (c.c) {
    p.c_table = values({c.heads, buckets}, seed + 3, 0.2f, 1.8f, true);
    p.c_map = map(seed + 4);
  }
  if (c.padding) {
    std::vector<int32_t> pad(c.batch * c.nk, 0);
    for (int64_t j = 0; j < c.nk; ++j) pad[j] = 1;                         // batch 0: all padded
    for (int64_t b = 1; b < c.batch; ++b)
      for (int64_t j = c.nk - 3; j < c.nk; ++j) pad[b * c.nk + j] = 1;  // others: last 3
    p.key_padding = Tensor::from_vector(pad, {c.batch, c.nk});
  }
  p.causal = c.causal;
  p.causal_offset = c.causal_offset;
  p.norm = c.exp_norm ? AttentionNorm::exp : AttentionNorm::softmax;
  return p;
}

UrpeAttentionParams params_on(const UrpeAttentionParams& p, const Device& d) {
  UrpeAttentionParams q = p;
  auto move = [&](Tensor& t) {
    if (t.defined()) t = t.to(d);
  };
  move(q.bias_table);
  move(q.bias_map);
  move(q.c_table);
  move(q.c_map);
  move(q.key_padding);
  return q;
}

// The table gradients a backward call writes, dB and dC, each only where the case has that table
// (an undefined tensor where it has not, handed to the call as nullptr).
struct TableGrads {
  Tensor bias, c;
  Tensor* bias_out() { return bias.defined() ? &bias : nullptr; }
  Tensor* c_out() { return c.defined() ? &c : nullptr; }
};

// Empty CPU buffers (poisoned = false) or NaN-filled device ones, so that an element a kernel
// never writes fails the comparison.
TableGrads table_grads(const UrpeAttentionParams& p, bool has_bias, bool has_c, bool poison) {
  const auto make = [poison](const Shape& shape) { return poison ? poisoned(shape) : Tensor::empty(shape); };
  TableGrads g;
  if (has_bias) g.bias = make(p.bias_table.shape());
  if (has_c) g.c = make(p.c_table.shape());
  return g;
}

}  // namespace

TEST_CASE("parity: URPE attention core, forward and backward (dS, dB, dC)") {
  const AttentionCase cases[] = {
      {"toeplitz, causal, shared maps", 2, 3, 37, 37, true, true, false, false, true, 0, 0},
      {"toeplitz, no mask", 2, 3, 37, 37, true, true, false, false, false, 0, 0},
      {"transformer-xl offset, per-batch maps", 2, 2, 29, 45, true, true, true, false, true, 16, 0},
      {"bucketed (SPD-like) maps with padding", 3, 2, 33, 33, true, true, true, true, false, 0, 7},
      {"shared bucket maps, padding, causal", 3, 2, 33, 33, true, true, false, true, true, 0, 5},
      {"C only (no bias)", 2, 3, 37, 37, false, true, false, false, true, 0, 0},
      {"plain softmax (no tables)", 2, 3, 37, 67, false, false, false, true, false, 0, 0},
      {"exp norm (no denominator), causal", 2, 3, 37, 37, true, true, false, false, true, 0, 0, true},
      {"exp norm, bucketed maps with padding", 3, 2, 33, 33, true, true, true, true, false, 0, 7, true},
      {"toeplitz, transformer-xl offset, shared maps, padding", 3, 2, 29, 45, true, true, false, true, true, 16, 0},
      {"T5-bucketed relative maps, padding", 3, 2, 70, 70, true, true, false, true, false, 0, 0, false, true},
      {"T5-bucketed relative maps, causal, C only", 2, 3, 70, 70, false, true, false, false, true, 0, 0, false, true},
  };
  for (const AttentionCase& c : cases) {
    CAPTURE(c.name);
    const Shape shape{c.batch, c.heads, c.nq, c.nk};
    const UrpeAttentionParams p = make_params(c, 140);
    const UrpeAttentionParams pd = params_on(p, gpu());
    Tensor scores = values(shape, 141, -3.0f, 3.0f);
    Tensor probs = Tensor::empty(shape), out = Tensor::empty(shape);
    kernels::urpe_attention_forward_cpu(scores, p, probs, out);
    Tensor probs_d = poisoned(shape), out_d = poisoned(shape);
    kernels::urpe_attention_forward_cuda(scores.to(gpu()), pd, probs_d, out_d);
    check_close(probs_d, probs, {1e-6, 1e-5}, "urpe attention P");
    check_close(out_d, out, {1e-6, 1e-5}, "urpe attention A");

    Tensor g = values(shape, 142);
    Tensor gs = Tensor::empty(shape), gs_d = poisoned(shape);
    TableGrads t = table_grads(p, c.bias, c.c, false), t_d = table_grads(p, c.bias, c.c, true);
    kernels::urpe_attention_backward_cpu(g, probs, p, gs, t.bias_out(), t.c_out());
    kernels::urpe_attention_backward_cuda(g.to(gpu()), probs_d, pd, gs_d, t_d.bias_out(), t_d.c_out());
    check_close(gs_d, gs, {1e-6, 1e-4}, "urpe attention dS");
    if (c.bias) check_close(t_d.bias, t.bias, {1e-5, 1e-4}, "urpe attention dB");
    if (c.c) check_close(t_d.c, t.c, {1e-5, 1e-4}, "urpe attention dC");

    // Bit-reproducible: the same call gives the same table gradients.
    if (c.bias || c.c) {
      Tensor gs2 = poisoned(shape);
      TableGrads t2 = table_grads(p, c.bias, c.c, true);
      kernels::urpe_attention_backward_cuda(g.to(gpu()), probs_d, pd, gs2, t2.bias_out(), t2.c_out());
      CHECK(bitwise_equal(gs2, gs_d));
      if (c.bias) CHECK(bitwise_equal(t2.bias, t_d.bias));
      if (c.c) CHECK(bitwise_equal(t2.c, t_d.c));
    }

    // Once the public op's check has read the maps, a map that depends on j − i alone takes the
    // diagonal path (per-diagonal sums, then per bucket): the same gradients within the same
    // bound, and bit-identical across calls.
    if (c.bias) check_bucket_map_values("test", "bias_map", pd.bias_map, "bias_table", pd.bias_table);
    if (c.c) check_bucket_map_values("test", "c_map", pd.c_map, "c_table", pd.c_table);
    if (c.bias) CHECK(bucket_map_is_diagonal_constant(pd.bias_map) == c.diagonal_maps());
    if (c.c) CHECK(bucket_map_is_diagonal_constant(pd.c_map) == c.diagonal_maps());
    if (c.bias || c.c) {
      TableGrads first = table_grads(p, c.bias, c.c, true), second = table_grads(p, c.bias, c.c, true);
      Tensor gs3 = poisoned(shape), gs4 = poisoned(shape);
      kernels::urpe_attention_backward_cuda(g.to(gpu()), probs_d, pd, gs3, first.bias_out(), first.c_out());
      kernels::urpe_attention_backward_cuda(g.to(gpu()), probs_d, pd, gs4, second.bias_out(), second.c_out());
      CHECK(bitwise_equal(gs3, gs_d));
      if (c.bias) check_close(first.bias, t.bias, {1e-5, 1e-4}, "urpe attention dB, after the map check");
      if (c.c) check_close(first.c, t.c, {1e-5, 1e-4}, "urpe attention dC, after the map check");
      if (c.bias) CHECK(bitwise_equal(first.bias, second.bias));
      if (c.c) CHECK(bitwise_equal(first.c, second.c));
    }

    // The public op with autograd: gradients reach scores, bias table and C table.
    std::vector<Tensor> inputs;
    inputs.reserve(3);
    inputs.push_back(scores);
    if (c.bias) inputs.push_back(p.bias_table);
    if (c.c) inputs.push_back(p.c_table);
    const bool has_bias = c.bias, has_c = c.c;
    check_op(std::string("urpe_attention: ") + c.name,
             [p, has_bias, has_c](const std::vector<Tensor>& v, const Device& d) {
               UrpeAttentionParams q = params_on(p, d);
               size_t k = 1;
               if (has_bias) q.bias_table = v[k++];
               if (has_c) q.c_table = v[k++];
               return urpe_attention(v[0], q);
             },
             inputs, {1e-6, 1e-5}, {1e-5, 1e-4});
  }
}

TEST_CASE("urpe attention on CUDA tensors rejects out-of-range map values") {
  AttentionCase c{"bad map", 1, 2, 9, 9, true, true, false, false, false, 0, 4};
  UrpeAttentionParams p = params_on(make_params(c, 150), gpu());
  std::vector<int32_t> m = p.c_map.to_vector_i32();
  m[10] = 4;
  p.c_map = Tensor::from_vector(m, {9, 9}, gpu());
  CHECK_THROWS_WITH_AS(urpe_attention(values({1, 2, 9, 9}, 151).to(gpu()), p),
                       doctest::Contains("c_map"), Error);
}

// ---- the fused URPE attention ----

namespace {

struct FlashParityCase {
  const char* name;
  int64_t batch, heads, nq, nk, dh, dv;
  bool bias, c;
  int map_kind;  // 1: relative Toeplitz, 2: relative buckets, 3: shared dense, 4: per-batch dense
  bool padding, causal;
  int64_t causal_offset;
  float dropout;
};

UrpeAttentionParams flash_params(const FlashParityCase& c, uint64_t seed) {
  UrpeAttentionParams p;
  p.scale = 0.29f;
  int64_t buckets = 0;
  auto map = [&](uint64_t s) {
    switch (c.map_kind) {
      case 1: buckets = c.nq + c.nk - 1; return toeplitz_relative_map(c.nq, c.nk);
      case 2: buckets = 6; return random_ids({c.nq + c.nk - 1}, 6, s);
      case 3: buckets = 7; return random_ids({c.nq, c.nk}, 7, s);
      default: buckets = 5; return random_ids({c.batch, c.nq, c.nk}, 5, s);
    }
  };
  if (c.bias) {
    p.bias_map = map(seed + 1);
    p.bias_table = values({c.heads, buckets}, seed + 2, -2.0f, 2.0f);
  }
  if (c.c) {
    p.c_map = map(seed + 3);
    p.c_table = values({c.heads, buckets}, seed + 4, 0.2f, 1.8f, true);
  }
  if (c.padding) {  // batch 0 fully padded (fully masked rows), the others their last 3 keys
    std::vector<int32_t> pad(c.batch * c.nk, 0);
    for (int64_t j = 0; j < c.nk; ++j) pad[j] = 1;
    for (int64_t b = 1; b < c.batch; ++b)
      for (int64_t j = c.nk - 3; j < c.nk; ++j) pad[b * c.nk + j] = 1;
    p.key_padding = Tensor::from_vector(pad, {c.batch, c.nk});
  }
  p.causal = c.causal;
  p.causal_offset = c.causal_offset;
  return p;
}

}  // namespace

TEST_CASE("parity: fused URPE attention kernels and op (O, L, dQ, dK, dV, dB, dC)") {
  // Sizes cross the CUDA tiles (32 keys or queries, 16 or 8 rows per block) and the CPU's.
  const FlashParityCase cases[] = {
      {"toeplitz relative map, causal offset", 2, 2, 37, 45, 19, 23, true, true, 1, false, true, 8, 0.0f},
      {"relative buckets, padding, dropout", 2, 3, 33, 35, 16, 16, true, true, 2, true, false, 0, 0.3f},
      {"shared dense maps, causal", 2, 2, 35, 35, 9, 33, true, true, 3, false, true, 0, 0.0f},
      {"per-batch dense maps, padding", 3, 2, 34, 33, 40, 7, true, true, 4, true, false, 0, 0.0f},
      {"no tables, dropout", 2, 2, 17, 67, 12, 12, false, false, 1, false, false, 0, 0.2f},
      // More query row tiles than the simulator's grid of 32 blocks (45 forward and 81 dq
      // tasks; "no tables" above has 36 dkdv tasks): each block takes a second task, after the
      // barrier that waits for the first task's reads of its shared tiles (racecheck reports
      // that barrier missing). dh = 12: a warp's load of the Q tile then writes rows other warps
      // read (with dh = 8 it would write exactly its own).
      {"more row tiles than one grid", 3, 3, 65, 9, 12, 10, true, true, 1, false, true, 4, 0.0f},
  };
  for (const FlashParityCase& c : cases) {
    CAPTURE(c.name);
    const UrpeAttentionParams p = flash_params(c, 160);
    const UrpeAttentionParams pd = params_on(p, gpu());
    const AttentionDropout drop{c.dropout, 161};
    const Tensor q = values({c.batch, c.heads, c.nq, c.dh}, 162, -1.5f, 1.5f);
    const Tensor k = values({c.batch, c.heads, c.nk, c.dh}, 163, -1.5f, 1.5f);
    const Tensor v = values({c.batch, c.heads, c.nk, c.dv}, 164);
    const Shape o_shape{c.batch, c.heads, c.nq, c.dv}, l_shape{c.batch, c.heads, c.nq};
    Tensor out = Tensor::empty(o_shape), lse = Tensor::empty(l_shape);
    kernels::urpe_flash_attention_forward_cpu(q, k, v, p, drop, out, lse);
    Tensor out_d = poisoned(o_shape), lse_d = poisoned(l_shape);
    kernels::urpe_flash_attention_forward_cuda(q.to(gpu()), k.to(gpu()), v.to(gpu()), pd, drop, out_d, lse_d);
    check_close(out_d, out, {1e-6, 1e-5}, "fused attention O");
    check_close(lse_d, lse, {1e-6, 1e-5}, "fused attention L");

    const Tensor go = values(o_shape, 165);
    Tensor dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()), dv = Tensor::empty(v.shape());
    Tensor dq_d = poisoned(q.shape()), dk_d = poisoned(k.shape()), dv_d = poisoned(v.shape());
    TableGrads t = table_grads(p, c.bias, c.c, false), t_d = table_grads(p, c.bias, c.c, true);
    kernels::urpe_flash_attention_backward_cpu(q, k, v, out, lse, go, p, drop, dq, dk, dv,
                                               t.bias_out(), t.c_out());
    kernels::urpe_flash_attention_backward_cuda(q.to(gpu()), k.to(gpu()), v.to(gpu()), out_d, lse_d,
                                                go.to(gpu()), pd, drop, dq_d, dk_d, dv_d,
                                                t_d.bias_out(), t_d.c_out());
    check_close(dq_d, dq, {1e-5, 1e-4}, "fused attention dQ");
    check_close(dk_d, dk, {1e-5, 1e-4}, "fused attention dK");
    check_close(dv_d, dv, {1e-5, 1e-4}, "fused attention dV");
    if (c.bias) check_close(t_d.bias, t.bias, {1e-5, 1e-4}, "fused attention dB");
    if (c.c) check_close(t_d.c, t.c, {1e-5, 1e-4}, "fused attention dC");

    // Bit-reproducible: a second backward gives the same bits.
    Tensor dq2 = poisoned(q.shape()), dk2 = poisoned(k.shape()), dv2 = poisoned(v.shape());
    TableGrads t2 = table_grads(p, c.bias, c.c, true);
    kernels::urpe_flash_attention_backward_cuda(q.to(gpu()), k.to(gpu()), v.to(gpu()), out_d, lse_d,
                                                go.to(gpu()), pd, drop, dq2, dk2, dv2,
                                                t2.bias_out(), t2.c_out());
    CHECK(bitwise_equal(dq2, dq_d));
    CHECK(bitwise_equal(dk2, dk_d));
    CHECK(bitwise_equal(dv2, dv_d));
    if (c.bias) CHECK(bitwise_equal(t2.bias, t_d.bias));
    if (c.c) CHECK(bitwise_equal(t2.c, t_d.c));

    // The public op with autograd on both devices.
    std::vector<Tensor> inputs{q, k, v};
    if (c.bias) inputs.push_back(p.bias_table);
    if (c.c) inputs.push_back(p.c_table);
    const bool has_bias = c.bias, has_c = c.c;
    check_op(std::string("urpe_flash_attention: ") + c.name,
             [p, drop, has_bias, has_c](const std::vector<Tensor>& x, const Device& d) {
               UrpeAttentionParams pp = params_on(p, d);
               size_t next = 3;
               if (has_bias) pp.bias_table = x[next++];
               if (has_c) pp.c_table = x[next++];
               return urpe_flash_attention(x[0], x[1], x[2], pp, drop);
             },
             inputs, {1e-6, 1e-5}, {1e-5, 1e-4});
  }
}

TEST_CASE("fused attention on CUDA: head dims past the shared tiles are one clear error") {
  const Tensor q = values({1, 1, 4, 129}, 170).to(gpu());
  CHECK_THROWS_WITH_AS(urpe_flash_attention(q, q, q, UrpeAttentionParams{}),
                       doctest::Contains("head dims up to 128"), Error);
}

// ---- optimizer kernels ----

TEST_CASE("parity: fused multi-tensor Adam / AdamW, sum of squares, scale in place") {
  const std::vector<Shape> shapes{{67}, {37, 45}, {10007}, {3, 5, 7}};
  for (int decoupled = 0; decoupled < 2; ++decoupled) {
    CAPTURE(decoupled);
    std::vector<AdamSlot> cpu_slots, gpu_slots;
    uint64_t seed = 160;
    for (const Shape& s : shapes) {
      AdamSlot a;
      a.param = values(s, seed++);
      a.grad = values(s, seed++);
      a.m = values(s, seed++, -0.1f, 0.1f);
      a.v = values(s, seed++, 0.0f, 0.1f);
      cpu_slots.push_back(a);
      gpu_slots.push_back({a.param.to(gpu()), a.grad.to(gpu()), a.m.to(gpu()), a.v.to(gpu())});
    }
    AdamHyper h;
    h.lr = 3e-3f;
    h.weight_decay = 0.05f;
    h.decoupled_weight_decay = decoupled;
    h.step = 7;
    kernels::adam_update_cpu(cpu_slots, h);
    kernels::adam_update_cuda(gpu_slots, h);
    for (size_t k = 0; k < shapes.size(); ++k) {
      check_close(gpu_slots[k].param, cpu_slots[k].param, {1e-6, 1e-5}, "adam param");
      check_close(gpu_slots[k].m, cpu_slots[k].m, {1e-7, 1e-5}, "adam m");
      check_close(gpu_slots[k].v, cpu_slots[k].v, {1e-8, 1e-5}, "adam v");
    }
    // The public entry point dispatches on the device.
    std::vector<AdamSlot> public_gpu;
    for (const AdamSlot& a : gpu_slots) public_gpu.push_back({a.param.clone(), a.grad, a.m.clone(), a.v.clone()});
    std::vector<AdamSlot> public_cpu;
    for (const AdamSlot& a : gpu_slots)
      public_cpu.push_back({a.param.cpu().clone(), a.grad.cpu(), a.m.cpu().clone(), a.v.cpu().clone()});
    adam_update(public_gpu, h);
    adam_update(public_cpu, h);
    for (size_t k = 0; k < shapes.size(); ++k)
      check_close(public_gpu[k].param, public_cpu[k].param, {1e-6, 1e-5}, "adam_update (public)");
  }

  std::vector<Tensor> grads, grads_d;
  uint64_t seed = 170;
  for (const Shape& s : shapes) {
    grads.push_back(values(s, seed++));
    grads_d.push_back(grads.back().to(gpu()));
  }
  grads.push_back(Tensor());  // undefined gradients are skipped
  grads_d.push_back(Tensor());
  const double want = kernels::sum_of_squares_cpu(grads);
  const double got = kernels::sum_of_squares_cuda(grads_d);
  CHECK(got == doctest::Approx(want).epsilon(1e-9));
  CHECK(kernels::sum_of_squares_cuda(grads_d) == got);  // deterministic
  CHECK(global_grad_norm(grads_d) == doctest::Approx(global_grad_norm(grads)).epsilon(1e-6));

  kernels::scale_in_place_cpu(grads[2], 0.3f);
  kernels::scale_in_place_cuda(grads_d[2], 0.3f);
  check_close(grads_d[2], grads[2], {0, 0}, "scale_in_place");
  const float norm_cpu = clip_grad_norm(grads, 0.5f), norm_gpu = clip_grad_norm(grads_d, 0.5f);
  CHECK(norm_gpu == doctest::Approx(norm_cpu).epsilon(1e-6));
  for (size_t k = 0; k + 1 < grads.size(); ++k) check_close(grads_d[k], grads[k], {1e-7, 1e-5}, "clip_grad_norm");
}


// ---- grid-stride loops ----

// More elements, and more rows, than one grid of grid_for() covers on a device with few SMs (the
// simulator reports one: 32 blocks), so every grid-stride loop takes several turns there. On a
// real GPU the same checks simply run as one pass.
TEST_CASE("parity: grid-stride loops over more elements and rows than one grid") {
  const Tolerance tight{1e-6, 1e-5}, loose{1e-4, 1e-4};
  Tensor big = values({43, 1031}, 120), vec = values({1031}, 121);  // 44,333 elements
  check_op("add (broadcast)",
           [](const std::vector<Tensor>& v, const Device&) { return add(v[0], v[1]); },
           {big, vec}, tight, loose);
  check_op("gelu", [](const std::vector<Tensor>& v, const Device&) { return gelu(v[0]); }, {big},
           tight, tight);
  check_op("dropout",
           [](const std::vector<Tensor>& v, const Device&) { return dropout(v[0], 0.3f, 77, true); },
           {values({43, 1031}, 122, 0.5f, 1.5f, true)}, tight, tight);
  check_op("sum axis 0", [](const std::vector<Tensor>& v, const Device&) { return sum(v[0], 0); },
           {big}, loose, tight);

  Tensor rows = values({600, 37}, 123, -3, 3);  // 600 rows: warp-per-row kernels loop too
  check_op("softmax", [](const std::vector<Tensor>& v, const Device&) { return softmax(v[0]); },
           {rows}, tight, {1e-5, 1e-4});
  check_op("log_softmax",
           [](const std::vector<Tensor>& v, const Device&) { return log_softmax(v[0]); }, {rows},
           {1e-5, 1e-5}, {1e-5, 1e-4});
  check_op("layer_norm",
           [](const std::vector<Tensor>& v, const Device&) { return layer_norm(v[0], v[1], v[2]); },
           {rows, values({37}, 124, 0.5f, 1.5f), values({37}, 125)}, loose, {1e-4, 1e-3});
  std::vector<int32_t> ids(600);
  for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int32_t>((k * 7) % 37);
  const Tensor targets = Tensor::from_vector(ids, {600});
  check_op("cross_entropy",
           [targets](const std::vector<Tensor>& v, const Device& d) {
             return cross_entropy(v[0], targets.to(d), -100);
           },
           {rows}, {1e-5, 1e-5}, {1e-6, 1e-4});
}

#endif  // URPE_WITH_CUDA
