// The `urpe` binary as a user meets it: help, one-line errors with a non-zero exit for every kind
// of bad input, and a tiny end-to-end train → eval → plot.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cli_util.h"
#include "doctest/doctest.h"
#include "tensor/cuda_backend.h"

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
  CHECK(resume.code != 0);  // a resumed run keeps its stored config
}
