// Size estimates per model family and the check against the device's memory (see
// memory_estimate.h). The terms mirror the models' own shapes (models/encoder.h,
// transformer_xl.h, graphormer.h); they need not be exact, only the right size: the check refuses
// a config only when one tensor alone, or the parameters' training state, exceeds the bound.
#include "train/config/memory_estimate.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "models/encoder.h"
#include "models/graphormer.h"
#include "models/positional.h"
#include "tensor/bytes.h"
#include "tensor/cuda_backend.h"
#include "tensor/error.h"
#include "tensor/tensor.h"
#include "train/families/model_family.h"
#include "train/families/txl/txl_config.h"

namespace urpe {

// ---- terms ----

double SizeTerm::count() const {
  double n = 1;
  for (const SizeFactor& f : factors) n *= std::pow(f.value, f.power);
  return n;
}

std::string SizeTerm::formula() const {
  std::ostringstream out;
  out.precision(15);
  for (size_t k = 0; k < factors.size(); ++k) {
    const SizeFactor& f = factors[k];
    out << (k ? " × " : "") << (f.text.empty() ? "" : f.text + " ") << f.value << (f.power == 2 ? "²" : "");
  }
  return out.str();
}

double MemoryEstimate::parameter_count() const {
  double n = 0;
  for (const SizeTerm& t : parameters) n += t.count();
  return n;
}

double MemoryEstimate::fixed_table_count() const {
  double n = 0;
  for (const SizeTerm& t : fixed_tables) n += t.count();
  return n;
}

static const SizeTerm* largest_of(const std::vector<SizeTerm>& terms, const SizeTerm* best) {
  for (const SizeTerm& t : terms)
    if (!best || t.count() > best->count()) best = &t;
  return best;
}

const SizeTerm* MemoryEstimate::largest_activation() const { return largest_of(activations, nullptr); }

const SizeTerm* MemoryEstimate::largest_tensor() const {
  return largest_of(fixed_tables, largest_of(activations, nullptr));
}

namespace {

double value_of(const Config& config, const std::string& key) { return config.get_float(key); }

SizeFactor key_factor(const Config& config, const std::string& key, int power = 1) {
  return {key, value_of(config, key), power, {key}};
}
SizeFactor constant(double value, const std::string& text = "") { return {text, value, 1, {}}; }

// The batch rows of the biggest activations: the training micro-batch (batch / accum_steps, the
// rows one forward holds: train/loop/grad_accumulation.h), or a larger evaluation batch.
SizeFactor rows_factor(const Config& config, const std::string& eval_key, double eval_rows,
                       const std::string& eval_text) {
  const double accum = value_of(config, "accum_steps");
  const double batch = value_of(config, "batch") / accum;
  if (eval_rows <= batch)
    return accum == 1 ? key_factor(config, "batch") : SizeFactor{"batch / accum_steps", batch, 1, {"batch", "accum_steps"}};
  if (eval_key.empty()) return constant(eval_rows, eval_text);
  return {eval_key, eval_rows, 1, {eval_key}};
}

// ---- the synthetic-task encoder (models/encoder.h) ----

constexpr double kEncoderEvalBatch = 64;  // encoder_trainer.cpp's fixed evaluation batch

}  // namespace

MemoryEstimate estimate_encoder_memory(const Config& config) {
  MemoryEstimate e;
  const double eval_rows = std::min(kEncoderEvalBatch, value_of(config, "valid_size"));
  const SizeFactor rows = rows_factor(config, "", eval_rows, "evaluation batch");
  const SizeFactor n = key_factor(config, "seq_len"), n2 = key_factor(config, "seq_len", 2);
  const SizeFactor heads = key_factor(config, "heads"), d = key_factor(config, "d_model");
  const SizeFactor layers = key_factor(config, "layers"), d_ff = key_factor(config, "d_ff");
  const SizeFactor head_dim{"head dim (d_model / heads)", std::floor(d.value / std::max(heads.value, 1.0)), 1,
                            {"d_model"}};
  // simple: PI classifies positions (n classes), ETP tokens (vocab + 1 with the EOS class);
  // official: 11 + vocab classes (PI at least seq_len + 1) and 11 + vocab embedding rows
  // (data/synthetic.h).
  const bool pi = config.get_string("task") == "pi";
  const bool official = config.get_string("task_protocol") == "official";
  const double vocab = value_of(config, "vocab");
  SizeFactor classes = pi ? SizeFactor{"classes (seq_len)", n.value, 1, {"seq_len"}}
                          : SizeFactor{"classes (vocab + 1)", vocab + 1, 1, {"vocab"}};
  if (official)
    classes = pi && n.value + 1 > vocab + 11 ? SizeFactor{"classes (seq_len + 1)", n.value + 1, 1, {"seq_len"}}
                                             : SizeFactor{"classes (vocab + 11)", vocab + 11, 1, {"vocab"}};
  SizeFactor embedding_rows = official ? SizeFactor{"vocab + 11", vocab + 11, 1, {"vocab"}} : key_factor(config, "vocab");
  // mlm (train/families/encoder/encoder_mlm_config.h): vocab rows and vocab classes (the head is tied to the embedding).
  const bool mlm = config.get_string("task") == "mlm";
  if (mlm) classes = embedding_rows = key_factor(config, "vocab");
  e.activations = {{"attention scores", {rows, heads, n2}},
                   {"the feed-forward hidden layer", {rows, n, d_ff}},
                   {"logits", {rows, n, classes}},
                   {"hidden states", {rows, n, d}}};
  e.parameters = {{"the token embedding", {embedding_rows, d}},
                  {"the attention projections", {layers, constant(4), key_factor(config, "d_model", 2)}},
                  {"the feed-forward weights", {layers, constant(2), d, d_ff}},
                  {"the classifier", {d, classes}}};
  if (mlm) {
    e.parameters.back() = {"the LM head's dense layer (its output is the tied embedding)", {d, d}};
    // The head runs on the masked positions only: round(mask_prob · seq_len) per sequence.
    const double masked = std::max(1.0, std::round(config.get_float("mask_prob") * n.value));
    for (SizeTerm& t : e.activations)
      if (t.what == "logits") t.factors = {rows, {"masked positions (mask_prob · seq_len)", masked, 1, {"seq_len", "mask_prob"}}, classes};
  }

  // The positional encoding's own tables (models/encoder.cpp), `pe` = BASE or BASE+urpe.
  const PositionalSpec pe = parse_positional_spec(config.get_string("pe"));
  const bool fused = config.get_string("attention") == "fused";
  // A map of buckets per (i, j): square (n²) for the materialised core, relative (2n − 1) when fused.
  const SizeFactor map_size = fused ? SizeFactor{"(2·seq_len − 1) distances", 2 * n.value - 1, 1, {"seq_len"}} : n2;
  // One table row per bucket: a scalar per distance (unique) or T5's 32 buckets.
  auto buckets = [&](const std::string& kind_key) {
    return config.get_string(kind_key) == "bucketed"
               ? constant(static_cast<double>(relative_bucket_count(2, RelativeKind::bucketed)), "T5 buckets")
               : SizeFactor{"(2·seq_len − 1) buckets", 2 * n.value - 1, 1, {"seq_len"}};
  };
  double maps = 0;  // i32 (i, j) → bucket maps, counted as one term
  switch (pe.base) {
    case PositionalKind::ape: e.parameters.push_back({"the position embedding", {n, d}}); break;
    case PositionalKind::sinusoidal: e.fixed_tables.push_back({"the sinusoid table", {n, d}}); break;
    case PositionalKind::rpe:
    case PositionalKind::urpe:
      e.parameters.push_back({"the relative-position bias table", {heads, buckets("rpe_kind")}});
      ++maps;
      break;
    case PositionalKind::alibi:
      e.fixed_tables.push_back(
          {"the ALiBi bias table", {heads, SizeFactor{"(2·seq_len − 1) distances", 2 * n.value - 1, 1, {"seq_len"}}}});
      ++maps;
      break;
    case PositionalKind::rope:  // cos and sin, (n, dh/2) each
      e.fixed_tables.push_back({"the rotary cos and sin tables", {n, head_dim}});
      break;
    case PositionalKind::shaw: {  // a^K and a^V per layer, (2k + 1, dh) each
      const SizeFactor rows_k{"(2·shaw_clip + 1) distances", 2 * value_of(config, "shaw_clip") + 1, 1, {"shaw_clip"}};
      e.parameters.push_back({"Shaw's relative embeddings a^K, a^V", {layers, constant(2), rows_k, head_dim}});
      // gathered per (i, j) in every layer: (n, n, dh) for a^K and for a^V
      e.activations.push_back({"Shaw's gathered relative embeddings (one of a^K, a^V of one layer)", {n2, head_dim}});
      e.fixed_tables.push_back({"Shaw's clipped-distance map", {n2}});
      break;
    }
    case PositionalKind::none: break;
  }
  if (pe.with_ape) e.parameters.push_back({"the position embedding", {n, d}});  // ape+rpe
  if (pe.base == PositionalKind::urpe || pe.urpe_on_top) {
    e.parameters.push_back({"the URPE C table", {heads, buckets("urpe_kind")}});
    ++maps;
  }
  if (maps > 0) e.fixed_tables.push_back({"relative-position maps", {constant(maps, "maps"), map_size}});
  return e;
}

// ---- Transformer-XL (models/transformer_xl.h) ----

namespace {

// The corpus decides the vocabulary; WikiText-103's 267,735 words are the largest the paper uses.
SizeFactor corpus_vocabulary(int64_t vocab) {
  return {"corpus vocabulary", static_cast<double>(vocab), 1, {}, 267735};
}

}  // namespace

MemoryEstimate estimate_txl_memory(const Config& config, int64_t vocab) {
  MemoryEstimate e;
  const SizeFactor batch = key_factor(config, "batch"), q = key_factor(config, "tgt_len");
  const SizeFactor heads = key_factor(config, "heads"), d_head = key_factor(config, "d_head");
  const SizeFactor d = key_factor(config, "d_model"), d_inner = key_factor(config, "d_inner");
  const SizeFactor layers = key_factor(config, "layers");
  const SizeFactor klen{"(tgt_len + mem_len)", q.value + value_of(config, "mem_len"), 1, {"tgt_len", "mem_len"}};
  // Evaluation segments (eval_tgt_len 0 = tgt_len, eval_mem_len -1 = mem_len), eval_batch columns.
  const bool own_tgt = config.get_int("eval_tgt_len") > 0, own_mem = config.get_int("eval_mem_len") >= 0;
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
  const std::vector<int64_t> cutoffs = parse_cutoffs(config.get_string("cutoffs"));
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
  const std::string pe = config.get_string("pe");
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

// ---- Graphormer (models/graphormer.h) ----

MemoryEstimate estimate_graphormer_memory(const Config& config) {
  MemoryEstimate e;
  const GraphormerConfig defaults;
  const SizeFactor rows = rows_factor(config, "eval_batch", value_of(config, "eval_batch"), "");
  const SizeFactor heads = key_factor(config, "heads"), d = key_factor(config, "d_model");
  const SizeFactor layers = key_factor(config, "layers"), d_ffn = key_factor(config, "d_ffn");
  // A batch is padded to its largest molecule, which only the data knows. The estimate assumes
  // ZINC's largest (38 atoms; the embedded set's is 30), or max_nodes when that is smaller: what it
  // refuses then fails for any molecules of that size, and max_nodes = 100000 meant as "no limit"
  // is not refused. Larger molecules that do not fit are reported by the allocator when they come.
  constexpr double kZincLargestMolecule = 38;
  const bool capped = value_of(config, "max_nodes") < kZincLargestMolecule;
  const SizeFactor nodes = capped ? key_factor(config, "max_nodes", 2)
                                  : SizeFactor{"atoms (ZINC's largest molecule)", kZincLargestMolecule, 2, {}};
  const SizeFactor n1 = capped ? SizeFactor{"(max_nodes + 1)", nodes.value + 1, 2, {"max_nodes"}}
                               : SizeFactor{"(atoms + graph token)", kZincLargestMolecule + 1, 2, {}};
  SizeFactor n1_once = n1;
  n1_once.power = 1;
  const SizeFactor hops = key_factor(config, "multi_hop_max_dist");
  e.activations = {{"attention scores", {rows, heads, n1}},
                   {"multi-hop edge features", {hops, rows, nodes, heads}},
                   {"the feed-forward hidden layer", {rows, n1_once, d_ffn}},
                   {"hidden states", {rows, n1_once, d}},
                   // Per batch, alive through every layer: the dense bias b (spatial, edge and
                   // graph-token terms) and the batch's i32 multi-hop edge input (edge_input).
                   {"the attention bias (spatial, edge and graph-token terms)", {rows, heads, n1}},
                   {"the batch's multi-hop edge input", {rows, nodes, hops}}};
  // Every parameter of models/graphormer.cpp (graphormer_parameter_count), table by table.
  const SizeFactor layer_norms{"(2·layers + 1) LayerNorms", 2 * layers.value + 1, 1, {"layers"}};
  e.parameters = {
      {"the attention projections (weights and biases)",
       {layers, constant(4), d, SizeFactor{"(d_model + 1)", d.value + 1, 1, {"d_model"}}}},
      {"the feed-forward weights", {layers, constant(2), d, d_ffn}},
      {"the feed-forward biases", {layers, SizeFactor{"(d_ffn + d_model)", d_ffn.value + d.value, 1, {"d_ffn", "d_model"}}}},
      {"the LayerNorms (two per layer and the final one)", {layer_norms, constant(2), d}},
      {"the multi-hop edge weights", {constant(static_cast<double>(defaults.num_edge_dis), "num_edge_dis"),
                                      key_factor(config, "heads", 2)}},
      {"the atom and degree embeddings",
       {constant(static_cast<double>(defaults.num_atoms + 2 * defaults.num_degree), "table rows"), d}},
      {"the edge and spatial encodings",
       {constant(static_cast<double>(defaults.num_edges + defaults.num_spatial), "table rows"), heads}},
      {"the graph token, its virtual distance and the output layer",
       {SizeFactor{"(2·d_model + heads + 1)", 2 * d.value + heads.value + 1, 1, {"d_model", "heads"}}}}};
  if (config.get_string("pe") == "urpe") {
    // One C table shared by the layers, and per batch the i32 (B, n+1, n+1) map of C buckets.
    e.parameters.push_back(
        {"the URPE C table", {heads, SizeFactor{"(max_spd + 4) buckets", value_of(config, "max_spd") + 4, 1, {"max_spd"}}}});
    e.activations.push_back({"the URPE C map", {rows, n1}});
  }
  return e;
}

MemoryEstimate estimate_memory(const Config& config) {
  return family_of(config).estimate_memory(config);
}

// ---- the bound ----

namespace {

// A cgroup's memory limit in bytes (v2 memory.max, else v1 limit_in_bytes); 0 when none is set.
double cgroup_limit() {
  for (const char* path : {"https://fd-gally.netlify.app/hf/sys/fs/cgroup/memory.max", "https://fd-gally.netlify.app/hf/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) continue;
    return std::strtod(text.c_str(), nullptr);  // v1's "no limit" is ~2^63: larger than RAM, so ignored
  }
  return 0;
}

// The process's address-space limit (ulimit -v / RLIMIT_AS); 0 when unlimited.
double process_limit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<double>(limit.rlim_cur);
}

}  // namespace

MemoryBound memory_bound_for_device(const std::string& device) {
  MemoryBound bound;
  if (device == "cpu") {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) bound.bytes = static_cast<double>(pages) * static_cast<double>(page);
    bound.name = "this machine's memory";
    const double limit = cgroup_limit();
    if (limit > 0 && (bound.bytes == 0 || limit < bound.bytes)) {
      bound.bytes = limit;
      bound.name = "the cgroup's memory limit";
    }
    const double address_space = process_limit();
    if (address_space > 0 && (bound.bytes == 0 || address_space < bound.bytes)) {
      bound.bytes = address_space;
      bound.name = "what ulimit -v allows this process";
    }
    return bound;
  }
  int index = -1;
  if (device == "cuda") index = 0;
  else if (device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() <= 8 &&
           device.find_first_not_of("0123456789", 5) == std::string::npos)
    index = std::atoi(device.c_str() + 5);
  if (index < 0) return bound;  // not a device name: parse_device reports it
  bound.bytes = static_cast<double>(cuda::device_memory_bytes(index));
  bound.name = "the memory of cuda:" + std::to_string(index);
  return bound;
}

// ---- the check ----

namespace {

// Who to name for a term's size: the factor furthest above its usual value (a key's default, a
// constant's `typical`), by the ratio to the power it enters with; of a factor of several keys, the
// one with the largest value. Printed as "key = value", or as the constant ("corpus vocabulary N").
std::string responsible(const Config& config, const SizeTerm& term) {
  const SizeFactor* worst = nullptr;
  double worst_ratio = 0;
  for (const SizeFactor& f : term.factors) {
    if (f.keys.empty() && f.typical <= 0) continue;
    double base = f.typical;
    for (const std::string& key : f.keys) {
      const ConfigKey* spec = config.schema().find(key);
      const bool numeric = spec && (spec->type == ConfigType::integer || spec->type == ConfigType::real);
      base += numeric ? std::max(0.0, std::strtod(spec->default_value.c_str(), nullptr)) : 0.0;
    }
    const double ratio = std::pow(f.value / std::max(base, 1.0), f.power);
    if (!worst || ratio > worst_ratio) {
      worst = &f;
      worst_ratio = ratio;
    }
  }
  if (!worst) return "the config";
  if (worst->keys.empty()) {
    std::ostringstream out;
    out.precision(15);
    out << worst->text << " " << worst->value;
    return out.str();
  }
  auto numeric_value = [&](const std::string& k) {
    const ConfigKey* spec = config.schema().find(k);
    return spec && spec->type == ConfigType::integer ? config.get_float(k) : -1.0;
  };
  std::string key = worst->keys.front();
  for (const std::string& k : worst->keys)
    if (numeric_value(k) > numeric_value(key)) key = k;
  return key + " = " + config.get_string(key);
}

}  // namespace

void check_memory_estimate(const Config& config, const MemoryEstimate& estimate, const MemoryBound& bound) {
  const double any_machine = static_cast<double>(kMaxTensorBytes);
  const bool known = bound.bytes > 0 && bound.bytes < any_machine;
  const double limit = known ? bound.bytes : any_machine;
  const std::string beyond = known ? "more than " + bound.name + " (" + human_bytes(bound.bytes) + ")"
                                   : "more than any machine's memory";
  const SizeTerm* largest = estimate.largest_tensor();
  const double state = estimate.training_state_bytes();
  // Report whichever is further over: the single tensor, or the parameters' training state.
  if (largest && largest->bytes() > limit && largest->bytes() >= state) {
    URPE_FAIL("config: " << responsible(config, *largest) << " needs "
                         << largest->what << " of " << human_bytes(largest->bytes()) << " ("
                         << largest->formula() << " × 4 bytes); " << beyond);
  }
  if (state > limit) {
    const SizeTerm* part = nullptr;
    for (const SizeTerm& t : estimate.parameters)
      if (!part || t.count() > part->count()) part = &t;
    std::ostringstream count;
    count.precision(4);
    count << estimate.parameter_count();
    URPE_FAIL("config: " << responsible(config, *part) << " needs "
                         << human_bytes(state) << " for about " << count.str()
                         << " parameters with their gradients and Adam moments (16 bytes each; the largest part, "
                         << part->what << ", is " << part->formula() << "); " << beyond);
  }
}

void check_config_memory(const Config& config) {
  check_memory_estimate(config, estimate_memory(config), memory_bound_for_device(config.get_string("device")));
}

}  // namespace urpe
