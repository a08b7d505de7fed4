// Training and evaluation of Transformer-XL (+ URPE) language models: the loop behind
// `urpe train` for model = txl, `urpe eval` on such runs, and `urpe repro lm`.
//
// Training walks the train split in order (data/lm_batches.h: batch contiguous columns, segments
// of tgt_len rows), carrying the memory from one segment to the next and resetting it at the
// start of every epoch (docs/transformer_xl.md#memory). A checkpoint stores, beside the parameters and Adam, the
// position in that stream (epoch, next segment) and the memory itself, so a resumed run is
// bit-identical to an uninterrupted one. Update t uses the learning rate lr(t) of
// train/loop/schedule.h (warm-up, then cosine or linear decay to 0 at `steps`); the official code sets
// lr(t) after update t, so its update t uses lr(t − 1), a one-update shift.
//
// Evaluation (docs/transformer_xl.md#evaluation-protocol) walks a whole split the same way with the
// eval_* settings, memory
// carried from segment to segment, starting empty, dropout off:
//   total_loss = Σ_seg L_seg · mean_NLL_seg,  total_len = Σ_seg L_seg,
//   PPL = exp(total_loss / total_len)
// which is exp of the mean NLL over every predicted token (the N mod eval_batch trailing tokens
// and the first token of each column are never predicted).
#pragma once
#include <string>

#include "data/corpus.h"
#include "models/transformer_xl.h"
#include "base/io/config.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/families/txl/txl_config.h"
#include "base/io/run_dir.h"

namespace urpe {

// Σ L·mean NLL over segments, and the perplexity it gives (docs/transformer_xl.md#evaluation-protocol).
class PerplexityMeter {
 public:
  void add(int64_t segment_len, double mean_nll);  // one segment of segment_len rows
  double loss() const;                             // total_loss / total_len (mean NLL per token)
  double perplexity() const;                       // exp(loss())
  int64_t length() const { return total_len_; }

 private:
  double total_loss_ = 0;
  int64_t total_len_ = 0;
};

struct TxlEvalResult {
  double loss = 0;        // mean NLL per predicted token (nats)
  double perplexity = 0;  // exp(loss)
  int64_t predicted = 0;  // tokens scored: rows × columns
};

// Scores `stream` (one split's ids) with `settings`; the model's memory options are switched to
// the evaluation ones and restored afterwards.
TxlEvalResult evaluate_txl(TransformerXL& model, const std::vector<int32_t>& stream,
                         const TxlEvalSettings& settings);

struct TxlTrainOutcome {
  ResultRow result;            // metric_name valid_ppl: the final evaluation over the whole valid split
  double final_valid_loss = 0;
  bool interrupted = false;    // stopped by Ctrl-C or stop_after_step (a checkpoint was saved)
};

// Reads the corpus a config names (`corpus`, `token_mode`).
data::Corpus corpus_from_config(const Config& config);
data::Corpus corpus_of(const TxlSettings& settings);

// Trains per `config` into `out_dir` (config.txt, metrics.csv with metric = perplexity,
// model.safetensors, results.json, plots/). `corpus`, when given, must be the one the config
// names (repro loads it once for all its runs); otherwise it is read from disk.
TxlTrainOutcome train_txl(const Config& config, const std::string& out_dir, const TrainOptions& options,
                        const data::Corpus* corpus = nullptr);

// A run directory's checkpoint evaluated on "valid" or "test" with the run's eval settings, or
// with `settings` when given (e.g. eval_mem_len = 0 to measure what the memory buys), on
// `device` ("cpu", "cuda:1"; empty: the run's own `device` key), from its "last" or "best"
// `checkpoint` (train/loop/checkpoint.h).
struct TxlRunEval {
  Config config;
  int64_t step = 0;
  int64_t params = 0;
  TxlEvalSettings settings;
  TxlEvalResult result;
};
TxlRunEval evaluate_txl_run(const std::string& run_dir, const std::string& split,
                          const TxlEvalSettings* settings = nullptr, const data::Corpus* corpus = nullptr,
                          const std::string& device = "", const std::string& checkpoint = "last");

}  // namespace urpe
