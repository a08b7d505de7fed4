// `urpe analyze`: the position/context decomposition (position_context.h) on a trained model's
// own data, layer by layer, and the files it writes. Contexts are
//   encoder runs:        fresh sequences of the run's task (PI, ETP), T = seq_len;
//   Transformer-XL runs: windows of T = tgt_len tokens at seeded random offsets of a corpus split,
//                        memory off, each labelled Austen or Bible (corpus_topics.h) when the
//                        corpus has that boundary.
// The hidden states are HiddenStates::blocks (models/hidden_states.h): layer 0 is the input to
// block 1, layer l the output of block l.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "train/analysis/analysis_model.h"
#include "train/analysis/position_context.h"
#include "train/io/json.h"

namespace urpe {

struct AnalyzeOptions {
  int64_t contexts = 256;       // C
  std::string split = "valid";  // Transformer-XL: the corpus split the windows come from
  uint64_t seed = 1;            // task sequences, window offsets, the Gaussian baseline
  EigenSolver solver = default_eigen_solver();
};

struct RunAnalysis {
  std::string run, source, family, pe;
  int64_t step = 0;
  std::string data;                      // what the contexts are, in words
  std::vector<std::string> topic_names;  // empty: no topics
  std::vector<int64_t> topic_counts;     // contexts per topic
  std::string solver;                    // "LAPACK dsyev" or "Jacobi"
  std::vector<LayerAnalysis> layers;
};

// The families `urpe analyze` reads, and why not Graphormer.
const std::vector<std::string>& analyze_families();

RunAnalysis analyze_run(const AnalysisModel& model, const AnalyzeOptions& options);

// {"runs": [{"run", "source", "family", "pe", "step", "data", "topics", "solver", "layers": [...]}]};
// each layer with every scalar of LayerAnalysis and its singular values.
json::Value analysis_to_json(const std::vector<RunAnalysis>& runs);
// Reads analysis.json back (for --compare): the scalars and singular values, not the Gram matrix.
std::vector<RunAnalysis> analysis_from_json(const json::Value& doc, const std::string& path);

// The table per run and layer (markdown, also what the command prints).
std::string analysis_markdown(const std::vector<RunAnalysis>& runs);

// plots/singular_values_<run>.png (log axis, a line per layer), plots/gram_<run>.png (G per layer),
// plots/spiral12_<run>.png and spiral34_<run>.png (pos_t on P's singular directions 1–2 and 3–4, a
// path per layer), plots/shares_<run>.png (variance shares per layer). The Gram matrix and the
// spirals only for a run analysed now (analysis.json keeps neither). Returns the paths.
std::vector<std::string> draw_analysis_plots(const std::string& plot_dir, const RunAnalysis& run);
// plots/compare_{relative_norm,pos_share,e10,stable_rank}.png: a line per run against layer (a
// metric no run has, E₁₀ when every T ≤ 10, is left out).
std::vector<std::string> draw_compare_plots(const std::string& plot_dir, const std::vector<RunAnalysis>& runs);

}  // namespace urpe
