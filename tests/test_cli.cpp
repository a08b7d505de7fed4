// The `urpe` binary as a user meets it: help, one-line errors with a non-zero exit for every kind
// of bad input, and a tiny end-to-end train → eval → plot.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_util.h"
#include "doctest/doctest.h"
#include "tensor/cuda_backend.h"
#include "app/bench/step_models.h"
#include "train/loop/checkpoint.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/families/txl/txl_config.h"
#include "train/families/txl/txl_trainer.h"
#include "train/families/graphormer/graphormer_config.h"
#include "train/config/run_config.h"
#include "train/loop/run_control.h"

namespace {

using Result = urpe::test::CliResult;
using urpe::test::run_urpe;

int lines(const std::string& text) {
  int count = 0;
  for (char c : text) count += c == '\n';
  return count;
}

std::string temp_dir(const std::string& name) {
  const std::string dir = "/tmp/urpe_test_cli_" + std::to_string(::getpid()) + "_" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

const char* kTiny =
    "--set seq_len=8 --set vocab=6 --set layers=1 --set d_model=16 --set heads=2 --set d_ff=32 "
    "--set batch=4 --set steps=6 --set warmup=2 --set eval_every=3 --set valid_size=16 --quiet";

void check_one_line_error(const Result& r, const std::string& expected) {
  INFO(r.output);
  CHECK(r.code != 0);
  CHECK(lines(r.output) == 1);
  CHECK(r.output.find(expected) != std::string::npos);
}

}  // namespace

TEST_CASE("help lists every subcommand and every train key") {
  const Result r = run_urpe("--help");
  CHECK(r.code == 0);
  for (const char* cmd : {"demo", "train", "eval", "repro", "plot", "bench"}) CHECK(r.output.find(cmd) != std::string::npos);
  const Result t = run_urpe("train --help");
  CHECK(t.code == 0);
  for (const char* key : {"task", "pe", "rpe_kind", "urpe_kind", "seq_len", "vocab", "layers", "d_model", "heads",
                          "d_ff", "dropout", "init_std", "batch", "steps", "lr", "warmup", "weight_decay", "clip",
                          "seed", "eval_every", "valid_size", "device"}) {
    INFO(key);
    CHECK(t.output.find(std::string("  ") + key) != std::string::npos);
  }
}

TEST_CASE("bad input: one line, non-zero exit, names what was wrong") {
  const std::string out = temp_dir("bad");
  check_one_line_error(run_urpe("train --bogus"), "unknown option --bogus");
  check_one_line_error(run_urpe("train --bogus"), "urpe train --help");
  check_one_line_error(run_urpe("frobnicate"), "urpe --help");
  check_one_line_error(run_urpe("train --out " + out + " --set lr_rate=0.1"), "did you mean 'lr'");
  check_one_line_error(run_urpe("train --out " + out + " --set steps=abc"), "steps");
  check_one_line_error(run_urpe("train --out " + out + " --set seq_len=1"), "key 'seq_len' expects an integer from 2");
  check_one_line_error(run_urpe("train --out " + out + " --set heads=5"), "must divide d_model");
  check_one_line_error(run_urpe("train --out " + out + " --config /nonexistent.cfg"), "/nonexistent.cfg");
  check_one_line_error(run_urpe("eval --run /nonexistent_run_dir"), "does not exist");
  check_one_line_error(run_urpe("train --out " + out + " --set device=tpu"), "device");
  check_one_line_error(run_urpe("train --set steps=3"), "--out");
}

TEST_CASE("bench step asks the registry: each family's step, its options checked by the family") {
  // The families with a bench step are the registry's (train/families/NAME/NAME_bench_step.cpp).
  CHECK(urpe::bench::step_model_names() == std::vector<std::string>{"encoder", "txl", "graphormer"});
  check_one_line_error(run_urpe("bench step --model toy"), "option --model: expected encoder, txl or graphormer, got 'toy'");
  check_one_line_error(run_urpe("bench step --model txl --attention fused"),
                       "option --attention: txl has one attention path");
  check_one_line_error(run_urpe("bench step --model graphormer --seq-len 64"),
                       "option --seq-len: graphormer's molecules set their own sizes");
}

TEST_CASE("bench --device cuda without a usable GPU: one clear line, before any work") {
  check_one_line_error(run_urpe("bench kernels --tf32"), "option --tf32");
  check_one_line_error(run_urpe("bench step --device cpu --tf32"), "option --tf32");
  check_one_line_error(run_urpe("bench kernels --device gpu"), "expected cpu, cuda or cuda:N");
  check_one_line_error(run_urpe("bench kernels --sizes smoke"), "option --sizes");
  if (urpe::cuda::built_with_cuda() && urpe::cuda::device_count() > 0) {
    MESSAGE("a CUDA device is visible: the no-GPU errors cannot be exercised here");
    return;
  }
  const char* expected = urpe::cuda::built_with_cuda() ? "no CUDA device" : "built without CUDA";
  for (const char* command : {"bench kernels --device cuda", "bench kernels --device cuda:1 --tf32",
                              "bench step --device cuda"}) {
    INFO(command);
    const Result r = run_urpe(command);
    check_one_line_error(r, expected);
    CHECK(r.output.find(std::string(command).substr(0, 12)) != std::string::npos);  // names the command
  }
}

TEST_CASE("train → eval → plot on a tiny config, and a truncated checkpoint is refused") {
  const std::string dir = temp_dir("run");
  const Result train = run_urpe("train --out " + dir + " " + kTiny);
  INFO(train.output);
  REQUIRE(train.code == 0);
  CHECK(train.output.find("valid accuracy") != std::string::npos);
  const Result eval = run_urpe("eval --run " + dir);
  CHECK(eval.code == 0);
  CHECK(eval.output.find("valid accuracy") != std::string::npos);
  const Result plot = run_urpe("plot --run " + dir);
  CHECK(plot.code == 0);
  CHECK(plot.output.find("curves.png") != std::string::npos);

  // Truncate the checkpoint: eval must name the file and refuse.
  const std::string checkpoint = dir + "/model.safetensors";
  std::ifstream in(checkpoint, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  REQUIRE(bytes.size() > 100);
  std::ofstream(checkpoint, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size() / 2);
  check_one_line_error(run_urpe("eval --run " + dir), "model.safetensors");
}

TEST_CASE("Ctrl-C saves a checkpoint and --resume finishes the run") {
  const std::string dir = temp_dir("sigint");
  // Long enough that SIGINT arrives mid-run.
  const std::string cmd = std::string("timeout --preserve-status -s INT 2 ") + URPE_BINARY + " train --out " + dir +
                          " --set seq_len=8 --set vocab=6 --set layers=1 --set d_model=16 --set heads=2"
                          " --set d_ff=32 --set batch=4 --set steps=1000000 --set eval_every=1000000"
                          " --set valid_size=16 --quiet > /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(status) == 130);
  std::ifstream checkpoint(dir + "/model.safetensors");
  CHECK(checkpoint.good());
  const Result resume = run_urpe("train --resume " + dir + " --quiet --set steps=3");
  CHECK(resume.code != 0);  // steps may change on resume, but never below the step reached
}

namespace {

// Config text with its `device = cpu` line saying `device = cuda` (alignment and comment kept).
std::string on_cuda(const std::string& text) {
  std::istringstream lines(text);
  std::string line, key, value, out;
  int changed = 0;
  while (std::getline(lines, line)) {
    if (urpe::read_config_line(line, key, value) && key == "device") {
      REQUIRE(value == "cpu");
      const size_t at = line.find("cpu", line.find('='));
      line.replace(at, 3, "cuda");
      ++changed;
    }
    out += line + "\n";
  }
  REQUIRE(changed == 1);
  return out;
}

// Rewrites a CPU run directory as a run trained with `device = cuda` records itself: config.txt
// and the checkpoint's config say `device = cuda` (the only places the device is kept; the
// tensors are host bytes either way). The checkpoint is written again by save_checkpoint, as
// the CUDA run would have written it, from the model, Adam state and progress it holds.
void record_as_cuda_run(const std::string& dir) {
  using namespace urpe;
  const std::string path = dir + "/model.safetensors";
  const std::string config_text = read_checkpoint_info(path).config_text;
  const std::string cuda_text = on_cuda(config_text);
  const Config config = config_from_text(config_text, path);
  const std::string model = config.get_string("model");
  auto rewrite = [&](const ParameterSet& params) {
    Adam adam(params.tensors(), adam_config_from(run_settings_from(config)));
    const CheckpointInfo info = load_checkpoint(path, params, &adam);
    save_checkpoint(path, params, &adam, info.progress, cuda_text, info.state);
  };
  if (model == "txl") {
    rewrite(TransformerXL(txl_config_from(config, corpus_from_config(config).vocab.size()), 0).parameters());
  } else if (model == "graphormer") {
    rewrite(Graphormer(graphormer_config_from(config), 0).parameters());
  } else {
    rewrite(TransformerEncoder(encoder_config_from(config), 0).parameters());
  }
  std::ifstream in(dir + "/config.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir + "/config.txt", std::ios::trunc) << on_cuda(text);
  REQUIRE(config_from_text(read_checkpoint_info(path).config_text, path).get_string("device") == "cuda");
}

}  // namespace

TEST_CASE("eval --device cpu scores a run trained with device = cuda, and gets its metric again") {
  const std::string corpus = temp_dir("device_corpus");
  std::system(("mkdir -p " + corpus).c_str());
  std::string words;
  for (int k = 0; k < 400; ++k) words += (k % 7 == 0 ? "the cat sat .\n" : k % 3 ? "a dog ran to the mat .\n" : "birds fly .\n");
  for (const char* split : {"train", "valid", "test"}) std::ofstream(corpus + "/" + split + ".txt") << words;
  const std::vector<std::string> families = {
      kTiny,
      "--set model=txl --set corpus=" + corpus + " --set layers=1 --set d_model=16 --set heads=2 --set d_head=8 "
      "--set d_inner=16 --set tgt_len=8 --set mem_len=8 --set batch=4 --set steps=4 --set warmup=1 --set eval_every=2 "
      "--set eval_batch=2 --set cutoffs= --quiet",
      "--preset graphormer-tiny --set layers=1 --set d_model=8 --set d_ffn=8 --set heads=2 --set steps=4 "
      "--set warmup=1 --set eval_every=2 --set eval_batch=512 --quiet"};
  for (size_t k = 0; k < families.size(); ++k) {
    const std::string dir = temp_dir("device_" + std::to_string(k));
    INFO(families[k]);
    const Result train = run_urpe("train --out " + dir + " " + families[k]);
    INFO(train.output);
    REQUIRE(train.code == 0);
    const Result before = run_urpe("eval --run " + dir);
    REQUIRE(before.code == 0);
    record_as_cuda_run(dir);
    if (!urpe::cuda::built_with_cuda() || urpe::cuda::device_count() == 0) {
      // Without a GPU the run's own device cannot be opened; the error says what to do.
      check_one_line_error(run_urpe("eval --run " + dir), "--device cpu");
    }
    const Result after = run_urpe("eval --run " + dir + " --device cpu");
    INFO(after.output);
    CHECK(after.code == 0);
    CHECK(after.output == before.output);  // the same step, metric and count, to the printed digit
    check_one_line_error(run_urpe("eval --run " + dir + " --device gpu"), "expected cpu, cuda or cuda:N");
  }
}

TEST_CASE("--overwrite replaces the run in --out: nothing of the old run stays, other files do") {
  namespace fs = std::filesystem;
  const std::string dir = temp_dir("overwrite");
  REQUIRE(run_urpe("train --out " + dir + " " + kTiny).code == 0);
  // What the old run (or an old repro) left that the new run will not write, and a file of the user's.
  std::ofstream(dir + "/plots/old.png") << "stale";
  std::ofstream(dir + "/results.md") << "# an old table\n";
  std::ofstream(dir + "/notes.txt") << "mine\n";
  check_one_line_error(run_urpe("train --out " + dir + " " + kTiny), "pass --overwrite");
  CHECK(fs::exists(dir + "/plots/old.png"));

  const Result again = run_urpe("train --out " + dir + " " + kTiny + " --set seed=7 --overwrite");
  INFO(again.output);
  REQUIRE(again.code == 0);
  CHECK(!fs::exists(dir + "/plots/old.png"));
  CHECK(!fs::exists(dir + "/results.md"));
  CHECK(!fs::exists(dir + "/.urpe-replaced"));
  CHECK(fs::exists(dir + "/notes.txt"));
  CHECK(fs::exists(dir + "/plots/curves.png"));
  std::ifstream config(dir + "/config.txt");
  const std::string text((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  CHECK(urpe::config_from_text(text, "config.txt").get_int("seed") == 7);
  CHECK(run_urpe("eval --run " + dir).code == 0);
}

TEST_CASE("--overwrite: a run that fails after its first checkpoint is kept (resumable), the old one goes") {
  namespace fs = std::filesystem;
  const std::string dir = temp_dir("overwrite_late");
  REQUIRE(run_urpe("train --out " + dir + " " + kTiny).code == 0);
  std::ofstream(dir + "/plots/old.png") << "stale";
  // lr = 1e8 with an evaluation (and checkpoint) after step 1: step 2's update diverges (1e30
  // already makes step 1's validation loss NaN, and a run that never saved is not kept).
  const Result r = run_urpe("train --out " + dir +
                            " --set seq_len=8 --set vocab=6 --set layers=1 --set d_model=16 --set heads=2"
                            " --set d_ff=32 --set batch=4 --set steps=6 --set warmup=0 --set eval_every=1"
                            " --set valid_size=16 --set lr=1e8 --quiet --overwrite");
  check_one_line_error(r, "diverged");
  CHECK(fs::exists(dir + "/model.safetensors"));
  CHECK(!fs::exists(dir + "/plots/old.png"));
  CHECK(!fs::exists(dir + "/.urpe-replaced"));
  std::ifstream config(dir + "/config.txt");
  const std::string text((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  CHECK(urpe::config_from_text(text, "config.txt").get_float("lr") == doctest::Approx(1e8));
}
