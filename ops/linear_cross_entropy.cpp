// linear_cross_entropy: validation, the chunk loop (GEMMs through gemm_cpu / gemm_cuda, the
// per-row statistics and dz in linear_cross_entropy_cpu.cpp / _cuda.cu) and the autograd node.
// Maths in linear_cross_entropy.h. Targets are range-checked as cross_entropy's (ops/index_check.h:
// on CUDA on the device, raised at the next read) and M, the number of counted rows, is counted
// where they are: no host wait on CUDA, so a step with this head can be captured (CUDA graphs).
#include "ops/linear_cross_entropy.h"

#include <algorithm>
#include <vector>

#include "autograd/node.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/index_check.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace urpe {

namespace {

void run_gemm(const Device& device, const kernels::GemmArgs& args) {
  URPE_DISPATCH("linear_cross_entropy", device, kernels::gemm_cpu(args), kernels::gemm_cuda(device, args));
}

// logits[0 : rows] = h[row0 : row0 + rows]·Wᵀ + b   (buffer (chunk, C), h (N, d), W (C, d))
void chunk_logits(const Tensor& h, const Tensor& weight, const Tensor& bias, int64_t row0, int64_t rows,
                  Tensor& buffer) {
  const Device& device = h.device();
  const int64_t d = h.size(1), C = weight.size(0);
  if (bias.defined())
    URPE_DISPATCH("linear_cross_entropy", device, kernels::broadcast_axis_cpu(bias, 1, rows, C, 1.0f, buffer),
                  kernels::broadcast_axis_cuda(bias, 1, rows, C, 1.0f, buffer));
  kernels::GemmArgs g;
  g.trans_b = true;
  g.m = rows, g.n = C, g.k = d;
  g.beta = bias.defined() ? 1.0f : 0.0f;
  g.a = h.f32() + row0 * d, g.lda = d;
  g.b = weight.f32(), g.ldb = d;
  g.c = buffer.f32(), g.ldc = C;
  run_gemm(device, g);
}

}  // namespace

int64_t linear_cross_entropy_chunk_rows(int64_t rows, int64_t classes, int64_t chunk_rows) {
  const int64_t fit = chunk_rows > 0 ? chunk_rows : kLinearCrossEntropyChunkFloats / std::max<int64_t>(classes, 1);
  return std::max<int64_t>(1, std::min(fit, rows));
}

// ---- forward ----
// per chunk: z = h_chunk·Wᵀ + b, then lse, the target's term and argmax per row; L = Σ term / M

Tensor linear_cross_entropy(const Tensor& h, const Tensor& weight, const Tensor& bias, const Tensor& targets,
                            int32_t ignore_index, Tensor* argmax, int64_t chunk_rows) {
  const char* op = "linear_cross_entropy";
  const profile::OpRange range(op, h);
  check_dtype(op, "h", h, DType::f32);
  check_dtype(op, "weight", weight, DType::f32);
  check_dtype(op, "targets", targets, DType::i32);
  check_dim(op, "h", h, 2, 2);
  check_dim(op, "weight", weight, 2, 2);
  check_dim(op, "targets", targets, 1, 1);
  check_same_device(op, h, weight);
  check_same_device(op, h, targets);
  const int64_t N = h.size(0), d = h.size(1), C = weight.size(0);
  URPE_CHECK(weight.size(1) == d, op << ": weight " << weight.describe() << " does not match h " << h.describe()
                                     << " (expected " << d << " columns)");
  URPE_CHECK(C > 0, op << ": weight " << weight.describe() << " has no classes");
  URPE_CHECK(targets.size(0) == N, op << ": targets must have shape (" << N << ",), one class per row of h "
                                      << h.describe() << ", got " << targets.describe());
  if (bias.defined()) {
    check_dtype(op, "bias", bias, DType::f32);
    check_same_device(op, h, bias);
    URPE_CHECK(bias.dim() == 1 && bias.size(0) == C,
               op << ": bias " << bias.describe() << " does not match weight " << weight.describe());
  }
  URPE_CHECK(chunk_rows >= 0, op << ": chunk_rows must be ≥ 0 (0 = automatic), got " << chunk_rows);
  check_index_range(targets, C, true, ignore_index, [op, C, ignore_index](int64_t i, int32_t t) {
    URPE_FAIL(op << ": target " << t << " at row " << i << " is out of range [0, " << C
                 << ") and is not ignore_index (" << ignore_index << ")");
  });
  const Device& device = h.device();
  // M: on the CPU counted here (the targets are checked: none is out of range), on CUDA on the device.
  int64_t count = 0;
  Tensor device_count;  // CUDA: i32, shape ()
  if (device.is_cpu()) {
    const int32_t* t = targets.i32();
    for (int64_t i = 0; i < N; ++i) count += t[i] != ignore_index;
  } else {
    device_count = Tensor::empty({}, DType::i32, device);
    URPE_DISPATCH(op, device, (void)0, kernels::linear_ce_count_cuda(targets, C, ignore_index, device_count));
  }

  const int64_t chunk = linear_cross_entropy_chunk_rows(N, C, chunk_rows);
  const int64_t chunks = N == 0 ? 0 : (N + chunk - 1) / chunk;
  Tensor loss = Tensor::empty({}, DType::f32, device);
  Tensor lse = Tensor::empty({N}, DType::f32, device);   // (N,)
  Tensor term = Tensor::empty({N}, DType::f32, device);  // (N,): lse − z_t, 0 on ignored rows
  Tensor best = argmax ? Tensor::empty({N}, DType::i32, device) : Tensor();
  URPE_PROFILE_COST(linear_cross_entropy_forward_cost(N, d, C, chunks, bias.defined()));
  {
    Tensor buffer = Tensor::empty({chunk, C}, DType::f32, device);  // one chunk's logits
    for (int64_t row0 = 0; row0 < N; row0 += chunk) {
      const int64_t rows = std::min(chunk, N - row0);
      chunk_logits(h, weight, bias, row0, rows, buffer);
      URPE_DISPATCH(op, device,
                    kernels::linear_ce_chunk_stats_cpu(buffer, rows, C, targets, row0, ignore_index, lse, term, best),
                    kernels::linear_ce_chunk_stats_cuda(buffer, rows, C, targets, row0, ignore_index, lse, term, best));
    }
  }
  URPE_DISPATCH(op, device, kernels::linear_ce_mean_cpu(term, count, loss),
                kernels::linear_ce_mean_cuda(term, device_count, loss));
  if (argmax) *argmax = best;

  // ---- backward: chunk by chunk, the logits recomputed ----
  // dz = (softmax(z) − onehot(t))·g/M;  dh_chunk = dz·W;  dW += dzᵀ·h_chunk;  db += Σ_rows dz
  return autograd::record(loss, op, {h, weight, bias, targets}, [=](const Tensor& g) {
    const Device& dev = g.device();
    Tensor gh = Tensor::empty({N, d}, DType::f32, dev);
    Tensor gw = Tensor::zeros({C, d}, DType::f32, dev);
    Tensor gb = bias.defined() ? Tensor::zeros({C}, DType::f32, dev) : Tensor();
    URPE_PROFILE_COST(linear_cross_entropy_backward_cost(N, d, C, chunks, bias.defined()));
    if (N == 0) return std::vector<Tensor>{gh, gw, gb, Tensor()};
    Tensor buffer = Tensor::empty({chunk, C}, DType::f32, dev);  // the chunk's logits, then dz in place
    Tensor column_sums = bias.defined() ? Tensor::empty({C}, DType::f32, dev) : Tensor();
    for (int64_t row0 = 0; row0 < N; row0 += chunk) {
      const int64_t rows = std::min(chunk, N - row0);
      chunk_logits(h, weight, bias, row0, rows, buffer);
      URPE_DISPATCH(op, dev,
                    kernels::linear_ce_chunk_grad_cpu(buffer, rows, C, targets, row0, ignore_index, lse, count, g),
                    kernels::linear_ce_chunk_grad_cuda(buffer, rows, C, targets, row0, ignore_index, lse, device_count,
                                                       g));
      kernels::GemmArgs dh;  // dh[row0 : row0 + rows] = dz·W: (rows, C)·(C, d)
      dh.m = rows, dh.n = d, dh.k = C;
      dh.a = buffer.f32(), dh.lda = C;
      dh.b = weight.f32(), dh.ldb = d;
      dh.c = gh.f32() + row0 * d, dh.ldc = d;
      run_gemm(dev, dh);
      kernels::GemmArgs dw;  // dW += dzᵀ·h_chunk: (C, rows)·(rows, d)
      dw.trans_a = true;
      dw.m = C, dw.n = d, dw.k = rows;
      dw.beta = row0 == 0 ? 0.0f : 1.0f;
      dw.a = buffer.f32(), dw.lda = C;
      dw.b = h.f32() + row0 * d, dw.ldb = d;
      dw.c = gw.f32(), dw.ldc = d;
      run_gemm(dev, dw);
      if (bias.defined()) {  // db += Σ_rows dz: the chunk's column sums, then one add
        URPE_DISPATCH(op, dev, kernels::sum_axis_cpu(buffer, 1, rows, C, 1.0f, column_sums),
                      kernels::sum_axis_cuda(buffer, 1, rows, C, 1.0f, column_sums));
        URPE_DISPATCH(op, dev, kernels::binary_forward_cpu(kernels::BinaryOp::add, gb, column_sums, gb),
                      kernels::binary_forward_cuda(kernels::BinaryOp::add, gb, column_sums, gb));
      }
    }
    return std::vector<Tensor>{gh, gw, gb, Tensor()};  // targets are indices: no gradient
  });
}

}  // namespace urpe
