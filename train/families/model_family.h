// The model families and the one table that lists them (train/families/registry.cpp). A family
// is one name used everywhere (the `model` config key, its folder train/families/NAME/, its files
// and types) and everything `urpe` needs to know about it, given here as one ModelFamily: its
// config keys and their checks, its memory estimate, its training and evaluation, the pictures of
// its runs, the model theory/analyze look inside and the training step `urpe bench step` times. Nothing outside train/families/ branches on
// a family's name (tests/test_layout.cpp checks it): it asks the family. Adding a family is one
// folder with a NAME_family.cpp and one line in the table (docs/architecture.md#add-a-family).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/encoder.h"
#include "models/transformer_xl.h"
#include "tensor/device.h"
#include "train/config/memory_estimate.h"
#include "base/io/config.h"
#include "train/loop/train_options.h"

namespace urpe {

// What `urpe train` prints after a run: the family's one summary line (without the run
// directory, which the caller puts in front) and whether Ctrl-C stopped it.
struct FamilyTrainResult {
  bool interrupted = false;
  std::string summary;
};

// The token model of a run as theory/analyze look inside it (models/token_model.h), built on the CPU.
struct AnalysedModel {
  std::unique_ptr<TokenModel> model;
  int64_t seq_len = 0;  // positions of one input window (encoder: seq_len; Transformer-XL: tgt_len)
};

// `urpe bench step --model NAME`: the family's model at its bench configuration (about the same
// cost per step for every family), an Adam optimizer (lr 1e-4) and its data, with the sizes and
// data of its PyTorch twin in tools/torch_bench.py, so the two programs time the same work
// (app/bench/bench_step.cpp times it).
struct StepModelOptions {
  std::string model = "encoder";           // the family
  int64_t seq_len = 0;                     // 0: the model's bench default
  int64_t batch = 0;                       // 0: the model's bench default
  std::string attention = "materialized";  // encoder: materialized (the training default) or fused
};
class StepModel {
 public:
  virtual ~StepModel() = default;
  // "n=128 d=128 heads=4 ...": the sizes, printed on the bench's config line.
  virtual std::string description() const = 0;
  // The data of the next step, drawn before the clock starts (the twins draw theirs untimed too).
  virtual void next_batch() = 0;
  // One training step on that data: zero the gradients, forward, loss, backward, one Adam
  // update (lr 1e-4). This is what the bench times.
  virtual void step() = 0;
  // CUDA graphs (`urpe bench step --set cuda_graph=on`): a model that can capture its step splits
  // step() in two, the same update: host_part (drop the gradients, upload Adam's step scalars;
  // before each launch, outside the graph) and device_part (forward, loss, backward, Adam's
  // launch: what a capture records; no host reads, no uploads). next_batch then writes the batch
  // into buffers at fixed addresses. Empty: it can; otherwise why not.
  virtual std::string not_captured_because() const { return "its bench step is not split for a capture yet"; }
  virtual void host_part() {}
  virtual void device_part() {}
};

struct ModelFamily {
  std::string name;  // the `model` value, the folder train/families/<name>/, the prefix of its files
  // ---- config ----
  void (*add_keys)(ConfigSchema& schema) = nullptr;   // the family's keys, beside the common ones
  void (*check_values)(const Config& config) = nullptr;  // ranges and combinations, one error per key
  void (*check_paths)(const Config& config) = nullptr;   // the files and directories its keys name
  // A config the user gave (preset, file, --set; not one stored in a run): a key set to a value that
  // the chosen task never reads is an error, as a key of another family is. nullptr: every key is read.
  void (*check_given_keys)(const Config& config) = nullptr;
  MemoryEstimate (*estimate_memory)(const Config& config) = nullptr;  // from the config alone
  // ---- runs ----
  // Trains `config` into `out_dir` through the one training loop (train/loop/training_loop.h).
  FamilyTrainResult (*train)(const Config& config, const std::string& out_dir, const TrainOptions& options) = nullptr;
  // `urpe eval`: the run's `which` (last|best) checkpoint scored on `split` (valid|test) on
  // config's device; returns the line to print.
  std::string (*evaluate)(const std::string& run_dir, const Config& config, const std::string& split,
                          const std::string& which) = nullptr;
  // `urpe plot --run DIR` and the end of training: plots/*.png from the run's files; the paths.
  std::vector<std::string> (*draw_run_plots)(const std::string& run_dir) = nullptr;
  // ---- theory / analyze ----
  // The family's token model freshly built from `config` (seeded), or nullptr when the family
  // has no sequence positions to analyse (Graphormer: atoms of molecules of different sizes).
  AnalysedModel (*analysed_model)(const Config& config, uint64_t seed) = nullptr;
  // Without one: why not, after "'DIR' " in the error of `urpe analyze`.
  std::string not_analysed_because;
  // ---- CUDA graphs (cuda_graph = on; train/loop/captured_step.h) ----
  // Empty: the family's training step can be captured and replayed as a CUDA graph; otherwise
  // why not, after "config: cuda_graph = on: the <name> family " in the switch's error.
  std::string not_captured_because = "does not split its training step for a capture yet";
  // ---- bench ----
  // The bench step on `device` (NAME/NAME_bench_step.cpp); an option the family does not take is
  // an error naming it. nullptr: `urpe bench step` refuses the family.
  std::unique_ptr<StepModel> (*make_bench_step)(const StepModelOptions& options, const Device& device) = nullptr;
};

// Every family, in help order (the first is the default of the `model` key).
const std::vector<ModelFamily>& model_family_table();
// The family called `name`; an error lists the known names.
const ModelFamily& model_family(const std::string& name);
// The family of a resolved config (its `model` key).
const ModelFamily& family_of(const Config& config);
bool is_model_family(const std::string& name);

// For the families' evaluate: a model whose parameters are finite may still score NaN or
// infinity (a run that diverged on its last update before the loss showed it, saved by an older
// build): that is an error, not a number.
void check_finite_score(const std::string& dir, const std::string& which, const std::string& split, double loss);

// printf into a string, for the families' summary and evaluation lines.
std::string printf_text(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace urpe
