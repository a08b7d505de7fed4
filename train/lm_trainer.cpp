// The language-model loop: ordered segments with memory, Adam with clipping and a cosine (or
// linear) schedule, periodic evaluation with memory, checkpoints that hold the stream position
// and the memory, Ctrl-C saves and stops. The protocol is in lm_trainer.h.
#include "train/lm_trainer.h"

#include <cmath>
#include <cstdio>

#include "autograd/node.h"
#include "data/lm_batches.h"
#include "data/text_file.h"
#include "train/checkpoint.h"
#include "train/progress.h"
#include "train/run_control.h"
#include "train/run_config.h"
#include "train/schedule.h"

namespace urpe {

namespace {


uint64_t dropout_seed(uint64_t seed) { return seed * 2 + 2; }  // as the encoder trainer's stream

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

LmEvalResult evaluate_lm(TransformerXL& model, const std::vector<int32_t>& stream, const LmEvalSettings& s) {
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
  LmEvalResult r;
  r.loss = meter.loss();
  r.perplexity = meter.perplexity();
  r.predicted = meter.length() * batches.batch_size();
  return r;
}

data::Corpus corpus_from_config(const Config& config) {
  const std::string dir = corpus_dir_from(config);
  URPE_CHECK(data::directory_exists(dir),
             "corpus directory '" << dir << "' (config key `corpus`) does not exist; it should hold the "
                                  << "train/valid/test splits in WikiText format (for txl-base: the wiki.*.tokens "
                                  << "files of wikitext-103-v1), or use corpus = embedded");
  return data::load_corpus(dir, data::parse_token_mode(config.get_string("token_mode")));
}

// ---- training ----

LmTrainOutcome train_lm(const Config& config_in, const std::string& out_dir, const TrainOptions& options,
                        const data::Corpus* corpus_in) {
  Config config = config_in;
  const std::string checkpoint_path = open_run_directory(out_dir, options, config);
  const int64_t steps = config.get_int("steps"), batch = config.get_int("batch");
  const int64_t eval_every = config.get_int("eval_every");
  const uint64_t seed = static_cast<uint64_t>(config.get_int("seed"));
  URPE_CHECK(steps > 0 && batch > 0 && eval_every > 0, "config: steps, batch and eval_every must be positive");
  const LmEvalSettings final_eval = eval_settings_from(config);
  LmEvalSettings quick_eval = final_eval;
  quick_eval.max_tokens = config.get_int("max_eval_tokens");

  data::Corpus loaded;
  if (!corpus_in) loaded = corpus_from_config(config);
  const data::Corpus& corpus = corpus_in ? *corpus_in : loaded;
  URPE_CHECK(corpus.mode == data::parse_token_mode(config.get_string("token_mode")),
             "train_lm: the corpus given was read in " << data::token_mode_name(corpus.mode)
                                                       << " mode, the config asks for " << config.get_string("token_mode"));
  const Device device = parse_device(config.get_string("device"));
  ProfileWindow profile = apply_device_options(options, device, steps);
  TransformerXL model(txl_config_from(config, corpus.vocab.size()), seed, device);
  const int64_t tgt_len = config.get_int("tgt_len");
  URPE_CHECK(static_cast<int64_t>(corpus.train.ids.size()) >= 2 * batch,
             "the train split of '" << corpus.directory << "' has " << corpus.train.ids.size()
                                    << " tokens, too few for batch " << batch << " (needs 2 per column)");
  const data::LMOrderedBatches train_batches(corpus.train.ids, batch, tgt_len);

  Adam optimizer(model.parameters().tensors(), adam_config_from(config));
  LrSchedule schedule = lr_schedule_from(config, steps);
  schedule.decay = parse_decay_kind(config.get_string("schedule"));
  schedule.validate();

  TrainingProgress progress;
  progress.data_rng = Rng(seed);  // unused: the stream is ordered (kept for the checkpoint format)
  progress.dropout_rng = Rng(dropout_seed(seed));
  StreamPosition position;
  if (options.resume) {
    const CheckpointInfo info = load_checkpoint(checkpoint_path, model.parameters(), &optimizer);
    progress = info.progress;
    position = stream_position(info, checkpoint_path, model, batch, train_batches.num_segments(), device);
  } else {
    write_text_atomic(join_path(out_dir, "config.txt"), config.to_text());
  }
  MetricsLog metrics(join_path(out_dir, "metrics.csv"), options.resume, progress.step);
  ProgressLine line(options.label.empty() ? "[txl/" + config.get_string("pe") + "]" : options.label, steps,
                    progress.step, options.quiet);
  const std::string config_text = config.to_text();
  auto save = [&] {  // the checkpoint also holds where the stream stands (StreamPosition)
    save_checkpoint(checkpoint_path, model.parameters(), &optimizer, progress, config_text, stream_state(position));
  };

  LmTrainOutcome outcome;
  LmEvalResult last_eval;
  bool scored = false, scored_whole_split = false;
  StepMeter meter;
  EvalCadence cadence(steps, eval_every, options, out_dir, progress, metrics, line, meter, save);

  for (int64_t step = progress.step + 1; step <= steps; ++step) {
    meter.begin_step();
    profile.before_step(step);
    if (position.segment == train_batches.num_segments()) {  // a new epoch starts without memory
      position.segment = 0;
      ++position.epoch;
      position.mems.clear();
    }
    const data::LMSegment segment = train_batches.segment(position.segment, device);
    TxlStep out = model.forward(segment.data, segment.target, position.mems, true, &progress.dropout_rng);
    position.mems = std::move(out.mems);
    ++position.segment;
    optimizer.zero_grad();
    out.loss.backward();
    const float lr = schedule.at(step);
    optimizer.step(lr);
    profile.after_step(step);
    const double loss_value = out.loss.item();
    const double tokens_per_s = meter.end_step(step, loss_value, static_cast<double>(segment.length * batch), progress);
    line.update(step, loss_value, lr, tokens_per_s);

    auto train_perplexity = [](double train_loss) { return std::exp(train_loss); };
    auto validate = [&] {
      // The last evaluation scores the whole split: it is the run's result.
      last_eval = evaluate_lm(model, corpus.valid.ids, step == steps ? final_eval : quick_eval);
      scored = true;
      scored_whole_split = step == steps || quick_eval.max_tokens == 0;
      char text[160];
      std::snprintf(text, sizeof text, "step %lld: valid loss %.4f, perplexity %.2f (%lld tokens)",
                    static_cast<long long>(step), last_eval.loss, last_eval.perplexity,
                    static_cast<long long>(last_eval.predicted));
      return ValidationReport{last_eval.loss, last_eval.perplexity, text};
    };
    if (cadence.after_step(step, lr, tokens_per_s, train_perplexity, validate)) {
      outcome.interrupted = true;
      break;
    }
  }
  line.finish();
  // A finished run is scored on the whole split (also when resumed after it finished); an
  // interrupted one keeps its last evaluation.
  if (outcome.interrupted ? !scored : !scored_whole_split)
    last_eval = evaluate_lm(model, corpus.valid.ids, outcome.interrupted ? quick_eval : final_eval);

  ResultRow& r = outcome.result;
  r = run_result_row(options, config, progress, model.parameters().count(), device);
  r.task = "lm";
  r.model = "transformer_xl";
  r.metric_name = "valid_ppl";
  r.metric = last_eval.perplexity;
  outcome.final_valid_loss = last_eval.loss;
  write_run_result(out_dir, r);
  return outcome;
}

// ---- evaluating a run directory ----

LmRunEval evaluate_lm_run(const std::string& run_dir, const std::string& split, const LmEvalSettings* settings,
                          const data::Corpus* corpus_in) {
  URPE_CHECK(split == "valid" || split == "test", "evaluation split must be valid or test, got '" << split << "'");
  const std::string checkpoint = join_path(run_dir, "model.safetensors");
  URPE_CHECK(path_exists(checkpoint), "'" << run_dir << "' has no model.safetensors (not a run directory?)");
  LmRunEval out{config_from_text(read_checkpoint_info(checkpoint).config_text, checkpoint + " (config)"), 0, 0, {}, {}};
  URPE_CHECK(out.config.get_string("model") == "txl",
             checkpoint << ": a '" << out.config.get_string("model") << "' run, not a language model (model = txl)");
  data::Corpus loaded;
  if (!corpus_in) loaded = corpus_from_config(out.config);
  const data::Corpus& corpus = corpus_in ? *corpus_in : loaded;
  TransformerXL model(txl_config_from(out.config, corpus.vocab.size()), 0, parse_device(out.config.get_string("device")));
  out.step = load_checkpoint(checkpoint, model.parameters(), nullptr).progress.step;
  out.params = model.parameters().count();
  out.settings = settings ? *settings : eval_settings_from(out.config);
  out.result = evaluate_lm(model, corpus.split(split).ids, out.settings);
  return out;
}

}  // namespace urpe
