// What the CUDA training suites (test_cuda_training, test_cuda_syncs) share: the skip without a
// device, the process's temporary folders, the toy data sets each family trains on and each
// family's tiny config, so both suites train exactly the same models.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "tensor/cuda_backend.h"
#include "toy_corpus.h"
#include "train/config/run_config.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/families/graphormer/graphormer_trainer.h"
#include "train/families/txl/txl_trainer.h"

namespace urpe::test {

// The prefix of the suite's temporary folders ("urpe_test_cuda_training"), set by skip_without_cuda.
inline std::string& cuda_suite_prefix() {
  static std::string prefix = "urpe_test_cuda";
  return prefix;
}

// Called by a global's constructor, before any test: exits with 77 (CTest: skipped) when no CUDA
// device is visible, saying which suite was skipped.
inline void skip_without_cuda(const char* suite, const char* temp_prefix) {
  cuda_suite_prefix() = temp_prefix;
  if (cuda::device_count() == 0) {
    std::printf("no CUDA device: %s skipped\n", suite);
    std::fflush(stdout);
    std::exit(77);
  }
}

// "/tmp/<prefix>_<pid>_<name>", emptied.
inline std::string temp_dir(const std::string& name) {
  const std::string dir = "/tmp/" + cuda_suite_prefix() + "_" + std::to_string(::getpid()) + "_" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

// 40 small molecules (chains C_k, C_kO, C_kN and benzene + C_k) with a target that depends on
// their structure, written once per test process.
inline std::string toy_molecules() {
  static const std::string path = [] {
    const std::string file = temp_dir("molecules.csv");
    std::FILE* out = std::fopen(file.c_str(), "w");
    REQUIRE(out != nullptr);
    std::fprintf(out, "name,smiles,y\n");
    for (int k = 1; k <= 10; ++k) {
      const std::string chain(static_cast<size_t>(k), 'C');
      std::fprintf(out, "a%d,%s,%g\nb%d,%sO,%g\nc%d,%sN,%g\nd%d,c1ccccc1%s,%g\n", k, chain.c_str(), 0.3 * k, k,
                   chain.c_str(), 0.3 * k - 1.0, k, chain.c_str(), 0.3 * k + 0.5, k, chain.c_str(), 0.2 * k + 1.0);
    }
    std::fclose(out);
    return file;
  }();
  return path;
}

// A WikiText-format corpus of short sentences (train, valid, test), written once per process: the
// final evaluation reads the whole valid and test splits, which must stay small here.
inline std::string toy_corpus() {
  static const std::string dir = write_toy_corpus(temp_dir("corpus"));
  return dir;
}

// The tiny settings of one family on `device`, trained for `steps` steps (evaluated every 4):
// "encoder" (materialized attention) or "encoder-fused", with `encoder_keys` added; "txl" (its
// relative term) or "txl-alibi" (ALiBi in its place); "graphormer". All with URPE.
inline Config tiny_family_config(const std::string& family, const std::string& device, int steps,
                                 const std::vector<std::string>& encoder_keys = {}) {
  const std::string on = "device=" + device, step_count = "steps=" + std::to_string(steps);
  if (family == "encoder" || family == "encoder-fused") {
    std::vector<std::string> keys = {"seq_len=12", "vocab=6", "layers=2", "d_model=16", "heads=2",
                                     "d_ff=32", "batch=4", step_count, "warmup=2", "eval_every=4",
                                     "valid_size=8", "dropout=0.1", "task=etp", "pe=urpe", "lr=0.01",
                                     family == "encoder" ? "attention=materialized" : "attention=fused"};
    keys.insert(keys.end(), encoder_keys.begin(), encoder_keys.end());
    keys.push_back(on);
    return resolve_config("", "", keys);
  }
  if (family == "txl" || family == "txl-alibi")
    return resolve_config("txl-tiny", "",
                          {family == "txl" ? "pe=urpe" : "pe=alibi+urpe", "corpus=" + toy_corpus(), "cutoffs=",
                           "layers=2", "d_model=16", "heads=2", "d_head=8", "d_inner=32", "tgt_len=6", "mem_len=6",
                           "batch=3", step_count, "warmup=2", "eval_every=4", "eval_batch=2", "eval_tgt_len=5",
                           "eval_mem_len=6", "max_eval_tokens=60", "dropout=0.1", on});
  return resolve_config("graphormer-tiny", "",
                        {"pe=urpe", "dataset=" + toy_molecules(), "target_column=y", "layers=2", "d_model=16",
                         "d_ffn=16", "heads=2", "batch=6", step_count, "warmup=2", "eval_every=4", "eval_batch=8",
                         on});
}

// Trains a family of tiny_family_config into `dir`.
inline void train_family(const std::string& family, const Config& config, const std::string& dir,
                         const TrainOptions& options) {
  if (family.rfind("encoder", 0) == 0) train_encoder(config, dir, options);
  else if (family.rfind("txl", 0) == 0) train_txl(config, dir, options);
  else train_graphormer(config, dir, options);
}

}  // namespace urpe::test
