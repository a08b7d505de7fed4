// Data-parallel training (docs/distributed.md, base/dist):
// `mpirun -np 2 urpe train` must train like one process with the same global batch, for every model
// family; a batch that does not divide, or ranks that run different configs, is one clear error; a
// failure on one rank ends every rank (no hang); Ctrl-C on one rank stops both with a checkpoint,
// and a 2-rank resume continues bit-identically. The same with the optimizer's state sharded over the ranks
// (shard_optimizer = true, ZeRO-1): the same losses as one process, a checkpoint bit-identical to
// the unsharded 2-rank run's (the same element-wise arithmetic on the same reduced gradients),
// and a bit-identical resume.
//
// Tolerance of the 1-vs-2-rank comparison: the all-reduce sums the two halves' gradients (each
// scaled by its weight, then divided by the total) where one process sums the whole batch in one
// reduction, so float results differ in the last bits from step 1 on; over a few Adam steps that
// stays below 1e-5 relative on the logged losses (the bound). Weights get an absolute
// bound of 1e-4: Adam divides by the root of the squared gradients, so an element whose gradient
// is near zero moves by up to lr (1e-3 here) on rounding noise alone; measured on this machine,
// the largest difference after these runs was 1.5e-5 (Graphormer), 1.1e-5 (encoder), 1e-8 (TXL).
//
// Skipped (exit 77) when urpe was built without MPI or mpirun is not on PATH. As root, OpenMPI
// needs --allow-run-as-root (also as OMPI_ALLOW_RUN_AS_ROOT*), and --oversubscribe on a machine
// with fewer cores than ranks.
//
// Every folder the suite writes lives under one private scratch root ($TMPDIR or /tmp,
// urpe_test_dist_XXXXXX), removed when the process exits, also after a failed check; the last case
// checks that by running the suite itself as a child.
//
// The resume case runs this test executable itself under mpirun as a worker (environment
// URPE_TEST_DIST_WORKER), since only an in-process run can stop at a chosen step on one rank.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "cli_util.h"
#include "scratch_dir.h"
#include "toy_corpus.h"
#include "train/loop/checkpoint.h"
#include "base/dist/communicator.h"
#include "train/families/encoder/encoder_trainer.h"
#include "base/io/run_dir.h"
#include "base/io/safetensors.h"
#include "train/families/txl/txl_trainer.h"
#include "train/config/run_config.h"

using namespace urpe;

namespace {

const char* const kEncoderSettings =
    "--preset pi-tiny --set steps=6 --set eval_every=3 --set warmup=2 --set dropout=0 --set valid_size=64 "
    "--set layers=1";

// Transformer-XL at test size, on a corpus written by the test (the final evaluation reads the
// whole valid split).
std::string txl_settings(const std::string& corpus) {
  return "--preset txl-tiny --set corpus=" + corpus +
         " --set cutoffs= --set layers=1 --set d_model=16 --set heads=2 --set d_head=8 --set d_inner=32 "
         "--set tgt_len=6 --set mem_len=6 --set batch=4 --set steps=6 --set warmup=2 --set eval_every=3 "
         "--set eval_batch=2 --set eval_tgt_len=5 --set eval_mem_len=6 --set max_eval_tokens=60";
}

// ---- the worker (under mpirun): trains the encoder (or, with URPE_TEST_DIST_CORPUS, Transformer-XL
// on that corpus, whose memory the checkpoint gathers from the ranks), with dropout; rank
// STOP_RANK is asked to stop after STOP_STEP ----
Config worker_config(const char* corpus) {
  if (corpus)
    return resolve_config("txl-tiny", "",
                          {"corpus=" + std::string(corpus), "cutoffs=", "layers=1", "d_model=16", "heads=2",
                           "d_head=8", "d_inner=32", "tgt_len=6", "mem_len=6", "batch=4", "steps=6", "warmup=2",
                           "eval_every=3", "eval_batch=2", "eval_tgt_len=5", "eval_mem_len=6", "max_eval_tokens=60",
                           "dropout=0.1"});
  std::vector<std::string> settings = {"steps=6", "eval_every=3", "warmup=2", "batch=8", "dropout=0.1",
                                       "valid_size=64", "layers=1"};
  if (std::getenv("URPE_TEST_DIST_SHARD")) settings.push_back("shard_optimizer=true");
  return resolve_config("pi-tiny", "", settings);
}

struct Worker {
  Worker() {
    const char* out = std::getenv("URPE_TEST_DIST_WORKER");
    if (!out) return;
    int code = 0;
    try {
      TrainOptions options;
      options.quiet = true;
      options.resume = std::getenv("URPE_TEST_DIST_RESUME") != nullptr;
      const char* stop_rank = std::getenv("URPE_TEST_DIST_STOP_RANK");
      if (stop_rank && dist::world().rank() == std::atoi(stop_rank))
        options.stop_after_step = std::atoi(std::getenv("URPE_TEST_DIST_STOP_STEP"));
      const char* corpus = std::getenv("URPE_TEST_DIST_CORPUS");
      const Config config = worker_config(corpus);
      const bool interrupted = corpus ? train_txl(config, out, options).interrupted
                                      : train_encoder(config, out, options).interrupted;
      code = interrupted ? 130 : 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "worker: %s\n", e.what());
      dist::world().abort(1);
    }
    dist::finalize();
    std::exit(code);
  }
} worker;

struct SkipWithoutMpi {
  SkipWithoutMpi() {
    if (!dist::built_with_mpi() || std::system("command -v mpirun >/dev/null 2>&1") != 0) {
      std::printf("urpe built without MPI or no mpirun on PATH: data-parallel suite skipped\n");
      std::fflush(stdout);
      std::exit(77);
    }
  }
} skip_without_mpi;

// Every folder this suite writes (runs, the toy corpus) lives under one private root, removed when
// the process exits (scratch_dir.h).
const std::string& scratch_root() {
  static const std::string root = urpe::test::make_scratch_dir("urpe_test_dist");
  return root;
}

// A fresh folder path inside scratch_root() (not created: `urpe train --out` makes it).
std::string temp_dir(const std::string& name) {
  const std::string dir = scratch_root() + "/" + name;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return dir;
}

// This test executable's own path, to run it again as a child (under mpirun or alone).
std::string self_executable() {
  const std::string self = "/proc/" + std::to_string(::getpid()) + "/exe";
  char exe[4096];
  const ssize_t n = ::readlink(self.c_str(), exe, sizeof exe - 1);
  REQUIRE(n > 0);
  exe[n] = '\0';
  return exe;
}

// A WikiText-format corpus of short sentences (train, valid, test), written once per process.
std::string toy_corpus() {
  static const std::string dir = test::write_toy_corpus(temp_dir("corpus"));
  return dir;
}

// mpirun with K ranks of `program` (run as root in CI; a 2-core machine).
std::string mpirun(int ranks) {
  return "timeout 120 mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(ranks) + " ";
}

std::vector<MetricsRow> metrics_of(const std::string& dir) { return read_metrics(join_path(dir, "metrics.csv")); }

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

void check_same_training(const std::string& one, const std::string& two) {
  const std::vector<MetricsRow> a = metrics_of(one), b = metrics_of(two);
  REQUIRE(a.size() >= 4);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("metrics row " << i << " (step " << a[i].step << ", " << a[i].split << ")");
    CHECK(a[i].step == b[i].step);
    CHECK(a[i].split == b[i].split);
    CHECK(std::fabs(a[i].loss - b[i].loss) <= 1e-5 * std::fabs(a[i].loss));
    CHECK(std::fabs(a[i].metric - b[i].metric) <= 1e-5 * std::fabs(a[i].metric) + 1e-12);
  }
  const TensorFile wa = load_safetensors(join_path(one, "model.safetensors"));
  const TensorFile wb = load_safetensors(join_path(two, "model.safetensors"));
  int compared = 0;
  for (const auto& [name, x] : wa.tensors) {
    if (name.rfind("model.", 0) != 0) continue;
    INFO("tensor " << name);
    const std::vector<float> va = x.to_vector_f32(), vb = wb.at(name).to_vector_f32();
    REQUIRE(va.size() == vb.size());
    double worst = 0;
    for (size_t i = 0; i < va.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(va[i] - vb[i])));
    CHECK(worst <= 1e-4);
    ++compared;
  }
  CHECK(compared > 5);
}

// Every tensor of the two last checkpoints (weights, Adam's state, trainer state) bit for bit.
void check_identical_checkpoints(const std::string& one, const std::string& two) {
  const TensorFile wa = load_safetensors(join_path(one, "model.safetensors"));
  const TensorFile wb = load_safetensors(join_path(two, "model.safetensors"));
  REQUIRE(wa.tensors.size() == wb.tensors.size());
  for (const auto& [name, x] : wa.tensors) {
    INFO("tensor " << name);
    if (x.dtype() == DType::i32) CHECK(x.to_vector_i32() == wb.at(name).to_vector_i32());
    else CHECK(x.to_vector_f32() == wb.at(name).to_vector_f32());
  }
}

// A 2-rank encoder run with `sets` that the config checks must refuse: it fails with `message`
// printed once (not once per rank) and no internal error.
void check_two_rank_config_error(const std::string& dir_name, const std::string& sets, const std::string& message) {
  const std::string dir = temp_dir(dir_name);
  const test::CliResult r = test::run_command(mpirun(2) + URPE_BINARY + " train " + kEncoderSettings + " " + sets +
                                              " --quiet --out " + dir);
  CHECK(r.code != 0);
  CHECK(count_of(r.output, message) == 1);
  CHECK(r.output.find("internal error") == std::string::npos);
}

}  // namespace

TEST_CASE("2 ranks train like 1 process with the same global batch, for every family") {
  const std::vector<std::pair<std::string, std::string>> families = {
      {"encoder", std::string(kEncoderSettings) + " --set batch=8"},
      {"txl", txl_settings(toy_corpus()) + " --set dropout=0"},
      {"graphormer", "--preset graphormer-tiny --set steps=4 --set eval_every=2 --set warmup=1 --set batch=8 "
                     "--set dropout=0 --set layers=1"},
  };
  for (const auto& [family, settings] : families) {
    INFO("family " << family);
    const std::string one = temp_dir(family + "_1"), two = temp_dir(family + "_2");
    const test::CliResult a = test::run_urpe("train " + settings + " --quiet --out " + one);
    REQUIRE_MESSAGE(a.code == 0, a.output);
    const test::CliResult b =
        test::run_command(mpirun(2) + URPE_BINARY + " train " + settings + " --quiet --out " + two);
    REQUIRE_MESSAGE(b.code == 0, b.output);
    CHECK(count_of(b.output, two + ": ") == 1);  // rank 0 alone prints the summary
    check_same_training(one, two);
    // ZeRO-1: the same run; rank 0 reports each rank's share of Adam's moments.
    const std::string sharded = temp_dir(family + "_2_sharded");
    const test::CliResult c = test::run_command(mpirun(2) + URPE_BINARY + " train " + settings +
                                                " --set shard_optimizer=true --out " + sharded);
    REQUIRE_MESSAGE(c.code == 0, c.output);
    CHECK(count_of(c.output, "shard_optimizer: Adam's moments of ") == 1);
    CHECK(c.output.find("parameters per rank (2 ranks)") != std::string::npos);
    check_same_training(one, sharded);
    check_identical_checkpoints(two, sharded);
  }
}

TEST_CASE("a global batch that does not divide across the ranks is one error") {
  check_two_rank_config_error("indivisible", "--set batch=5",
                              "urpe: error: config: batch = 5 is the global batch and must divide evenly across the 2 "
                              "ranks (mpirun -np 2); use a multiple of 2");
}

TEST_CASE("ranks that run different configs are one error") {
  const std::string dir = temp_dir("mismatch");
  const std::string program = std::string(URPE_BINARY) + " train " + kEncoderSettings + " --quiet --out " + dir;
  const test::CliResult r = test::run_command(mpirun(1) + program + " : -np 1 " + program + " --set lr=0.0005");
  CHECK(r.code != 0);
  CHECK(count_of(r.output, "urpe: error: this rank's resolved config differs from rank 0's; every rank must train "
                           "the same config (same file, same --set options) (on rank 1)") == 1);
  CHECK(!path_exists(join_path(dir, "model.safetensors")));
}

TEST_CASE("a failure on one rank ends every rank instead of leaving them waiting") {
  const std::string dir = temp_dir("one_fails");
  const std::string program = std::string(URPE_BINARY) + " train " + kEncoderSettings + " --quiet --out " + dir;
  // Rank 1's config is refused before training, while rank 0 waits for it in a collective.
  const test::CliResult r = test::run_command(mpirun(1) + program + " : -np 1 " + program + " --set batch=abc");
  CHECK(r.code != 0);
  CHECK(r.code != 124);  // not the timeout: mpirun ended the job
  CHECK(r.output.find("urpe: error:") != std::string::npos);
  CHECK(r.output.find("batch") != std::string::npos);
}

TEST_CASE("a stop on one rank stops both with a checkpoint, and a 2-rank resume is bit-identical") {
  const std::string exe = self_executable();
  // The encoder, Transformer-XL (its memory gathered into the checkpoint), and the encoder with
  // the optimizer's state sharded (gathered on save, each rank's range taken on resume).
  for (const std::string family : {"encoder", "txl", "encoder_sharded"}) {
    INFO("family " << family);
    const std::string full = temp_dir(family + "_full"), split = temp_dir(family + "_split");
    const std::string corpus = family == "txl" ? " -x URPE_TEST_DIST_CORPUS=" + toy_corpus()
                               : family == "encoder_sharded" ? " -x URPE_TEST_DIST_SHARD=1"
                                                             : "";
    const auto worker_run = [&](const std::string& out, const std::string& env) {
      return test::run_command(mpirun(2) + "-x URPE_TEST_DIST_WORKER=" + out + corpus + " " + env + " " + exe);
    };
    const test::CliResult a = worker_run(full, "");
    REQUIRE_MESSAGE(a.code == 0, a.output);
    // Rank 1 alone is asked to stop after step 4 (between evaluations): both ranks stop there and
    // rank 0 saves the checkpoint.
    const test::CliResult b = worker_run(split, "-x URPE_TEST_DIST_STOP_RANK=1 -x URPE_TEST_DIST_STOP_STEP=4");
    REQUIRE_MESSAGE(b.code == 130, b.output);
    CHECK(read_checkpoint_info(join_path(split, "model.safetensors")).progress.step == 4);
    const test::CliResult c = worker_run(split, "-x URPE_TEST_DIST_RESUME=1");
    REQUIRE_MESSAGE(c.code == 0, c.output);
    const std::vector<MetricsRow> ma = metrics_of(full), mb = metrics_of(split);
    REQUIRE(ma.size() >= 4);
    REQUIRE(ma.size() == mb.size());
    for (size_t i = 0; i < ma.size(); ++i) {
      CHECK(ma[i].loss == mb[i].loss);
      CHECK(ma[i].metric == mb[i].metric);
    }
    // Every tensor of the checkpoint: the weights, Adam's state and (Transformer-XL) the memory
    // of every column, gathered from both ranks.
    check_identical_checkpoints(full, split);
  }
}

TEST_CASE("2 ranks × 2 micro-batches (accum_steps) train like 1 process with the whole batch") {
  // Each rank's half of the batch in two micro-batches: the ranks weigh their accumulated
  // gradients by their targets, as the micro-batches are weighed (train/loop/grad_accumulation.h).
  // Transformer-XL also splits every rank's memory by micro-batch and joins it again.
  const std::vector<std::pair<std::string, std::string>> families = {
      {"encoder", std::string(kEncoderSettings) + " --set batch=8"},
      {"txl", txl_settings(toy_corpus()) + " --set dropout=0"},
  };
  for (const auto& [family, settings] : families) {
    INFO("family " << family);
    const std::string one = temp_dir(family + "_accum_1"), two = temp_dir(family + "_accum_2");
    const test::CliResult a = test::run_urpe("train " + settings + " --quiet --out " + one);
    REQUIRE_MESSAGE(a.code == 0, a.output);
    const test::CliResult b = test::run_command(mpirun(2) + URPE_BINARY + " train " + settings +
                                                " --set accum_steps=2 --quiet --out " + two);
    REQUIRE_MESSAGE(b.code == 0, b.output);
    check_same_training(one, two);
  }
}

TEST_CASE("accum_steps that does not divide each rank's rows is one error") {
  check_two_rank_config_error("accum_indivisible", "--set batch=6 --set accum_steps=2",
                              "urpe: error: config: accum_steps = 2 must divide each rank's 3 rows of the batch (batch 6 "
                              "over 2 ranks); use a batch that is a multiple of 4");
}

// Run only as a child of the next case (skipped in the suite's own run): writes what the other
// cases write (the toy corpus, a run folder), prints its scratch root, and fails a check when
// URPE_TEST_DIST_SCRATCH_FAIL is set.
TEST_CASE("scratch child: writes into the scratch root" * doctest::skip()) {
  const std::string dir = temp_dir("child_run");
  std::filesystem::create_directories(dir);
  write_text_atomic(join_path(dir, "metrics.csv"), "step,split,loss\n");
  CHECK(path_exists(join_path(toy_corpus(), "train.txt")));
  CHECK(path_exists(join_path(dir, "metrics.csv")));
  std::printf("scratch root: %s\n", scratch_root().c_str());
  CHECK(std::getenv("URPE_TEST_DIST_SCRATCH_FAIL") == nullptr);
}

TEST_CASE("the suite leaves no folders behind: its scratch root goes at exit, after a failed check too") {
  const std::string exe = self_executable();
  for (const bool fail : {false, true}) {
    INFO("child " << (fail ? "with" : "without") << " a failed check");
    const std::string tmp = temp_dir(fail ? "tmpdir_fail" : "tmpdir_pass");
    std::filesystem::create_directories(tmp);
    const test::CliResult r = test::run_command("TMPDIR='" + tmp + "' " + (fail ? "URPE_TEST_DIST_SCRATCH_FAIL=1 " : "") +
                                                "'" + exe + "' '--test-case=scratch child*' --no-skip");
    CHECK_MESSAGE(r.code == (fail ? 1 : 0), r.output);
    CHECK_MESSAGE(r.output.find("scratch root: " + tmp + "/urpe_test_dist_") != std::string::npos, r.output);
    CHECK(std::filesystem::is_empty(tmp));
  }
}
