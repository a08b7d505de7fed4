// The per-op profiler's hooks: how every op, model block and training phase tells the profiler
// (base/profile/: `urpe profile`, `urpe train --trace`) when it begins and ends and what it costs.
//
//   op      profile::OpRange at the top of each public op (forward) and around each autograd
//           node's backward ("softmax backward"); the optimizer's and the collectives' ops too.
//   cost    URPE_PROFILE_COST(formula) beside each kernel call: FLOPs and bytes from the op's own
//           formula (stated next to the op, in ops/*.h), added to the innermost open op.
//   scope   profile::ScopeRange around each model block, named as its NVTX range
//           ("encoder.layer0.attention"); it pushes that NVTX range too.
//   phase   profile::PhaseRange: forward (the default), backward, optimizer, communication.
//
// Off by default. With no recorder active every hook is one test of a thread-local pointer and
// the cost formulas are not evaluated (URPE_PROFILE_COST is a macro for that reason). A
// thread-local rather than a context argument for the same reason NVTX and autograd's NoGrad are
// global to a thread: the profiler must see every op call without a parameter threaded through
// every op's signature. It is set only while a recorder records a training step, on the thread
// that runs the step.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "tensor/nvtx_range.h"
#include "tensor/tensor.h"

namespace urpe::profile {

// What an op costs, from its formula: floating-point operations (a multiply-add is two) and the
// fewest bytes it must move through memory (each input read once, each output written once, f32
// and i32 both 4 bytes). Together with the machine's measured peaks they give the op's roofline
// bound max(flops / peak FLOP/s, bytes / bandwidth).
//
// The part of `flops` that ran on tensor cores (a GEMM under precision=tf32 or bf16 on CUDA) is
// also counted by its math, so that the roofline bounds it by that math's measured rate instead
// of the FP32 sgemm rate (machine_peaks.h, roofline_bound_ms): tf32_flops and bf16_flops are
// subsets of flops, never added to it.
struct Cost {
  double flops = 0;
  double bytes = 0;
  double tf32_flops = 0;  // of flops: TF32 tensor-core products (f32 operands, TF32 math mode)
  double bf16_flops = 0;  // of flops: BF16 tensor-core products (bf16 operands, FP32 sums)
  Cost& operator+=(const Cost& other) {
    flops += other.flops;
    bytes += other.bytes;
    tf32_flops += other.tf32_flops;
    bf16_flops += other.bf16_flops;
    return *this;
  }
};
inline Cost operator+(Cost a, const Cost& b) { return a += b; }

// The math a GEMM's products ran in: FP32 (the CPU, which widens bf16 operands, and cuBLAS's
// default mode), TF32 (f32 operands with the CUDA context's TF32 switch on) or BF16 (bf16
// operands on CUDA, summed in FP32).
enum class GemmMath : uint8_t { fp32, tf32, bf16 };
const char* gemm_math_name(GemmMath math);  // "FP32", "TF32", "BF16"
// `cost` with all its FLOPs counted as `math`'s.
inline Cost with_math(Cost cost, GemmMath math) {
  cost.tf32_flops = math == GemmMath::tf32 ? cost.flops : 0.0;
  cost.bf16_flops = math == GemmMath::bf16 ? cost.flops : 0.0;
  return cost;
}

constexpr double kElementBytes = 4.0;  // f32 and i32

enum class Phase : uint8_t { forward, backward, optimizer, communication };
constexpr int kPhaseCount = 4;
const char* phase_name(Phase phase);  // "forward", "backward", "optimizer", "communication"

// The model scopes open when an autograd node was recorded (outermost first), so that its
// backward runs under the same names. Shared: every node of one block holds the same path.
using ScopePath = std::shared_ptr<const std::vector<std::string>>;

// What the hooks talk to (base/profile/op_recorder.h implements it).
class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual void begin_op(const char* name, const Device& device) = 0;
  virtual void begin_op(const std::string& name, const Device& device) = 0;
  virtual void end_op() = 0;
  virtual void add_cost(const Cost& cost) = 0;  // to the innermost open op (ignored outside ops)
  virtual void begin_scope(const std::string& name) = 0;
  virtual void end_scope() = 0;
  virtual ScopePath scope_path() = 0;
  // Backward: between two nodes, re-opens the scopes of the next node's forward (closing those
  // of the previous node that it does not share); a null path closes every re-opened scope.
  virtual void enter_scopes(const ScopePath& path) = 0;
  virtual Phase phase() const = 0;
  virtual void set_phase(Phase phase) = 0;
};

// The recorder of this thread, or null (profiling off).
Recorder* active();

// Makes `recorder` this thread's active recorder for the guard's lifetime (the previous one, if
// any, comes back after).
class ActiveRecorder {
 public:
  explicit ActiveRecorder(Recorder* recorder);
  ~ActiveRecorder();
  ActiveRecorder(const ActiveRecorder&) = delete;
  ActiveRecorder& operator=(const ActiveRecorder&) = delete;

 private:
  Recorder* previous_;
};

// One op call, from construction to destruction. The op runs on `device`, or on the device of
// tensor `on` (read only while profiling, and the CPU for an undefined tensor, so that the op's
// own checks still report a missing argument).
class OpRange {
 public:
  OpRange(const char* name, const Device& device) : recorder_(active()) {
    if (recorder_) recorder_->begin_op(name, device);
  }
  OpRange(const char* name, const Tensor& on) : recorder_(active()) {
    if (recorder_) recorder_->begin_op(name, on.defined() ? on.device() : Device::cpu());
  }
  OpRange(const std::string& name, const Device& device) : recorder_(active()) {
    if (recorder_) recorder_->begin_op(name, device);
  }
  ~OpRange() {
    if (recorder_) recorder_->end_op();
  }
  OpRange(const OpRange&) = delete;
  OpRange& operator=(const OpRange&) = delete;

 private:
  Recorder* recorder_;
};

// A model block: its NVTX range (CUDA devices, as before) and the profiler's scope of that name.
class ScopeRange {
 public:
  ScopeRange(const Device& device, const std::string& name) : nvtx_(device, name), recorder_(active()) {
    if (recorder_) recorder_->begin_scope(name);
  }
  ~ScopeRange() {
    if (recorder_) recorder_->end_scope();
  }
  ScopeRange(const ScopeRange&) = delete;
  ScopeRange& operator=(const ScopeRange&) = delete;

 private:
  NvtxRange nvtx_;
  Recorder* recorder_;
};

// Everything recorded in the guard's lifetime belongs to `phase`; the previous phase after.
class PhaseRange {
 public:
  explicit PhaseRange(Phase phase) : recorder_(active()) {
    if (recorder_) {
      previous_ = recorder_->phase();
      recorder_->set_phase(phase);
    }
  }
  ~PhaseRange() {
    if (recorder_) recorder_->set_phase(previous_);
  }
  PhaseRange(const PhaseRange&) = delete;
  PhaseRange& operator=(const PhaseRange&) = delete;

 private:
  Recorder* recorder_;
  Phase previous_ = Phase::forward;
};

// The scope path to store in an autograd node: null when profiling is off.
inline ScopePath current_scope_path() {
  Recorder* recorder = active();
  return recorder ? recorder->scope_path() : nullptr;
}

}  // namespace urpe::profile

// Adds the cost `cost_expression` (a profile::Cost) to the innermost open op; the expression is
// evaluated only while a recorder is active.
#define URPE_PROFILE_COST(cost_expression)                                               \
  do {                                                                                  \
    if (::urpe::profile::Recorder* urpe_profile_recorder_ = ::urpe::profile::active()) \
      urpe_profile_recorder_->add_cost(cost_expression);                                \
  } while (0)
