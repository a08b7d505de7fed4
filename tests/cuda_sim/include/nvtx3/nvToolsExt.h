// CUDA simulator: stands in for <nvtx3/nvToolsExt.h>. It keeps the push/pop depth and the set of
// distinct range names pushed, so a test can check that a run on the simulated device is
// instrumented the way Nsight would show it (op calls, model blocks, backward ops) and that every
// range was closed.
#pragma once
#include <set>
#include <string>

inline int& urpe_sim_nvtx_depth() {
  static int depth = 0;
  return depth;
}
inline std::set<std::string>& urpe_sim_nvtx_names() {
  static std::set<std::string> names;
  return names;
}
inline int nvtxRangePushA(const char* name) {
  urpe_sim_nvtx_names().insert(name);
  return urpe_sim_nvtx_depth()++;
}
inline int nvtxRangePop() { return --urpe_sim_nvtx_depth(); }
