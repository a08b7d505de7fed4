// The op table's CPU checks (tests/op_table.h): for every row, the finite-difference gradient
// check, the same bits with 1, 2 and 3 OpenMP threads, and the profiler's recorded cost against the
// row's formula. CPU against CUDA runs from the same rows in test_cuda_parity (and under the CUDA
// simulator in test_cuda_sim_parity). Also here: every public op of ops/*.h has a row, and each
// check fails on a toy op broken on purpose (so none of them passes whatever it is given).
#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "doctest/doctest.h"
#include "op_table.h"
#include "test_util.h"

using namespace urpe;
using namespace urpe::test;

namespace {

// Runs `check` over every row; each failure names the row and what was wrong.
template <typename Check>
int run_over_table(Check check) {
  int ran = 0;
  for (const OpRow& row : op_table()) {
    INFO(row.name);
    const CheckResult r = check(row);
    ran += r.ran;
    CHECK_MESSAGE(r.ok, r.message);
  }
  return ran;
}

}  // namespace

TEST_CASE("op table: every row is well formed") {
  std::set<std::string> names;
  for (const OpRow& row : op_table()) {
    INFO(row.name);
    CHECK(names.insert(row.name).second);  // names are unique
    CHECK_FALSE(row.op.empty());
    CHECK(row.call);
    CHECK(row.cost);
    CHECK(row.checks != 0);
    REQUIRE_FALSE(row.dtypes.empty());
    CHECK(row.dtypes[0].dtype == DType::f32);
    CHECK(row.inputs.size() == make_inputs(row).size());
    // An input that is differentiated is f32 and never constant zero (random values).
    const std::vector<Tensor> in = make_inputs(row);
    for (size_t k = 0; k < in.size(); ++k) {
      if (!row.inputs[k].grad) continue;
      CHECK(in[k].dtype() == DType::f32);
      const std::vector<float> v = in[k].to_vector_f32();
      CHECK(std::any_of(v.begin(), v.end(), [](float e) { return e != 0.0f; }));
    }
  }
  MESSAGE(op_table().size() << " rows");
}

TEST_CASE("op table: every public op of ops/*.h has a row") {
  // The public ops: each `Tensor NAME(` declared at the start of a line of ops/*.h (the kernels'
  // declarations return void), and the optimizer's entry points.
  std::set<std::string> ops{"adam_update", "global_grad_norm", "scale_grads"};
  const std::regex declaration("^Tensor ([a-z_0-9]+)\\(");
  for (const char* header : {"activation", "cast", "dropout", "elementwise", "embedding", "layer_norm", "loss", "matmul",
                             "reduce", "relative_shift", "rotary", "shape", "softmax", "urpe_attention",
                             "urpe_flash_attention", "urpe_self_attention", "optimizer_kernels"}) {
    std::ifstream in(std::string(URPE_SOURCE_DIR) + "/ops/" + header + ".h");
    REQUIRE(in.good());
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
      if (std::regex_search(line, m, declaration)) ops.insert(m[1]);
  }
  // Not ops with a row of their own, and why.
  const std::set<std::string> not_rows{
      "toeplitz_map",                   // builds an i32 map (the attention rows' inputs use it)
      "toeplitz_relative_map",          // the same for the fused op
      "urpe_self_attention_reference",  // what urpe_self_attention runs on CUDA: its rows compare the two
  };
  CHECK(ops.size() > 30);
  for (const std::string& op : ops) {
    if (not_rows.count(op)) continue;
    CAPTURE(op);
    const bool has_row = std::any_of(op_table().begin(), op_table().end(), [&](const OpRow& row) {
      return row.name.rfind(op + " ", 0) == 0 || row.name.rfind(op + ",", 0) == 0;
    });
    CHECK(has_row);
  }
}

TEST_CASE("op table: gradient check of every row (finite differences on the CPU)") {
  const int ran = run_over_table(gradcheck_row);
  MESSAGE(ran << " rows gradient-checked");
  CHECK(ran > 50);
}

TEST_CASE("op table: the same bits with 1, 2 and 3 threads, output and gradients") {
  const int ran = run_over_table(threads_row);
  MESSAGE(ran << " rows compared across 1, 2 and 3 threads");
#if defined(_OPENMP)
  CHECK(ran > 100);
#endif
}

TEST_CASE("op table: the profiler records each row's cost formula, forward and backward") {
  const int ran = run_over_table(cost_row);
  MESSAGE(ran << " rows' costs checked");
  CHECK(ran > 100);
}

// Each check on the toy op's row (the recipe's example) passes, and fails on the toy op broken in
// the way that check exists to catch. CUDA's mutant (an unwritten row) is in test_cuda_parity.
TEST_CASE("op table: each check catches its mutant of the toy op") {
  const OpRow good = toy_square_row(ToyMutant::none);
  CHECK(gradcheck_row(good).ok);
  CHECK(cost_row(good).ok);
  CHECK(threads_row(good).ok);

  const CheckResult wrong_gradient = gradcheck_row(toy_square_row(ToyMutant::wrong_gradient));
  CHECK(wrong_gradient.ran);
  CHECK_FALSE(wrong_gradient.ok);
  CHECK(wrong_gradient.message.find("gradcheck: input 0") != std::string::npos);

  const CheckResult wrong_cost = cost_row(toy_square_row(ToyMutant::wrong_cost));
  CHECK_FALSE(wrong_cost.ok);
  CHECK(wrong_cost.message.find("cost of 'toy_square': recorded 554 FLOPs") != std::string::npos);

#if defined(_OPENMP)
  const CheckResult threads = threads_row(toy_square_row(ToyMutant::thread_dependent));
  CHECK_FALSE(threads.ok);
  CHECK(threads.message.find("output differs between 1 and 2 threads") != std::string::npos);
#endif
}
