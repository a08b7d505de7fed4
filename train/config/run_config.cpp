// Run keys and presets: the common keys here, each family's own keys and checks from its folder
// through the registry (train/families/model_family.h).
#include "train/config/run_config.h"

#include "models/encoder.h"
#include "tensor/error.h"
#include "train/config/config_checks.h"
#include "train/families/model_family.h"
#include "base/io/run_dir.h"
#include "train/config/config_limits.h"
#include "train/config/memory_estimate.h"
#include "train/config/paper_presets.h"

#include <fstream>
#include <sstream>

namespace urpe {

namespace {

// Keys every run has, whatever the model.
void add_common_keys(ConfigSchema& s) {
  s.add_choice("model", model_families(), model_families().front(),
               "model family (encoder: RoBERTa-style post-LN encoder on the synthetic tasks; txl: "
               "Transformer-XL language model)");
  s.add_int("seed", 1, "seed of initialisation, data and dropout");
  s.add_int("steps", 2000, "training steps");
  s.add_int("batch", 32, "sequences per training step");
  s.add_int("accum_steps", 1,
            "gradient accumulation: each step's batch is computed as this many equal micro-batches whose "
            "gradients add up to the whole batch's (less memory, the same step); must divide batch");
  s.add_float("lr", 2e-3, "peak learning rate (Adam)");
  s.add_int("warmup", 500, "linear warm-up steps, then decay to 0 at `steps` (linear; txl: per `schedule`)");
  s.add_float("weight_decay", 0.0, "decoupled weight decay (AdamW); 0 = plain Adam");
  s.add_bool("decay_biases_and_norms", true,
             "weight decay on every parameter (true, as torch's AdamW on all parameters) or only on those with 2 "
             "or more dimensions (false: biases and LayerNorm gains and biases are not decayed, as in BERT's "
             "optimizer)");
  s.add_float("clip", 0.0, "clip the global gradient norm to this (0 = off)");
  s.add_int("eval_every", 250, "evaluate on the validation set every this many steps");
  s.add_bool("shard_optimizer", false,
             "under mpirun: each rank keeps Adam's moments for 1/K of the parameters only (ZeRO-1; same "
             "results, optimizer memory per rank / K)");
  s.add_string("device", "cpu", "cpu, cuda or cuda:N");
  s.add_bool("cuda_graph", false,
             "CUDA only: capture the training step once as a CUDA graph (after 2 eager steps) and replay it every "
             "step after: the same numbers, one launch per step (docs/cuda.md#cuda-graphs); the encoder's "
             "synthetic tasks and Graphormer (its training batches padded to one shape: fixed_shapes), "
             "accum_steps = 1, one process");
  s.add_choice("precision", {"fp32", "tf32", "bf16"}, "fp32",
               "GEMM precision (docs/cuda.md#mixed-precision): fp32; tf32 (TF32 tensor-core GEMMs, CUDA only; "
               "--tf32 is the same); bf16 (the linear layers multiply in BF16 with FP32 accumulation, CPU or "
               "CUDA, and the activations between them (feed-forward, every family's attention, fused or "
               "materialised, Transformer-XL's logits) are stored in BF16 and computed in FP32; on CUDA the "
               "fused attention runs on BF16 tensor-core tiles and the GEMMs that stay FP32 use TF32; "
               "parameters, optimizer, checkpoints, layer norm, the residual stream and the losses stay FP32)");
}

// What the common keys mean (config_checks.h): the optimizer and loop of every family.
void check_common_values(const Config& c) {
  using namespace config_check;
  every_float_fits_float32(c);
  int_at_least(c, "steps", 1);
  int_at_least(c, "batch", 1);
  int_at_least(c, "accum_steps", 1);
  URPE_CHECK(c.get_int("batch") % c.get_int("accum_steps") == 0,
             "config: accum_steps (" << c.get_int("accum_steps") << ") must divide batch (" << c.get_int("batch")
                                     << ") into equal micro-batches");
  positive(c, "lr");
  int_at_least(c, "warmup", 0);
  URPE_CHECK(c.get_int("warmup") <= c.get_int("steps"),
             "config: warmup (" << c.get_int("warmup") << ") must not exceed steps (" << c.get_int("steps") << ")");
  non_negative(c, "weight_decay");
  non_negative(c, "clip");
  int_at_least(c, "eval_every", 1);
  device_name(c, "device");
  if (c.get_bool("cuda_graph")) {
    URPE_CHECK(c.get_string("device").rfind("cuda", 0) == 0,
               "config: cuda_graph = on needs device = cuda (a CUDA graph replays GPU work), got device = "
                   << c.get_string("device"));
    const std::string& why = family_of(c).not_captured_because;
    URPE_CHECK(why.empty(), "config: cuda_graph = on: the " << c.get_string("model") << " family " << why
                                                          << "; use cuda_graph = off");
    URPE_CHECK(c.get_int("accum_steps") == 1, "config: cuda_graph = on needs accum_steps = 1 (got "
                                                  << c.get_int("accum_steps") << "): the capture holds one micro-batch");
  }
}

}  // namespace

DType linear_dtype_of(const Config& config) {
  return config.get_string("precision") == "bf16" ? DType::bf16 : DType::f32;
}

namespace {

ConfigSchema build_schema(const std::string& model) {
  ConfigSchema s;
  add_common_keys(s);
  model_family(model).add_keys(s);
  limit_run_keys(s);
  return s;
}

}  // namespace

const std::vector<std::string>& model_families() {
  static const std::vector<std::string> families = [] {
    std::vector<std::string> names;
    for (const ModelFamily& family : model_family_table()) names.push_back(family.name);
    return names;
  }();
  return families;
}

const ConfigSchema& schema_for_model(const std::string& model) {
  static const std::vector<ConfigSchema> schemas = [] {
    std::vector<ConfigSchema> list;
    for (const std::string& family : model_families()) list.push_back(build_schema(family));
    return list;
  }();
  const auto& families = model_families();
  for (size_t k = 0; k < families.size(); ++k)
    if (families[k] == model) return schemas[k];
  std::string known;
  for (const std::string& f : families) known += (known.empty() ? "" : ", ") + f;
  URPE_FAIL("model '" << printable(model) << "' is not a model family (expected one of: " << known << ")");
}

// Graphormer: the model sizes are GraphormerConfig's presets (models/graphormer.h). The tiny
// schedule (6 epochs of the 7,997 training molecules) is sized for `urpe repro molecules --scale
// tiny`: 2 models x 2 seeds within 20 minutes on 2 CPU cores (measured: 531 s for the four runs
// with their evaluations, ~0.08 s a step, on 2 cores shared with other jobs).
constexpr const char* kGraphormerTiny =
    "model = graphormer\nlayers = 3\nd_model = 32\nd_ffn = 32\nheads = 4\nmulti_hop_max_dist = 5\n"
    "dropout = 0\nattention_dropout = 0\ninput_dropout = 0\n"
    "batch = 32\nsteps = 1500\nwarmup = 150\nlr = 1e-3\nweight_decay = 0.01\neval_every = 250\n";
// Masked-LM pre-training in small (train/families/encoder/encoder_mlm_config.h; the paper's is mlm-paper): T5's bucketed
// relative bias as in C.4 (UniLMv2's), URPE's C the Toeplitz table of §4.2. Sized so that
// `urpe repro pretrain --scale tiny` (three encodings) takes minutes on 2 CPU cores.
constexpr const char* kMlmTiny =
    "task = mlm\nseq_len = 64\nvocab = 2000\nlayers = 2\nd_model = 64\nheads = 4\nd_ff = 256\ninit_std = 0.02\n"
    "rpe_kind = bucketed\nurpe_kind = unique\nbatch = 32\nsteps = 1200\nwarmup = 100\nlr = 1e-3\n"
    "weight_decay = 0.01\neval_every = 200\nvalid_size = 256\n";
constexpr const char* kMlmSmall =
    "task = mlm\nseq_len = 128\nvocab = 8000\nlayers = 4\nd_model = 128\nheads = 4\nd_ff = 512\ninit_std = 0.02\n"
    "dropout = 0.1\nrpe_kind = bucketed\nurpe_kind = unique\nbatch = 32\nsteps = 8000\nwarmup = 500\nlr = 5e-4\n"
    "weight_decay = 0.01\neval_every = 500\nvalid_size = 512\n";

// urpe's own presets (CPU sizes), then the paper's (train/config/paper_presets.h: Appendix C).
const std::vector<Preset>& presets() {
  static const std::vector<Preset> list = [] {
    std::vector<Preset> own = {
      {"pi-tiny", "position identification, the demo size (n = 32, d = 64, 2 layers); urpe's own CPU setting, simple protocol",
       "task = pi\nsteps = 800\nwarmup = 200\neval_every = 100\n"},
      {"etp-tiny", "even token prediction at the demo size; urpe's own, simple protocol",
       "task = etp\nsteps = 6000\nwarmup = 500\neval_every = 500\n"},
      {"pi-small", "position identification, n = 64, d = 128, 3 layers; urpe's own, simple protocol",
       "task = pi\nseq_len = 64\nd_model = 128\nheads = 4\nd_ff = 512\nlayers = 3\ninit_std = 0.05\n"
       "steps = 3000\nwarmup = 500\nlr = 1e-3\neval_every = 250\n"},
      {"etp-small", "even token prediction, n = 64, d = 128, 3 layers; urpe's own, simple protocol",
       "task = etp\nseq_len = 64\nd_model = 128\nheads = 4\nd_ff = 512\nlayers = 3\ninit_std = 0.05\n"
       "steps = 10000\nwarmup = 1000\nlr = 1e-3\neval_every = 500\n"},
      {"txl-tiny", "Transformer-XL (+URPE with pe = urpe) on the embedded corpus, a few CPU minutes: 2 layers, "
                   "d = 128, 600 steps of 16 × 32 tokens; urpe's own",
       "model = txl\nlayers = 2\nd_model = 128\nheads = 4\nd_head = 32\nd_inner = 512\ndropout = 0.1\n"
       "tgt_len = 32\nmem_len = 32\ncutoffs = 1000,4000\nbatch = 16\nsteps = 600\nlr = 2e-3\nwarmup = 50\n"
       "clip = 0.25\neval_every = 100\nmax_eval_tokens = 10000\n"},
      {"txl-small", "Transformer-XL on the embedded corpus, hours on a CPU (minutes on a GPU): 4 layers, d = 256, "
                    "4000 steps of 16 × 64 tokens; urpe's own",
       "model = txl\nlayers = 4\nd_model = 256\nheads = 8\nd_head = 32\nd_inner = 1024\ndropout = 0.1\n"
       "tgt_len = 64\nmem_len = 64\ncutoffs = 1000,4000\nbatch = 16\nsteps = 4000\nlr = 1e-3\nwarmup = 200\n"
       "clip = 0.25\neval_every = 250\nmax_eval_tokens = 20000\n"},
      {"graphormer-tiny", "Graphormer, CPU size (3 layers, d = 32, 4 heads, multi-hop 5; 1,500 steps of 32 molecules); urpe's own",
       kGraphormerTiny},
      {"graphormer-tiny-urpe", "graphormer-tiny + URPE", std::string(kGraphormerTiny) + "pe = urpe\n"},
      {"mlm-tiny", "masked-LM pre-training (Appendix C.4 in small) on the embedded corpus: windows of 64 words, "
                   "2,000-id vocabulary, 2 layers, d = 64, T5 (bucketed) RPE; urpe's own, minutes on a CPU",
       kMlmTiny},
      {"mlm-small", "masked-LM pre-training on the embedded corpus, 4 layers, d = 128, windows of 128 words, "
                    "8,000-id vocabulary; urpe's own, an hour on a CPU",
       kMlmSmall},
    };
    for (const Preset& p : paper_presets()) own.push_back(p);
    return own;
  }();
  return list;
}

const Preset& find_preset(const std::string& name) {
  std::ostringstream names;
  for (const Preset& p : presets()) {
    if (p.name == name) return p;
    names << (names.tellp() > 0 ? ", " : "") << p.name;
  }
  URPE_FAIL("unknown preset '" << name << "' (presets: " << names.str() << ")");
}

std::string model_named_in(const std::string& text) {
  // Lines are read exactly as Config::apply_text reads them (same trimming, quotes, comments), so
  // the family picked here is the one the parser then finds in the text.
  std::istringstream lines(text);
  std::string line, key, value, model = "encoder";
  while (std::getline(lines, line))
    if (read_config_line(line, key, value) && key == "model") model = value;
  return model;
}

Config resolve_config(const std::string& preset, const std::string& config_file,
                      const std::vector<std::string>& overrides) {
  std::string file_text;
  if (!config_file.empty()) {
    // An ifstream reads a directory as an empty file, which would train on the defaults.
    URPE_CHECK(!is_directory(config_file),
               "config file '" << config_file << "' is a directory (expected a file of 'key = value' lines)");
    std::ifstream in(config_file, std::ios::binary);
    URPE_CHECK(in.good(), "config file '" << config_file << "' cannot be read (missing or unreadable)");
    std::stringstream text;
    text << in.rdbuf();
    file_text = text.str();
    const size_t nul = file_text.find('\0');
    URPE_CHECK(nul == std::string::npos, "config file '" << config_file << "' is not a text file (a NUL byte at "
                                                         << "offset " << nul << "); expected 'key = value' lines");
  }
  // The family decides the schema: the last word on `model` wins (preset < file < --set).
  std::string all = preset.empty() ? "" : find_preset(preset).text;
  all += "\n" + file_text;
  for (const std::string& assignment : overrides) all += "\n" + assignment;
  Config config(schema_for_model(model_named_in(all)));
  if (!preset.empty()) config.apply_text(find_preset(preset).text, "preset " + preset);
  if (!config_file.empty()) config.apply_text(file_text, config_file);
  for (const std::string& assignment : overrides) config.apply_override(assignment);
  check_config_values(config);
  if (family_of(config).check_given_keys) family_of(config).check_given_keys(config);
  check_config_memory(config);  // a size no machine can hold is refused before anything is built
  return config;
}

Config config_from_text(const std::string& text, const std::string& source) {
  Config config(schema_for_model(model_named_in(text)));
  config.apply_text(text, source);
  check_config_values(config);
  return config;
}

void check_config_values(const Config& config) {
  check_common_values(config);
  family_of(config).check_values(config);
}

void check_config_paths(const Config& config) {
  family_of(config).check_paths(config);
}

std::string run_config_help() {
  std::ostringstream out;
  out << "Config keys (config files: one 'key = value' per line, '#' comments; --set key=value).\n"
         "Every run has the common keys; `model` picks the family whose keys come with them.\n";
  for (const std::string& family : model_families())
    out << "\nmodel = " << family << ":\n" << schema_for_model(family).help_text();
  out << "\nPresets (--preset NAME):\n";
  for (const Preset& p : presets()) out << "  " << p.name << ": " << p.description << "\n";
  return out.str();
}

}  // namespace urpe
