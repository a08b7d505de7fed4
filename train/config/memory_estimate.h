// How much memory a run's config asks for, estimated from the config alone, so that a size no
// machine can hold (`--set seq_len=100000000`: 3.6 PiB of attention scores) is refused before
// anything is allocated, with one line naming the key responsible:
//
//   config: seq_len = 100000000 needs attention scores of 4.7 PiB (evaluation batch 64 × heads 4 ×
//   seq_len 100000000² × 4 bytes); more than this machine's memory (23.4 GiB)
//
// What is refused is only what clearly cannot run: one tensor larger than the device's whole
// memory, or the parameters with their gradients and Adam's two moments (four copies, all alive
// at every step) larger than it. The sum of all activations is not refused: it depends on which
// tensors autograd keeps, and the paper-scale presets (pi-paper, txl-base, graphormer-slim) are
// meant for a GPU and may legitimately exceed a small CPU machine's memory in total. Every size
// is computed in double precision, so a product beyond 64 bits is still a (huge) number here,
// never a wrapped one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/io/config.h"

namespace urpe {

// One factor of a size: a key's value (or a sum of keys' values, or a constant), to a power.
struct SizeFactor {
  std::string text;               // as printed: "batch", "tgt_len + mem_len", "evaluation batch"
  double value = 1;
  int power = 1;
  std::vector<std::string> keys;  // the config keys behind the value; empty for a constant
  double typical = 0;             // a constant's usual value (0: never the one to blame)
};

// A count of 4-byte values held at once: one tensor (an activation), or one group of parameters.
struct SizeTerm {
  std::string what;  // "attention scores"
  std::vector<SizeFactor> factors;
  double count() const;
  double bytes() const { return 4.0 * count(); }
  std::string formula() const;  // "batch 32 × heads 4 × seq_len 128²"
};

struct MemoryEstimate {
  std::vector<SizeTerm> parameters;    // groups that together make (most of) the parameter count
  std::vector<SizeTerm> activations;   // the largest single tensors of a training or evaluation step
  // Tables built once and never trained (ALiBi's slopes times distance, the sinusoid and rotary
  // tables, the relative-position maps): held for the whole run, without gradient or Adam state.
  std::vector<SizeTerm> fixed_tables;
  double parameter_count() const;
  double fixed_table_count() const;
  // Parameters, gradients and Adam's first and second moments: 16 bytes per parameter.
  double training_state_bytes() const { return 16.0 * parameter_count(); }
  const SizeTerm* largest_activation() const;  // nullptr when there is none
  const SizeTerm* largest_tensor() const;      // of the activations and the fixed tables
};

// The factors the families' estimates are made of.
namespace size_terms {
double value_of(const Config& config, const std::string& key);  // a numeric key's value
SizeFactor key_factor(const Config& config, const std::string& key, int power = 1);  // "key value^power"
SizeFactor constant(double value, const std::string& text = "");  // blamed on no key
// The batch rows of the biggest activations: the training micro-batch (batch / accum_steps), or a
// larger evaluation batch of eval_rows (the key eval_key, or the constant eval_text when "").
SizeFactor rows_factor(const Config& config, const std::string& eval_key, double eval_rows,
                       const std::string& eval_text);
}  // namespace size_terms

// Per family, from the keys of train/config/run_config.cpp, txl_config.cpp and graphormer_config.cpp;
// each is defined in its family's folder (train/families/encoder/encoder_memory.cpp,
// txl/txl_memory.cpp, graphormer/graphormer_memory.cpp) and named by its ModelFamily.
MemoryEstimate estimate_encoder_memory(const Config& config);
// `vocab`: the corpus's vocabulary, or 0 before the corpus is read (then the embedding and the
// full-softmax logits, which need it, are left out).
MemoryEstimate estimate_txl_memory(const Config& config, int64_t vocab);
// Sized for batches of ZINC-sized molecules (38 atoms at most, or max_nodes when smaller): the data
// decides the padded size, and the config is not refused for molecules it may never hold.
MemoryEstimate estimate_graphormer_memory(const Config& config);
// By the config's `model` (txl without its vocabulary).
MemoryEstimate estimate_memory(const Config& config);

// The memory a device offers: for cpu the physical memory (or a cgroup's or ulimit -v's limit when
// lower), for cuda / cuda:N the GPU's total memory; bytes = 0 when it cannot be told (no CUDA in
// this build, no such device, an unparsable name: the device's own checks report those later).
struct MemoryBound {
  double bytes = 0;
  std::string name;  // "this machine's memory", "the memory of cuda:0"
};
MemoryBound memory_bound_for_device(const std::string& device);

// Throws urpe::Error, naming the key most responsible, when the largest tensor or the training
// state exceeds bound.bytes (when known), or 2^62 bytes (more than any machine, always checked).
void check_memory_estimate(const Config& config, const MemoryEstimate& estimate, const MemoryBound& bound);
// estimate_memory + the bound of the config's `device` + check_memory_estimate.
void check_config_memory(const Config& config);

}  // namespace urpe
