// `urpe analyze`: the position/context decomposition (position_context.h) on a trained model's
// own data, layer by layer, and the files it writes. Contexts are, with data = split (default)
//   encoder runs:        fresh sequences of the run's task (PI, ETP), T = seq_len;
//   Transformer-XL runs: windows of T = tgt_len tokens at seeded random offsets of a corpus split,
//                        memory off, each labelled with the source of its middle token
//                        (corpus_topics.h: each novel and the Bible from sources.tsv, or
//                        Austen/Bible from the text);
// and with data = random, sequences of T tokens drawn i.i.d. uniformly from the model's input
// vocabulary [0, vocab) (no topics): for Transformer-XL, position without language; for the
// encoder the same distribution as PI/ETP's own inputs (which are i.i.d. uniform), from another
// generator.
// The hidden states are HiddenStates::blocks (models/hidden_states.h): layer 0 is the input to
// block 1, layer l the output of block l.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/analysis/analysis_model.h"
#include "app/analysis/attention_split.h"
#include "app/analysis/position_context.h"
#include "base/io/json.h"

namespace urpe {

struct AnalyzeOptions {
  int64_t contexts = 256;       // C
  std::string split = "valid";  // Transformer-XL: the corpus split the windows come from
  std::string data = "split";   // split | random (see above)
  std::vector<int64_t> layers;  // the layers analysed (0 = input to block 1); empty: all
  bool keep_hidden = false;     // keep the states in RunAnalysis::hidden (--save-hidden)
  uint64_t seed = 1;            // task sequences, window offsets, the Gaussian baseline (layer l: seed + 1000·l)
  EigenSolver solver = default_eigen_solver();
};

// "0,2,4-6" → {0, 2, 4, 5, 6}: comma-separated layers and ranges, each ≥ 0, no repeats; errors
// name `option`.
std::vector<int64_t> parse_layer_list(const std::string& text, const std::string& option);

struct RunAnalysis {
  std::string run, source, family, pe;
  int64_t step = 0;
  std::string data;                      // what the contexts are, in words
  std::vector<std::string> topic_names;  // empty: no topics
  std::vector<int64_t> topic_counts;     // contexts per topic
  std::string solver;                    // "LAPACK dsyev" or "Jacobi"
  std::vector<LayerAnalysis> layers;
  // The attention-logit split of block l for every analysed layer l − 1 < L (attention_split.h);
  // read back from analysis.json without the pictures' matrices. attention_note says why there
  // is none (e.g. Transformer-XL).
  std::vector<AttentionSplit> attention;
  std::string attention_note;
  // Only for a run analysed now (not read back from analysis.json), a row per analysed layer:
  std::vector<Decomposition> parts;      // μ, pos, ctx (decomposition.safetensors)
  std::vector<uint64_t> baseline_seeds;  // the Gaussian baseline's seed
  std::vector<HiddenCube> hidden;        // the states, when AnalyzeOptions::keep_hidden
  std::vector<int> context_topics;       // a topic per context (index into topic_names); empty: none
};

// A run's name made safe for a file name (letters, digits, '-' and '_'; others become '_').
std::string analysis_file_stem(const std::string& run);

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
