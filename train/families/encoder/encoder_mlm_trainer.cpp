// The encoder's masked-LM adapter to the training loop (train/loop/training_loop.h): fresh masked
// windows from the train split every step, cross-entropy over the masked positions, and the loss
// and masked-token accuracy on fixed validation windows.
#include "train/families/encoder/encoder_mlm_trainer.h"

#include <cstdio>

#include "autograd/node.h"
#include "ops/embedding.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "base/dist/data_parallel.h"
#include "train/families/txl/txl_config.h"
#include "train/families/encoder/encoder_mlm_config.h"
#include "train/families/encoder/top1_hits.h"
#include "train/loop/training_loop.h"

namespace urpe {

namespace {

constexpr uint64_t kMaskSeed = 0x6d61736bULL;  // the validation windows' masks, the same for every run
constexpr int64_t kEvalBatch = 32;

// The masked positions of a (B, n) target tensor: their flat indices into the B·n positions and
// their targets, (M,) each, on `device`.
struct MaskedRows {
  Tensor rows, targets;
  int64_t count = 0;
};
MaskedRows masked_rows(const Tensor& targets, const Device& device) {
  const std::vector<int32_t> t = targets.to_vector_i32();
  std::vector<int32_t> rows, y;
  for (size_t k = 0; k < t.size(); ++k)
    if (t[k] != data::MaskedLanguageModel::kIgnoreTarget) {
      rows.push_back(static_cast<int32_t>(k));
      y.push_back(t[k]);
    }
  const int64_t m = static_cast<int64_t>(rows.size());
  return {Tensor::from_vector(rows, {m}, device), Tensor::from_vector(y, {m}, device), m};
}

// The logits of the masked positions only, (M, V): the encoder's features gathered at those
// positions, then the LM head (BERT computes its output layer at the masked positions alone).
Tensor masked_logits(const TransformerEncoder& model, const Tensor& tokens, const MaskedRows& masked, bool training,
                     Rng* dropout_rng) {
  const Tensor features = model.encode(tokens, training, dropout_rng);  // (B, n, d)
  const int64_t d = features.size(-1);
  return model.classify(embedding(reshape(features, {features.numel() / d, d}), masked.rows));  // (M, V)
}

}  // namespace

MaskedLmData masked_lm_data(const Config& config, const data::Corpus* given) {
  return masked_lm_data(encoder_settings_from(config), given);
}

MaskedLmData masked_lm_data(const EncoderSettings& settings, const data::Corpus* given) {
  const std::string dir = corpus_dir_named(settings.corpus);
  data::Corpus loaded;
  if (!given) loaded = data::load_corpus(dir, data::TokenMode::word);
  const data::Corpus& corpus = given ? *given : loaded;
  MaskedLmData d{masked_lm_from(settings), dir, corpus.vocab.size(), {}, {}, {}, 0.0};
  d.train = d.task.capped(corpus.train.ids);
  d.valid = d.task.capped(corpus.valid.ids);
  d.test = d.task.capped(corpus.test.ids);
  URPE_CHECK(d.task.window_count(d.valid) >= 1,
             "corpus '" << dir << "': the valid split (" << d.valid.size() << " tokens) holds no window of seq_len "
                        << d.task.seq_len() << " tokens");
  int64_t rare = 0;
  for (int32_t id : d.valid) rare += id == d.task.rare_id();
  d.rare_share_valid = static_cast<double>(rare) / static_cast<double>(d.valid.size());
  return d;
}

MaskedLmEval evaluate_masked_lm(const TransformerEncoder& model, const data::MaskedLanguageModel& task,
                                const std::vector<int32_t>& stream, int64_t windows) {
  autograd::NoGrad no_grad;
  Rng rng(kMaskSeed);
  MaskedLmEval e;
  e.windows = std::min(windows, task.window_count(stream));
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t first = 0; first < e.windows; first += kEvalBatch) {
    const int64_t count = std::min(kEvalBatch, e.windows - first);
    const data::MaskedBatch batch = task.windows(stream, first, count, rng);
    const MaskedRows masked = masked_rows(batch.targets, model.device());
    const Tensor logits = masked_logits(model, batch.tokens.to(model.device()), masked, false, nullptr);
    loss_sum += cross_entropy(logits, masked.targets).item() * static_cast<double>(masked.count);
    correct += hits_of(logits, masked.targets, data::MaskedLanguageModel::kIgnoreTarget).correct;
    e.masked += masked.count;
  }
  e.loss = loss_sum / static_cast<double>(e.masked);
  e.accuracy = static_cast<double>(correct) / static_cast<double>(e.masked);
  return e;
}

namespace {

class MaskedLmTask final : public TrainingTask {
 public:
  MaskedLmTask(const TrainingRun& run, const EncoderSettings& settings, const data::Corpus* corpus)
      : data_(masked_lm_data(settings, corpus)),
        model_(encoder_model_of(settings), run.seed, run.device),
        batch_(run.settings.batch),
        valid_windows_(settings.valid_size),
        comm_(*run.comm),
        shard_(dist::batch_shard(comm_, batch_)),
        label_("[mlm/" + settings.pe + "]") {}

  const ParameterSet& parameters() const override { return model_.parameters(); }
  std::string progress_label() const override { return label_; }

  // Every rank draws the whole global batch (the stream is the same whatever the number of ranks
  // and micro-batches) and trains on its rows, micro-batch by micro-batch.
  StepOutput step(int64_t, const MicroBatch& micro, TrainingProgress& progress) override {
    if (micro.first()) {
      global_ = data_.task.sample(data_.train, batch_, progress.data_rng);
      trained_.clear();
    }
    const dist::Shard rows = micro_rows(shard_, micro);
    const Tensor tokens = dist::shard_rows(global_.tokens, rows).to(model_.device());
    const MaskedRows masked = masked_rows(dist::shard_rows(global_.targets, rows), model_.device());
    const Tensor logits = masked_logits(model_, tokens, masked, true, &progress.dropout_rng);
    const Tensor loss = cross_entropy(logits, masked.targets);
    trained_.push_back(hits_of(logits.detach(), masked.targets, data::MaskedLanguageModel::kIgnoreTarget));
    return {loss, static_cast<double>(tokens.numel()), static_cast<double>(masked.count)};
  }
  // The masked-token accuracy of the global batch (equal shards: the mean of the ranks').
  double train_metric(double) override {
    Hits hits;
    for (const Hits& h : trained_) hits += h;
    double accuracy = hits.fraction();
    comm_.all_reduce_sum(&accuracy, 1);
    return accuracy / comm_.size();
  }

  ValidationReport validate(int64_t step, bool) override {
    last_ = evaluate_masked_lm(model_, data_.task, data_.valid, valid_windows_);
    evaluated_ = true;
    char text[200];
    std::snprintf(text, sizeof text, "step %lld: valid MLM loss %.4f, masked-token accuracy %.2f%% (%lld masked)",
                  static_cast<long long>(step), last_.loss, 100.0 * last_.accuracy, static_cast<long long>(last_.masked));
    char metric[40];
    std::snprintf(metric, sizeof metric, "mlm %.3f", last_.loss);
    return {last_.loss, last_.accuracy, text, metric};
  }
  bool metric_higher_is_better() const override { return true; }  // masked-token accuracy

  Result finish(const Loop&) override {
    if (!evaluated_) last_ = evaluate_masked_lm(model_, data_.task, data_.valid, valid_windows_);
    return {"mlm", "encoder", "valid_masked_accuracy", last_.accuracy};
  }
  const MaskedLmEval& last_eval() const { return last_; }

 private:
  const MaskedLmData data_;
  TransformerEncoder model_;
  const int64_t batch_, valid_windows_;
  dist::Communicator& comm_;
  const dist::Shard shard_;
  const std::string label_;
  data::MaskedBatch global_;  // the step's global batch (host)
  std::vector<Hits> trained_;
  MaskedLmEval last_;
  bool evaluated_ = false;
};

}  // namespace

EncoderTrainOutcome train_masked_lm(const Config& config, const std::string& out_dir, const TrainOptions& options,
                             const data::Corpus* corpus) {
  TrainingRun run = begin_training_run(config, out_dir, options);
  MaskedLmTask task(run, encoder_settings_from(run.config), corpus);
  const TrainingOutcome trained = run_training(run, task);
  return {trained.result, task.last_eval().loss, trained.interrupted};
}

}  // namespace urpe
