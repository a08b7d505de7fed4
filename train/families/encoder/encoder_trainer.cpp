// The synthetic-task encoder's part of training: fresh batches from a seeded stream,
// cross-entropy over every scored position, token accuracy on fixed held-out draws. The loop itself
// (Adam, schedule, evaluation cadence, checkpoints, Ctrl-C) is train/loop/training_loop.h.
#include "train/families/encoder/encoder_trainer.h"

#include <cmath>

#include "autograd/node.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "base/dist/data_parallel.h"
#include "train/families/encoder/encoder_mlm_config.h"
#include "train/families/encoder/encoder_mlm_trainer.h"
#include "train/families/encoder/top1_hits.h"
#include "train/config/run_config.h"
#include "train/loop/training_loop.h"

namespace urpe {

namespace {

constexpr uint64_t kValidationSeed = 0x7a11d5e7ULL;  // the same held-out sets for every run
constexpr uint64_t kTestSeed = 0x7e575e7ULL;
constexpr int64_t kEvalBatch = 64;  // fixed, so the held-out sets and their scores never depend on it

// Mean cross-entropy over the scored positions.
Tensor flat_loss(const Tensor& logits, const Tensor& targets, int32_t ignore) {
  const int64_t rows = logits.numel() / logits.size(-1);
  return cross_entropy(reshape(logits, {rows, logits.size(-1)}), reshape(targets, {rows}), ignore);
}

// Position identification has one class per position: its logits, (B·n, n), are the step's only
// n² tensors once attention is fused. Its loss and top-1 classes come from the head fused with
// the cross-entropy in row chunks (TransformerEncoder::classify_loss), without the logits.
bool chunked_head(const SyntheticTask& task) { return task.kind() == SyntheticKind::position_identification; }

// The batch's mean loss over the scored positions, and each row's top class, i32 (B·n,).
struct HeadResult {
  Tensor loss, best;
};
HeadResult head_result(const TransformerEncoder& model, const SyntheticTask& task, const Tensor& tokens,
                       const Tensor& targets, bool training, Rng* dropout_rng) {
  HeadResult r;
  if (chunked_head(task)) {
    r.loss = model.classify_loss(model.encode(tokens, training, dropout_rng), targets, task.ignore_index(), &r.best);
  } else {
    const Tensor logits = model.forward(tokens, training, dropout_rng);
    r.loss = flat_loss(logits, targets, task.ignore_index());
    r.best = argmax_last(logits.detach());
  }
  return r;
}

}  // namespace

SyntheticTask synthetic_task_of(const EncoderSettings& s) {
  URPE_CHECK(!s.masked_lm, "config: task = mlm is masked language modelling on a corpus, not a synthetic "
                           "task; this command reads the synthetic tasks' sequences (pi, etp) only");
  return SyntheticTask(parse_synthetic_kind(s.task), s.seq_len, s.vocab, s.task_protocol);
}
SyntheticTask task_from_config(const Config& config) { return synthetic_task_of(encoder_settings_from(config)); }

EncoderConfig encoder_model_of(const EncoderSettings& s) {
  EncoderConfig c;
  c.seq_len = s.seq_len;
  c.layers = s.layers;
  c.d_model = s.d_model;
  c.heads = s.heads;
  c.d_ff = s.d_ff;
  c.dropout = s.dropout;
  c.attention_dropout = s.attention_dropout;
  c.init_std = s.init_std;
  c.linear_dtype = s.linear_dtype;
  c.pe = s.pe_spec.base;
  c.urpe_on_top = s.pe_spec.urpe_on_top;
  c.with_ape = s.pe_spec.with_ape;
  c.shaw_clip = s.shaw_clip;
  c.rpe_kind = s.rpe_kind;
  c.urpe_kind = s.urpe_kind;
  c.attention_norm = s.attention_norm;
  c.attention = s.attention;
  if (s.masked_lm) {
    set_masked_lm_model(s, c);
  } else {
    const SyntheticTask task = synthetic_task_of(s);
    c.vocab = task.input_ids();
    c.num_classes = task.num_classes();
    // The official code's RobertaLMHead, tied to the token embedding for ETP (its scripts pass
    // --untie-weights-roberta for PI only).
    if (task.protocol() == TaskProtocol::official) {
      c.head = EncoderHead::lm_head;
      c.tie_head = task.kind() == SyntheticKind::even_token_prediction;
      c.padding_id = task.padding_id();  // nn.Embedding(padding_idx = 1)
    }
  }
  URPE_CHECK(c.seq_len > 1, "config: seq_len must be > 1, got " << c.seq_len);
  URPE_CHECK(c.heads > 0 && c.d_model % c.heads == 0,
             "config: heads (" << c.heads << ") must divide d_model (" << c.d_model << ")");
  URPE_CHECK(c.dropout >= 0.0f && c.dropout < 1.0f, "config: dropout must be in [0, 1), got " << c.dropout);
  URPE_CHECK(c.init_std > 0.0f, "config: init_std must be positive, got " << c.init_std);
  return c;
}
EncoderConfig encoder_config_from(const Config& config) { return encoder_model_of(encoder_settings_from(config)); }

EncoderEvalResult evaluate_encoder(const TransformerEncoder& model, const SyntheticTask& task,
                            int64_t valid_size, int64_t batch, EvalSplit split) {
  autograd::NoGrad no_grad;
  Rng valid_rng(split == EvalSplit::valid ? kValidationSeed : kTestSeed);
  EncoderEvalResult result;
  int64_t seen = 0;
  while (seen < valid_size) {
    const int64_t b = std::min(batch, valid_size - seen);
    const SyntheticBatch data = task.sample(b, valid_rng, model.device());
    const HeadResult head = head_result(model, task, data.tokens, data.targets, false, nullptr);
    result.loss += head.loss.item() * static_cast<double>(b);
    result.accuracy += hits_of_best(head.best, data.targets, task.ignore_index()).fraction() * static_cast<double>(b);
    seen += b;
  }
  result.loss /= static_cast<double>(valid_size);
  result.accuracy /= static_cast<double>(valid_size);
  return result;
}

// ---- training: the encoder's adapter to the training loop ----

namespace {

class EncoderTask final : public TrainingTask {
 public:
  EncoderTask(const TrainingRun& run, const EncoderSettings& settings)
      : task_(synthetic_task_of(settings)),
        model_(encoder_model_of(settings), run.seed, run.device),
        batch_(run.settings.batch),
        valid_size_(settings.valid_size),
        comm_(*run.comm),
        shard_(dist::batch_shard(comm_, batch_)),
        task_name_(settings.task),
        label_("[" + settings.task + "/" + settings.pe + "]") {
    URPE_CHECK(batch_ > 0, "config: batch must be positive, got " << batch_);
    URPE_CHECK(valid_size_ > 0, "config: valid_size must be positive, got " << valid_size_);
  }

  const ParameterSet& parameters() const override { return model_.parameters(); }
  std::string progress_label() const override { return label_; }

  // Fresh sequences from the data stream every step; cross-entropy over every scored position.
  // Every rank draws the whole global batch (the stream stays the same whatever the number of
  // ranks, and of micro-batches) and trains on its rows, micro-batch by micro-batch.
  StepOutput step(int64_t, const MicroBatch& micro, TrainingProgress& progress) override {
    if (micro.first()) {
      // On the host: each micro-batch's rows are cut from it there and uploaded on their own.
      global_ = task_.sample(batch_, progress.data_rng, Device::cpu());
      trained_.clear();
    }
    const dist::Shard rows = micro_rows(shard_, micro);
    return loss_of({dist::shard_rows(global_.tokens, rows).to(model_.device()),
                    dist::shard_rows(global_.targets, rows).to(model_.device())},
                   rows.count, progress);
  }
  // CUDA graphs: the same step in its host part (the batch, on the host) and device part.
  std::string graph_refusal() const override { return ""; }
  std::vector<Tensor> draw_batch(int64_t, TrainingProgress& progress) override {
    global_ = task_.sample(batch_, progress.data_rng, Device::cpu());
    return {dist::shard_rows(global_.tokens, shard_), dist::shard_rows(global_.targets, shard_)};
  }
  // A replayed step runs without step_on: trained_ keeps the captured step's top classes (the
  // graph's pool block, rewritten by every replay) and targets (the static input buffer).
  StepOutput step_on(const std::vector<Tensor>& batch, TrainingProgress& progress) override {
    URPE_CHECK(batch.size() == 2, "encoder: step_on expects {tokens, targets} (internal error)");
    trained_.clear();
    return loss_of({batch[0], batch[1]}, shard_.count, progress);
  }
  // The accuracy of the global batch: the shards are equal, so the mean of the ranks' accuracies.
  double train_metric(double) override {
    Hits hits;
    for (const TrainedPart& part : trained_) hits += hits_of_best(part.best, part.targets, task_.ignore_index());
    double accuracy = hits.fraction();
    comm_.all_reduce_sum(&accuracy, 1);
    return accuracy / comm_.size();
  }

  ValidationReport validate(int64_t step, bool) override {
    last_eval_ = evaluate_encoder(model_, task_, valid_size_, kEvalBatch);
    evaluated_ = true;
    char text[160];
    std::snprintf(text, sizeof text, "step %lld: valid loss %.4f, accuracy %.2f%%", static_cast<long long>(step),
                  last_eval_.loss, 100.0 * last_eval_.accuracy);
    char metric[32];
    std::snprintf(metric, sizeof metric, "acc %.2f%%", 100.0 * last_eval_.accuracy);
    return {last_eval_.loss, last_eval_.accuracy, text, metric};
  }

  bool metric_higher_is_better() const override { return true; }  // accuracy

  Result finish(const Loop&) override {
    if (!evaluated_)  // resumed a finished run: score the stored model
      last_eval_ = evaluate_encoder(model_, task_, valid_size_, kEvalBatch);
    return {task_name_, "encoder", "valid_accuracy", last_eval_.accuracy};
  }
  const EncoderEvalResult& last_eval() const { return last_eval_; }

 private:
  // The loss of `part` (`rows` sequences on the model's device), kept for the train metric.
  StepOutput loss_of(const SyntheticBatch& part, int64_t rows, TrainingProgress& progress) {
    const HeadResult head = head_result(model_, task_, part.tokens, part.targets, true, &progress.dropout_rng);
    trained_.push_back({head.best, part.targets});  // for the train metric
    const double scored = static_cast<double>(rows * task_.scored_per_sequence());
    return {head.loss, static_cast<double>(part.tokens.numel()), scored};
  }

  const SyntheticTask task_;
  TransformerEncoder model_;
  const int64_t batch_, valid_size_;
  dist::Communicator& comm_;
  const dist::Shard shard_;
  const std::string task_name_, label_;
  struct TrainedPart {
    Tensor best, targets;  // each row's top class, i32 (rows,); the targets
  };
  SyntheticBatch global_;               // the step's global batch
  std::vector<TrainedPart> trained_;    // the step's micro-batches so far
  EncoderEvalResult last_eval_;
  bool evaluated_ = false;
};

}  // namespace

EncoderTrainOutcome train_encoder(const Config& config, const std::string& out_dir, const TrainOptions& options) {
  if (is_masked_lm(config)) return train_masked_lm(config, out_dir, options);
  TrainingRun run = begin_training_run(config, out_dir, options);
  EncoderTask task(run, encoder_settings_from(run.config));
  const TrainingOutcome trained = run_training(run, task);
  return {trained.result, task.last_eval().loss, trained.interrupted};
}

}  // namespace urpe
