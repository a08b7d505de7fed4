// The keys of the `txl` model family (Transformer-XL language modelling, docs/transformer_xl.md, and its URPE
// variant, #urpe-variant there) and how a resolved config becomes a model, a corpus and evaluation
// settings. The presets txl-tiny / txl-small / txl-base live with the others in run_config.cpp.
//
// Training and evaluation settings are separate keys, as in the official code: training runs
// segments of tgt_len tokens with mem_len cached states (clamp_len, no same_length, #presets there);
// every evaluation (in-training, final, `urpe eval`) runs the eval_* settings over the whole
// split with the memory carried from segment to segment (#evaluation-protocol there).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "models/transformer_xl.h"
#include "train/loop/schedule.h"
#include "base/io/config.h"

namespace urpe {

// The `pe` values of Transformer-XL: its own relative encoding (rpe) or ALiBi's fixed bias in its
// place (alibi), each with URPE's C on top (urpe, alibi+urpe). docs/theory.md#transformer-xl-which-encodings-fit
// says why the encoder's other encodings are not offered here.
const std::vector<std::string>& txl_positional_names();

// Adds the txl keys (pe, corpus, token_mode, layers, ..., eval_batch) to a schema.
void add_txl_keys(ConfigSchema& schema);

// "20000,40000,200000" → {20000, 40000, 200000}; "" → {} (full softmax). Errors name the key.
std::vector<int64_t> parse_cutoffs(const std::string& text);

// The corpus directory a config names: `corpus = embedded` is the corpus shipped with urpe.
// A path that is missing or is a file is an error naming the key.
std::string corpus_dir_from(const Config& config);
// The same from the `corpus` key's value.
std::string corpus_dir_named(const std::string& corpus);

// What the txl keys mean, checked without reading the corpus (run by check_config_values):
// positive sizes, even d_model, dropouts in [0, 1), tgt_len > 0, mem_len >= 0, the eval_* keys
// and cutoffs; each error names the key the user sets.
void check_txl_values(const Config& config);
// `corpus` names a directory (run by check_config_paths).
void check_txl_paths(const Config& config);
// The same for the `corpus` key's value.
void check_corpus_key(const std::string& corpus);

// The model a config describes for a corpus of `vocab` tokens. Checks the values a model would
// otherwise reject later (heads, cutoffs against the vocabulary, dropout range) with messages
// that name the config keys.
TransformerXLConfig txl_config_from(const Config& config, int64_t vocab);

// Evaluation settings (docs/transformer_xl.md#evaluation-protocol): segments of tgt_len tokens over
// batch columns, mem_len
// cached states, clamp_len, same_length; max_tokens > 0 scores only the first max_tokens tokens
// of the split (a quick in-training estimate), 0 the whole split.
struct TxlEvalSettings {
  int64_t batch = 10;
  int64_t tgt_len = 64;
  int64_t mem_len = 640;
  int64_t clamp_len = 400;
  bool same_length = true;
  int64_t max_tokens = 0;
};
// The eval_* keys of a config (eval_tgt_len = 0 means tgt_len, eval_mem_len = -1 means mem_len;
// eval_clamp_len ≤ 0 is no clamp) and same_length; max_tokens = 0.
TxlEvalSettings eval_settings_from(const Config& config);

// The txl keys the trainer, evaluation, memory estimate and plots read, typed once (the config
// boundary, train/config/run_settings.h); the model's own keys become a TransformerXLConfig in
// txl_config_from once the corpus gives the vocabulary. Adding a setting: add_txl_keys declares
// it, check_txl_values checks it, a field here and a line in txl_settings_from read it.
struct TxlSettings {
  std::string pe;      // rpe, urpe, alibi or alibi+urpe
  std::string corpus;  // the `corpus` key as written ("embedded" or a directory; corpus_dir_named)
  data::TokenMode token_mode = data::TokenMode::word;
  int64_t tgt_len = 0, mem_len = 0;
  DecayKind schedule = DecayKind::linear;
  int64_t max_eval_tokens = 0;  // the in-training evaluations' subset; 0 = the whole split
  TxlEvalSettings eval;         // eval_settings_from
  // Whether eval_tgt_len / eval_mem_len have values of their own (not 0 = tgt_len, -1 = mem_len).
  bool own_eval_tgt_len = false, own_eval_mem_len = false;
  std::vector<int64_t> cutoffs;  // the adaptive softmax's; empty = full softmax
};
// The keys of a resolved txl config (check_txl_values has checked them).
TxlSettings txl_settings_from(const Config& config);

}  // namespace urpe
