// CUDA-vs-CPU parity: the CPU kernels are the reference. Every public op runs here through its
// rows of the op table (tests/op_table.cpp; "parity: the op table" below): random inputs (never
// zeros) with odd shapes, the device's free blocks filled with NaN first so an unwritten element
// fails, and a per-row bound |cuda − cpu| ≤ atol + rtol·|cpu| on the output and every gradient.
// What stays hand-written here is what a row cannot state:
//   - the device context, the allocator's statistics and the event timer;
//   - kernels called with arguments no public op makes: GEMM layouts with alpha, beta and an
//     empty contraction, TF32; sum_axis/broadcast_axis sizes down to 0; i32 permutes and
//     accumulating copy windows; the index bounds of CUDA ids;
//   - what the public ops keep inside: the URPE core's P and its diagonal table-gradient path,
//     the fused op's log-sum-exp, cross-entropy's count and log-sum-exp, each table gradient
//     bit-identical on a second call;
//   - exact values a bound cannot pin: fully masked rows exactly zero, NaN passed through, the
//     padding row's gradient exactly zero;
//   - errors on CUDA tensors (bad ids, maps, targets, head dims), the encoder end to end, the
//     sum of squares in double and clip_grad_norm.
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

#include "app/bench/cuda_peaks.h"
#include "models/encoder.h"
#include "models/positional.h"
#include "ops/cast.h"
#include "ops/activation.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/index_check.h"
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
#include "ops/urpe_attention_checks.h"
#include "ops/urpe_flash_attention.h"
#include "bf16_cases.h"
#include "op_table.h"
#include "tensor/cuda_backend.h"
#include "cuda_test_util.h"
#include "test_util.h"
#if defined(URPE_WITH_CUDA)
#include "tensor/cuda_context.h"  // cuBLASLt's switch (linear's two CUDA paths)
#endif
#if defined(URPE_CUDA_SIM)
#include <urpe_sim_checks.h>  // the simulator's GEMM call log and cuBLASLt's heuristic switch
#endif

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

using test::gpu;
using test::kNaN;
using test::poisoned;

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
  const test::Closeness c = test::closeness(g, w, tol.atol, tol.rtol);
  std::ostringstream msg;
  msg << c.bad << " of " << g.size() << " elements out of bounds (atol " << tol.atol << ", rtol "
      << tol.rtol << "), max |diff| " << c.worst;
  if (c.first >= 0) msg << "; first at " << c.first << ": cuda " << g[c.first] << ", cpu " << w[c.first];
  INFO(msg.str());
  CHECK(c.bad == 0);
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



// A one-element operand: what the kernels broadcast, though no public op passes it (add's shapes
// must be trailing dims), so no row of the op table can.
TEST_CASE("parity: binary kernels with a one-element operand, and only one gradient asked for") {
  using kernels::BinaryOp;
  for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div})
    for (int swap = 0; swap < 2; ++swap) {
      CAPTURE(static_cast<int>(op));
      CAPTURE(swap);
      Tensor a = values({3, 37, 67}, 10, 0.5f, 1.5f, true), b = values({1}, 11, 0.5f, 1.5f, true);
      if (swap) std::swap(a, b);
      const Shape out_shape{3, 37, 67};
      Tensor want = Tensor::empty(out_shape), got = poisoned(out_shape);
      kernels::binary_forward_cpu(op, a, b, want);
      kernels::binary_forward_cuda(op, a.to(gpu()), b.to(gpu()), got);
      check_close(got, want, {1e-6, 1e-6}, "binary forward");
      Tensor g = values(out_shape, 12);
      Tensor ga = Tensor::empty(a.shape()), gb = Tensor::empty(b.shape());
      kernels::binary_backward_cpu(op, a, b, g, &ga, &gb);
      Tensor ga_d = poisoned(a.shape()), gb_d = poisoned(b.shape());
      kernels::binary_backward_cuda(op, a.to(gpu()), b.to(gpu()), g.to(gpu()), &ga_d, &gb_d);
      check_close(ga_d, ga, {1e-5, 1e-5}, "binary backward, grad a");
      check_close(gb_d, gb, {1e-5, 1e-5}, "binary backward, grad b");
      Tensor gb_only = poisoned(b.shape());
      kernels::binary_backward_cuda(op, a.to(gpu()), b.to(gpu()), g.to(gpu()), nullptr, &gb_only);
      CHECK(bitwise_equal(gb_only, gb_d));
    }
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

#if defined(URPE_WITH_CUDA)
// linear on CUDA is one cublasLtMatmul (the bias its epilogue, β = 0; a bf16 y written directly)
// where cuBLASLt has a plan, else bias rows + cuBLAS with β = 1 + a rounding pass. The op table
// checks the first against the CPU; here the two CUDA paths against each other: in the simulator
// bit for bit (both sum the same products in double and add the bias before the one rounding),
// on a GPU within the op table's bounds. ∂b from a bf16 g (bias_grad_cuda, reading bf16) is the
// widened g's sum_axis_cuda bit for bit on both (the same double sums in the same chunks).
TEST_CASE("parity: linear on cuBLASLt (bias epilogue, bf16 y) against its cuBLAS path; ∂b from a bf16 g") {
  cuda::Context& ctx = *gpu().context();
  REQUIRE(ctx.cublas_lt() != nullptr);
  struct Case {
    const char* name;
    DType multiply_in, out;
    bool bias, tf32;
  };
  const Case cases[] = {{"f32, bias", DType::f32, DType::f32, true, false},
                        {"f32 with TF32, bias", DType::f32, DType::f32, true, true},
                        {"bf16 in, f32 out, bias", DType::bf16, DType::f32, true, false},
                        {"bf16 in, bf16 out, bias", DType::bf16, DType::bf16, true, false},
                        {"bf16 in, bf16 out, no bias", DType::bf16, DType::bf16, false, false}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Tensor x = values({3, 37, 45}, 60).to(gpu()), w = values({67, 45}, 61).to(gpu());
    const Tensor b = values({67}, 62).to(gpu());
    const Tensor g = values({3, 37, 67}, 63).to(gpu());
    cuda::set_tf32(&ctx, c.tf32);
    std::vector<Tensor> y, gb;
    for (const bool lt : {true, false}) {
      ctx.set_lt_epilogues(lt);
#if defined(URPE_CUDA_SIM)
      const size_t calls_before = urpe_sim::gemm_calls().size();
#endif
      Tensor bias = b.clone();
      bias.set_requires_grad(true);
      const Tensor out = linear(x, w, c.bias ? bias : Tensor(), c.multiply_in, c.out);
      CHECK(out.dtype() == c.out);
#if defined(URPE_CUDA_SIM)
      const std::vector<urpe_sim::GemmCall> calls = urpe_sim::gemm_calls();
      REQUIRE(calls.size() == calls_before + 1);
      CHECK(calls.back().lt == lt);
      CHECK(calls.back().bias == (lt && c.bias));
#endif
      y.push_back(out);
      if (c.bias) {
        out.backward(c.out == DType::bf16 ? cast(g, DType::bf16) : g);
        gb.push_back(bias.grad());
      }
    }
    ctx.set_lt_epilogues(true);
    cuda::set_tf32(&ctx, false);
#if defined(URPE_CUDA_SIM)
    CHECK(bitwise_equal(y[0], y[1]));
#else
    // TF32: two algorithms' TF32 products, the bound of the TF32 GEMM check above.
    const Tolerance bound = c.out == DType::bf16 ? Tolerance{1e-5, 0x1p-7} : c.tf32 ? Tolerance{5e-2, 1e-2} : Tolerance{1e-4, 1e-4};
    check_close(y[0], y[1], bound, "linear, cuBLASLt against cuBLAS");
#endif
    if (c.bias) CHECK(bitwise_equal(gb[0], gb[1]));
  }
  // A bf16 x (fc2 reading GELU's bf16 output): its bf16 ∂x is written by cuBLASLt too; ∂W stays
  // an FP32 GEMM (W is the f32 parameter).
  {
    const Tensor x0 = cast(cast(values({3, 37, 45}, 80).to(gpu()), DType::bf16), DType::f32);
    const Tensor w0 = values({67, 45}, 81).to(gpu()), g16 = cast(values({3, 37, 67}, 82).to(gpu()), DType::bf16);
    std::vector<Tensor> gx, gw;
    for (const bool lt : {true, false}) {
      ctx.set_lt_epilogues(lt);
      Tensor x = x0.clone(), w = w0.clone();
      x.set_requires_grad(true);
      w.set_requires_grad(true);
      const Tensor y = linear(cast(x, DType::bf16), w, Tensor(), DType::bf16, DType::bf16);
#if defined(URPE_CUDA_SIM)
      const size_t backward_from = urpe_sim::gemm_calls().size();
#endif
      y.backward(g16);
#if defined(URPE_CUDA_SIM)
      const std::vector<urpe_sim::GemmCall> calls = urpe_sim::gemm_calls();
      REQUIRE(calls.size() == backward_from + 2);
      CHECK(calls[backward_from].lt == lt);     // ∂x, bf16
      CHECK(!calls[backward_from + 1].lt);      // ∂W, f32 on cuBLAS
#endif
      gx.push_back(x.grad());
      gw.push_back(w.grad());
    }
    ctx.set_lt_epilogues(true);
#if defined(URPE_CUDA_SIM)
    CHECK(bitwise_equal(gx[0], gx[1]));
    CHECK(bitwise_equal(gw[0], gw[1]));
#else
    check_close(gx[0], gx[1], {1e-5, 0x1p-7}, "linear's bf16 ∂x, cuBLASLt against cuBLAS");
    check_close(gw[0], gw[1], {1e-4, 1e-4}, "linear's ∂W beside it");
#endif
  }
  // matmul's bf16 C (the attention's Q·Kᵀ and A·V under bf16): strided-batched on cuBLASLt, and a
  // shared B folded into one product, against the FP32 C rounded in a pass; then its backward,
  // whose bf16 ∂A and ∂B are written by cuBLASLt too (one GEMM each; a shared B with a transposed A
  // sums its batch items into an FP32 ∂B, on cuBLAS).
  for (int shared = 0; shared < 2; ++shared)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        CAPTURE(shared);
        CAPTURE(ta);
        CAPTURE(tb);
        // f32 leaves cast to bf16 (bf16 tensors are never leaves): their gradients are the bf16
        // ∂A, ∂B widened by the cast's backward.
        const Tensor a32 = cast(cast(values(ta ? Shape{2, 3, 21, 13} : Shape{2, 3, 13, 21}, 70).to(gpu()), DType::bf16),
                                DType::f32);
        const Shape b_shape = tb ? Shape{17, 21} : Shape{21, 17};
        Shape b_full{2, 3};
        b_full.insert(b_full.end(), b_shape.begin(), b_shape.end());
        const Tensor b32 = cast(cast(values(shared ? b_shape : b_full, 71).to(gpu()), DType::bf16), DType::f32);
        const Tensor g16 = cast(values({2, 3, 13, 17}, 72).to(gpu()), DType::bf16);
        std::vector<Tensor> out, ga, gb;
        for (const bool lt : {true, false}) {
          ctx.set_lt_epilogues(lt);
          Tensor a = a32.clone(), b = b32.clone();
          a.set_requires_grad(true);
          b.set_requires_grad(true);
          const Tensor a16 = cast(a, DType::bf16), b16 = cast(b, DType::bf16);
#if defined(URPE_CUDA_SIM)
          const size_t calls_before = urpe_sim::gemm_calls().size();
#endif
          out.push_back(matmul(a16, b16, ta, tb, DType::bf16));
#if defined(URPE_CUDA_SIM)
          REQUIRE(urpe_sim::gemm_calls().size() == calls_before + 1);
          CHECK(urpe_sim::gemm_calls().back().lt == lt);
          CHECK(urpe_sim::gemm_calls().back().batch == (shared && !ta ? 1 : 6));
          const size_t backward_from = urpe_sim::gemm_calls().size();
#endif
          out.back().backward(g16);
#if defined(URPE_CUDA_SIM)
          const std::vector<urpe_sim::GemmCall> calls = urpe_sim::gemm_calls();
          const bool summed_b = shared && ta;  // ∂B item by item, accumulated in FP32
          REQUIRE(calls.size() == backward_from + (summed_b ? 7 : 2));
          CHECK(calls[backward_from].lt == lt);  // ∂A
          if (!summed_b) CHECK(calls[backward_from + 1].lt == lt);
#endif
          ga.push_back(a.grad());
          gb.push_back(b.grad());
        }
        ctx.set_lt_epilogues(true);
        CHECK(out[0].dtype() == DType::bf16);
        for (int i = 0; i < 3; ++i) {
          const std::vector<Tensor>& pair = i == 0 ? out : i == 1 ? ga : gb;
#if defined(URPE_CUDA_SIM)
          CHECK(bitwise_equal(pair[0], pair[1]));
#else
          check_close(pair[0], pair[1], {1e-5, 0x1p-7}, "matmul with a bf16 C, cuBLASLt against cuBLAS");
#endif
        }
      }
  // bias_grad_cuda alone against sum_axis_cuda over the widened g (rows of one chunk and of many).
  for (const int64_t rows : {1, 37, 3001}) {
    CAPTURE(rows);
    const Tensor g16 = cast(values({rows, 7}, 69).to(gpu()), DType::bf16);
    Tensor want = poisoned({7}), got = poisoned({7});
    kernels::sum_axis_cuda(cast(g16, DType::f32), 1, rows, 7, 1.0f, want);
    kernels::bias_grad_cuda(gpu(), g16.data<bf16>(), rows, 7, got.f32());
    CHECK(bitwise_equal(got, want));
  }
#if defined(URPE_CUDA_SIM)
  // A layout cuBLASLt has no algorithm for: linear falls back to cuBLAS (and says so on stderr).
  {
    urpe_sim::set_lt_heuristics(false);
    const Tensor x = values({5, 9}, 64).to(gpu()), w = values({11, 9}, 65).to(gpu()), b = values({11}, 66).to(gpu());
    const size_t calls_before = urpe_sim::gemm_calls().size();
    const Tensor y = linear(x, w, b, DType::bf16, DType::bf16);
    urpe_sim::set_lt_heuristics(true);
    REQUIRE(urpe_sim::gemm_calls().size() == calls_before + 1);
    CHECK(!urpe_sim::gemm_calls().back().lt);
    check_close(y, linear(x.to(Device::cpu()), w.to(Device::cpu()), b.to(Device::cpu()), DType::bf16, DType::bf16),
                {1e-5, 0x1p-7}, "linear on the cuBLAS fallback");
    // ... remembered: the same layout asks no second time, even with algorithms available again.
    const size_t again = urpe_sim::gemm_calls().size();
    (void)linear(x, w, b, DType::bf16, DType::bf16);
    CHECK(!urpe_sim::gemm_calls()[again].lt);
  }
#endif
  // cuBLASLt's own argument checks reach urpe as errors, never as a silent wrong product.
  kernels::GemmArgs bad;
  bad.m = 4; bad.n = 5; bad.k = 3; bad.lda = 3; bad.ldb = 3; bad.ldc = 5; bad.trans_b = true;
  const Tensor a = values({4, 3}, 67).to(gpu()), bm = values({5, 3}, 68).to(gpu());
  bad.a = a.f32(); bad.b = bm.f32();
  Tensor c16 = Tensor::empty({4, 5}, DType::bf16, gpu());
  bad.c_bf16 = c16.data<bf16>();
  CHECK_THROWS_WITH_AS(kernels::gemm_cuda(gpu(), bad), doctest::Contains("bf16 C needs bf16 operands"), Error);
}
#endif

// ---- bf16 (ops/cast.h; matmul's bf16 operands are the op table's bf16 columns) ----

TEST_CASE("parity: cast to bf16 on the device against hand-derived bit patterns, and back exactly") {
  std::vector<float> v;
  for (const test::Bf16Case& c : test::bf16_cases()) {
    float f;
    std::memcpy(&f, &c.f32_bits, 4);
    v.push_back(f);
  }
  const Tensor y = cast(Tensor::from_vector(v, {int64_t(v.size())}).to(gpu()), DType::bf16);
  REQUIRE(y.device().is_cuda());
  const std::vector<float> got = y.to_vector_f32();
  const std::vector<float> back = cast(y, DType::f32).to_vector_f32();
  for (size_t k = 0; k < v.size(); ++k) {
    INFO(test::bf16_cases()[k].what);
    uint32_t bits, back_bits;
    std::memcpy(&bits, &got[k], 4);
    std::memcpy(&back_bits, &back[k], 4);
    CHECK(bits == uint32_t(test::bf16_cases()[k].bf16_bits) << 16);
    CHECK(back_bits == bits);
  }
  // fill and zeros of a bf16 tensor on the device.
  Tensor f = Tensor::empty({1000}, DType::bf16, gpu());
  f.fill(1.00390625f);  // 1 + 2⁻⁸, a tie: 1
  CHECK(f.to_vector_f32() == std::vector<float>(1000, 1.0f));
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
  // bf16 (2-byte words; the accumulation in FP32, rounded once): the same on both devices, since
  // both add the same two rounded values and round one FP32 sum.
  for (int accumulate = 0; accumulate < 2; ++accumulate) {
    Tensor src = cast(values({3, 37, 67}, 64), DType::bf16), dst0 = cast(values({3, 20, 67}, 65), DType::bf16);
    Tensor want = dst0.clone(), got = dst0.to(gpu());
    kernels::copy_window_cpu(src, 37, 5, want, 20, 3, 3, 9, 67, accumulate);
    kernels::copy_window_cuda(src.to(gpu()), 37, 5, got, 20, 3, 3, 9, 67, accumulate);
    REQUIRE(got.dtype() == DType::bf16);
    CHECK(got.to_vector_f32() == want.to_vector_f32());
    if (accumulate) CHECK(want.to_vector_f32() != dst0.to_vector_f32());
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

// The padding row's gradient is exactly zero on CUDA (the table's rows compare it within their
// bound), on the chunked path (V·D ≤ 12,288) and the sorted segments (the padding id frequent
// enough to span several segments), and the public op range-checks CUDA ids before any kernel
// runs. While that check is pending the kernels run on the bad ids: the segments stay in bounds
// (the simulator's memcheck) and leave the bad ids out of every row.
TEST_CASE("embedding on CUDA: the padding row's gradient is exactly zero, bad ids are errors") {
  const int64_t V = 50, D = 67;
  Tensor table = values({V, D}, 70);
  for (const int64_t rows : {V, int64_t(400)}) {
    CAPTURE(rows);
    std::vector<int32_t> v = random_ids({3, 37}, static_cast<int32_t>(rows), 71).to_vector_i32();  // 111 ids
    for (size_t k = 0; k < v.size(); k += 2) v[k] = v[0];  // the first id in over half: the padding row
    const int32_t pad = v[0];
    const Tensor ids = Tensor::from_vector(v, {3, 37});
    Tensor g = values({3, 37, D}, 72), pgot = poisoned({rows, D});
    kernels::embedding_backward_cuda(ids.to(gpu()), g.to(gpu()), pgot, pad);
    const std::vector<float> prow = pgot.to(Device::cpu()).to_vector_f32();
    for (int64_t d = 0; d < D; ++d) CHECK(prow[pad * D + d] == 0.0f);
  }
  {
    const int64_t rows = 400;  // V·D past one tile: the segments
    std::vector<int32_t> v = random_ids({111}, static_cast<int32_t>(rows), 73).to_vector_i32();
    std::vector<int32_t> kept = v;
    for (size_t k = 5; k < v.size(); k += 7) {
      v[k] = k % 2 ? static_cast<int32_t>(rows) : -3;  // out of range on both sides
      kept[k] = 0;                                     // the same slots, their g rows zeroed below
    }
    Tensor g = values({111, D}, 74);
    std::vector<float> gv = g.to_vector_f32();
    for (size_t k = 5; k < v.size(); k += 7) std::fill(gv.begin() + k * D, gv.begin() + (k + 1) * D, 0.0f);
    Tensor got = poisoned({rows, D}), want = Tensor::empty({rows, D});
    kernels::embedding_backward_cuda(Tensor::from_vector(v, {111}, gpu()), g.to(gpu()), got);
    kernels::embedding_backward_cpu(Tensor::from_vector(kept, {111}), Tensor::from_vector(gv, {111, D}), want);
    check_close(got.to(Device::cpu()), want, {1e-6, 1e-6}, "embedding backward with bad ids left out");
  }

  Tensor bad = Tensor::from_vector(std::vector<int32_t>{1, 2, static_cast<int32_t>(V), 3}, {4}, gpu());
  // Checked on the device (ops/index_check.h): the error comes at the next read, in the CPU's words.
  CHECK_THROWS_WITH_AS(embedding(table.to(gpu()), bad).to_vector_f32(),
                       doctest::Contains("embedding: id value 50 at flat position 2 is out of range [0, 50)"), Error);
  Tensor negative = Tensor::from_vector(std::vector<int32_t>{1, -1}, {2}, gpu());
  const Tensor out = embedding(table.to(gpu()), negative);  // no error yet: nothing was read
  CHECK_THROWS_WITH_AS(cuda::synchronize(gpu().context()),
                       doctest::Contains("embedding: id value -1 at flat position 1"), Error);
  CHECK(out.to_vector_f32().size() == 2 * D);  // reported once; the output stayed in bounds
}

// The device half of the index check: the count of values outside [0, size) (the ignore value
// aside) against the host's count, over sizes with partial blocks and many blocks.
TEST_CASE("index range check on CUDA: the device's count of bad values equals the host's") {
  for (const int64_t n : {int64_t(1), int64_t(255), int64_t(257), int64_t(100003)}) {
    for (const bool has_ignore : {false, true}) {
      CAPTURE(n);
      CAPTURE(has_ignore);
      std::vector<int32_t> v = random_ids({n}, 1000, 76).to_vector_i32();
      for (int64_t k = 0; k < n; k += 97) v[static_cast<size_t>(k)] = -100;  // ignore, or bad
      if (n > 2) v[static_cast<size_t>(n / 2)] = 1000;                         // one past the end
      int64_t want = 0;
      for (int32_t x : v) want += !(has_ignore && x == -100) && (x < 0 || x >= 1000);
      const Tensor ids = Tensor::from_vector(v, {n}, gpu());
      int64_t seen = -1;
      int64_t* slot = cuda::defer_check(gpu().context(), [&](int64_t count) { seen = count; });
      kernels::count_outside_range_cuda(ids, 1000, has_ignore, -100, slot);
      cuda::synchronize(gpu().context());
      CHECK(seen == (want > 0 ? want : -1));  // a raise is called only for a nonzero count
    }
  }
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


TEST_CASE("toeplitz_map built on the device equals the CPU's") {
  check_equal_i32(toeplitz_map(29, 45, gpu()), toeplitz_map(29, 45), "toeplitz_map");
}

// ---- softmax ----

// The table's masked rows compare CUDA with the CPU within a bound; here the fully masked row must
// be exactly zero, forward and backward, and a NaN must not pass for a masked row.
TEST_CASE("softmax and log_softmax kernels on CUDA: fully masked rows exactly zero, NaN propagates") {
  for (int64_t n : {67, 1, 1000}) {
    CAPTURE(n);
    const int64_t rows = 111;
    Tensor x = values({rows, n}, 110, -5.0f, 5.0f);
    float* p = x.f32();
    for (int64_t k = 0; k < rows * n; k += 7) p[k] = -INFINITY;  // masked entries
    for (int64_t j = 0; j < n; ++j) p[5 * n + j] = -INFINITY;  // a fully masked row
    for (int log = 0; log < 2; ++log) {
      CAPTURE(log);
      Tensor y = poisoned(x.shape()), gx = poisoned(x.shape());
      const Tensor g = values(x.shape(), 111).to(gpu());
      if (log) {
        kernels::log_softmax_forward_cuda(x.to(gpu()), y);
        kernels::log_softmax_backward_cuda(y, g, gx);
      } else {
        kernels::softmax_forward_cuda(x.to(gpu()), y);
        kernels::softmax_backward_cuda(y, g, gx);
      }
      const std::vector<float> yv = y.to_vector_f32(), gv = gx.to_vector_f32();
      for (int64_t j = 0; j < n; ++j) CHECK(yv[5 * n + j] == 0.0f);  // fully masked → zeros
      for (int64_t j = 0; j < n; ++j) CHECK(gv[5 * n + j] == 0.0f);  // and a zero gradient
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
}

// ---- losses ----

// The loss and gradients of linear_cross_entropy are op-table rows; here its argmax, which the
// accuracy reads: the same index as the CPU's on every row, ties (two equal rows of W) to the
// smaller class, over chunks of 7 rows of 300 classes (more than one warp's stride).
TEST_CASE("parity: linear_cross_entropy's argmax on CUDA, ties to the smaller class") {
  const int64_t N = 40, d = 9, C = 300;
  std::vector<float> w = values({C, d}, 130).to_vector_f32();
  for (int64_t k = 0; k < d; ++k) w[size_t(250 * d + k)] = w[size_t(17 * d + k)];  // class 250 = class 17
  const Tensor weight = Tensor::from_vector(w, {C, d});
  std::vector<float> h = values({N, d}, 131, -2.0f, 2.0f).to_vector_f32();
  for (int64_t k = 0; k < d; ++k) h[size_t(5 * d + k)] = 3.0f * w[size_t(17 * d + k)];  // row 5's top: 17 = 250
  const Tensor hidden = Tensor::from_vector(h, {N, d}), bias = values({C}, 132, -0.1f, 0.1f);
  std::vector<float> b = bias.to_vector_f32();
  b[250] = b[17];
  const Tensor tied_bias = Tensor::from_vector(b, {C});
  const Tensor targets = random_ids({N}, static_cast<int32_t>(C), 133);
  Tensor best_cpu, best_gpu;
  const Tensor loss = linear_cross_entropy(hidden, weight, tied_bias, targets, -100, &best_cpu, 7);
  const Tensor loss_d = linear_cross_entropy(hidden.to(gpu()), weight.to(gpu()), tied_bias.to(gpu()), targets.to(gpu()),
                                             -100, &best_gpu, 7);
  check_close(loss_d, loss, {1e-5, 1e-5}, "linear_cross_entropy loss");
  const std::vector<int32_t> want = best_cpu.to_vector_i32(), got = best_gpu.to_vector_i32();
  CHECK(got == want);
  CHECK(want[5] == 17);
  CHECK(want == argmax_last(linear(hidden, weight, tied_bias)).to_vector_i32());
}

TEST_CASE("parity: cross_entropy kernels (count, log-sum-exp), ignored rows, bad targets") {
  const int64_t N = 45, C = 67;
  const int32_t ignore = -100;
  Tensor logits = values({N, C}, 120, -4.0f, 4.0f);
  std::vector<int32_t> t = random_ids({N}, static_cast<int32_t>(C), 121).to_vector_i32();
  for (int64_t i = 0; i < N; i += 4) t[i] = ignore;
  Tensor targets = Tensor::from_vector(t, {N});
  Tensor loss = Tensor::empty({}), lse = Tensor::empty({N}), count = Tensor::empty({}, DType::i32);
  count.fill(-1.0f);
  kernels::cross_entropy_forward_cpu(logits, targets, ignore, loss, lse, count);
  Tensor loss_d = poisoned({}), lse_d = poisoned({N});
  Tensor count_d = Tensor::empty({}, DType::i32, gpu());  // the count stays on the device
  count_d.fill(-1.0f);
  const Tensor logits_d = logits.to(gpu()), targets_d = targets.to(gpu());
  kernels::cross_entropy_forward_cuda(logits_d, targets_d, ignore, loss_d, lse_d, count_d);
  CHECK(count_d.to_vector_i32() == count.to_vector_i32());
  CHECK(count.to_vector_i32()[0] == N - (N + 3) / 4);
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


  // Every row ignored: loss 0, count 0, zero gradient.
  Tensor ai = Tensor::from_vector(std::vector<int32_t>(N, ignore), {N}, gpu());
  Tensor loss0 = poisoned({}), lse0 = poisoned({N}), g0 = poisoned({N, C});
  Tensor count0 = Tensor::empty({}, DType::i32, gpu());
  count0.fill(-1.0f);
  kernels::cross_entropy_forward_cuda(logits_d, ai, ignore, loss0, lse0, count0);
  CHECK(count0.to_vector_i32()[0] == 0);
  CHECK(loss0.item() == 0.0f);
  kernels::cross_entropy_backward_cuda(logits_d, ai, ignore, lse0, count0, grad_loss.to(gpu()), g0);
  CHECK(g0.to_vector_f32() == std::vector<float>(N * C, 0.0f));

  // A CUDA target outside [0, C) that is not ignore_index is an error naming it (public op).
  std::vector<int32_t> tb = t;
  tb[7] = static_cast<int32_t>(C) + 3;
  Tensor bad = Tensor::from_vector(tb, {N}, gpu());
  // Checked on the device: the error comes at the next read (the loss's), with the CPU's words.
  CHECK_THROWS_WITH_AS(cross_entropy(logits_d, bad, ignore).item(),
                       doctest::Contains("cross_entropy: target 70 at row 7 is out of range [0, 67)"), Error);
  // A good call after it reads normally: the failed check was reported once.
  CHECK(std::isfinite(cross_entropy(logits_d, targets_d, ignore).item()));
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

TEST_CASE("parity: URPE attention core kernels (P, A, dS, dB, dC), the diagonal path, the same bits twice") {
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

TEST_CASE("parity: fused URPE attention kernels (O, L, dQ, dK, dV, dB, dC), the same bits twice") {
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
  }
}

TEST_CASE("fused attention on CUDA: head dims past the shared tiles are one clear error") {
  const Tensor q = values({1, 1, 4, 129}, 170).to(gpu());
  CHECK_THROWS_WITH_AS(urpe_flash_attention(q, q, q, UrpeAttentionParams{}),
                       doctest::Contains("head dims up to 128"), Error);
}

// ---- optimizer kernels ----

// Adam, global_grad_norm and scale_grads are rows of the op table; here the double sum of
// squares, undefined gradients skipped, and clip_grad_norm (the norm, then scale_grads).
TEST_CASE("parity: sum of squares in double, undefined gradients skipped, clip_grad_norm") {
  const std::vector<Shape> shapes{{67}, {37, 45}, {10007}, {3, 5, 7}};
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
  const float norm_cpu = clip_grad_norm(grads, 0.5f), norm_gpu = clip_grad_norm(grads_d, 0.5f);
  CHECK(norm_gpu == doctest::Approx(norm_cpu).epsilon(1e-6));
  for (size_t k = 0; k + 1 < grads.size(); ++k) check_close(grads_d[k], grads[k], {1e-7, 1e-5}, "clip_grad_norm");
}

// The clip that stays on the device (Adam's): the norm written into a device scalar and the factor
// computed there, against the CPU's clip_grad_norm_on_device; clipped and left alone; every
// gradient element checked, and the table cache reused by the second call (no upload).
TEST_CASE("parity: clip_grad_norm_on_device, the norm kept on the GPU") {
  for (const float max_norm : {0.5f, 1e4f}) {
    INFO("max_norm " << max_norm);
    std::vector<Tensor> grads, grads_d;
    uint64_t seed = 180;
    for (const Shape& s : std::vector<Shape>{{67}, {37, 45}, {10007}}) {
      grads.push_back(values(s, seed++));
      grads_d.push_back(grads.back().to(gpu()));
    }
    grads_d.insert(grads_d.begin() + 1, Tensor());
    grads.insert(grads.begin() + 1, Tensor());
    const Tensor norm_cpu = clip_grad_norm_on_device(grads, max_norm);
    const Tensor norm_gpu = clip_grad_norm_on_device(grads_d, max_norm);
    CHECK(norm_gpu.device().is_cuda());
    CHECK(norm_gpu.item() == doctest::Approx(norm_cpu.item()).epsilon(1e-6));
    for (size_t k = 0; k < grads.size(); ++k)
      if (grads[k].defined()) check_close(grads_d[k], grads[k], {1e-7, 1e-5}, "clip_grad_norm_on_device");
    const uint64_t uploads = cuda::table_uploads(gpu().context());
    clip_grad_norm_on_device(grads_d, max_norm);
    CHECK(cuda::table_uploads(gpu().context()) == uploads);  // the same tensors: the tables are cached
  }
}

// ---- the op table (tests/op_table.h): every row, CPU against CUDA ----

TEST_CASE("parity: the op table, every row on CUDA against the CPU (output, every gradient, poisoned)") {
  int ran = 0;
  for (const test::OpRow& row : test::op_table()) {
    INFO(row.name);
    const test::CheckResult r = test::parity_row(row, gpu());
    ran += r.ran;
    CHECK_MESSAGE(r.ok, r.message);
  }
  MESSAGE(ran << " rows compared on CUDA");
  CHECK(ran > 100);
}

TEST_CASE("parity: the op table poisons what an op allocates; the toy op that skips a row fails") {
  // What the table's parity relies on: NaN-filled free blocks are what the next op allocates.
  test::poison_free_blocks({{3, 37, 5}}, gpu());
  const std::vector<float> fresh = Tensor::empty({3, 37, 5}, DType::f32, gpu()).to_vector_f32();
  CHECK(std::all_of(fresh.begin(), fresh.end(), [](float e) { return std::isnan(e); }));

  CHECK(test::parity_row(test::toy_square_row(test::ToyMutant::none), gpu()).ok);
  // The mutant whose CUDA path never writes the last row (5 elements) of its output.
  const test::CheckResult r = test::parity_row(test::toy_square_row(test::ToyMutant::cuda_skips_last_row), gpu());
  CHECK_FALSE(r.ok);
  CHECK(r.message.find("forward: 5 of 555 elements out of bounds") != std::string::npos);
}

#endif  // URPE_WITH_CUDA
