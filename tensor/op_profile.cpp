// The profiler's thread-local switch (see op_profile.h).
#include "tensor/op_profile.h"

namespace urpe::profile {

namespace {
thread_local Recorder* g_active = nullptr;
}  // namespace

Recorder* active() { return g_active; }

ActiveRecorder::ActiveRecorder(Recorder* recorder) : previous_(g_active) { g_active = recorder; }
ActiveRecorder::~ActiveRecorder() { g_active = previous_; }

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::optimizer: return "optimizer";
    default: return "communication";
  }
}

const char* gemm_math_name(GemmMath math) {
  switch (math) {
    case GemmMath::tf32: return "TF32";
    case GemmMath::bf16: return "BF16";
    default: return "FP32";
  }
}

}  // namespace urpe::profile
