// Theorem 2 as a measurement (`urpe theory probe`; docs/urpe_attention.md#theorem-2). Feed a model
// sequences of n identical tokens and look at every layer's hidden states: with no positional
// encoding, or with RPE (whose softmax rows sum to 1), every position must carry the same vector
// at every layer, so the spread
//
//   spread(layer) = max over probed sequences of  max_{i,j} ‖h_i − h_j‖ / mean_i ‖h_i‖
//
// is zero up to float rounding, and the model's position-identification accuracy on these inputs
// is at most 1/n (one output for all n positions). APE, and URPE once C has moved away from ones,
// are not bound by the theorem. The hidden states come from the models' own forward pass
// (models/hidden_states.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "app/analysis/analysis_model.h"
#include "base/io/json.h"
#include "base/plot/charts.h"

namespace urpe {

struct ProbeOptions {
  int64_t max_tokens = 64;  // every token value when vocab ≤ this, else a seeded sample of this many
  uint64_t seed = 1;        // of that sample
};

struct ProbeLayer {
  int64_t layer = 0;  // 0: the input to block 1; l: the output of block l
  double spread = 0;
};

struct ProbeRun {
  std::string run, source, family, pe;
  std::string attention_norm = "softmax";  // or "exp" (no denominator: the theorem does not apply)
  bool transformer_xl = false;             // Transformer-XL's relative attention (else the encoder's)
  int64_t step = 0;           // training steps of the checkpoint (0: untrained)
  int64_t n = 0;              // sequence length probed
  int64_t tokens_probed = 0;  // identical-token sequences (one per token value)
  bool c_is_ones = false;     // a URPE model whose C is still all ones (an RPE model in disguise)
  std::vector<ProbeLayer> layers;
  // Fraction of (sequence, position) pairs whose predicted class is the position; NaN when the
  // model is not a position-identification model (ETP, Transformer-XL).
  double identical_token_accuracy = 0;
};

// Hidden states (B, N, d) → the largest, over the batch, of max_{i,j} ‖h_i − h_j‖ / mean_i ‖h_i‖
// (0 for a zero state). Computed in double.
double hidden_spread(const Tensor& states);

// Rows of a PI model's logits (B, N, classes) predicting their own position (class i at row i).
// A row whose best logit and the logit of its sequence's choice (the argmax of the N rows' mean)
// are within kPredictionTieTolerance × the row's max |logit| takes that choice: rows equal up to
// float rounding then predict one class, as Theorem 2's exactly equal rows do, on every CPU.
constexpr double kPredictionTieTolerance = 1e-4;
int64_t identified_positions(const Tensor& logits);

// The token values probed: 0 … vocab − 1 when vocab ≤ count, else `count` distinct values drawn
// with `seed`, in increasing order.
std::vector<int32_t> probe_token_values(int64_t vocab, int64_t count, uint64_t seed);

// Runs the probe on one model (encoder or Transformer-XL, evaluation mode, no memory).
ProbeRun probe_identical_tokens(const AnalysisModel& model, const ProbeOptions& options);

// Whether Theorem 2 binds this model: softmax attention with no position information, or one that
// only changes the logits (RPE, ALiBi, RoPE), or URPE over one of those with C still ≡ 1.
bool theorem2_applies(const ProbeRun& run);

// {"runs": [{"run", "source", "family", "pe", "attention_norm", "step", "n", "tokens_probed", "c_is_ones",
//            "theorem2_applies", "layers": [{"layer", "spread"}], "identical_token_accuracy"}]}
json::Value probe_to_json(const std::vector<ProbeRun>& runs);
// The table the command prints: one row per run and layer, then one verdict line per run.
std::string probe_report(const std::vector<ProbeRun>& runs);
// Spread against layer on a log axis, one line per run named by its encoding, with Theorem 2's
// bound (kSpreadBound) as a labelled line and exact zeros in a "0" band under the axis.
constexpr double kSpreadBound = 1e-5;
plot::LineChartSpec probe_chart(const std::vector<ProbeRun>& runs);
void draw_probe_plot(const std::string& path, const std::vector<ProbeRun>& runs);

}  // namespace urpe
