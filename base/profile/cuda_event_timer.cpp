// CUDA events for the per-op recorder (see cuda_event_timer.h). Plain host C++ calling the CUDA
// runtime (as app/bench/cuda_peaks.cpp does); on the CUDA simulator the events carry the host clock
// at the moment they are recorded, which is when the simulator runs the kernels before them.
#include "base/profile/cuda_event_timer.h"

#include "tensor/error.h"

#if defined(URPE_WITH_CUDA)
#include <vector>

#include "tensor/cuda_context.h"
#endif

namespace urpe::profile {

#if defined(URPE_WITH_CUDA)

struct CudaEventTimer::Pool {
  std::vector<cudaEvent_t> events;
  size_t used = 0;
};

CudaEventTimer::CudaEventTimer(cuda::Context* context) : context_(context), pool_(std::make_unique<Pool>()) {
  URPE_CHECK(context != nullptr, "profile: a CUDA event timer needs a CUDA context");
}

CudaEventTimer::~CudaEventTimer() {
  for (cudaEvent_t e : pool_->events) cudaEventDestroy(e);
}

int CudaEventTimer::record() {
  if (pool_->used == pool_->events.size()) {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreate(&e));
    pool_->events.push_back(e);
  }
  const size_t index = pool_->used++;
  context_->activate();
  CUDA_CHECK(cudaEventRecord(pool_->events[index], context_->stream()));
  return static_cast<int>(index);
}

void CudaEventTimer::synchronize() {
  context_->activate();
  CUDA_CHECK(cudaStreamSynchronize(context_->stream()));
}

double CudaEventTimer::elapsed_ms(int from, int to) const {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, pool_->events.at(static_cast<size_t>(from)),
                                  pool_->events.at(static_cast<size_t>(to))));
  return ms;
}

void CudaEventTimer::reset() { pool_->used = 0; }

#else

struct CudaEventTimer::Pool {};

CudaEventTimer::CudaEventTimer(cuda::Context* context) : context_(context) {
  URPE_FAIL("profile: this urpe build has no CUDA backend, so there is no CUDA stream to time");
}
CudaEventTimer::~CudaEventTimer() = default;
int CudaEventTimer::record() { URPE_FAIL("profile: this urpe build has no CUDA backend"); }
void CudaEventTimer::synchronize() {}
double CudaEventTimer::elapsed_ms(int, int) const { URPE_FAIL("profile: this urpe build has no CUDA backend"); }
void CudaEventTimer::reset() {}

#endif

}  // namespace urpe::profile
