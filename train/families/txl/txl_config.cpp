// txl keys and their translation into model and evaluation settings (see txl_config.h). The
// defaults are the txl-tiny setting's model (a small model a CPU trains in minutes); the presets
// in run_config.cpp set every key that differs, txl-base the paper's WikiText-103 base
// (docs/transformer_xl.md#presets).
#include "train/families/txl/txl_config.h"

#include <sstream>

#include "data/corpus.h"
#include "tensor/error.h"
#include "train/config/config_checks.h"
#include "base/io/run_dir.h"
#include "train/config/run_config.h"
#include "train/config/memory_estimate.h"

namespace urpe {

const std::vector<std::string>& txl_positional_names() {
  static const std::vector<std::string> names = {"rpe", "urpe", "alibi", "alibi+urpe"};
  return names;
}

void add_txl_keys(ConfigSchema& s) {
  s.add_choice("pe", txl_positional_names(), "urpe",
               "positional encoding: rpe = plain Transformer-XL relative attention, urpe = plus the "
               "shared Toeplitz C (docs/transformer_xl.md#urpe-variant); alibi = ALiBi's fixed bias "
               "-m_h*distance instead of the relative term, alibi+urpe = plus C "
               "(docs/transformer_xl.md#alibi-variant; the other encodings are not offered for Transformer-XL: "
               "docs/theory.md#transformer-xl-which-encodings-fit)");
  s.add_string("corpus", "embedded",
               "WikiText-format corpus directory (train/valid/test .txt or wiki.*.tokens, plain or "
               "gzip); embedded = the Austen + King James Bible corpus shipped in data/assets/corpus");
  s.add_choice("token_mode", {"word", "char"}, "word", "tokens: whitespace-separated words or characters");
  s.add_int("layers", 2, "Transformer-XL layers");
  s.add_int("d_model", 128, "model width (even)");
  s.add_int("heads", 4, "attention heads");
  s.add_int("d_head", 32, "width per head (heads·d_head need not equal d_model)");
  s.add_int("d_inner", 512, "feed-forward hidden width");
  s.add_float("dropout", 0.1, "dropout on embeddings, R, attention and FFN outputs, last layer");
  s.add_float("dropatt", 0.0, "dropout on the attention probabilities");
  s.add_int("tgt_len", 32, "training segment length (tokens predicted per column and step)");
  s.add_int("mem_len", 32, "cached hidden states per layer carried to the next segment (0 = none)");
  s.add_int("clamp_len", -1,
            "training: relative distances above this use its embedding (alibi: its bias; <= 0: no clamp)");
  s.add_int("eval_tgt_len", 0, "evaluation segment length (0 = tgt_len)");
  s.add_int("eval_mem_len", -1, "evaluation memory length (-1 = mem_len; 0 = no memory)");
  s.add_int("eval_clamp_len", -1, "evaluation clamp of relative distances (<= 0: no clamp)");
  s.add_bool("same_length", false, "evaluation: every query sees exactly eval_mem_len keys (needs memory)");
  s.add_int("eval_batch", 10, "evaluation columns: each split is cut into this many contiguous streams");
  s.add_int("max_eval_tokens", 0,
            "in-training evaluations score only the first this many valid tokens (0 = all); the "
            "final evaluation always scores the whole split");
  s.add_string("cutoffs", "", "adaptive softmax cluster starts, comma-separated and increasing "
                              "(e.g. 20000,40000,200000); empty = full softmax");
  s.add_choice("schedule", {"cosine", "linear"}, "cosine",
               "learning-rate decay to 0 at `steps` after the warm-up (cosine as in Transformer-XL)");
  s.add_float("init_std", 0.02, "std of the N(0, std) weight init (LayerNorm gains N(1, std))");
}

std::vector<int64_t> parse_cutoffs(const std::string& text) {
  std::vector<int64_t> cutoffs;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const size_t a = part.find_first_not_of(" \t"), b = part.find_last_not_of(" \t");
    if (a == std::string::npos) {
      URPE_CHECK(text.find_first_not_of(" \t") == std::string::npos,
                 "config: cutoffs '" << text << "' has an empty entry (expected e.g. 20000,40000)");
      continue;
    }
    const std::string number = part.substr(a, b - a + 1);
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(number, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    URPE_CHECK(used == number.size() && value > 0,
               "config: cutoffs '" << text << "': '" << number << "' is not a positive integer");
    URPE_CHECK(cutoffs.empty() || value > cutoffs.back(),
               "config: cutoffs '" << text << "' must increase strictly");
    cutoffs.push_back(value);
  }
  return cutoffs;
}

std::string corpus_dir_from(const Config& config) { return corpus_dir_named(config.get_string("corpus")); }

std::string corpus_dir_named(const std::string& corpus) {
  if (corpus == "embedded") return data::embedded_corpus_dir();
  check_corpus_key(corpus);
  return corpus;
}

void check_txl_paths(const Config& config) { check_corpus_key(config.get_string("corpus")); }

void check_corpus_key(const std::string& corpus) {
  if (corpus == "embedded") return;
  URPE_CHECK(path_exists(corpus),
             "corpus directory '" << corpus << "' (config key `corpus`) does not exist; it should hold the "
                                  << "train/valid/test splits in WikiText format (for txl-base: the wiki.*.tokens "
                                  << "files of wikitext-103-v1), or use corpus = embedded");
  URPE_CHECK(is_directory(corpus),
             "config: corpus '" << corpus << "' is a file; expected a directory holding the train/valid/test "
                                << "splits (train.txt, valid.txt, test.txt, plain or .gz, or wiki.*.tokens)");
}

void check_txl_values(const Config& c) {
  using namespace config_check;
  for (const char* key : {"layers", "heads", "d_head", "d_inner", "tgt_len", "eval_batch"}) int_at_least(c, key, 1);
  URPE_CHECK(c.get_int("d_model") > 0 && c.get_int("d_model") % 2 == 0,
             "config: d_model must be positive and even (sinusoidal positions pair its dimensions), got "
                 << c.get_int("d_model"));
  int_at_least(c, "mem_len", 0);
  probability(c, "dropout");
  probability(c, "dropatt");
  positive(c, "init_std");
  int_at_least(c, "max_eval_tokens", 0);
  parse_cutoffs(c.get_string("cutoffs"));
  eval_settings_from(c);  // eval_tgt_len, eval_mem_len, same_length
}

TransformerXLConfig txl_config_from(const Config& config, int64_t vocab) {
  TransformerXLConfig c;
  c.vocab = vocab;
  c.layers = config.get_int("layers");
  c.d_model = config.get_int("d_model");
  c.heads = config.get_int("heads");
  c.d_head = config.get_int("d_head");
  c.d_inner = config.get_int("d_inner");
  c.dropout = static_cast<float>(config.get_float("dropout"));
  c.dropatt = static_cast<float>(config.get_float("dropatt"));
  c.tgt_len = config.get_int("tgt_len");
  c.mem_len = config.get_int("mem_len");
  c.clamp_len = config.get_int("clamp_len");
  c.same_length = false;  // training as in docs/transformer_xl.md#presets; evaluation sets its own (set_memory_options)
  c.cutoffs = parse_cutoffs(config.get_string("cutoffs"));
  const std::string pe = config.get_string("pe");
  c.urpe = pe == "urpe" || pe == "alibi+urpe";
  c.alibi = pe == "alibi" || pe == "alibi+urpe";
  c.init_std = static_cast<float>(config.get_float("init_std"));
  c.linear_dtype = linear_dtype_of(config);
  URPE_CHECK(c.layers > 0 && c.heads > 0 && c.d_head > 0 && c.d_inner > 0,
             "config: layers, heads, d_head and d_inner must be positive");
  URPE_CHECK(c.d_model > 0 && c.d_model % 2 == 0, "config: d_model must be positive and even, got " << c.d_model);
  URPE_CHECK(c.tgt_len > 0 && c.mem_len >= 0,
             "config: tgt_len must be positive and mem_len >= 0, got " << c.tgt_len << " and " << c.mem_len);
  for (const auto& [key, p] : {std::pair<const char*, float>{"dropout", c.dropout}, {"dropatt", c.dropatt}})
    URPE_CHECK(p >= 0.0f && p < 1.0f, "config: " << key << " must be in [0, 1), got " << p);
  URPE_CHECK(c.init_std > 0.0f, "config: init_std must be positive, got " << c.init_std);
  if (!c.cutoffs.empty())
    URPE_CHECK(c.cutoffs.back() < vocab,
               "config: cutoffs " << config.get_string("cutoffs") << " need a vocabulary larger than "
                                  << c.cutoffs.back() << ", but the corpus has " << vocab
                                  << " tokens (set smaller cutoffs, or cutoffs= for a full softmax)");
  // Now that the vocabulary is known: the embedding and full-softmax logits join the estimate.
  check_memory_estimate(config, estimate_txl_memory(config, vocab), memory_bound_for_device(config.get_string("device")));
  return c;
}

TxlEvalSettings eval_settings_from(const Config& config) {
  TxlEvalSettings e;
  // The keys the eval_* ones fall back on are checked first, so their errors name the key the
  // user set (tgt_len = 0, not the eval_tgt_len derived from it).
  URPE_CHECK(config.get_int("tgt_len") > 0, "config: tgt_len must be positive, got " << config.get_int("tgt_len"));
  URPE_CHECK(config.get_int("mem_len") >= 0, "config: mem_len must be >= 0, got " << config.get_int("mem_len"));
  URPE_CHECK(config.get_int("eval_tgt_len") >= 0,
             "config: eval_tgt_len must be positive (or 0 for tgt_len), got " << config.get_int("eval_tgt_len"));
  URPE_CHECK(config.get_int("eval_mem_len") >= -1,
             "config: eval_mem_len must be >= 0 (or -1 for mem_len), got " << config.get_int("eval_mem_len"));
  e.batch = config.get_int("eval_batch");
  e.tgt_len = config.get_int("eval_tgt_len");
  if (e.tgt_len == 0) e.tgt_len = config.get_int("tgt_len");
  e.mem_len = config.get_int("eval_mem_len");
  if (e.mem_len == -1) e.mem_len = config.get_int("mem_len");
  e.clamp_len = config.get_int("eval_clamp_len");
  e.same_length = config.get_bool("same_length");
  URPE_CHECK(e.batch > 0, "config: eval_batch must be positive, got " << e.batch);
  URPE_CHECK(e.tgt_len > 0, "config: eval_tgt_len must be positive (or 0 for tgt_len), got " << e.tgt_len);
  URPE_CHECK(e.mem_len >= 0, "config: eval_mem_len must be >= 0 (or -1 for mem_len), got " << e.mem_len);
  URPE_CHECK(!e.same_length || e.mem_len > 0, "config: same_length needs an evaluation memory (eval_mem_len > 0)");
  URPE_CHECK(config.get_int("max_eval_tokens") >= 0, "config: max_eval_tokens must be >= 0");
  return e;
}

TxlSettings txl_settings_from(const Config& c) {
  TxlSettings s;
  s.pe = c.get_string("pe");
  s.corpus = c.get_string("corpus");
  s.token_mode = data::parse_token_mode(c.get_string("token_mode"));
  s.tgt_len = c.get_int("tgt_len");
  s.mem_len = c.get_int("mem_len");
  s.schedule = parse_decay_kind(c.get_string("schedule"));
  s.max_eval_tokens = c.get_int("max_eval_tokens");
  s.eval = eval_settings_from(c);
  s.own_eval_tgt_len = c.get_int("eval_tgt_len") > 0;
  s.own_eval_mem_len = c.get_int("eval_mem_len") >= 0;
  s.cutoffs = parse_cutoffs(c.get_string("cutoffs"));
  return s;
}

}  // namespace urpe
