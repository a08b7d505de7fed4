// Public losses (cross_entropy, l1_loss): validation, dispatch, autograd. Kernels: loss_cpu.cpp /
// loss_cuda.cu. Targets are range-checked (ops/index_check.h), so a bad label is one readable
// error (row and value) rather than an out-of-bounds read on a device; on CUDA the check runs on
// the device and its error is raised at the next read (the kernels skip such a row meanwhile).
#include "ops/loss.h"

#include <vector>

#include "autograd/node.h"
#include "ops/bf16_values.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/index_check.h"
#include "tensor/op_profile.h"

namespace urpe {

// ---- cross_entropy ----
// L = (1/M) Σ_{i counted} (lse_i − logits[i, t_i]);  ∂logits[i, c] = (softmax_c − [c = t_i])·g/M

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int32_t ignore_index) {
  const char* op = "cross_entropy";
  const profile::OpRange range(op, logits);
  check_value_dtype(op, "logits", logits);  // f32 or bf16
  check_dtype(op, "targets", targets, DType::i32);
  check_dim(op, "logits", logits, 2, 2);
  check_dim(op, "targets", targets, 1, 1);
  check_same_device(op, logits, targets);
  const int64_t N = logits.size(0), C = logits.size(1);
  URPE_CHECK(targets.size(0) == N, op << ": targets must have shape (" << N << ",), one class per row of logits "
                                      << logits.describe() << ", got " << targets.describe());
  URPE_CHECK(C > 0, op << ": logits " << logits.describe() << " have no classes");
  // On CUDA counted on the device and raised at the next read (ops/index_check.h).
  check_index_range(targets, C, true, ignore_index, [op, C, ignore_index](int64_t i, int32_t t) {
    URPE_FAIL(op << ": target " << t << " at row " << i << " is out of range [0, " << C
                 << ") and is not ignore_index (" << ignore_index << ")");
  });

  // ---- forward: saves lse per row and M, the number of counted rows ----
  Tensor loss = Tensor::empty({}, DType::f32, logits.device());
  Tensor lse = Tensor::empty({N}, DType::f32, logits.device());
  Tensor count = Tensor::empty({}, DType::i32, logits.device());  // M, where the logits are
  const double bytes = double(dtype_size(logits.dtype()));
  URPE_PROFILE_COST(cross_entropy_forward_cost(N, C, bytes));
  URPE_DISPATCH(op, logits.device(),
                kernels::cross_entropy_forward_cpu(logits, targets, ignore_index, loss, lse, count),
                kernels::cross_entropy_forward_cuda(logits, targets, ignore_index, loss, lse, count));

  // ---- backward: recomputes the softmax from logits and lse ----
  return autograd::record(loss, op, {logits, targets}, [=](const Tensor& g) {
    Tensor glogits = Tensor::empty(logits.shape(), logits.dtype(), g.device());  // the logits' dtype
    URPE_PROFILE_COST(cross_entropy_backward_cost(N, C, bytes));
    URPE_DISPATCH(op, g.device(),
                  kernels::cross_entropy_backward_cpu(logits, targets, ignore_index, lse, count, g, glogits),
                  kernels::cross_entropy_backward_cuda(logits, targets, ignore_index, lse, count, g, glogits));
    return std::vector<Tensor>{glogits, Tensor()};  // targets are indices: no gradient
  });
}

// ---- l1_loss ----
// L = (1/n) Σ |pred − target|;  ∂pred = sign(pred − target)·g/n,  ∂target = −∂pred

Tensor l1_loss(const Tensor& pred, const Tensor& target) {
  const char* op = "l1_loss";
  const profile::OpRange range(op, pred);
  check_dtype(op, "pred", pred, DType::f32);
  check_dtype(op, "target", target, DType::f32);
  check_same_device(op, pred, target);
  check_same_shape(op, pred, target);

  // ---- forward ----
  Tensor loss = Tensor::empty({}, DType::f32, pred.device());
  URPE_PROFILE_COST(l1_loss_forward_cost(pred.numel()));
  URPE_DISPATCH(op, pred.device(), kernels::l1_loss_forward_cpu(pred, target, loss),
                kernels::l1_loss_forward_cuda(pred, target, loss));

  // ---- backward ----
  return autograd::record(loss, op, {pred, target}, [op, pred, target](const Tensor& g) {
    Tensor gpred = Tensor::empty(pred.shape(), DType::f32, g.device());
    URPE_PROFILE_COST(l1_loss_backward_cost(pred.numel()));
    URPE_DISPATCH(op, g.device(), kernels::l1_loss_backward_cpu(pred, target, g, gpred),
                  kernels::l1_loss_backward_cuda(pred, target, g, gpred));
    Tensor gtarget;
    if (target.requires_grad()) {
      gtarget = Tensor::empty(target.shape(), DType::f32, g.device());
      URPE_PROFILE_COST(affine_cost(target.numel(), true));
      URPE_DISPATCH(op, g.device(), kernels::affine_cpu(gpred, -1.0f, 0.0f, gtarget),
                    kernels::affine_cuda(gpred, -1.0f, 0.0f, gtarget));
    }
    return std::vector<Tensor>{gpred, gtarget};
  });
}

}  // namespace urpe
