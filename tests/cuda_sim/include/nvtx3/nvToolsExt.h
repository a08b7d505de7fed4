// CUDA simulator: stands in for <nvtx3/nvToolsExt.h>. Ranges keep their push/pop depth, which is
// all a range can get wrong without a profiler attached.
#pragma once

inline int& urpe_sim_nvtx_depth() {
  static int depth = 0;
  return depth;
}
inline int nvtxRangePushA(const char*) { return urpe_sim_nvtx_depth()++; }
inline int nvtxRangePop() { return --urpe_sim_nvtx_depth(); }
