// NVTX ranges (see nvtx_range.h). nvtxRangePushA copies the name, so a temporary string is fine.
#include "tensor/nvtx_range.h"

#if defined(URPE_WITH_CUDA)
#include <nvtx3/nvToolsExt.h>
#endif

namespace urpe {

#if defined(URPE_WITH_CUDA)
NvtxRange::NvtxRange(const char* name) : pushed_(true) { nvtxRangePushA(name); }
NvtxRange::NvtxRange(const Device& device, const std::string& name) : pushed_(device.is_cuda()) {
  if (pushed_) nvtxRangePushA(name.c_str());
}
NvtxRange::~NvtxRange() {
  if (pushed_) nvtxRangePop();
}
#else
NvtxRange::NvtxRange(const char*) {}
NvtxRange::NvtxRange(const Device&, const std::string&) {}
NvtxRange::~NvtxRange() {}
#endif

}  // namespace urpe
