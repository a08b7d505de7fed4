// The CUDA table of `urpe bench kernels --device cuda[:N] [--repeats R] [--tf32] [--sizes S]`.
//
// First the device and its ceilings, measured now on the same GPU (app/bench/cuda_peaks.h): the copy
// bandwidth of a 1 GiB device-to-device copy (bytes read + written) and the cuBLAS sgemm rate of
// an 8192³ product (FP32, and TF32 tensor cores). Then, at the sizes of the paper's Table 5
// (batch 32, 12 heads, head dim 64, d_model 768, d_ff 3072) for N = 128, 256, 512, one row per
// kernel: the attention GEMMs and a projection (cuBLAS alone, then urpe's public op around it),
// the URPE attention core forward and backward (plain softmax mode and Toeplitz B, C), the softmax
// op, layer norm, GELU; then cross-entropy and one Adam step over the 12 encoder layers of that
// model (85,054,464 parameters in 192 tensors). `--sizes smoke` runs the same table for a tiny
// model (BenchSizes below), to check that it runs; tests/test_cuda_bench.cpp does so.
//
// Every row is timed by time_cuda: CUDA events on the context's stream, the L2 rewritten before
// each run (outside the timed region), 5 warm-up runs, median of R runs (default 50). Kernels are
// called directly on preallocated outputs (kernels::*_cuda), inside an NVTX range named after the
// row, so a row times the kernel(s), not allocation; the "op" rows time the public function. A
// row's rate is its minimal traffic (app/bench/kernel_traffic.h) or its flops over the median time,
// and its % is of the measured ceiling it names (copy, sgemm, tf32) or, for an op row, of the
// cuBLAS-alone row above it. The targets are the issue's: URPE core, layer norm and Adam ≥ 70% of
// the copy bandwidth; a GEMM-bound op within 10% of cuBLAS alone (≥ 90% of its rate).
// All inputs are random (never zeros; drawn as tiles and repeated, see random()); nothing here is
// checked for correctness: that is tests/test_cuda_parity.cpp.
#include "app/bench/bench_kernels.h"

#include "tensor/error.h"

#if defined(URPE_WITH_CUDA)
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "autograd/node.h"
#include "app/bench/cuda_peaks.h"
#include "app/bench/kernel_traffic.h"
#include "ops/activation.h"
#include "ops/dispatch.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/optimizer_kernels.h"
#include "ops/softmax.h"
#include "ops/urpe_attention.h"
#include "tensor/cuda_backend.h"
#include "tensor/cuda_context.h"
#include "tensor/tensor.h"
#endif

namespace urpe::bench {

#if defined(URPE_WITH_CUDA)

namespace {

// The model whose kernels are timed (--sizes). "table5": the paper's Table 5 model (BERT-base
// shapes), its 12 layers for the Adam row, and cross-entropy over the tokens of one batch at
// N = 128 with a 32K vocabulary. "smoke": a tiny model (odd N, several warps per row) that runs
// the whole table in seconds anywhere, the CUDA simulator included: it checks that the benchmark
// runs, and its numbers mean nothing.
struct BenchSizes {
  int64_t batch, heads, head_dim, model, ffn, layers;
  std::vector<int64_t> seq_lens;
  int64_t loss_rows, vocab;
  size_t copy_bytes;  // the copy-bandwidth reference
  int sgemm_n;        // the sgemm reference: n×n×n
};

BenchSizes sizes_named(const std::string& name) {
  if (name == "table5") return {32, 12, 64, 768, 3072, 12, {128, 256, 512}, 32 * 128, 32768,
                                size_t(1) << 30, 8192};
  if (name == "smoke") return {2, 2, 8, 24, 40, 2, {17, 40}, 2 * 17, 101, size_t(1) << 20, 64};
  URPE_FAIL("option --sizes: expected table5 or smoke, got '" << name << "'");
}

constexpr int kWarmup = 5;
constexpr double kBandwidthTarget = 70, kOpTarget = 90;  // percent
constexpr size_t kKernelWidth = 42, kShapeWidth = 24;

enum class Unit { bytes, flops };

// What a row's percentage is taken of.
struct Reference {
  const char* name;  // "copy", "sgemm", "tf32" or "cuBLAS" (the cuBLAS-alone row above)
  double rate;       // GB/s for bytes, TFLOP/s for flops
};

// "384 × 128×128×64": batch × M×N×K of a GEMM.
std::string gemm_shape(int64_t batch, int64_t m, int64_t n, int64_t k) {
  return (batch > 1 ? std::to_string(batch) + " × " : std::string()) + dims({m, n, k});
}

class CudaKernelBench {
 public:
  CudaKernelBench(const Device& device, int runs, bool tf32, BenchSizes sizes)
      : device_(device), context_(device.context()), runs_(runs), tf32_(tf32),
        z_(std::move(sizes)) {}

  int run() {
    autograd::NoGrad no_grad;
    peaks_ = measure_device_peaks(context_, z_.copy_bytes, z_.sgemm_n);  // restores TF32 flag
    cuda::set_tf32(context_, tf32_);
    print_header();
    for (int64_t n : z_.seq_lens) {
      std::printf("\n-- N = %lld: batch %lld, %lld heads, head dim %lld, d_model %lld --\n",
                  static_cast<long long>(n), static_cast<long long>(z_.batch),
                  static_cast<long long>(z_.heads), static_cast<long long>(z_.head_dim),
                  static_cast<long long>(z_.model));
      gemms(n);
      attention_core(n);
      row_ops(n);
    }
    std::printf("\n-- once --\n");
    cross_entropy_rows();
    adam_row();
    print_footer();
    return 0;
  }

 private:
  // ---- helpers ----

  // U[low, high) values, non-zero and irregular: one host-drawn tile per range, repeated on the
  // device from a different offset for every tensor (fill_by_tiling), so setting up gigabytes of
  // inputs costs copies, not minutes of host random numbers.
  Tensor random(const Shape& shape, float low, float high) {
    auto it = tiles_.find({low, high});
    if (it == tiles_.end()) {
      Rng rng(seed_++);
      it = tiles_.emplace(std::make_pair(low, high),
                          Tensor::uniform({kTimingTile}, low, high, rng, device_)).first;
    }
    Tensor t = empty(shape);
    fill_by_tiling(t, it->second, static_cast<int64_t>(seed_++ % kTimingTile) * 104729);
    return t;
  }
  Tensor empty(const Shape& shape) const { return Tensor::empty(shape, DType::f32, device_); }

  // Times fn (kernels queued on the context's stream) inside an NVTX range named `range`.
  CudaTiming time(const char* range, const std::function<void()>& fn) {
    return time_cuda(
        context_,
        [&] {
          NvtxRange nvtx(range);
          fn();
        },
        runs_, kWarmup, true);
  }

  Reference copy_reference() const { return {"copy", peaks_.copy_gbs}; }
  Reference gemm_reference() const {
    return tf32_ ? Reference{"tf32", peaks_.tf32_tflops} : Reference{"sgemm", peaks_.sgemm_tflops};
  }

  // Prints one row and returns its rate (GB/s or TFLOP/s); target_percent 0 = no target.
  double row(const std::string& kernel, const std::string& shape, const CudaTiming& t, Unit unit,
             double work, const Reference& reference, double target_percent = 0) {
    const double seconds = t.median_ms * 1e-3;
    const bool bytes = unit == Unit::bytes;
    const double rate = work / seconds / (bytes ? 1e9 : 1e12);
    const double percent = reference.rate > 0 ? 100.0 * rate / reference.rate : 0.0;
    char work_text[32], rate_text[32], percent_text[32], target_text[48] = "";
    if (bytes) std::snprintf(work_text, sizeof work_text, "%.1f MB", work / 1e6);
    else std::snprintf(work_text, sizeof work_text, "%.1f GFLOP", work / 1e9);
    std::snprintf(rate_text, sizeof rate_text, "%.1f %s", rate, bytes ? "GB/s" : "TFLOP/s");
    std::snprintf(percent_text, sizeof percent_text, "%.0f%% %s", percent, reference.name);
    if (target_percent > 0) {
      const bool met = percent >= target_percent;
      ++targets_;
      met_ += met;
      std::snprintf(target_text, sizeof target_text, "≥%.0f%%: %s", target_percent, met ? "met" : "MISSED");
    }
    std::printf("%s%s%9.3f %9.3f %13s %15s %13s  %s\n", pad(kernel, kKernelWidth).c_str(),
                pad(shape, kShapeWidth).c_str(), t.median_ms, t.min_ms, work_text, rate_text,
                percent_text, target_text);
    std::fflush(stdout);
    return rate;
  }

  void print_header() const {
    const cudaDeviceProp& p = context_->properties();
    std::printf("urpe bench kernels — %s, %d SMs, L2 %.0f MiB, %.1f GiB\n",
                cuda::device_name(context_).c_str(), p.multiProcessorCount,
                p.l2CacheSize / 1048576.0, p.totalGlobalMem / 1073741824.0);
    std::printf("timing: CUDA events on the context's stream, L2 flushed before every run, "
                "%d warm-up + %d timed runs per row, median (and min) reported\n",
                kWarmup, runs_);
    std::printf("TF32 tensor-core GEMMs: %s\n",
                tf32_ ? "on (--tf32): GEMM rows are a % of the measured TF32 rate"
                      : "off (full FP32; --tf32 turns them on)");
    std::printf("measured peaks: copy %.1f GB/s (%.0f MiB device to device, read + write); "
                "cuBLAS sgemm %d³ %.1f TFLOP/s FP32, %.1f TFLOP/s TF32\n",
                peaks_.copy_gbs, z_.copy_bytes / 1048576.0, z_.sgemm_n, peaks_.sgemm_tflops,
                peaks_.tf32_tflops);
    std::printf("\n%s%s%9s %9s %13s %15s %13s  %s\n", pad("kernel", kKernelWidth).c_str(),
                pad("shape", kShapeWidth).c_str(), "median ms", "min ms", "min traffic", "rate",
                "% of", "target");
    std::printf("%s\n", std::string(kKernelWidth + kShapeWidth + 80, '-').c_str());
  }

  void print_footer() const {
    std::printf(
        "\ntargets met: %d of %d\n"
        "min traffic: bytes each kernel must move (inputs read once, outputs written once, 4 B per\n"
        "  f32/i32), E = B·H·N²: URPE core fwd 12·E (read S, write P, A) and bwd 12·E (read G, P,\n"
        "  write ∂S), + the (N,N) map and the tables with Toeplitz B, C; softmax 8 / 12 B per element;\n"
        "  layer norm 8·R·D / 12·R·D (+ γ, β, μ, r); GELU 8 / 12 B per element; cross-entropy\n"
        "  4·R·C / 8·R·C (+ targets, lse); Adam 28 B per parameter (read θ, g, m, v; write θ, m, v).\n"
        "GEMM work: 2·M·N·K flops per batch item. rate = work / median time.\n"
        "%% of: copy / sgemm / tf32 = the peaks measured above; cuBLAS = the cuBLAS-alone row above.\n",
        met_, targets_);
  }

  // ---- GEMMs: Q·Kᵀ, P·V (strided-batched) and a d_model projection ----

  void gemms(int64_t n) {
    const int64_t bh = z_.batch * z_.heads;
    const Shape head_shape{z_.batch, z_.heads, n, z_.head_dim};
    // q, k, v, o: (B, H, N, dh); s: (B, H, N, N), which then serves as P for P·V
    Tensor q = random(head_shape, -1, 1), k = random(head_shape, -1, 1), v = random(head_shape, -1, 1);
    Tensor s = empty({z_.batch, z_.heads, n, n}), o = empty(head_shape);

    kernels::GemmArgs qk;  // S[i] = Q[i]·K[i]ᵀ: (N, dh)·(dh, N)
    qk.trans_b = true;
    qk.m = n; qk.n = n; qk.k = z_.head_dim;
    qk.a = q.f32(); qk.lda = z_.head_dim; qk.stride_a = n * z_.head_dim;
    qk.b = k.f32(); qk.ldb = z_.head_dim; qk.stride_b = n * z_.head_dim;
    qk.c = s.f32(); qk.ldc = n;        qk.stride_c = n * n;
    qk.batch = bh;
    const double qk_flops = traffic::gemm_flops(bh, n, n, z_.head_dim);
    const std::string qk_shape = gemm_shape(bh, n, n, z_.head_dim);
    const double qk_rate = row("Q·Kᵀ cuBLAS strided-batched", qk_shape,
                               time("gemm Q·Kᵀ", [&] { kernels::gemm_cuda(device_, qk); }),
                               Unit::flops, qk_flops, gemm_reference());
    row("  matmul(Q, K, ᵀ) op", qk_shape, time("matmul Q·Kᵀ", [&] { matmul(q, k, false, true); }),
        Unit::flops, qk_flops, {"cuBLAS", qk_rate}, kOpTarget);

    kernels::GemmArgs pv;  // O[i] = P[i]·V[i]: (N, N)·(N, dh)
    pv.m = n; pv.n = z_.head_dim; pv.k = n;
    pv.a = s.f32(); pv.lda = n;        pv.stride_a = n * n;
    pv.b = v.f32(); pv.ldb = z_.head_dim; pv.stride_b = n * z_.head_dim;
    pv.c = o.f32(); pv.ldc = z_.head_dim; pv.stride_c = n * z_.head_dim;
    pv.batch = bh;
    const double pv_flops = traffic::gemm_flops(bh, n, z_.head_dim, n);
    const std::string pv_shape = gemm_shape(bh, n, z_.head_dim, n);
    const double pv_rate = row("P·V cuBLAS strided-batched", pv_shape,
                               time("gemm P·V", [&] { kernels::gemm_cuda(device_, pv); }),
                               Unit::flops, pv_flops, gemm_reference());
    row("  matmul(P, V) op", pv_shape, time("matmul P·V", [&] { matmul(s, v); }), Unit::flops,
        pv_flops, {"cuBLAS", pv_rate}, kOpTarget);

    // x, y: (B·N, d_model); w: (d_model, d_model) stored (out, in); bias: (d_model,)
    const int64_t rows = z_.batch * n;
    Tensor x = random({rows, z_.model}, -1, 1), w = random({z_.model, z_.model}, -0.05f, 0.05f);
    Tensor bias = random({z_.model}, -0.1f, 0.1f), y = empty({rows, z_.model});
    kernels::GemmArgs proj;  // Y = X·Wᵀ
    proj.trans_b = true;
    proj.m = rows; proj.n = z_.model; proj.k = z_.model;
    proj.a = x.f32(); proj.lda = z_.model;
    proj.b = w.f32(); proj.ldb = z_.model;
    proj.c = y.f32(); proj.ldc = z_.model;
    const double proj_flops = traffic::gemm_flops(1, rows, z_.model, z_.model);
    const std::string proj_shape = gemm_shape(1, rows, z_.model, z_.model);
    const double proj_rate = row("projection X·Wᵀ cuBLAS", proj_shape,
                                 time("gemm projection", [&] { kernels::gemm_cuda(device_, proj); }),
                                 Unit::flops, proj_flops, gemm_reference());
    row("  linear(X, W, b) op (GEMM + bias)", proj_shape,
        time("linear projection", [&] { linear(x, w, bias); }), Unit::flops, proj_flops,
        {"cuBLAS", proj_rate}, kOpTarget);
  }

  // ---- the URPE attention core, its plain-softmax mode, and the softmax op ----

  void attention_core(int64_t n) {
    const Shape shape{z_.batch, z_.heads, n, n};
    const std::string s = dims({z_.batch, z_.heads, n, n});
    const int64_t buckets = 2 * n - 1;
    // scores, grad: (B, H, N, N) random; probs, out, grad_scores: (B, H, N, N) outputs
    Tensor scores = random(shape, -2, 2), grad = random(shape, -1, 1);
    Tensor probs = empty(shape), out = empty(shape), grad_scores = empty(shape);

    UrpeAttentionParams plain;  // no B, C ≡ 1: the softmax the URPE core generalises
    plain.scale = 1.0f / std::sqrt(static_cast<float>(z_.head_dim));
    UrpeAttentionParams urpe = plain;
    urpe.bias_map = toeplitz_map(n, n, device_);  // (N, N) i32, shared by B and C
    urpe.c_map = urpe.bias_map;
    urpe.bias_table = random({z_.heads, buckets}, -1, 1);  // (H, 2N − 1)
    urpe.c_table = random({z_.heads, buckets}, 0.5f, 1.5f);
    Tensor grad_bias = empty({z_.heads, buckets}), grad_c = empty({z_.heads, buckets});

    auto forward = [&](const char* range, const UrpeAttentionParams& p) {
      return time(range, [&] { kernels::urpe_attention_forward_cuda(scores, p, probs, out); });
    };
    auto backward = [&](const char* range, const UrpeAttentionParams& p, Tensor* gb, Tensor* gc) {
      return time(range, [&] {
        kernels::urpe_attention_backward_cuda(grad, probs, p, grad_scores, gb, gc);
      });
    };
    // Each backward reads the P its own forward mode left in `probs`.
    const Reference copy = copy_reference();
    row("URPE core fwd: softmax mode (no B, C ≡ 1)", s, forward("urpe core fwd plain", plain),
        Unit::bytes, traffic::urpe_forward_bytes(z_.batch, z_.heads, n, false), copy, kBandwidthTarget);
    row("URPE core bwd: softmax mode (∂S)", s,
        backward("urpe core bwd plain", plain, nullptr, nullptr), Unit::bytes,
        traffic::urpe_backward_bytes(z_.batch, z_.heads, n, false), copy, kBandwidthTarget);
    row("URPE core fwd: Toeplitz B, C", s, forward("urpe core fwd toeplitz", urpe), Unit::bytes,
        traffic::urpe_forward_bytes(z_.batch, z_.heads, n, true), copy, kBandwidthTarget);
    row("  urpe_attention() op (checks + alloc)", s,
        time("urpe_attention op", [&] { urpe_attention(scores, urpe); }), Unit::bytes,
        traffic::urpe_forward_bytes(z_.batch, z_.heads, n, true), copy);
    row("URPE core bwd: Toeplitz (∂S, ∂B, ∂C)", s,
        backward("urpe core bwd toeplitz", urpe, &grad_bias, &grad_c), Unit::bytes,
        traffic::urpe_backward_bytes(z_.batch, z_.heads, n, true), copy, kBandwidthTarget);

    // ops/softmax over the same rows: (B·H·N, N)
    const int64_t rows = z_.batch * z_.heads * n;
    row("softmax fwd (ops/softmax)", s,
        time("softmax fwd", [&] { kernels::softmax_forward_cuda(scores, probs); }), Unit::bytes,
        traffic::softmax_forward_bytes(rows, n), copy);
    row("softmax bwd (ops/softmax)", s,
        time("softmax bwd", [&] { kernels::softmax_backward_cuda(probs, grad, grad_scores); }),
        Unit::bytes, traffic::softmax_backward_bytes(rows, n), copy);
  }

  // ---- layer norm over (B·N, d_model), GELU over (B·N, d_ff) ----

  void row_ops(int64_t n) {
    const int64_t rows = z_.batch * n;
    const Reference copy = copy_reference();
    {
      // x, y, grad_y, grad_x: (B·N, D); gamma, beta, grads: (D,); mean, rstd: (B·N,)
      Tensor x = random({rows, z_.model}, -2, 2), grad_y = random({rows, z_.model}, -1, 1);
      Tensor gamma = random({z_.model}, 0.5f, 1.5f), beta = random({z_.model}, -0.5f, 0.5f);
      Tensor y = empty({rows, z_.model}), mean = empty({rows}), rstd = empty({rows});
      Tensor grad_x = empty({rows, z_.model}), grad_gamma = empty({z_.model}), grad_beta = empty({z_.model});
      const std::string s = dims({rows, z_.model});
      row("layer norm fwd", s,
          time("layer_norm fwd",
               [&] { kernels::layer_norm_forward_cuda(x, gamma, beta, 1e-5f, y, mean, rstd); }),
          Unit::bytes, traffic::layer_norm_forward_bytes(rows, z_.model), copy, kBandwidthTarget);
      row("layer norm bwd (∂x, ∂γ, ∂β)", s,
          time("layer_norm bwd",
               [&] {
                 kernels::layer_norm_backward_cuda(x, gamma, mean, rstd, grad_y, grad_x,
                                                   grad_gamma, grad_beta);
               }),
          Unit::bytes, traffic::layer_norm_backward_bytes(rows, z_.model), copy, kBandwidthTarget);
    }
    {
      // x, y, grad_y, grad_x: (B·N, d_ff)
      Tensor x = random({rows, z_.ffn}, -3, 3), grad_y = random({rows, z_.ffn}, -1, 1);
      Tensor y = empty({rows, z_.ffn}), grad_x = empty({rows, z_.ffn});
      const std::string s = dims({rows, z_.ffn});
      const int64_t elements = rows * z_.ffn;
      row("GELU fwd", s,
          time("gelu fwd",
               [&] { kernels::activation_forward_cuda(kernels::Activation::gelu, x, y); }),
          Unit::bytes, traffic::gelu_forward_bytes(elements), copy);
      row("GELU bwd", s,
          time("gelu bwd",
               [&] {
                 kernels::activation_backward_cuda(kernels::Activation::gelu, x, grad_y, grad_x);
               }),
          Unit::bytes, traffic::gelu_backward_bytes(elements), copy);
    }
  }

  // ---- cross-entropy over (loss_rows, vocab) logits: (B·128, 32768) for table5 ----

  void cross_entropy_rows() {
    // logits, grad_logits: (R, V); targets: (R,) i32; lse: (R,); loss, grad_loss: ()
    Tensor logits = random({z_.loss_rows, z_.vocab}, -4, 4), grad_logits = empty({z_.loss_rows, z_.vocab});
    std::vector<int32_t> ids(z_.loss_rows);
    Rng rng(seed_++);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(z_.vocab));
    const Tensor targets = Tensor::from_vector(ids, {z_.loss_rows}, device_);
    Tensor lse = empty({z_.loss_rows}), loss = empty({});
    const Tensor grad_loss = Tensor::full({}, 1.0f, device_);
    Tensor count = Tensor::empty({}, DType::i32, device_);  // stays on the device: no host sync
    const std::string s = dims({z_.loss_rows, z_.vocab});
    const Reference copy = copy_reference();
    row("cross-entropy fwd", s,
        time("cross_entropy fwd",
             [&] { kernels::cross_entropy_forward_cuda(logits, targets, -100, loss, lse, count); }),
        Unit::bytes, traffic::cross_entropy_forward_bytes(z_.loss_rows, z_.vocab), copy);
    URPE_CHECK(count.to_vector_i32()[0] == z_.loss_rows,
               "bench cross-entropy: counted " << count.to_vector_i32()[0] << " rows of " << z_.loss_rows);
    row("cross-entropy bwd", s,
        time("cross_entropy bwd",
             [&] {
               kernels::cross_entropy_backward_cuda(logits, targets, -100, lse, count, grad_loss,
                                                    grad_logits);
             }),
        Unit::bytes, traffic::cross_entropy_backward_bytes(z_.loss_rows, z_.vocab), copy);
  }

  // ---- one Adam step over the encoder layers of the model (12 for table5) ----

  void adam_row() {
    // Per layer: Wq, Wk, Wv, Wo (D, D) + biases (D,); W1 (F, D) + b1 (F,); W2 (D, F) + b2 (D,);
    // two layer norms' γ, β (D,): 16 tensors, 7,087,872 parameters for table5.
    const std::vector<Shape> layer = {{z_.model, z_.model}, {z_.model}, {z_.model, z_.model}, {z_.model},
                                      {z_.model, z_.model}, {z_.model}, {z_.model, z_.model}, {z_.model},
                                      {z_.ffn, z_.model},   {z_.ffn},   {z_.model, z_.ffn},   {z_.model},
                                      {z_.model},         {z_.model}, {z_.model},         {z_.model}};
    std::vector<AdamSlot> slots;
    int64_t params = 0;
    for (int64_t l = 0; l < z_.layers; ++l) {
      for (const Shape& shape : layer) {
        slots.push_back({random(shape, -0.05f, 0.05f), random(shape, -1, 1),
                         random(shape, -0.1f, 0.1f), random(shape, 1e-4f, 1e-2f)});
        params += shape_numel(shape);
      }
    }
    AdamHyper hyper;
    hyper.lr = 1e-4f;
    hyper.weight_decay = 0.01f;
    hyper.step = 10;
    row("Adam step (multi-tensor, " + std::to_string(slots.size()) + " tensors)",
        std::to_string(params) + " params",
        time("adam step", [&] { kernels::adam_update_cuda(slots, hyper); }), Unit::bytes,
        traffic::adam_bytes(params), copy_reference(), kBandwidthTarget);
  }

  Device device_;
  cuda::Context* context_;
  int runs_;
  bool tf32_;
  BenchSizes z_;  // the sizes of every row
  DevicePeaks peaks_;
  uint64_t seed_ = 20221128;
  std::map<std::pair<float, float>, Tensor> tiles_;  // (low, high) → (kTimingTile,) uniforms
  int targets_ = 0, met_ = 0;
};

}  // namespace

int bench_kernels_cuda(const Device& device, int runs, bool tf32, const std::string& sizes) {
  URPE_CHECK(device.is_cuda() && device.context() != nullptr,
             "bench kernels: the CUDA table needs a CUDA device, got " << device.name());
  URPE_CHECK(runs >= 1, "option --repeats: expected a count ≥ 1, got " << runs);
  return CudaKernelBench(device, runs, tf32, sizes_named(sizes)).run();
}

#else  // no CUDA backend in this build

int bench_kernels_cuda(const Device&, int, bool, const std::string&) {
  URPE_FAIL("bench kernels --device cuda: this urpe build has no CUDA backend (built without CUDA)");
}

#endif

}  // namespace urpe::bench
