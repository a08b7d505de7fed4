// The txl family (`model = txl`): Transformer-XL (+ URPE) language models on a word-level corpus
// (txl_config.h, txl_trainer.h), as the registry sees it (train/families/model_family.h).
#include <memory>

#include "train/families/model_family.h"
#include "train/families/txl/txl_plots.h"
#include "train/families/txl/txl_config.h"
#include "train/families/txl/txl_trainer.h"
#include "train/config/run_settings.h"

namespace urpe {

namespace {

FamilyTrainResult train(const Config& config, const std::string& out_dir, const TrainOptions& options) {
  const TxlTrainOutcome o = train_txl(config, out_dir, options);
  return {o.interrupted,
          printf_text("Transformer-XL %s, valid perplexity %.2f (loss %.4f) after %lld steps, %lld parameters, %.1f s",
                      o.result.pe.c_str(), o.result.metric, o.final_valid_loss, static_cast<long long>(o.result.steps),
                      static_cast<long long>(o.result.params), o.result.seconds)};
}

std::string evaluate(const std::string& dir, const Config& config, const std::string& split, const std::string& which) {
  const TxlRunEval e = evaluate_txl_run(dir, split, nullptr, nullptr, run_settings_from(config).device, which);
  check_finite_score(dir, which, split, e.result.loss);
  return printf_text("%s (%s, step %lld): %s perplexity %.2f, loss %.4f over %lld tokens (eval_tgt_len %lld, "
                     "mem_len %lld, clamp_len %lld, same_length %s)",
                     dir.c_str(), which.c_str(), static_cast<long long>(e.step), split.c_str(), e.result.perplexity,
                     e.result.loss, static_cast<long long>(e.result.predicted),
                     static_cast<long long>(e.settings.tgt_len), static_cast<long long>(e.settings.mem_len),
                     static_cast<long long>(e.settings.clamp_len), e.settings.same_length ? "true" : "false");
}

MemoryEstimate estimate_memory_without_vocab(const Config& config) { return estimate_txl_memory(config, 0); }

AnalysedModel analysed_model(const Config& config, uint64_t seed) {
  const TxlSettings settings = txl_settings_from(config);
  const data::Corpus corpus = corpus_of(settings);  // its vocabulary sizes the model
  AnalysedModel m;
  m.model = std::make_unique<TransformerXL>(txl_config_from(config, static_cast<int64_t>(corpus.vocab.size())), seed,
                                          Device::cpu());
  m.seq_len = settings.tgt_len;
  return m;
}

}  // namespace

// txl_bench_step.cpp
std::unique_ptr<StepModel> make_txl_bench_step(const StepModelOptions& options, const Device& device);

ModelFamily txl_family() {
  ModelFamily f;
  f.name = "txl";
  f.add_keys = add_txl_keys;
  f.check_values = check_txl_values;
  f.check_paths = check_txl_paths;
  f.estimate_memory = estimate_memory_without_vocab;
  f.train = train;
  f.evaluate = evaluate;
  f.draw_run_plots = draw_txl_run_plots;
  f.analysed_model = analysed_model;
  f.make_bench_step = make_txl_bench_step;
  f.not_captured_because =
      "carries its memory from segment to segment in new tensors each step, which a replayed graph cannot follow "
      "yet (the memory would need static buffers)";
  return f;
}

}  // namespace urpe
