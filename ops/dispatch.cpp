// NVTX ranges around CUDA op calls: what Nsight Systems shows as the op timeline.
#include "ops/dispatch.h"

#if defined(URPE_WITH_CUDA)
#include <nvtx3/nvToolsExt.h>
#endif

namespace urpe::kernels {

#if defined(URPE_WITH_CUDA)
OpRange::OpRange(const char* name) { nvtxRangePushA(name); }
OpRange::~OpRange() { nvtxRangePop(); }
#else
OpRange::OpRange(const char*) {}
OpRange::~OpRange() {}
#endif

}  // namespace urpe::kernels
