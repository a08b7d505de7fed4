// Sources of config values (see config_sources.h): a preset line's comment, a default's reason, the
// user's --set or file, or the command's own per-run setting.
#include "train/config/config_sources.h"

#include <algorithm>
#include <sstream>

#include "tensor/error.h"
#include "train/config/run_config.h"

namespace urpe {

namespace {

// Why each default is what it is. "family.key" first, then "key" (the same reason in every family).
// A default that matters to a paper preset is set on the preset's own line with its citation
// instead; these reasons cover what a preset leaves alone.
const std::map<std::string, std::string>& default_reasons() {
  static const std::map<std::string, std::string> reasons = {
      // ---- every family ----
      {"model", "default: encoder (the synthetic-task encoder)"},
      {"seed", "default: 1 (repro: --seeds picks each run's)"},
      {"steps", "default: 2,000 (urpe's CPU size)"},
      {"batch", "default: 32 (urpe's CPU size)"},
      {"accum_steps", "default: 1 (the whole batch in one pass; more micro-batches give the same step)"},
      {"lr", "default: 2e-3 (urpe's CPU size)"},
      {"warmup", "default: 500 steps (urpe's CPU size)"},
      {"weight_decay", "default: 0 (plain Adam)"},
      {"decay_biases_and_norms", "default: true (weight decay on every parameter, as torch's AdamW on "
                                 "model.parameters() in the official Graphormer and fairseq code)"},
      {"clip", "default: 0 (no clipping)"},
      {"eval_every", "default: 250 steps (urpe's CPU size)"},
      {"shard_optimizer", "default: false (ZeRO-1 under mpirun only; the same updates either way)"},
      {"device", "default: cpu (--device or device=cuda for a GPU)"},
      {"cuda_graph", "default: false (eager launches; on: one CUDA graph per step, docs/cuda.md#cuda-graphs)"},
      {"precision", "default: fp32 (the paper trained in FP16; --set precision=bf16 or tf32 on a GPU: docs/cuda.md#mixed-precision)"},
      // ---- encoder ----
      {"encoder.task", "default: pi (position identification, §5.1)"},
      {"encoder.pe", "default: urpe (URPE over the RPE; repro sets each run's)"},
      {"encoder.shaw_clip", "default: 16 (read by pe = shaw only)"},
      {"encoder.rpe_kind", "default: unique (one scalar per distance, lsj2408/URPE's --rel-pos-unique)"},
      {"encoder.urpe_kind", "default: unique (the Toeplitz C of §4.2)"},
      {"encoder.attention_norm", "default: softmax (the paper's attention)"},
      {"encoder.attention", "default: materialized (fused gives the same results with less memory)"},
      {"encoder.seq_len", "default: 32 (urpe's CPU size)"},
      {"encoder.vocab", "default: 100 (urpe's CPU size)"},
      {"encoder.layers", "default: 2 (urpe's CPU size)"},
      {"encoder.d_model", "default: 64 (urpe's CPU size)"},
      {"encoder.heads", "default: 4 (urpe's CPU size)"},
      {"encoder.d_ff", "default: 256 (4 × d_model)"},
      {"encoder.dropout", "default: 0 (no dropout)"},
      {"encoder.attention_dropout", "default: 0 (no dropout on the attention probabilities)"},
      {"encoder.init_std", "default: 0.07 (measured to separate URPE from RPE at the CPU size)"},
      {"encoder.valid_size", "default: 512 sequences"},
      {"encoder.task_protocol", "default: simple (tokens 0 … V−1; docs/synthetic_encoder.md#protocols)"},
      {"encoder.corpus", "default: embedded (read by task = mlm only: the corpus shipped in data/assets)"},
      {"encoder.mask_prob", "default: 0.15 (BERT's share; read by task = mlm only)"},
      // ---- txl ----
      {"txl.pe", "default: urpe (repro sets each run's)"},
      {"txl.corpus", "default: embedded (the corpus shipped in data/assets: a stand-in for WikiText-103)"},
      {"txl.token_mode", "default: word (WikiText-103 is word-level)"},
      {"txl.layers", "default: 2 (urpe's CPU size)"},
      {"txl.d_model", "default: 128 (urpe's CPU size)"},
      {"txl.heads", "default: 4 (urpe's CPU size)"},
      {"txl.d_head", "default: 32 (urpe's CPU size)"},
      {"txl.d_inner", "default: 512 (urpe's CPU size)"},
      {"txl.dropout", "default: 0.1 (train.py's)"},
      {"txl.dropatt", "default: 0 (train.py's)"},
      {"txl.tgt_len", "default: 32 (urpe's CPU size)"},
      {"txl.mem_len", "default: 32 (urpe's CPU size)"},
      {"txl.clamp_len", "default: -1 (no clamp, train.py's)"},
      {"txl.eval_tgt_len", "default: 0 (= tgt_len)"},
      {"txl.eval_mem_len", "default: -1 (= mem_len)"},
      {"txl.eval_clamp_len", "default: -1 (no clamp)"},
      {"txl.same_length", "default: false (train.py's)"},
      {"txl.eval_batch", "default: 10 (eval.py's --batch_size)"},
      {"txl.max_eval_tokens", "default: 0 (the whole split)"},
      {"txl.cutoffs", "default: none (a full softmax)"},
      {"txl.schedule", "default: cosine (train.py's --scheduler)"},
      {"txl.init_std", "default: 0.02 (train.py's --init_std)"},
      // ---- graphormer ----
      {"graphormer.pe", "default: none (plain Graphormer; repro sets each run's)"},
      {"graphormer.layers", "default: 12 (the GV1 ZINC model)"},
      {"graphormer.d_model", "default: 80 (the GV1 ZINC model)"},
      {"graphormer.d_ffn", "default: 80 (the GV1 ZINC model)"},
      {"graphormer.heads", "default: 8 (the GV1 ZINC script)"},
      {"graphormer.dropout", "default: 0.1 (GV1 model.py's --dropout_rate)"},
      {"graphormer.attention_dropout", "default: 0.1 (GV1 model.py's --attention_dropout_rate)"},
      {"graphormer.input_dropout", "default: 0.1 (GV1 model.py's --intput_dropout_rate)"},
      {"graphormer.multi_hop_max_dist", "default: 20 (the GV1 ZINC script)"},
      {"graphormer.max_spd", "default: 38 (every distance of a 39-atom molecule its own C entry; longer ones "
                             "share the last)"},
      {"graphormer.embedding_tables", "default: auto (GV1's OGB tables for dataset_format = ogb, its ZINC tables "
                                      "otherwise)"},
      {"graphormer.init_std", "default: 0.02 (GV1 model.py's init_params)"},
      {"graphormer.end_lr", "default: 1e-9 (GV1's --end_lr)"},
      {"graphormer.dataset", "default: embedded (9,997 screening compounds standing in for ZINC, data/assets)"},
      {"graphormer.dataset_format", "default: auto (decided by the dataset path)"},
      {"graphormer.smiles_column", "default: smiles"},
      {"graphormer.target_column", "default: penalized_logp_normalized (ZINC's target)"},
      {"graphormer.split", "default: auto (the dataset's own split, else seeded 80/10/10)"},
      {"graphormer.split_seed", "default: 1"},
      {"graphormer.train_subset", "default: 0 (the whole training split)"},
      {"graphormer.max_nodes", "default: 128 (GV2's max_nodes; no ZINC or PCQM4M molecule is larger)"},
      {"graphormer.eval_batch", "default: 128 molecules (evaluation only)"},
      {"graphormer.fixed_shapes", "default: false (each batch padded to its own size, as GV1; cuda_graph = on pads "
                                  "to one shape: docs/graphormer.md#collation-and-padding)"},
  };
  return reasons;
}

// The comment of a config line: the text after the first '#' outside double quotes, trimmed.
std::string line_comment(const std::string& line) {
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && quoted) {
      ++i;
      continue;
    }
    if (line[i] == '"') quoted = !quoted;
    if (line[i] == '#' && !quoted) return trim_config_space(line.substr(i + 1));
  }
  return "";
}

const Preset* preset_named(const std::string& name) {
  for (const Preset& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

bool is_cited_source(const std::string& source) {
  return starts_with(source, "paper ") || starts_with(source, "script ") || starts_with(source, "urpe: ");
}

std::string preset_line_source(const std::string& preset, const std::string& key) {
  const Preset* p = preset_named(preset);
  if (!p) return "";
  std::istringstream lines(p->text);
  std::string line, k, value;
  while (std::getline(lines, line))
    if (read_config_line(line, k, value) && k == key) return line_comment(line);
  return "";
}

std::string default_source(const std::string& family, const std::string& key) {
  const auto& reasons = default_reasons();
  auto it = reasons.find(family + "." + key);
  if (it == reasons.end()) it = reasons.find(key);
  return it == reasons.end() ? std::string() : it->second;
}

std::vector<ValueSource> config_sources(const Config& config, const std::string& preset,
                                        const CommandSets& command_sets) {
  const std::string family = config.get_string("model");
  std::vector<ValueSource> out;
  for (const ConfigKey& key : config.schema().keys()) {
    ValueSource s{key.name, config.get_string(key.name), ""};
    const std::string origin = config.origin(key.name);
    if (origin.empty()) {
      s.source = default_source(family, key.name);
    } else if (starts_with(origin, "preset ")) {
      s.source = preset_line_source(preset, key.name);
      if (s.source.empty()) s.source = "urpe: preset " + preset + "'s own setting (" + origin.substr(7) + ")";
    } else if (starts_with(origin, "--set ")) {
      const auto it = command_sets.find(key.name);
      s.source = it != command_sets.end() ? it->second : origin + " (yours)";
    } else {
      s.source = "config " + origin + " (yours)";
    }
    if (s.source.empty()) s.source = "default (no reason recorded)";
    out.push_back(s);
  }
  return out;
}

std::string sources_text(const std::vector<ValueSource>& sources, const std::string& indent) {
  size_t key_w = 0, value_w = 0;
  for (const ValueSource& s : sources) {
    key_w = std::max(key_w, s.key.size());
    value_w = std::max(value_w, s.value.size());
  }
  value_w = std::min<size_t>(value_w, 24);  // a long path does not push every source off the screen
  std::ostringstream out;
  for (const ValueSource& s : sources) {
    out << indent << s.key << std::string(key_w - s.key.size(), ' ') << " = " << s.value;
    out << std::string(s.value.size() < value_w ? value_w - s.value.size() : 0, ' ') << "  " << s.source << "\n";
  }
  return out.str();
}

std::string sources_markdown(const std::vector<ValueSource>& sources) {
  auto cell = [](const std::string& text) {
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::ostringstream out;
  out << "| key | value | source |\n|---|---|---|\n";
  for (const ValueSource& s : sources)
    out << "| " << s.key << " | `" << cell(s.value.empty() ? std::string(" ") : s.value) << "` | " << cell(s.source)
        << " |\n";
  return out.str();
}

std::string sources_difference(const std::vector<ValueSource>& first, const std::vector<ValueSource>& run) {
  std::map<std::string, const ValueSource*> before;
  for (const ValueSource& s : first) before[s.key] = &s;
  std::string out;
  for (const ValueSource& s : run) {
    const auto it = before.find(s.key);
    if (it != before.end() && it->second->value == s.value && it->second->source == s.source) continue;
    out += (out.empty() ? "" : "; ") + s.key + " = " + s.value + " (" + s.source + ")";
  }
  return out;
}

}  // namespace urpe
