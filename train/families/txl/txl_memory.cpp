// Transformer-XL's memory estimate (models/transformer_xl.h; memory_estimate.h says what is
// estimated and why): attention over tgt_len + mem_len keys in training and evaluation, the full
// or adaptive softmax's logits, and the parameters by group, from the keys of txl_config.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "train/config/memory_estimate.h"
#include "train/families/txl/txl_config.h"

namespace urpe {

// The size-factor helpers shared by the families' estimates (train/config/memory_estimate.h).
using size_terms::constant;
using size_terms::key_factor;
using size_terms::value_of;

namespace {

// The corpus decides the vocabulary; WikiText-103's 267,735 words are the largest the paper uses.
SizeFactor corpus_vocabulary(int64_t vocab) {
  return {"corpus vocabulary", static_cast<double>(vocab), 1, {}, 267735};
}

}  // namespace

MemoryEstimate estimate_txl_memory(const Config& config, int64_t vocab) {
  const TxlSettings settings = txl_settings_from(config);
  MemoryEstimate e;
  const SizeFactor batch = key_factor(config, "batch"), q = key_factor(config, "tgt_len");
  const SizeFactor heads = key_factor(config, "heads"), d_head = key_factor(config, "d_head");
  const SizeFactor d = key_factor(config, "d_model"), d_inner = key_factor(config, "d_inner");
  const SizeFactor layers = key_factor(config, "layers");
  const SizeFactor klen{"(tgt_len + mem_len)", q.value + value_of(config, "mem_len"), 1, {"tgt_len", "mem_len"}};
  // Evaluation segments (eval_tgt_len 0 = tgt_len, eval_mem_len -1 = mem_len), eval_batch columns.
  const bool own_tgt = settings.own_eval_tgt_len, own_mem = settings.own_eval_mem_len;
  const std::string tgt_key = own_tgt ? "eval_tgt_len" : "tgt_len";
  const std::string mem_key = own_mem ? "eval_mem_len" : "mem_len";
  const SizeFactor eval_batch = key_factor(config, "eval_batch"), eval_q = key_factor(config, tgt_key);
  const SizeFactor eval_klen{"(" + tgt_key + " + " + mem_key + ")", eval_q.value + value_of(config, mem_key), 1,
                             {tgt_key, mem_key}};
  e.activations = {{"attention scores", {batch, heads, q, klen}},
                   {"evaluation attention scores", {eval_batch, heads, eval_q, eval_klen}},
                   {"queries, keys and values", {batch, klen, constant(3), heads, d_head}},
                   {"the feed-forward hidden layer", {batch, q, d_inner}},
                   {"hidden states with memory", {batch, klen, d}}};
  // Logits: the full softmax over the vocabulary, or the adaptive softmax's head (its first
  // cluster plus one logit per tail cluster; the tails see only their own tokens).
  const std::vector<int64_t>& cutoffs = settings.cutoffs;
  if (!cutoffs.empty()) {
    const SizeFactor head{"adaptive head (cutoffs[0] + clusters)", static_cast<double>(cutoffs[0] + cutoffs.size()), 1,
                          {"cutoffs"}};
    e.activations.push_back({"logits", {batch, q, head}});
    e.activations.push_back({"evaluation logits", {eval_batch, eval_q, head}});
  } else if (vocab > 0) {
    const SizeFactor v = corpus_vocabulary(vocab);
    e.activations.push_back({"logits", {batch, q, v}});
    e.activations.push_back({"evaluation logits", {eval_batch, eval_q, v}});
  }
  if (vocab > 0)
    e.parameters.push_back({"the token embedding", {corpus_vocabulary(vocab), d}});
  // pe: rpe | urpe (R, r_net and the BD term) or alibi | alibi+urpe (a fixed bias per distance instead).
  const std::string& pe = settings.pe;
  const bool alibi = pe == "alibi" || pe == "alibi+urpe";
  // u (r_w_bias) and, with R, v (r_r_bias): (H, d_head) each, shared by the layers
  e.parameters.push_back({alibi ? "the content bias u" : "the biases u, v", {constant(alibi ? 1 : 2), heads, d_head}});
  if (alibi) {
    e.parameters.push_back({"the attention projections (q, k, v, output)", {layers, constant(4), d, heads, d_head}});
    e.fixed_tables.push_back({"the ALiBi bias table", {heads, klen}});
    e.fixed_tables.push_back({"the ALiBi distance map", {q, klen}});
  } else {
    e.parameters.push_back({"the attention projections (q, k, v, r, output)", {layers, constant(5), d, heads, d_head}});
    e.activations.push_back({"the relative-position table R", {klen, d}});
  }
  e.parameters.push_back({"the feed-forward weights", {layers, constant(2), d, d_inner}});
  if (pe == "urpe" || pe == "alibi+urpe") {
    e.parameters.push_back({"the URPE table", {heads, klen}});
    e.fixed_tables.push_back({"the URPE distance map", {q, klen}});
  }
  return e;
}

}  // namespace urpe
