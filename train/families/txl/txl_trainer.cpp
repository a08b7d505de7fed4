// Transformer-XL's part of training: ordered segments with memory, a cosine (or linear)
// schedule, evaluation with memory, checkpoints that hold the stream position and the memory.
// The loop itself is train/loop/training_loop.h; the protocol is in txl_trainer.h.
#include "train/families/txl/txl_trainer.h"

#include <cmath>
#include <cstdio>

#include "autograd/node.h"
#include "data/lm_batches.h"
#include "data/text_file.h"
#include "train/loop/checkpoint.h"
#include "ops/shape.h"
#include "base/dist/data_parallel.h"
#include "train/config/run_config.h"
#include "train/loop/training_loop.h"

namespace urpe {

namespace {


// Where training stands in the ordered train stream: the epoch, the next segment to train on,
// and the memory that segment continues from (empty at the start of an epoch).
struct StreamPosition {
  int64_t epoch = 0;
  int64_t segment = 0;
  TxlMemory mems;
};

TrainerState stream_state(const StreamPosition& p) {
  TrainerState s;
  s.meta["epoch"] = std::to_string(p.epoch);
  s.meta["segment"] = std::to_string(p.segment);
  s.meta["mems"] = std::to_string(p.mems.size());
  for (size_t l = 0; l < p.mems.size(); ++l) s.tensors.emplace_back("mems." + std::to_string(l), p.mems[l]);
  return s;
}

// The stored position, checked against this run (the model, the batch, the train stream and the
// step): a bad value is one error naming the checkpoint and the key, not a crash mid-training.
StreamPosition stream_position(const CheckpointInfo& info, const std::string& path, const TransformerXL& model,
                               int64_t batch, int64_t num_segments, const Device& device) {
  const TrainerState& s = info.state;
  StreamPosition p;
  p.epoch = state_integer(s, path, "epoch", 0, info.progress.step);
  p.segment = state_integer(s, path, "segment", 0, num_segments);
  const TransformerXLConfig& c = model.config();
  const int64_t layers_plus_one = c.layers + 1;
  const int64_t count = state_integer(s, path, "mems", 0, layers_plus_one);
  URPE_CHECK(count == 0 || count == layers_plus_one,
             path << ": metadata 'state.mems' should be 0 or " << layers_plus_one
                  << " (one memory tensor per layer input plus the last output), got " << count);
  int64_t mlen = -1;
  for (int64_t l = 0; l < count; ++l) {
    const std::string name = "mems." + std::to_string(l);
    const Tensor* found = nullptr;
    for (const auto& [n, t] : s.tensors)
      if (n == name) found = &t;
    URPE_CHECK(found != nullptr, path << ": the memory tensor 'state." << name << "' is missing");
    if (mlen < 0 && found->dim() == 3) mlen = found->size(1);
    URPE_CHECK(found->dtype() == DType::f32 && found->shape() == (Shape{batch, mlen, c.d_model}) && mlen >= 1 &&
                   mlen <= c.mem_len,
               path << ": the memory tensor 'state." << name << "' is " << dtype_name(found->dtype()) << " "
                    << shape_str(found->shape()) << ", expected f32 (batch " << batch << ", L, d_model " << c.d_model
                    << ") with the same L from 1 to mem_len " << c.mem_len << " in every layer");
    p.mems.push_back(found->to(device));
  }
  return p;
}

// Restores a model's training memory options when an evaluation ends (also on an error).
class MemoryOptionsGuard {
 public:
  explicit MemoryOptionsGuard(TransformerXL& model) : model_(model), saved_(model.config()) {}
  ~MemoryOptionsGuard() { model_.set_memory_options(saved_.mem_len, saved_.clamp_len, saved_.same_length); }

 private:
  TransformerXL& model_;
  TransformerXLConfig saved_;
};

}  // namespace

// ---- perplexity ----

void PerplexityMeter::add(int64_t segment_len, double mean_nll) {
  URPE_CHECK(segment_len > 0, "perplexity: a segment must have at least one row, got " << segment_len);
  total_loss_ += static_cast<double>(segment_len) * mean_nll;
  total_len_ += segment_len;
}

double PerplexityMeter::loss() const {
  URPE_CHECK(total_len_ > 0, "perplexity: no segment was scored");
  return total_loss_ / static_cast<double>(total_len_);
}

double PerplexityMeter::perplexity() const { return std::exp(loss()); }

// ---- evaluation ----

TxlEvalResult evaluate_txl(TransformerXL& model, const std::vector<int32_t>& stream, const TxlEvalSettings& s) {
  autograd::NoGrad no_grad;
  const bool partial = s.max_tokens > 0 && s.max_tokens < static_cast<int64_t>(stream.size());
  const data::LMOrderedBatches batches(
      partial ? std::vector<int32_t>(stream.begin(), stream.begin() + s.max_tokens) : stream, s.batch, s.tgt_len);
  MemoryOptionsGuard restore(model);
  model.set_memory_options(s.mem_len, s.clamp_len, s.same_length);
  PerplexityMeter meter;
  TxlMemory mems;
  for (int64_t k = 0; k < batches.num_segments(); ++k) {
    const data::LMSegment segment = batches.segment(k, model.device());
    TxlStep out = model.forward(segment.data, segment.target, mems, false, nullptr);
    mems = std::move(out.mems);
    meter.add(segment.length, out.loss.item());
  }
  TxlEvalResult r;
  r.loss = meter.loss();
  r.perplexity = meter.perplexity();
  r.predicted = meter.length() * batches.batch_size();
  return r;
}

data::Corpus corpus_from_config(const Config& config) { return corpus_of(txl_settings_from(config)); }

data::Corpus corpus_of(const TxlSettings& settings) {
  const std::string dir = corpus_dir_named(settings.corpus);
  URPE_CHECK(data::directory_exists(dir),
             "corpus directory '" << dir << "' (config key `corpus`) does not exist; it should hold the "
                                  << "train/valid/test splits in WikiText format (for txl-base: the wiki.*.tokens "
                                  << "files of wikitext-103-v1), or use corpus = embedded");
  return data::load_corpus(dir, settings.token_mode);
}

// ---- training ----

namespace {

// Transformer-XL's adapter to the training loop: ordered segments with memory carried from one to
// the next, reset at every epoch; evaluation with memory; the stream position in the checkpoint.
class TxlTask final : public TrainingTask {
 public:
  TxlTask(const TrainingRun& run, const TxlSettings& settings, const data::Corpus& corpus)
      : corpus_(corpus),
        model_(txl_config_from(run.config, corpus.vocab.size()), run.seed, run.device),
        batch_(run.settings.batch),
        comm_(*run.comm),
        shard_(dist::batch_shard(comm_, batch_)),
        train_batches_(checked_train_stream(corpus, batch_), batch_, settings.tgt_len),
        final_eval_(settings.eval),
        quick_eval_(final_eval_),
        checkpoint_path_(run.checkpoint_path),
        label_("[txl/" + settings.pe + "]"),
        decay_(settings.schedule) {
    quick_eval_.max_tokens = settings.max_eval_tokens;
    // Checked here, before the first step, so that the errors name the file and the keys rather
    // than the batching code's stream length.
    for (const data::CorpusSplit* split : {&corpus.valid, &corpus.test}) {
      const int64_t tokens = static_cast<int64_t>(split->ids.size());
      URPE_CHECK(tokens >= 2 * final_eval_.batch,
                 "corpus " << split->name << " split " << split->path << " has " << tokens
                           << " tokens (one <eos> per line included), too few for eval_batch = " << final_eval_.batch
                           << ": each of its columns needs at least 2 tokens, so at least " << 2 * final_eval_.batch
                           << "; lower eval_batch or use a longer split");
    }
    const int64_t quick = quick_eval_.max_tokens;
    URPE_CHECK(quick <= 0 || quick >= static_cast<int64_t>(corpus.valid.ids.size()) || quick >= 2 * final_eval_.batch,
               "config: max_eval_tokens = " << quick << " is too few for eval_batch = " << final_eval_.batch
                                            << ": each of its columns needs at least 2 tokens, so at least "
                                            << 2 * final_eval_.batch);
  }

  const ParameterSet& parameters() const override { return model_.parameters(); }
  std::string progress_label() const override { return label_; }
  // The stream is ordered: data_rng is unused (kept for the checkpoint format).
  uint64_t data_seed(uint64_t seed) const override { return seed; }
  void adjust_schedule(LrSchedule& schedule) const override {
    schedule.decay = decay_;
  }
  void start(const TrainingProgress&, const CheckpointInfo* restored) override {
    if (restored) {
      position_ = stream_position(*restored, checkpoint_path_, model_, batch_, train_batches_.num_segments(),
                                  model_.device());
      for (Tensor& m : position_.mems) m = dist::shard_rows(m, shard_);  // this rank's columns' memory
    }
  }
  // The checkpoint also holds where the stream stands (StreamPosition), with the memory of every
  // column: the ranks' memories gathered, so a checkpoint is the same whatever the number of ranks.
  TrainerState state() const override {
    if (comm_.size() == 1) return stream_state(position_);
    StreamPosition whole = position_;
    for (Tensor& m : whole.mems) {
      Shape shape = m.shape();
      shape[0] = batch_;
      m = Tensor::from_vector(comm_.all_gather(m.to_vector_f32()), shape);
    }
    return stream_state(whole);
  }

  StepOutput step(int64_t, const MicroBatch& micro, TrainingProgress& progress) override {
    if (micro.first()) {
      if (position_.segment == train_batches_.num_segments()) {  // a new epoch starts without memory
        position_.segment = 0;
        ++position_.epoch;
        position_.mems.clear();
      }
      // On the host: each micro-batch's columns are cut from it there and uploaded on their own.
      segment_ = train_batches_.segment(position_.segment, Device::cpu());
      micro_mems_.clear();
    }
    // This rank's columns (parallel streams) of the segment, micro-batch by micro-batch; each
    // continues from the memory of its own columns (position_.mems holds the rank's columns).
    const dist::Shard columns = micro_rows(shard_, micro);
    const Tensor data = dist::shard_rows(segment_.data, columns, 1).to(model_.device());
    const Tensor target = dist::shard_rows(segment_.target, columns, 1).to(model_.device());
    TxlStep out = model_.forward(data, target, memory_of(micro), true, &progress.dropout_rng);
    if (micro.count == 1) {
      position_.mems = std::move(out.mems);
    } else {
      micro_mems_.push_back(std::move(out.mems));
      if (micro.last()) position_.mems = joined_memory();
    }
    if (micro.last()) ++position_.segment;
    const double tokens = static_cast<double>(segment_.length * columns.count);
    return {out.loss, tokens, tokens};
  }
  double train_metric(double mean_train_loss) override { return std::exp(mean_train_loss); }

  // The last evaluation scores the whole split: it is the run's result.
  ValidationReport validate(int64_t step, bool last) override {
    last_eval_ = evaluate_txl(model_, corpus_.valid.ids, last ? final_eval_ : quick_eval_);
    scored_ = true;
    scored_whole_split_ = last || quick_eval_.max_tokens == 0;
    char text[160];
    std::snprintf(text, sizeof text, "step %lld: valid loss %.4f, perplexity %.2f (%lld tokens)",
                  static_cast<long long>(step), last_eval_.loss, last_eval_.perplexity,
                  static_cast<long long>(last_eval_.predicted));
    char metric[32];
    std::snprintf(metric, sizeof metric, "ppl %.2f", last_eval_.perplexity);
    return {last_eval_.loss, last_eval_.perplexity, text, metric};
  }

  // A finished run is scored on the whole split (also when resumed after it finished); an
  // interrupted one keeps its last evaluation.
  Result finish(const Loop& loop) override {
    if (loop.interrupted ? !scored_ : !scored_whole_split_)
      last_eval_ = evaluate_txl(model_, corpus_.valid.ids, loop.interrupted ? quick_eval_ : final_eval_);
    return {"lm", "transformer_xl", "valid_ppl", last_eval_.perplexity};
  }
  const TxlEvalResult& last_eval() const { return last_eval_; }

 private:
  static const std::vector<int32_t>& checked_train_stream(const data::Corpus& corpus, int64_t batch) {
    URPE_CHECK(batch > 0, "config: batch must be positive, got " << batch);
    URPE_CHECK(static_cast<int64_t>(corpus.train.ids.size()) >= 2 * batch,
               "the train split of '" << corpus.directory << "' has " << corpus.train.ids.size()
                                      << " tokens, too few for batch " << batch << " (needs 2 per column)");
    return corpus.train.ids;
  }

  // The memory micro-batch `micro` continues from: its columns of the rank's memory.
  TxlMemory memory_of(const MicroBatch& micro) const {
    if (micro.count == 1) return position_.mems;
    const dist::Shard columns = micro_rows(dist::Shard{0, shard_.count}, micro);
    autograd::NoGrad no_grad;  // memory is a constant input: no graph
    TxlMemory part = position_.mems;
    for (Tensor& m : part) m = slice(m, 0, columns.begin, columns.begin + columns.count);  // on its device
    return part;
  }
  // The micro-batches' new memories side by side again (B, mlen, d) per layer.
  TxlMemory joined_memory() const {
    autograd::NoGrad no_grad;
    TxlMemory joined;
    if (micro_mems_.empty() || micro_mems_.front().empty()) return joined;
    for (size_t l = 0; l < micro_mems_.front().size(); ++l) {
      std::vector<Tensor> pieces;
      for (const TxlMemory& mems : micro_mems_) pieces.push_back(mems[l]);
      joined.push_back(concat(pieces, 0));
    }
    return joined;
  }

  const data::Corpus& corpus_;
  TransformerXL model_;
  const int64_t batch_;
  dist::Communicator& comm_;
  const dist::Shard shard_;
  const data::LMOrderedBatches train_batches_;
  const TxlEvalSettings final_eval_;
  TxlEvalSettings quick_eval_;
  const std::string checkpoint_path_, label_;
  const DecayKind decay_;
  StreamPosition position_;
  data::LMSegment segment_;            // the step's segment
  std::vector<TxlMemory> micro_mems_;  // the step's micro-batches' new memories
  TxlEvalResult last_eval_;
  bool scored_ = false, scored_whole_split_ = false;
};

}  // namespace

TxlTrainOutcome train_txl(const Config& config, const std::string& out_dir, const TrainOptions& options,
                        const data::Corpus* corpus_in) {
  TrainingRun run = begin_training_run(config, out_dir, options);
  const TxlSettings settings = txl_settings_from(run.config);
  data::Corpus loaded;
  if (!corpus_in) loaded = corpus_of(settings);
  const data::Corpus& corpus = corpus_in ? *corpus_in : loaded;
  URPE_CHECK(corpus.mode == settings.token_mode,
             "train_txl: the corpus given was read in " << data::token_mode_name(corpus.mode)
                                                       << " mode, the config asks for "
                                                       << data::token_mode_name(settings.token_mode));
  TxlTask task(run, settings, corpus);
  const TrainingOutcome trained = run_training(run, task);
  TxlTrainOutcome outcome;
  outcome.result = trained.result;
  outcome.final_valid_loss = task.last_eval().loss;
  outcome.interrupted = trained.interrupted;
  return outcome;
}

// ---- evaluating a run directory ----

TxlRunEval evaluate_txl_run(const std::string& run_dir, const std::string& split, const TxlEvalSettings* settings,
                          const data::Corpus* corpus_in, const std::string& device, const std::string& which) {
  URPE_CHECK(split == "valid" || split == "test", "evaluation split must be valid or test, got '" << split << "'");
  const std::string checkpoint = run_checkpoint_path(run_dir, which);
  TxlRunEval out{config_from_text(read_checkpoint_info(checkpoint).config_text, checkpoint + " (config)"), 0, 0, {}, {}};
  const RunSettings run = run_settings_from(out.config);
  URPE_CHECK(run.model == "txl", checkpoint << ": a '" << run.model << "' run, not a language model (model = txl)");
  const TxlSettings txl = txl_settings_from(out.config);
  data::Corpus loaded;
  if (!corpus_in) loaded = corpus_of(txl);
  const data::Corpus& corpus = corpus_in ? *corpus_in : loaded;
  TransformerXL model(txl_config_from(out.config, corpus.vocab.size()), 0,
                      parse_device(device.empty() ? run.device : device));
  out.step = load_checkpoint(checkpoint, model.parameters(), nullptr).progress.step;
  out.params = model.parameters().count();
  out.settings = settings ? *settings : txl.eval;
  out.result = evaluate_txl(model, corpus.split(split).ids, out.settings);
  return out;
}

}  // namespace urpe
