// End to end on CUDA: each model family (the URPE encoder on a synthetic task, Transformer-XL +
// URPE and Graphormer + URPE on small data sets written by the test) trains a few steps
// with device=cuda and must follow the CPU run of the same config and seed: the same logged losses
// within a small tolerance (float sums run in a different order on the GPU; dropout masks are
// bit-identical), and close final weights. A CUDA run stopped and resumed from its checkpoint
// must continue bit-identically (the CUDA kernels are deterministic), and `urpe train --device
// cuda` must work from the command line.
//
// Without a CUDA device the suite exits with 77 before any test (CTest: skipped). Built against
// the CUDA simulator (tests/cuda_sim) as test_cuda_sim_training, it runs everywhere.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#if defined(URPE_CUDA_SIM)
#include <cuda_runtime.h>        // the simulator's, for urpe_sim::launch_count()
#include <nvtx3/nvToolsExt.h>  // the simulator's, which records the range names
#endif

#include "cli_util.h"
#include "tensor/cuda_backend.h"
#include "test_util.h"
#include "cuda_training_util.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/families/txl/txl_trainer.h"
#include "train/families/graphormer/graphormer_trainer.h"
#include "train/config/run_config.h"
#include "base/io/safetensors.h"

using namespace urpe;

namespace {

[[maybe_unused]] const bool skipped_without_cuda =
    (test::skip_without_cuda("CUDA training suite", "urpe_test_cuda_training"), false);

using test::temp_dir;
using test::toy_corpus;
using test::toy_molecules;
using test::train_family;

TrainOptions quiet() {
  TrainOptions options;
  options.quiet = true;
  return options;
}

// The settings of one family, on the given device: 8 steps.
Config family_config(const std::string& family, const std::string& device) {
  return test::tiny_family_config(family, device, 8);
}

std::vector<MetricsRow> metrics_of(const std::string& dir) {
  return read_metrics(join_path(dir, "metrics.csv"));
}

}  // namespace

TEST_CASE("training on CUDA follows the CPU run: encoder (both attention paths), Transformer-XL "
          "(its relative term, and ALiBi) and Graphormer, all with URPE") {
  for (const std::string family : {"encoder", "encoder-fused", "txl", "txl-alibi", "graphormer"}) {
    INFO("family: " << family);
    const std::string cpu_dir = temp_dir(family + "_cpu"), cuda_dir = temp_dir(family + "_cuda");
#if defined(URPE_CUDA_SIM)
    const uint64_t launches_at_start = urpe_sim::launch_count();
#endif
    train_family(family, family_config(family, "cpu"), cpu_dir, quiet());
#if defined(URPE_CUDA_SIM)
    const uint64_t launches_before = urpe_sim::launch_count();
    CHECK(launches_before == launches_at_start);  // the CPU run touches no device
#endif
    train_family(family, family_config(family, "cuda"), cuda_dir, quiet());
#if defined(URPE_CUDA_SIM)
    // The CUDA run really ran kernels (hundreds per step), and not, say, the CPU ops again.
    CHECK(urpe_sim::launch_count() - launches_before > 100);
#endif
    const std::vector<MetricsRow> cpu = metrics_of(cpu_dir), gpu = metrics_of(cuda_dir);
    REQUIRE(cpu.size() == gpu.size());
    REQUIRE(cpu.size() >= 4);
    for (size_t r = 0; r < cpu.size(); ++r) {
      INFO("metrics row " << r << " (step " << cpu[r].step << ", " << cpu[r].split << ")");
      CHECK(gpu[r].step == cpu[r].step);
      CHECK(gpu[r].split == cpu[r].split);
      CHECK(std::isfinite(gpu[r].loss));
      CHECK(gpu[r].loss == doctest::Approx(cpu[r].loss).epsilon(2e-3));
    }
    // Final weights: every tensor close to the CPU's (Adam's first steps can amplify rounding in
    // near-zero gradients to a fraction of the learning rate, hence the absolute bound).
    const TensorFile a = load_safetensors(join_path(cpu_dir, "model.safetensors"));
    const TensorFile b = load_safetensors(join_path(cuda_dir, "model.safetensors"));
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const auto& [name, x] : a.tensors) {
      INFO("tensor " << name);
      if (x.dtype() == DType::i32) {  // counters such as Adam's step
        CHECK(x.to_vector_i32() == b.at(name).to_vector_i32());
        continue;
      }
      const std::vector<float> u = x.to_vector_f32(), v = b.at(name).to_vector_f32();
      REQUIRE(u.size() == v.size());
      double worst = 0;
      for (size_t k = 0; k < u.size(); ++k) worst = std::max(worst, double(std::fabs(u[k] - v[k])));
      CHECK(worst < 5e-3);
    }
  }
#if defined(URPE_CUDA_SIM)
  // The simulator records NVTX range names: the runs above are instrumented the way Nsight shows
  // them (op calls, model blocks, backward ops, training steps), and every range was closed.
  const std::set<std::string>& names = urpe_sim_nvtx_names();
  for (const char* name :
       {"urpe_attention", "urpe_attention backward", "urpe_flash_attention",
        "urpe_flash_attention backward", "matmul", "layer_norm backward",
        "encoder.layer0", "encoder.layer1.attention", "encoder.layer0.ffn", "txl.layer1.attention",
        "txl.layer0.ffn", "graphormer.layer0.attention", "graphormer.layer1.ffn", "train_step"}) {
    INFO("NVTX range " << name);
    CHECK(names.count(name) == 1);
  }
  CHECK(urpe_sim_nvtx_depth() == 0);
#endif
}

TEST_CASE("a CUDA run resumed from its checkpoint continues bit-identically") {
  for (const std::string family : {"encoder", "txl"}) {
    INFO("family: " << family);
    const std::string full = temp_dir(family + "_full"), split = temp_dir(family + "_split");
    train_family(family, family_config(family, "cuda"), full, quiet());
    TrainOptions first = quiet();
    first.stop_after_step = 3;
    train_family(family, family_config(family, "cuda"), split, first);
    TrainOptions resume = quiet();
    resume.resume = true;
    train_family(family, Config(schema_for_model(family == "txl" ? "txl" : "encoder")), split,
                 resume);
    std::vector<double> la, lb;
    for (const MetricsRow& r : metrics_of(full))
      if (r.step > 3) la.push_back(r.loss);
    for (const MetricsRow& r : metrics_of(split))
      if (r.step > 3) lb.push_back(r.loss);
    CHECK(la.size() >= 2);
    CHECK(la == lb);
    const TensorFile a = load_safetensors(join_path(full, "model.safetensors"));
    const TensorFile b = load_safetensors(join_path(split, "model.safetensors"));
    for (const auto& [name, x] : a.tensors) {
      INFO("tensor " << name);
      if (x.dtype() == DType::i32) CHECK(x.to_vector_i32() == b.at(name).to_vector_i32());
      else CHECK(x.to_vector_f32() == b.at(name).to_vector_f32());
    }
  }
}

TEST_CASE("`urpe train --device cuda` from the command line") {
  const std::string dir = temp_dir("cli");
  const test::CliResult r = test::run_urpe(
      "train --preset graphormer-tiny --set dataset=" + toy_molecules() +
      " --set target_column=y --set steps=3 --set warmup=1 --set eval_every=3 --set layers=1 "
      "--set d_model=8 "
      "--set d_ffn=8 --set device=cuda --quiet --out " + dir);
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(metrics_of(dir).size() >= 2);
}

TEST_CASE("the context's TF32 switch: on under precision=tf32 and bf16, off under fp32") {
  // bf16 leaves the attention's matmuls in FP32: they get TF32, as PyTorch's autocast users get
  // with allow_tf32 (docs/cuda.md#mixed-precision); the fused attention gets its BF16 tiles
  // (docs/cuda.md#bf16-tiles), under bf16 only.
  for (const char* precision : {"fp32", "tf32", "bf16"}) {
    INFO(precision);
    const Device device = parse_device("cuda");  // a fresh context, TF32 off
    REQUIRE_FALSE(cuda::tf32(device.context()));
    REQUIRE_FALSE(cuda::bf16_tiles(device.context()));
    apply_device_options(quiet(), device, 10, precision);
    CHECK(cuda::tf32(device.context()) == (std::string(precision) != "fp32"));
    CHECK(cuda::bf16_tiles(device.context()) == (std::string(precision) == "bf16"));
  }
}

TEST_CASE("`urpe repro pretrain --device cuda --tf32`: every run on the GPU with TF32, recorded in results.md") {
  const std::string dir = temp_dir("repro_tf32");
  const test::CliResult r = test::run_urpe(
      "repro pretrain --scale tiny --device cuda --tf32 --set corpus=" + toy_corpus() +
      " --set vocab=14 --set seq_len=8 --set layers=1 --set d_model=16 --set heads=2 --set d_ff=32 --set batch=4"
      " --set steps=2 --set warmup=1 --set eval_every=2 --set valid_size=4 --out " + dir);
  INFO(r.output);
  REQUIRE(r.code == 0);
  const std::string md = read_text_file(dir + "/results.md");
  INFO(md);
  CHECK(md.find("`--set corpus=") != std::string::npos);
  CHECK(md.find("TF32 tensor-core GEMMs on (`--tf32`)") != std::string::npos);
  for (const char* pe : {"ape+rpe", "rpe", "urpe"})
    CHECK(config_from_text(read_text_file(dir + "/runs/" + std::string(pe) + "-s1/config.txt"), "config.txt").get_string("device") == "cuda");
}
