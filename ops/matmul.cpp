// Public matmul/linear: shape checks, GEMM argument set-up for the three products (forward, ∂A,
// ∂B) and autograd. The GEMM itself is matmul_cpu.cpp (OpenBLAS or blocked loops) / _cuda.cu.
#include "ops/matmul.h"

#include <algorithm>

#include "autograd/node.h"
#include "ops/cast.h"
#include "ops/dispatch.h"
#include "ops/reduce.h"
#include "tensor/cuda_backend.h"

namespace urpe {

using kernels::GemmArgs;

namespace {

// A stored matrix operand (f32 or bf16): its rows × cols as stored, and how batch items are laid out.
struct Operand {
  const void* data;
  DType dtype;
  int64_t rows, cols, stride;
  // Batch item i's matrix.
  Operand item(int64_t i) const {
    Operand o = *this;
    o.data = static_cast<const char*>(data) + i * stride * int64_t(dtype_size(dtype));
    return o;
  }
};

Operand operand(const Tensor& t, bool shared) {
  URPE_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::bf16, "matmul: operand " << t.describe());
  const int64_t rows = t.size(-2), cols = t.size(-1);
  return {t.impl().storage->data, t.dtype(), rows, cols, shared ? 0 : rows * cols};
}

// The f32 rows of a tensor (a gradient), or their bf16 rounding when the GEMM's operands are bf16.
Tensor in_dtype(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = Tensor::empty(t.shape(), dtype, t.device());
  URPE_PROFILE_COST(cast_cost(t.numel()));
  URPE_DISPATCH("matmul", t.device(), kernels::cast_cpu(t, out), kernels::cast_cuda(t, out));
  return out;
}

// The GEMM C[i] = op(X[i])·op(Y[i]) (+ C[i] when accumulate), C row-major with op(Y)'s columns.
GemmArgs gemm_args(const Operand& x, bool tx, const Operand& y, bool ty, float* c, int64_t batch, bool accumulate) {
  GemmArgs g;
  g.trans_a = tx;
  g.trans_b = ty;
  g.m = tx ? x.cols : x.rows;
  g.k = tx ? x.rows : x.cols;
  g.n = ty ? y.rows : y.cols;
  URPE_CHECK(x.dtype == y.dtype, "matmul: one GEMM operand is " << dtype_name(x.dtype) << ", the other "
                                                               << dtype_name(y.dtype));
  if (x.dtype == DType::bf16) {
    g.a_bf16 = static_cast<const bf16*>(x.data);
    g.b_bf16 = static_cast<const bf16*>(y.data);
  } else {
    g.a = static_cast<const float*>(x.data);
    g.b = static_cast<const float*>(y.data);
  }
  g.lda = x.cols; g.stride_a = x.stride;
  g.ldb = y.cols; g.stride_b = y.stride;
  g.c = c; g.ldc = g.n; g.stride_c = g.m * g.n;
  g.batch = batch;
  g.beta = accumulate ? 1.0f : 0.0f;
  return g;
}

// Runs gemm_args' product. On the CPU, `before` (when given) prepares each block of C's rows just
// before the GEMM computes them.
void run_gemm(const Device& device, const Operand& x, bool tx, const Operand& y, bool ty,
              float* c, int64_t batch, bool accumulate, const kernels::RowsFn* before = nullptr) {
  const GemmArgs g = gemm_args(x, tx, y, ty, c, batch, accumulate);
  URPE_PROFILE_COST(profile::with_math(gemm_cost(g), gemm_math(device, g)));
  if (before != nullptr && device.is_cpu()) return kernels::gemm_cpu(g, *before);
  URPE_DISPATCH("matmul", device, kernels::gemm_cpu(g), kernels::gemm_cuda(device, g));
}

// C = op(X)·op(Y) (batch items, C fresh) as a tensor of `shape` and `dtype`. A bf16 C (bf16
// operands) is written by cuBLASLt itself on CUDA where it has a plan (the FP32 sums rounded once
// as stored); otherwise, and on the CPU, an FP32 C rounded in a pass of its own: the same values.
Tensor gemm_into(const Device& device, const Operand& x, bool tx, const Operand& y, bool ty, const Shape& shape,
                 DType dtype, int64_t batch) {
#if defined(URPE_WITH_CUDA)
  if (device.is_cuda() && dtype == DType::bf16) {
    Tensor c = Tensor::empty(shape, DType::bf16, device);
    GemmArgs g = gemm_args(x, tx, y, ty, nullptr, batch, false);
    g.c_bf16 = c.data<bf16>();
    if (kernels::gemm_lt_available(device, g)) {
      URPE_PROFILE_COST(profile::with_math(gemm_cost(g), gemm_math(device, g)));
      const NvtxRange nvtx("matmul");
      kernels::gemm_lt_cuda(device, g);
      return c;
    }
  }
#endif
  Tensor c = Tensor::empty(shape, DType::f32, device);
  run_gemm(device, x, tx, y, ty, c.f32(), batch, false);
  return in_dtype(c, dtype);
}

}  // namespace

profile::GemmMath gemm_math(const Device& device, const GemmArgs& g) {
  if (!device.is_cuda()) return profile::GemmMath::fp32;
  if (g.a_bf16 != nullptr) return profile::GemmMath::bf16;
  return cuda::tf32(device.context()) ? profile::GemmMath::tf32 : profile::GemmMath::fp32;
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, DType out_dtype) {
  const profile::OpRange range("matmul", a);
  check_defined("matmul", "a", a);
  check_defined("matmul", "b", b);
  URPE_CHECK((a.dtype() == DType::f32 || a.dtype() == DType::bf16) && b.dtype() == a.dtype(),
             "matmul: operands must be both f32 or both bf16, got " << a.describe() << " and " << b.describe());
  check_dim("matmul", "a", a, 2, 4);
  check_dim("matmul", "b", b, 2, 4);
  check_same_device("matmul", a, b);
  URPE_CHECK(out_dtype == DType::f32 || (out_dtype == DType::bf16 && a.dtype() == DType::bf16),
             "matmul: a " << dtype_name(out_dtype) << " output needs bf16 operands, got " << a.describe());
  const bool shared_b = b.dim() == 2;
  URPE_CHECK(shared_b || (a.dim() == b.dim() && std::equal(a.shape().begin(), a.shape().end() - 2,
                                                           b.shape().begin())),
             "matmul: batch dims of " << a.describe() << " and " << b.describe()
                                      << " differ (b must be 2-D or share a's leading dims)");
  const int64_t m = transpose_a ? a.size(-1) : a.size(-2);
  const int64_t ka = transpose_a ? a.size(-2) : a.size(-1);
  const int64_t kb = transpose_b ? b.size(-1) : b.size(-2);
  const int64_t n = transpose_b ? b.size(-2) : b.size(-1);
  URPE_CHECK(ka == kb, "matmul: inner dims differ: " << a.describe() << (transpose_a ? "ᵀ" : "")
                                                     << " × " << b.describe()
                                                     << (transpose_b ? "ᵀ" : ""));
  const int64_t batch = a.numel() / (a.size(-2) * a.size(-1));
  Shape out_shape(a.shape().begin(), a.shape().end() - 2);
  out_shape.push_back(m);
  out_shape.push_back(n);
  Operand oa = operand(a, false), ob = operand(b, shared_b);
  const bool fold = shared_b && !transpose_a;  // fold the batch into the rows: one large GEMM
  if (fold) oa.rows *= batch;
  // A bf16 out: cuBLASLt writes it itself on CUDA (gemm_into).
  const Tensor out = gemm_into(a.device(), oa, fold ? false : transpose_a, ob, transpose_b, out_shape, out_dtype,
                               fold ? 1 : batch);

  return autograd::record(out, "matmul", {a, b}, [=](const Tensor& g_out) {
    // bf16 operands: g in bf16 for the GEMMs, the gradients rounded to bf16 (gemm_into: written in
    // bf16 by cuBLASLt on CUDA, else FP32 GEMMs and a rounding pass).
    const DType dtype = a.dtype();
    const Tensor g = in_dtype(g_out, dtype);
    Tensor ga, gb;
    const Operand og{g.impl().storage->data, dtype, m, n, m * n};
    if (a.requires_grad()) {
      if (!transpose_a) {  // ∂A = g·op(B)ᵀ
        Operand g_rows = og;
        if (shared_b) { g_rows.rows *= batch; g_rows.stride = 0; }
        ga = gemm_into(a.device(), g_rows, false, ob, !transpose_b, a.shape(), dtype, shared_b ? 1 : batch);
      } else {             // stored A = op(A)ᵀ, so ∂A_stored = op(B)·gᵀ
        ga = gemm_into(a.device(), ob, transpose_b, og, true, a.shape(), dtype, batch);
      }
    }
    if (b.requires_grad()) {
      if (shared_b && !transpose_a) {  // contraction over batch·M rows in one GEMM
        Operand a_rows = operand(a, false), g_rows = og;
        a_rows.rows *= batch; a_rows.stride = 0;
        g_rows.rows *= batch; g_rows.stride = 0;
        if (!transpose_b) gb = gemm_into(a.device(), a_rows, true, g_rows, false, b.shape(), dtype, 1);
        else gb = gemm_into(a.device(), g_rows, true, a_rows, false, b.shape(), dtype, 1);
      } else if (!shared_b) {  // one strided-batched GEMM
        if (!transpose_b)  // ∂B = op(A)ᵀ·g
          gb = gemm_into(a.device(), operand(a, false), !transpose_a, og, false, b.shape(), dtype, batch);
        else               // ∂B_stored = gᵀ·op(A)
          gb = gemm_into(a.device(), og, true, operand(a, false), transpose_a, b.shape(), dtype, batch);
      } else {
        // Shared B with transposed A: accumulate batch items one GEMM at a time, in FP32.
        gb = Tensor::empty(b.shape(), DType::f32, b.device());
        for (int64_t i = 0; i < batch; ++i) {
          const Operand ai = operand(a, false).item(i), gi = og.item(i);
          if (!transpose_b)  // ∂B = op(A)ᵀ·g
            run_gemm(a.device(), ai, !transpose_a, gi, false, gb.f32(), 1, i > 0);
          else               // ∂B_stored = gᵀ·op(A)
            run_gemm(a.device(), gi, true, ai, transpose_a, gb.f32(), 1, i > 0);
        }
        gb = in_dtype(gb, dtype);
      }
    }
    return std::vector<Tensor>{ga, gb};
  });
}

// With a bias, one op instead of matmul + add. On the CPU the output starts as the bias broadcast
// over the rows and the GEMM accumulates into it (beta = 1), which saves the GEMM's own C = 0 pass
// and the add's pass over the output (measured: ~5% of the CPU training step). On CUDA one
// cublasLtMatmul adds the bias in its epilogue (β = 0) and writes a bf16 y itself (no FP32 y and
// rounding pass), where cuBLASLt has a plan for the layout (kernels::gemm_lt_available), else the
// CPU's scheme on cuBLAS. Backward sums the bias gradient over the rows (a bf16 g read as it is on
// CUDA) and hands ∂x, ∂W to two GEMMs, with no copy of ∂y for the add.
//   y = x·Wᵀ + 1·bᵀ      ∂x = g·W      ∂W = gᵀ·x      ∂b = Σ_rows g
// A bf16 y adds b̃ = bf16(b), on every device and path: cuBLASLt's bias vector has D's type (an f32
// bias beside a bf16 D was refused on an H100), and autocast rounds the bias too; ∂b is unchanged
// (the rounding passes the gradient through, as W̃'s does).
// x is read as (rows, in), rows the product of its leading dims: linear never needs them apart.
// Multiplying in bf16 (multiply_in): x̃ = bf16(x), W̃ = bf16(W) (kept for backward instead of x,
// W), y = x̃·W̃ᵀ + b summed in FP32, g̃ = bf16(g), ∂x = g̃·W̃ and ∂W = g̃ᵀ·x̃ summed in FP32,
// rounded to bf16 only where x or W is itself bf16.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, DType multiply_in, DType out_dtype,
              const Tensor& x_rounded) {
  const profile::OpRange range("linear", x);
  check_dim("linear", "weight", weight, 2, 2);
  URPE_CHECK(x.defined() && x.size(-1) == weight.size(1),
             "linear: input " << x.describe() << " does not match weight " << weight.describe()
                              << " (expected last dim " << weight.size(1) << ")");
  URPE_CHECK(multiply_in == DType::f32 || multiply_in == DType::bf16,
             "linear: multiplies in f32 or bf16, not " << dtype_name(multiply_in));
  URPE_CHECK((x.dtype() == DType::f32 || x.dtype() == DType::bf16) &&
                 (weight.dtype() == DType::f32 || weight.dtype() == DType::bf16) &&
                 (weight.dtype() == x.dtype() || multiply_in == DType::bf16),
             "linear: input and weight must be both f32 or both bf16, got " << x.describe() << " and "
                                                                             << weight.describe());
  URPE_CHECK(out_dtype == DType::f32 || (out_dtype == DType::bf16 && multiply_in == DType::bf16),
             "linear: a " << dtype_name(out_dtype) << " output needs multiply_in = bf16 (got "
                          << dtype_name(multiply_in) << ")");
  URPE_CHECK(!x_rounded.defined() || (multiply_in == DType::bf16 && x.dtype() == DType::f32 &&
                                      x_rounded.dtype() == DType::bf16 && x_rounded.shape() == x.shape()),
             "linear: x_rounded " << x_rounded.describe() << " must be the bf16 copy of the f32 x " << x.describe()
                                  << ", multiplied in bf16");
  const DType op_dtype = multiply_in == DType::bf16 ? DType::bf16 : x.dtype();
  const bool rounds = x.dtype() != op_dtype || weight.dtype() != op_dtype;
  if (!bias.defined() && !rounds && out_dtype == DType::f32) return matmul(x, weight, false, true);
  URPE_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
             "linear: bias " << bias.describe() << " does not match weight " << weight.describe());
  if (bias.defined()) {
    check_dtype("linear", "bias", bias, DType::f32);  // the FP32 parameter (a bf16 y rounds it below)
    check_same_device("linear", x, bias);
  }
  // The bias the output adds: b, or b̃ = bf16(b) beside a bf16 y (n elements: one small cast).
  const Tensor bias_op = bias.defined() && out_dtype == DType::bf16 ? in_dtype(bias, DType::bf16) : bias;
  check_same_device("linear", x, weight);
  const int64_t in = weight.size(1), out_features = weight.size(0);
  int64_t rows = 1;
  for (int d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(out_features);
  const Device& device = x.device();
  // The GEMM's operands: x and W themselves, or their bf16 rounding (what backward keeps).
  const Tensor x_op = x_rounded.defined() ? x_rounded : in_dtype(x, op_dtype), w_op = in_dtype(weight, op_dtype);
  const Operand x_rows{x_op.impl().storage->data, op_dtype, rows, in, 0}, w = operand(w_op, true);
  Tensor y;
#if defined(URPE_WITH_CUDA)
  // CUDA: y = x·Wᵀ + b in one cublasLtMatmul, the bias its epilogue (β = 0), y in its own dtype.
  if (device.is_cuda() && (bias.defined() || out_dtype == DType::bf16)) {
    Tensor lt_y = Tensor::empty(out_shape, out_dtype, device);
    GemmArgs g = gemm_args(x_rows, false, w, true, nullptr, 1, false);
    if (out_dtype == DType::bf16) g.c_bf16 = lt_y.data<bf16>();
    else g.c = lt_y.f32();
    if (bias_op.defined() && out_dtype == DType::bf16) g.bias_bf16 = bias_op.data<bf16>();
    else if (bias_op.defined()) g.bias = bias_op.f32();
    if (kernels::gemm_lt_available(device, g)) {
      URPE_PROFILE_COST(profile::with_math(gemm_cost(g), gemm_math(device, g)));
      const NvtxRange nvtx("linear");
      kernels::gemm_lt_cuda(device, g);
      y = lt_y;
    }
  }
#endif
  if (!y.defined()) {  // the CPU, or CUDA without a cuBLASLt plan: bias rows, then the GEMM with β = 1
    y = Tensor::empty(out_shape, DType::f32, device);
    if (!bias.defined()) {
      run_gemm(device, x_rows, false, w, true, y.f32(), 1, false);
    } else if (device.is_cpu()) {
      URPE_PROFILE_COST(broadcast_axis_cost(1, rows, out_features, 1.0f));
      // The bias (b, or b̃ widened as it is copied) into each block of rows right before the GEMM
      // adds onto it: the rows are written and read back in the cache instead of in one pass over
      // y ahead of the GEMM.
      const float* b = bias_op.dtype() == DType::f32 ? bias_op.f32() : nullptr;
      const bf16* b16 = bias_op.dtype() == DType::bf16 ? bias_op.data<bf16>() : nullptr;
      float* out = y.f32();
      const kernels::RowsFn bias_rows = [b, b16, out, out_features](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          float* row = out + r * out_features;
          if (b != nullptr) std::copy(b, b + out_features, row);
          else for (int64_t j = 0; j < out_features; ++j) row[j] = to_float(b16[j]);
        }
      };
      run_gemm(device, x_rows, false, w, true, y.f32(), 1, true, &bias_rows);
    } else {
      const Tensor bias_added = in_dtype(bias_op, DType::f32);  // b, or b̃ widened
      URPE_PROFILE_COST(broadcast_axis_cost(1, rows, out_features, 1.0f));
      URPE_DISPATCH("linear", device, kernels::broadcast_axis_cpu(bias_added, 1, rows, out_features, 1.0f, y),
                    kernels::broadcast_axis_cuda(bias_added, 1, rows, out_features, 1.0f, y));
      run_gemm(device, x_rows, false, w, true, y.f32(), 1, true);
    }
    // A bf16 output: the FP32 sum (bias included) rounded once, in a pass of its own.
    if (out_dtype == DType::bf16) y = in_dtype(y, DType::bf16);
  }

  // Backward keeps x_op and w_op, whose storage x_rows and w point into (the bf16 copies when
  // rounded: never the f32 x and W as well), and of x and W only what it needs to know.
  const bool x_grad = x.requires_grad(), w_grad = weight.requires_grad(), b_grad = bias.defined() && bias.requires_grad();
  const Shape x_shape = x.shape(), w_shape = weight.shape(), b_shape = bias.defined() ? bias.shape() : Shape{};
  const DType x_dtype = x.dtype(), w_dtype = weight.dtype();
  return autograd::record(y, "linear", {x, weight, bias},
                          [x_op, w_op, x_rows, w, rows, out_features, op_dtype, x_grad, w_grad, b_grad, x_shape,
                           w_shape, b_shape, x_dtype, w_dtype, device](const Tensor& g) {
    // bf16 operands: g rounded to bf16 for their GEMMs (tensor cores take one operand type); each
    // gradient's FP32 sum rounded to its input's dtype (kept as it is for an f32 x or W).
    const Tensor g_op = in_dtype(g, op_dtype);  // a bf16 output's g is already bf16: no pass
    const Operand g_rows{g_op.impl().storage->data, op_dtype, rows, out_features, 0};
    Tensor gx, gw, gb;
    // A bf16 x's ∂x is written in bf16 by cuBLASLt on CUDA (gemm_into), as matmul's gradients are.
    if (x_grad) gx = gemm_into(device, g_rows, false, w, false, x_shape, x_dtype, 1);    // ∂x = g·W
    if (w_grad) gw = gemm_into(device, g_rows, true, x_rows, false, w_shape, w_dtype, 1);  // ∂W = gᵀ·x
    if (b_grad) {  // ∂b = Σ over rows
      gb = Tensor::empty(b_shape, DType::f32, device);
#if defined(URPE_WITH_CUDA)
      if (device.is_cuda() && g.dtype() == DType::bf16) {  // read as bf16, summed in double: no widened g
        URPE_PROFILE_COST(bias_grad_bf16_cost(rows, out_features));
        const NvtxRange nvtx("linear");
        kernels::bias_grad_cuda(device, g.data<bf16>(), rows, out_features, gb.f32());
        return std::vector<Tensor>{gx, gw, gb};
      }
#endif
      URPE_PROFILE_COST(sum_axis_cost(1, rows, out_features));
      const Tensor g32 = in_dtype(g, DType::f32);  // a bf16 g widened (exact) for the FP32 sum
      URPE_DISPATCH("linear", device, kernels::sum_axis_cpu(g32, 1, rows, out_features, 1.0f, gb),
                    kernels::sum_axis_cuda(g32, 1, rows, out_features, 1.0f, gb));
    }
    return std::vector<Tensor>{gx, gw, gb};
  });
}

}  // namespace urpe
