// The tensors `urpe analyze` writes beside its report, as safetensors (float32, written to a
// temporary file and renamed), so other tools can read what was measured:
//   decomposition.safetensors  per analysed layer l: layer<l>.mu (d), layer<l>.pos (T, d) = P's
//                              rows pos_t, layer<l>.ctx (C, d) = ctx_c; metadata: run, layers, data
//   hidden.safetensors         (--save-hidden) per analysed layer l: layer<l> (C, T, d), the states
//                              themselves (exact: the model computes them in float32), topics (C)
//                              when the contexts have topics; metadata: layers, baseline_seeds
//                              (each layer's Gaussian-baseline seed), topic_names ("a|b|c"). The
//                              format tools/analyze_reference.py reads to recompute every number.
// μ, pos and ctx are computed in double and stored rounded to float32.
#pragma once
#include <string>

#include "app/analysis/analyze_run.h"

namespace urpe {

void save_decomposition(const std::string& path, const RunAnalysis& run);
// Needs the states (AnalyzeOptions::keep_hidden).
void save_hidden_states(const std::string& path, const RunAnalysis& run);

// The states and topics of a hidden-state file (the format above), e.g. the golden fixture.
struct HiddenStateFile {
  std::vector<int64_t> layers;
  std::vector<uint64_t> baseline_seeds;
  std::vector<HiddenCube> cubes;  // one per layer
  std::vector<int> topics;        // empty: none
};
HiddenStateFile load_hidden_states(const std::string& path);

}  // namespace urpe
