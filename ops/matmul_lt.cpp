// cuBLASLt: linear's GEMM as one cublasLtMatmul (maths in matmul.h; the cuBLAS GEMM and the bias
// gradient kernel are matmul_cuda.cu). Host code only (cuBLASLt launches its own kernels), so a
// .cpp compiled in CUDA builds alone; in the simulator's build it is not instrumented as the
// kernels' files are (no atomics there), so its plans may sit behind a mutex.
//
// gemm_lt_cuda: linear's forward as one cublasLtMatmul, the bias added by the
// CUBLASLT_EPILOGUE_BIAS epilogue (β = 0: no broadcast pass, C never read) and a bf16 D written
// directly (no FP32 C and rounding pass): D = op(A)·op(B) + bias, bias[j] on output column j, the
// sum and the bias in FP32, rounded once as D is stored. The bias vector has D's type, as
// cuBLASLt requires (an f32 bias beside a bf16 D: CUBLAS_STATUS_INVALID_VALUE from its heuristic
// on an H100, bench/results/gpu_h100_2026-11-27.md), so a bf16 D takes a bf16 bias. The column-major swap of matmul_cuda.cu: our
// row-major C (m×n) is Lt's column-major D (n×m), whose *rows* are our columns, so the bias
// vector (n long) runs along Lt's rows, as the epilogue wants. Per layout (sizes, leading
// dimensions, types, the TF32 switch, the pointers' alignments) the descriptors and the
// heuristic's algorithm are made once and kept with the context (LtPlans); a layout the heuristic
// has no algorithm for is remembered as such, said once on stderr, and linear keeps its cuBLAS path.
// Cost of the epilogue: n·4 (bf16: n·2) bytes of bias read; a bf16 D writes 2·m·n bytes instead of 4·m·n.
#include "ops/matmul.h"

#if defined(URPE_WITH_CUDA)
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "tensor/cuda_context.h"

namespace urpe::kernels {

namespace {

// The alignment a pointer offers cuBLASLt's kernels: the largest power of two ≤ 256 dividing it.
uint32_t alignment_of(const void* p) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

// The bias vector, whichever type it has (D's), or null.
const void* bias_of(const GemmArgs& g) {
  return g.bias_bf16 != nullptr ? static_cast<const void*>(g.bias_bf16) : static_cast<const void*>(g.bias);
}

// Everything a heuristic answer depends on (never the pointers themselves, only their alignment).
using LtKey = std::array<int64_t, 20>;
LtKey lt_key(const cuda::Context& ctx, const GemmArgs& g) {
  const bool bf16_in = g.a_bf16 != nullptr;
  const void* bias = bias_of(g);
  const void* a = bf16_in ? static_cast<const void*>(g.a_bf16) : g.a;
  const void* b = bf16_in ? static_cast<const void*>(g.b_bf16) : g.b;
  const void* c = g.c_bf16 != nullptr ? static_cast<const void*>(g.c_bf16) : g.c;
  return {g.trans_a, g.trans_b, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.stride_a, g.stride_b, g.stride_c, g.batch,
          bf16_in, g.c_bf16 != nullptr, bias != nullptr, !bf16_in && ctx.tf32(), alignment_of(a), alignment_of(b),
          alignment_of(c), bias != nullptr ? alignment_of(bias) : 0};
}

// One layout's cublasLtMatmul: its descriptors and algorithm, or why there is none.
struct LtPlan {
  std::string unsupported;  // empty when the plan runs
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // Lt's A (our B), B (our A), C = D
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    for (cublasLtMatrixLayout_t l : {a, b, d})
      if (l) cublasLtMatrixLayoutDestroy(l);
  }
};

struct LtPlans {
  std::mutex mutex;  // the map, and a plan's bias pointer from its setting to its cublasLtMatmul
  std::map<LtKey, std::unique_ptr<LtPlan>> plans;
  bool said_unavailable = false;
};

LtPlans& lt_plans(cuda::Context& ctx) {
  static std::mutex creation;  // contexts are few: one lock for making any of their plan sets
  std::lock_guard<std::mutex> lock(creation);
  if (ctx.lt_plans() == nullptr)
    ctx.set_lt_plans(new LtPlans, [](void* plans) { delete static_cast<LtPlans*>(plans); });
  return *static_cast<LtPlans*>(ctx.lt_plans());
}

const char* lt_type_name(bool bf16) { return bf16 ? "bf16" : "f32"; }

// A status other than success while making a plan: the layout is unsupported (recorded, not thrown).
#define LT_PLAN_STEP(call)                                                                         \
  do {                                                                                             \
    const cublasStatus_t urpe_lt_status_ = (call);                                                 \
    if (urpe_lt_status_ != CUBLAS_STATUS_SUCCESS) {                                                \
      plan->unsupported = std::string(#call).substr(0, std::string(#call).find('(')) + ": " +       \
                          cuda::cublas_status_name(urpe_lt_status_);                               \
      return plan;                                                                                 \
    }                                                                                              \
  } while (0)

std::unique_ptr<LtPlan> make_lt_plan(cuda::Context& ctx, const GemmArgs& g) {
  auto plan = std::make_unique<LtPlan>();
  const bool bf16_in = g.a_bf16 != nullptr;
  const cudaDataType_t ab_type = bf16_in ? CUDA_R_16BF : CUDA_R_32F;
  const cudaDataType_t d_type = g.c_bf16 != nullptr ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute = !bf16_in && ctx.tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  LT_PLAN_STEP(cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F));
  // Lt's A is our B and its B our A (the column-major swap): op flags follow them.
  const int32_t trans_a = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  LT_PLAN_STEP(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
  LT_PLAN_STEP(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
  if (const void* bias = bias_of(g); bias != nullptr) {
    const uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const int32_t bias_type = d_type;  // D's type (cuBLASLt's rule), added in FP32 before D's rounding
    LT_PLAN_STEP(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    LT_PLAN_STEP(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                sizeof(bias_type)));
    LT_PLAN_STEP(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  // Column-major views of the row-major matrices: a row-major R×C matrix is a column-major C×R one.
  LT_PLAN_STEP(cublasLtMatrixLayoutCreate(&plan->a, ab_type, g.trans_b ? g.k : g.n, g.trans_b ? g.n : g.k, g.ldb));
  LT_PLAN_STEP(cublasLtMatrixLayoutCreate(&plan->b, ab_type, g.trans_a ? g.m : g.k, g.trans_a ? g.k : g.m, g.lda));
  LT_PLAN_STEP(cublasLtMatrixLayoutCreate(&plan->d, d_type, g.n, g.m, g.ldc));
  if (g.batch > 1) {
    const int32_t batch = static_cast<int32_t>(g.batch);
    const std::array<std::pair<cublasLtMatrixLayout_t, int64_t>, 3> strided = {
        std::pair{plan->a, g.stride_b}, std::pair{plan->b, g.stride_a}, std::pair{plan->d, g.stride_c}};
    for (const auto& [layout, stride] : strided) {
      LT_PLAN_STEP(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
      LT_PLAN_STEP(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                    sizeof(stride)));
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  LT_PLAN_STEP(cublasLtMatmulPreferenceCreate(&pref));
  const std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, cublasStatus_t (*)(cublasLtMatmulPreference_t)>
      pref_owner(pref, cublasLtMatmulPreferenceDestroy);
  const uint64_t workspace = ctx.lt_workspace_bytes();
  LT_PLAN_STEP(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                    sizeof(workspace)));
  const LtKey key = lt_key(ctx, g);
  const uint32_t alignments[3] = {uint32_t(key[17]), uint32_t(key[16]), uint32_t(key[18])};  // Lt's A, B, C = D
  const cublasLtMatmulPreferenceAttributes_t alignment_attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    LT_PLAN_STEP(cublasLtMatmulPreferenceSetAttribute(pref, alignment_attrs[i], &alignments[std::min(i, 2)],
                                                      sizeof(uint32_t)));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  LT_PLAN_STEP(cublasLtMatmulAlgoGetHeuristic(ctx.cublas_lt(), plan->desc, plan->a, plan->b, plan->d, plan->d, pref, 1,
                                              &result, &returned));
  if (returned < 1) {
    plan->unsupported = "cublasLtMatmulAlgoGetHeuristic: no algorithm";
    return plan;
  }
  plan->algo = result.algo;
  plan->workspace = result.workspaceSize;
  return plan;
}
#undef LT_PLAN_STEP

// The plan for g (made on first use), under the plans' lock.
LtPlan& lt_plan_locked(cuda::Context& ctx, LtPlans& plans, const GemmArgs& g) {
  std::unique_ptr<LtPlan>& slot = plans.plans[lt_key(ctx, g)];
  if (!slot) {
    slot = make_lt_plan(ctx, g);
    if (!slot->unsupported.empty()) {
      std::fprintf(stderr,
                   "urpe: cuBLASLt has no plan for the GEMM %lld×%lld×%lld (%s in, %s out%s%s): %s; this layout runs on "
                   "cuBLAS instead (bias broadcast and β = 1, a bf16 output rounded in a second pass)\n",
                   static_cast<long long>(g.m), static_cast<long long>(g.n), static_cast<long long>(g.k),
                   lt_type_name(g.a_bf16 != nullptr), lt_type_name(g.c_bf16 != nullptr), bias_of(g) ? ", bias epilogue" : "",
                   g.batch > 1 ? ", batched" : "", slot->unsupported.c_str());
    }
  }
  return *slot;
}

}  // namespace

bool gemm_lt_available(const Device& device, const GemmArgs& g) {
  URPE_CHECK(device.is_cuda() && device.context() != nullptr, "gemm_lt_available: not a CUDA device");
  cuda::Context& ctx = *device.context();
  if (g.k == 0 || g.m == 0 || g.n == 0 || g.batch == 0) return false;  // no product: nothing to fuse
  LtPlans& plans = lt_plans(ctx);
  std::lock_guard<std::mutex> lock(plans.mutex);
  if (ctx.cublas_lt() == nullptr) {
    if (!plans.said_unavailable)
      std::fprintf(stderr, "urpe: no cuBLASLt (%s): linear runs on cuBLAS (bias broadcast and β = 1, a bf16 output "
                   "rounded in a second pass)\n", ctx.lt_unavailable().c_str());
    plans.said_unavailable = true;
    return false;
  }
  if (!ctx.lt_epilogues()) return false;  // switched off (the bench's and tests' comparison)
  ctx.activate();  // the heuristic answers for the current device
  return lt_plan_locked(ctx, plans, g).unsupported.empty();
}

void gemm_lt_cuda(const Device& device, const GemmArgs& g) {
  URPE_CHECK(device.is_cuda() && device.context() != nullptr, "gemm_lt_cuda: not a CUDA device");
  cuda::Context& ctx = *device.context();
  ctx.activate();
  URPE_CHECK((g.a_bf16 != nullptr) == (g.b_bf16 != nullptr), "gemm_lt_cuda: one bf16 operand and one f32");
  URPE_CHECK((g.c != nullptr) != (g.c_bf16 != nullptr), "gemm_lt_cuda: give C as f32 or as bf16, exactly one");
  URPE_CHECK(g.c_bf16 == nullptr || g.a_bf16 != nullptr, "gemm_lt_cuda: a bf16 C needs bf16 operands");
  URPE_CHECK((g.bias == nullptr || g.c != nullptr) && (g.bias_bf16 == nullptr || g.c_bf16 != nullptr),
             "gemm_lt_cuda: the bias has C's type (cuBLASLt's rule): an f32 bias with an f32 C, a bf16 one with a bf16 C");
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  URPE_CHECK(g.k > 0 && ctx.cublas_lt() != nullptr,
             "gemm_lt_cuda: cuBLASLt cannot run this GEMM (k = " << g.k << (ctx.cublas_lt() ? "" : ", no cuBLASLt: ")
                                                                 << ctx.lt_unavailable() << "); ask gemm_lt_available first");
  LtPlans& plans = lt_plans(ctx);
  std::lock_guard<std::mutex> lock(plans.mutex);
  LtPlan& plan = lt_plan_locked(ctx, plans, g);
  URPE_CHECK(plan.unsupported.empty(), "gemm_lt_cuda: " << plan.unsupported << "; ask gemm_lt_available first");
  if (const void* bias = bias_of(g); bias != nullptr)  // this call's (the plan's had the same alignment)
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float alpha = g.alpha, beta = g.beta;
  const void* a = g.a_bf16 != nullptr ? static_cast<const void*>(g.a_bf16) : g.a;
  const void* b = g.b_bf16 != nullptr ? static_cast<const void*>(g.b_bf16) : g.b;
  void* d = g.c_bf16 != nullptr ? static_cast<void*>(g.c_bf16) : g.c;
  CUBLAS_CHECK(cublasLtMatmul(ctx.cublas_lt(), plan.desc, &alpha, b, plan.a, a, plan.b, &beta, d, plan.d, d, plan.d,
                              &plan.algo, ctx.lt_workspace(), ctx.lt_workspace_bytes(), ctx.stream()));
}

}  // namespace urpe::kernels

#endif  // URPE_WITH_CUDA
