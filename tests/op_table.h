// The op table (STYLE.md habit 14, after ggml's test-backend-ops): one row per op case, and every
// check of an op generated from its rows.
//
//   row = the op's inputs (shape and value range of each, which ones are differentiated), the call,
//         whether it has a backward, one column of tolerances per dtype (f32 for every row; a
//         bf16 column on the GEMM rows runs the same call with its operands cast to bf16), and
//         its cost formula (the FLOPs and bytes of the op's own `*_cost` functions in ops/*.h).
//
//   check          where it runs                               what must hold
//   gradcheck      test_op_table (CPU)                         finite differences in double against
//                                                              autograd, every element of every
//                                                              differentiated input
//   threads        test_op_table (CPU)                         output and gradients bit-identical
//                                                              with 1, 2 and 3 OpenMP threads
//   cost           test_op_table (CPU)                         the profiler's recorded cost of the
//                                                              call, forward and backward, equals
//                                                              the row's formula exactly
//   parity         test_cuda_parity (GPU), test_cuda_sim_parity  CUDA against the CPU within the
//                  (the CUDA simulator)                        row's bounds, forward and every
//                                                              gradient, outputs poisoned with NaN,
//                                                              for each dtype column (f32, bf16)
//
// Adding an op (docs/architecture.md#adding-an-op): its files in ops/, then one row in
// tests/op_table.cpp. The rows are listed there, one per case with a comment.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "tensor/op_profile.h"
#include "tensor/tensor.h"

namespace urpe::test {

// |got − want| ≤ atol + rtol·|want|, element by element.
struct Tolerance {
  double atol = 0, rtol = 0;
};

// One dtype column of a row: CUDA against the CPU (forward output; backward, every gradient), and
// the CPU gradient check's step and bounds.
// A bf16 column runs the same call with the inputs listed in `cast_inputs` cast to bf16 first
// (ops/cast.h, differentiable: their gradients come back to the f32 inputs), on the CPU and on
// the device, and compares the two with its own bounds (parity only: the gradient check is the
// f32 column's, since rounding has no finite differences).
struct DTypeColumn {
  DType dtype = DType::f32;
  Tolerance forward, backward;
  autograd::GradcheckOptions gradcheck;
  std::vector<size_t> cast_inputs;
};

// The f32 column.
DTypeColumn f32(Tolerance forward, Tolerance backward, autograd::GradcheckOptions gradcheck = {});
// The bf16 column: these inputs cast to bf16.
DTypeColumn bf16_column(Tolerance forward, Tolerance backward, std::vector<size_t> cast_inputs);

// One input of a row: built on the CPU from a seed (the row's name and the input's position), so
// every check of the row sees the same values. `grad`: the call differentiates it (gradcheck, and
// its gradient compared on CUDA).
struct OpInput {
  std::string name;
  std::function<Tensor(uint64_t seed)> make;
  bool grad = false;
};

// Uniform in [low, high), differentiated.
OpInput uniform(const std::string& name, const Shape& shape, float low = -1.0f, float high = 1.0f);
// Magnitudes uniform in [low, high) (low > 0) with random signs: never zero, never near a kink
// at 0 (division, dropout's zeros, |x|).
OpInput signed_uniform(const std::string& name, const Shape& shape, float low, float high);
// i32 ids uniform in [0, upper).
OpInput ids(const std::string& name, const Shape& shape, int32_t upper);
// Any tensor the row builds itself (maps, masks, tables, planted values); not differentiated.
OpInput given(const std::string& name, std::function<Tensor(uint64_t seed)> make);
// The same input, not differentiated (a constant the op reads).
OpInput constant(OpInput input);

using OpCall = std::function<Tensor(const std::vector<Tensor>& inputs, const Device& device)>;

struct OpCosts {
  profile::Cost forward, backward;
};
// The row's formula from its CPU inputs: the op's own *_cost functions at these sizes.
using CostFormula = std::function<OpCosts(const std::vector<Tensor>& inputs)>;

enum Check : unsigned {
  kGradcheck = 1u << 0,
  kThreads = 1u << 1,
  kCost = 1u << 2,
  kParity = 1u << 3,
  kAllChecks = kGradcheck | kThreads | kCost | kParity,
};

struct OpRow {
  std::string name;  // unique: the op and what the case varies ("matmul, Aᵀ·B, shared B")
  std::string op;    // the profiler's span of the call ("matmul"; backward: "matmul backward")
  std::vector<OpInput> inputs;
  OpCall call;
  std::vector<DTypeColumn> dtypes;
  CostFormula cost;
  bool backward = true;         // the output has a gradient (argmax_last, the optimizer: none)
  unsigned checks = kAllChecks;
  bool same_zeros = false;      // CUDA's zeros exactly where the CPU's are (dropout's mask)
  bool device_repeat = false;   // a second CUDA run gives the same bits (reductions' fixed order)

  // Chainable adjustments of a row.
  OpRow& without(unsigned check) { checks &= ~check; return *this; }
  OpRow& no_backward() { backward = false; return *this; }
  OpRow& exact_zeros() { same_zeros = true; return *this; }
  OpRow& repeatable_on_device(bool on = true) { device_repeat = on; return *this; }
  OpRow& with(DTypeColumn column) { dtypes.push_back(std::move(column)); return *this; }
};

OpRow row(std::string name, std::string op, std::vector<OpInput> inputs, OpCall call, DTypeColumn f32_column,
          CostFormula cost);

// Every row; the toy op's row (below) last.
const std::vector<OpRow>& op_table();

// The row's inputs on the CPU (the same values on every call).
std::vector<Tensor> make_inputs(const OpRow& row);

// ---- the checks (tests/op_table_checks.cpp) ----
// Each returns what it found instead of asserting, so that a test can also show a check failing
// on a broken op (test_op_table's mutants).
struct CheckResult {
  bool ok = true;
  bool ran = false;  // false: the row does not take this check (or OpenMP is absent)
  std::string message;
};

CheckResult gradcheck_row(const OpRow& row);
CheckResult threads_row(const OpRow& row);
CheckResult cost_row(const OpRow& row);
// CPU against `device` (a CUDA device) for each of the row's columns: the outputs the op allocates on
// the device start as NaN (poison_free_blocks), so an element it never writes fails.
CheckResult parity_row(const OpRow& row, const Device& device);
// Leaves NaN-filled blocks of these shapes on the device allocator's free lists, so that the next
// tensors of those sizes allocated there start as NaN.
void poison_free_blocks(const std::vector<Shape>& shapes, const Device& device);  // f32 and bf16 blocks

// ---- the recipe's example: a test-only op with its own row ----
// toy_square(x) = x², ∂x = 2x·g, written as ops/NAME.cpp would be (checks, profiler range and
// cost, dispatch to a CPU loop or to CUDA kernels, autograd record). `mutant` breaks one part on
// purpose (test_op_table checks that each check catches its mutant).
enum class ToyMutant { none, wrong_gradient, wrong_cost, cuda_skips_last_row, thread_dependent };
Tensor toy_square(const Tensor& x, ToyMutant mutant = ToyMutant::none);
profile::Cost toy_square_forward_cost(int64_t n);
profile::Cost toy_square_backward_cost(int64_t n);
OpRow toy_square_row(ToyMutant mutant);

}  // namespace urpe::test
