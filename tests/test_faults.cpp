// Faults rather than bad values (docs/runs.md, issue 27): two commands on one run directory, a
// diverging run, a resumed directory whose files do not belong together, Ctrl-C and SIGTERM during
// a repro grid, odd paths (dangling symlinks, loops), work that grows faster than its input (a
// 10⁶-atom SMILES line), odd environments (OMP_NUM_THREADS=100000, ulimit -v, TERM=dumb, a full
// stdout) and the messages that used to name neither the file nor the key. One test case per
// class, each running the `urpe` binary the way a user would (tests/test_cli_bad_inputs.cpp holds
// the bad values).
//
// The cases named "cli: ..." use nothing but the binary, so they also run against another build:
// URPE_FAULTS_BINARY=/path/to/old/urpe ./test_faults -tc="cli:*" shows which of them an older
// urpe fails (docs/testing.md and docs/runs.md record what today's main did). Every case is small:
// tiny configs, a few steps, the whole suite in seconds on 2 cores.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "doctest/doctest.h"
#include "file_bytes.h"
#include "scratch_dir.h"
#include "tensor/error.h"
#include "train/loop/checkpoint_identity.h"
#include "base/io/run_lock.h"
#include "base/io/safetensors.h"
#include "app/repro/grid_cells.h"
#include "train/config/run_config.h"
#include "train/loop/run_control.h"

namespace {

namespace fs = std::filesystem;

// ---- running urpe ----

std::string urpe_binary() {
  const char* other = std::getenv("URPE_FAULTS_BINARY");
  return other && *other ? other : URPE_BINARY;
}

const std::string& scratch() {
  static const std::string root = urpe::test::make_scratch_dir("urpe_test_faults");
  return root;
}

using urpe::test::read_file;
using urpe::test::write_file;

struct Launch {
  Launch(std::vector<std::string> args_) : args(std::move(args_)) {}
  std::vector<std::string> args;     // after `urpe`
  std::vector<std::string> env;      // KEY=VALUE added to the environment
  std::string stdout_path;           // "" = captured; e.g. "/dev/full"
  uint64_t address_space_limit = 0;  // RLIMIT_AS in bytes, 0 = unchanged
  uint64_t file_size_limit = 0;      // RLIMIT_FSIZE in bytes (ulimit -f), 0 = unchanged
  bool closed_pipe = false;          // stdout and stderr into a pipe nobody reads (`urpe ... 2>&1 | head`)
};

struct Running {
  pid_t pid = -1;
  std::string out_path, err_path;
  bool capture_out = true;
};

struct Outcome {
  bool exited = false, timed_out = false;
  int code = -1, signal = 0;
  std::string out, err;
  double seconds = 0;
};

Running start(const Launch& launch) {
  static int counter = 0;
  Running r;
  const std::string stem = scratch() + "/proc" + std::to_string(counter++);
  r.err_path = stem + ".err";
  r.capture_out = launch.stdout_path.empty();
  r.out_path = r.capture_out ? stem + ".out" : launch.stdout_path;
  std::vector<std::string> argv_text = {urpe_binary()};
  argv_text.insert(argv_text.end(), launch.args.begin(), launch.args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  int pipe_ends[2] = {-1, -1};
  if (launch.closed_pipe) {
    REQUIRE(::pipe(pipe_ends) == 0);
    r.capture_out = false;
  }
  // A stop signal sent before exec() must reach urpe's starting state (killed by default), not this
  // test's handlers in the forked copy: it waits, blocked, until the child has reset them.
  sigset_t stops, previous;
  sigemptyset(&stops);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, s);
  ::sigprocmask(SIG_BLOCK, &stops, &previous);
  r.pid = ::fork();
  if (r.pid != 0) ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  REQUIRE(r.pid >= 0);
  if (r.pid == 0) {
    for (int s : {SIGINT, SIGTERM, SIGHUP}) ::signal(s, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    const int out = ::open(r.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(r.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(launch.closed_pipe ? pipe_ends[1] : out, 1);
    ::dup2(launch.closed_pipe ? pipe_ends[1] : err, 2);
    if (launch.closed_pipe) {
      ::close(pipe_ends[0]);
      ::close(pipe_ends[1]);
    }
    ::setpgid(0, 0);  // a signal sent to the test's group (a Ctrl-C at the terminal) spares it
    // As a shell starts a command: the output signals at their default (kill), whatever the test's are.
    ::signal(SIGPIPE, SIG_DFL);
    ::signal(SIGXFSZ, SIG_DFL);
    for (const std::string& e : launch.env) ::putenv(const_cast<char*>(e.c_str()));
    if (launch.address_space_limit > 0) {
      struct rlimit limit = {launch.address_space_limit, launch.address_space_limit};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    if (launch.file_size_limit > 0) {
      struct rlimit limit = {launch.file_size_limit, launch.file_size_limit};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (launch.closed_pipe) {  // the reader is gone before urpe writes a byte
    ::close(pipe_ends[0]);
    ::close(pipe_ends[1]);
  }
  return r;
}

Outcome finish(const Running& r, double limit_s) {
  Outcome o;
  const auto begin = std::chrono::steady_clock::now();
  const auto deadline = begin + std::chrono::duration<double>(limit_s);
  int status = 0;
  while (::waitpid(r.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(r.pid, SIGKILL);
      ::waitpid(r.pid, &status, 0);
      o.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  o.exited = !o.timed_out && WIFEXITED(status);
  o.code = o.exited ? WEXITSTATUS(status) : -1;
  o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  o.err = read_file(r.err_path);
  if (r.capture_out) o.out = read_file(r.out_path);
  return o;
}

Outcome run(const Launch& launch, double limit_s = 60) { return finish(start(launch), limit_s); }
Outcome run(const std::vector<std::string>& args, double limit_s = 60) { return run(Launch{args}, limit_s); }

bool wait_for(const std::string& path, double limit_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (!fs::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool has(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

// The promise for a refused command: exit 1, no signal, exactly one `urpe: error:` line on stderr
// holding every piece of `expected`.
void check_refused(const Outcome& o, const std::vector<std::string>& expected) {
  INFO("stderr: " << o.err);
  CHECK(!o.timed_out);
  CHECK(o.signal == 0);
  CHECK(o.code == 1);
  CHECK(o.err.rfind("urpe: error: ", 0) == 0);
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  for (const std::string& piece : expected) {
    INFO("expected: " << piece);
    CHECK(has(o.err, piece));
  }
}

// ---- run directories ----

const std::vector<std::string> kTiny = {"--set", "seq_len=8",  "--set", "vocab=6",   "--set", "layers=1",
                                        "--set", "d_model=16", "--set", "heads=2",   "--set", "d_ff=32",
                                        "--set", "batch=4",    "--set", "warmup=0",  "--set", "valid_size=16"};

std::vector<std::string> train_args(const std::string& out, const std::vector<std::string>& more) {
  std::vector<std::string> args = {"train", "--out", out, "--quiet"};
  args.insert(args.end(), kTiny.begin(), kTiny.end());
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::string fresh_dir(const std::string& name) {
  const std::string dir = scratch() + "/" + name;
  fs::remove_all(dir);
  return dir;
}

// A finished tiny run in `name` (6 steps, evaluated at 3 and 6).
std::string tiny_run(const std::string& name, const std::vector<std::string>& more = {}) {
  const std::string dir = fresh_dir(name);
  std::vector<std::string> sets = {"--set", "steps=6", "--set", "eval_every=3"};
  sets.insert(sets.end(), more.begin(), more.end());
  const Outcome o = run(train_args(dir, sets));
  INFO(o.err);
  REQUIRE(o.code == 0);
  return dir;
}

int64_t checkpoint_step(const std::string& path) { return std::stoll(urpe::load_safetensors(path).meta("step")); }

// A text file of `lines` short sentences over a few words.
std::string sentences(int lines) {
  std::string text;
  for (int k = 0; k < lines; ++k) text += k % 3 ? "the cat sat on the mat .\n" : "a dog ran to the tree .\n";
  return text;
}

std::vector<std::string> txl_args(const std::string& out, const std::string& corpus) {
  std::vector<std::string> args = {"train", "--out", out, "--quiet"};
  for (const char* s : {"model=txl", "layers=1", "d_model=16", "heads=2", "d_head=8", "d_inner=16", "tgt_len=8",
                        "mem_len=8", "batch=4", "steps=4", "warmup=1", "eval_every=2", "eval_batch=2", "cutoffs="})
    args.insert(args.end(), {"--set", s});
  args.insert(args.end(), {"--set", "corpus=" + corpus});
  return args;
}

std::vector<std::string> graphormer_args(const std::string& out, const std::string& dataset) {
  std::vector<std::string> args = {"train", "--out", out, "--quiet"};
  for (const char* s : {"model=graphormer", "target_column=target", "layers=1", "d_model=8", "d_ffn=8", "heads=2",
                        "steps=2", "warmup=1", "eval_every=2", "batch=4", "split=seeded"})
    args.insert(args.end(), {"--set", s});
  args.insert(args.end(), {"--set", "dataset=" + dataset});
  return args;
}

// A molecule CSV (smiles,target) of 24 small molecules, with `extra` rows first.
std::string molecule_csv(const std::string& name, const std::string& header, const std::vector<std::string>& extra) {
  std::string text = header + "\n";
  for (const std::string& row : extra) text += row + "\n";
  for (int k = 0; k < 24; ++k) text += "CC" + std::string(static_cast<size_t>(k % 5), 'C') + "O," + std::to_string(0.1 * k) + "\n";
  const std::string path = scratch() + "/" + name;
  write_file(path, text);
  return path;
}

}  // namespace

// ---- two processes on one directory ----

TEST_CASE("cli: two processes on one run directory: the second is refused naming the holder; a kill leaves no lock") {
  const std::string dir = fresh_dir("locked");
  // A long run that evaluates (and checkpoints) once, early: it holds the lock while the rest runs.
  const Running first = start(Launch{train_args(dir, {"--set", "steps=1000000", "--set", "eval_every=20"})});
  REQUIRE(wait_for(dir + "/model.safetensors", 60));
  const std::string config_before = read_file(dir + "/config.txt");
  const std::string holder = "pid " + std::to_string(first.pid);

  // Every writer is refused while it trains, and none changes its files (readers: the next case).
  check_refused(run(train_args(dir, {"--overwrite", "--set", "steps=4"})), {"--out " + dir, holder, "urpe train"});
  check_refused(run(train_args(dir, {"--set", "steps=4"})), {holder});
  check_refused(run({"train", "--resume", dir, "--quiet"}), {"--resume " + dir, holder});
  check_refused(run({"train", "--resume", dir + "/", "--quiet"}), {holder});  // the same directory spelled otherwise
  check_refused(run({"demo", "--out", dir, "--overwrite"}), {holder});
  check_refused(run({"repro", "synthetic", "--out", dir, "--overwrite"}), {holder});
  CHECK(read_file(dir + "/config.txt") == config_before);

  // The kernel drops the lock of a killed process: the directory is usable at once.
  ::kill(first.pid, SIGKILL);
  const Outcome killed = finish(first, 30);
  CHECK(killed.signal == SIGKILL);
  const Outcome after = run(train_args(dir, {"--overwrite", "--set", "steps=4"}));
  INFO(after.err);
  CHECK(after.code == 0);
  CHECK(!fs::exists(dir + "/.urpe-replaced"));
}

TEST_CASE("lock: readers share it, a writer is refused naming the reader, one process may take it again") {
  const std::string dir = fresh_dir("shared_lock");
  fs::create_directories(dir);
  int ready[2], release[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(release) == 0);
  const pid_t reader = ::fork();
  REQUIRE(reader >= 0);
  if (reader == 0) {  // holds a shared lock until told to go
    int code = 0;
    try {
      const urpe::RunDirectoryLock lock(dir, urpe::LockMode::shared, "--run");
      char byte = 'r';
      if (::write(ready[1], &byte, 1) != 1) code = 2;
      if (::read(release[0], &byte, 1) != 1) code = 3;
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  {
    const urpe::RunDirectoryLock shared(dir, urpe::LockMode::shared, "--run");  // readers share
    std::string error;
    try {
      const urpe::RunDirectoryLock writer(dir, urpe::LockMode::exclusive, "--out");
    } catch (const urpe::Error& e) {
      error = e.what();
    }
    INFO(error);
    CHECK(has(error, "--out " + dir + " is in use by another urpe command"));
    CHECK(has(error, "pid " + std::to_string(reader)));
    CHECK(has(error, "reading"));
  }
  REQUIRE(::write(release[1], &byte, 1) == 1);
  int status = 0;
  ::waitpid(reader, &status, 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  // Re-entrant within a process: the CLI takes a directory's lock and the training loop again.
  const urpe::RunDirectoryLock outer(dir, urpe::LockMode::exclusive, "--out");
  const urpe::RunDirectoryLock inner(dir, urpe::LockMode::exclusive, "--out");
  CHECK(urpe::describe_lock_holders(dir).empty());  // this process's own lock is nobody else's
  // A directory an interrupted --overwrite left its old run in is refused.
  const std::string replaced = fresh_dir("replaced_lock");
  fs::create_directories(replaced + "/.urpe-replaced");
  CHECK_THROWS_WITH_AS(urpe::RunDirectoryLock(replaced, urpe::LockMode::shared, "--run"),
                       doctest::Contains(".urpe-replaced"), urpe::Error);
}

// ---- divergence ----

TEST_CASE("cli: divergence with eval_every=1 keeps the last good checkpoint; eval of a non-finite model is an error") {
  const std::string dir = fresh_dir("diverged");
  // lr = 1e8: step 1's update is finite and saved, step 2's turns the embedding into NaN.
  const Outcome o = run(train_args(dir, {"--set", "steps=6", "--set", "eval_every=1", "--set", "lr=1e8"}));
  check_refused(o, {"training diverged at step 2", "nan", "(step 1)"});
  REQUIRE(fs::exists(dir + "/model.safetensors"));
  for (const char* name : {"model.safetensors", "model.best.safetensors"}) {
    INFO(name);
    const urpe::TensorFile file = urpe::load_safetensors(dir + "/" + name);
    CHECK(file.meta("step") == "1");
    for (const auto& [tensor, t] : file.tensors) {
      if (t.dtype() != urpe::DType::f32) continue;
      for (float v : t.to_vector_f32()) {
        INFO(tensor);
        REQUIRE(std::isfinite(v));
      }
    }
  }
  const Outcome eval = run({"eval", "--run", dir});
  INFO(eval.err);
  CHECK(eval.code == 0);
  CHECK(has(eval.out, "step 1"));
  CHECK(!has(eval.out, "nan"));

  // A checkpoint holding a NaN (what an older build saved) is refused by eval and --resume.
  urpe::TensorFile file = urpe::load_safetensors(dir + "/model.safetensors");
  for (auto& [name, t] : file.tensors)
    if (name.rfind("model.", 0) == 0 && t.dtype() == urpe::DType::f32) {
      std::vector<float> values = t.to_vector_f32();
      values[0] = NAN;
      t = urpe::Tensor::from_vector(values, t.shape());
      break;
    }
  urpe::save_safetensors(dir + "/model.safetensors", file.tensors, file.metadata);
  check_refused(run({"eval", "--run", dir}), {"model.safetensors", "holds nan"});
  check_refused(run({"train", "--resume", dir, "--quiet"}), {"model.safetensors", "holds nan"});
}

// ---- resume identity ----

TEST_CASE("cli: --resume refuses an edited config.txt and a foreign checkpoint; --set changes steps on purpose") {
  const std::string dir = tiny_run("resumed");
  const std::string other = tiny_run("other_run", {"--set", "seed=7"});
  const std::string config = read_file(dir + "/config.txt");
  CHECK(urpe::is_run_id(urpe::run_id_in_config_file(config)));

  // An edit to config.txt is refused, naming the key and both values.
  std::string edited = std::regex_replace(config, std::regex("\nlr( *)= 0.002"), "\nlr$1= 0.5");
  REQUIRE(edited != config);
  write_file(dir + "/config.txt", edited);
  check_refused(run({"train", "--resume", dir, "--quiet"}), {"config.txt differs", "lr (config.txt 0.5, checkpoint 0.002)"});
  // ...and an edit of a key that may change says how to change it on purpose.
  edited = std::regex_replace(config, std::regex("\nsteps( *)= 6 "), "\nsteps$1= 9 ");
  REQUIRE(edited != config);
  write_file(dir + "/config.txt", edited);
  check_refused(run({"train", "--resume", dir, "--quiet"}), {"steps (config.txt 9, checkpoint 6)", "--set steps=9"});
  const Outcome longer = run({"train", "--resume", dir + "/", "--out", "./" + fs::relative(dir).string(), "--quiet",
                              "--set", "steps=9"});
  INFO(longer.err);
  REQUIRE(longer.code == 0);
  CHECK(has(read_file(dir + "/results.json"), "\"steps\": 9"));
  CHECK(checkpoint_step(dir + "/model.safetensors") == 9);
  CHECK(urpe::config_from_text(read_file(dir + "/config.txt"), "config.txt").get_int("steps") == 9);
  check_refused(run({"train", "--resume", dir, "--quiet", "--set", "lr=0.1"}),
                {"'lr' cannot change when a run resumes", "steps, eval_every, device or precision"});
  check_refused(run({"train", "--resume", dir, "--quiet", "--set", "steps=3"}), {"already taken 9 steps"});

  // Checkpoints copied in from another run are refused, naming the file.
  const std::string last = read_file(dir + "/model.safetensors"), best = read_file(dir + "/model.best.safetensors");
  fs::copy_file(other + "/model.safetensors", dir + "/model.safetensors", fs::copy_options::overwrite_existing);
  check_refused(run({"train", "--resume", dir, "--quiet", "--set", "steps=12"}),
                {"model.safetensors belongs to another run"});
  write_file(dir + "/model.safetensors", last);
  fs::copy_file(other + "/model.best.safetensors", dir + "/model.best.safetensors", fs::copy_options::overwrite_existing);
  check_refused(run({"train", "--resume", dir, "--quiet", "--set", "steps=12"}),
                {"model.best.safetensors belongs to another run"});
  write_file(dir + "/model.best.safetensors", best);
  // A checkpoint whose stored config was edited in place no longer has the hash it was saved with.
  urpe::TensorFile file = urpe::load_safetensors(dir + "/model.safetensors");
  const std::string stored = file.metadata.at("config");
  file.metadata["config"] = std::regex_replace(stored, std::regex("\nlr( *)= 0.002"), "\nlr$1= 0.5");
  REQUIRE(file.metadata["config"] != stored);
  urpe::save_safetensors(dir + "/model.safetensors", file.tensors, file.metadata);
  check_refused(run({"train", "--resume", dir, "--quiet", "--set", "steps=12"}), {"edited after urpe wrote it"});
  write_file(dir + "/model.safetensors", last);
  const Outcome again = run({"train", "--resume", dir, "--quiet", "--set", "steps=12"});
  INFO(again.err);
  CHECK(again.code == 0);
}

TEST_CASE("run ids, config hashes and the differences --resume names") {
  const std::string id = urpe::new_run_id();
  CHECK(urpe::is_run_id(id));
  CHECK(id != urpe::new_run_id());
  CHECK(urpe::run_id_in_config_file(urpe::config_file_text(id, "steps = 5\n")) == id);
  CHECK(urpe::run_id_in_config_file("steps = 5\n").empty());
  CHECK(urpe::config_text_hash("a") == "af63dc4c8601ec8c");  // FNV-1a 64 of "a"
  const urpe::Config a = urpe::resolve_config("", "", {"steps=600"});
  const urpe::Config b = urpe::resolve_config("", "", {"steps=700", "lr=0.5"});
  const auto differences = urpe::config_differences(a, b);
  REQUIRE(differences.size() == 2);
  CHECK(urpe::describe_differences(differences, "x", "y") == "steps (x 600, y 700), lr (x 0.002, y 0.5)");
  const urpe::Config txl = urpe::resolve_config("", "", {"model=txl"});
  bool names_model = false;
  for (const auto& d : urpe::config_differences(a, txl)) names_model = names_model || d.key == "model";
  CHECK(names_model);
}

TEST_CASE("a continued grid reuses a finished run and refuses one trained with another config") {
  const std::string dir = tiny_run("grid_cell");
  const urpe::Config stored = urpe::stored_run_config(dir);
  CHECK(urpe::grid_cell_start(dir, stored, false).kind == urpe::GridCellStart::fresh);
  const urpe::GridCellStart finished = urpe::grid_cell_start(dir, stored, true);
  CHECK(finished.kind == urpe::GridCellStart::finished);
  CHECK(finished.result.steps == 6);
  urpe::Config other = stored;
  other.apply_override("steps=9");
  CHECK_THROWS_WITH_AS(urpe::grid_cell_start(dir, other, true),
                       doctest::Contains("was trained with another config than this grid asks for: steps (grid 9, run 6)"),
                       urpe::Error);
  CHECK(urpe::grid_cell_start(dir + "/never_started", stored, true).kind == urpe::GridCellStart::fresh);
}

// ---- signals stop grids ----

TEST_CASE("cli: SIGINT stops a repro grid after the current run saves; --resume continues it; SIGTERM exits 143") {
  const std::string dir = fresh_dir("grid");
  // Two runs of 800 steps at n = 2 (a few seconds each on 2 cores).
  const std::vector<std::string> grid = {"repro", "synthetic", "--scale", "tiny", "--tasks", "pi",
                                         "--pes", "none,urpe", "--lengths", "2", "--out", dir};
  const std::string first_run = dir + "/runs/pi-V100-n2-none-s1";
  const Running running = start(Launch{grid});
  REQUIRE(wait_for(first_run + "/model.safetensors", 120));
  ::kill(running.pid, SIGINT);
  const Outcome stopped = finish(running, 120);
  INFO(stopped.out << stopped.err);
  CHECK(stopped.code == 130);
  CHECK(!fs::exists(dir + "/runs/pi-V100-n2-urpe-s1"));  // the next run never started
  const int64_t step = checkpoint_step(first_run + "/model.safetensors");
  CHECK(step < 800);
  CHECK(read_file(dir + "/results.json") == "[]\n");  // results for finished runs only
  const std::string note = read_file(dir + "/results.md");
  CHECK(note.rfind("**Interrupted** by SIGINT: 0 of 2 runs finished; pi-V100-n2-none-s1 stopped at step " +
                       std::to_string(step) + " of 800", 0) == 0);
  CHECK(has(note, "--resume"));

  std::vector<std::string> resume = grid;
  resume.push_back("--resume");
  const Outcome continued = run(resume, 300);
  INFO(continued.out << continued.err);
  REQUIRE(continued.code == 0);
  CHECK(!has(read_file(dir + "/results.md"), "Interrupted"));
  const std::string results = read_file(dir + "/results.json");
  CHECK(std::count(results.begin(), results.end(), '{') == 2);
  CHECK(checkpoint_step(first_run + "/model.safetensors") == 800);
  // The stopped run continued where it stopped: one validation row per evaluation, none twice.
  const std::string metrics = read_file(first_run + "/metrics.csv");
  size_t valid_rows = 0;
  for (size_t at = metrics.find(",valid,"); at != std::string::npos; at = metrics.find(",valid,", at + 1)) ++valid_rows;
  CHECK(valid_rows == 8);
  // Once more: both runs are reused, nothing trains.
  const Outcome reused = run(resume, 120);
  CHECK(reused.code == 0);
  CHECK(std::count(reused.out.begin(), reused.out.end(), '\n') > 0);
  CHECK(has(reused.out, "(finished before: reused)"));

  // SIGTERM (a batch system's time limit) stops `urpe train` the same way, with exit code 143.
  const std::string single = fresh_dir("sigterm");
  const Running train = start(Launch{train_args(single, {"--set", "steps=1000000", "--set", "eval_every=20"})});
  REQUIRE(wait_for(single + "/model.safetensors", 60));  // well inside the loop, its handler installed
  ::kill(train.pid, SIGTERM);
  const Outcome terminated = finish(train, 60);
  INFO(terminated.err);
  CHECK(terminated.code == 143);
  CHECK(fs::exists(single + "/model.safetensors"));
}

// ---- paths ----

TEST_CASE("cli: a dangling symlink or a loop of links as --out is refused and left alone") {
  const std::string base = fresh_dir("links");
  fs::create_directories(base);
  const std::string dangling = base + "/dangling", loop_a = base + "/loop_a", loop_b = base + "/loop_b";
  fs::create_symlink(base + "/nowhere", dangling);
  fs::create_symlink(loop_b, loop_a);
  fs::create_symlink(loop_a, loop_b);
  const std::vector<std::string> failing = {"--set", "steps=4", "--set", "eval_every=4"};
  check_refused(run(train_args(dangling, failing)), {"'" + dangling + "' is a symbolic link", "does not exist"});
  check_refused(run(train_args(dangling + "/run", failing)), {"'" + dangling + "' is a symbolic link"});
  check_refused(run(train_args(loop_a + "/run", failing)), {"loop of links"});
  for (const std::string& link : {dangling, loop_a, loop_b}) {
    INFO(link);
    CHECK(fs::is_symlink(fs::symlink_status(link)));
  }
  // A link to a real directory is a directory: a run that fails there removes its own files only.
  const std::string target = base + "/target", link = base + "/link";
  fs::create_directories(target);
  fs::create_symlink(target, link);
  const Outcome diverged = run(train_args(link, {"--set", "steps=4", "--set", "eval_every=1", "--set", "lr=1e30"}));
  check_refused(diverged, {"diverged"});
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(fs::is_directory(target));
  CHECK(fs::is_empty(target));
}

// ---- limits before work ----

TEST_CASE("cli: limits before work: a 10^6-atom SMILES line, OMP_NUM_THREADS=100000, ulimit -v") {
  // The line is parsed in linear time and, over max_nodes, left out before any N² table exists.
  const std::string huge = molecule_csv("huge.csv", "smiles,target", {std::string(1000000, 'C') + ",1.0"});
  const Outcome molecules = run(graphormer_args(fresh_dir("huge_smiles"), huge), 30);
  INFO(molecules.err);
  CHECK(!molecules.timed_out);
  CHECK(molecules.code == 0);
  // The same limit in the other CSV readers: OGB features and the ZINC-250k layout.
  std::vector<std::string> ogb_args = graphormer_args(fresh_dir("huge_smiles_ogb"), huge);
  ogb_args.insert(ogb_args.end(), {"--set", "dataset_format=ogb"});
  const Outcome ogb = run(ogb_args, 30);
  INFO(ogb.err);
  CHECK(!ogb.timed_out);
  CHECK(ogb.code == 0);
  std::string zinc_text = "smiles,logP,qed,SAS\n" + std::string(1000000, 'C') + ",1.0,0.5,2.0\n";
  for (int k = 0; k < 24; ++k)
    zinc_text += "CC" + std::string(static_cast<size_t>(k % 5), 'C') + "O," + std::to_string(0.1 * k) + ",0.5,2.0\n";
  const std::string zinc = scratch() + "/huge_zinc.csv";
  write_file(zinc, zinc_text);
  std::vector<std::string> zinc_args = graphormer_args(fresh_dir("huge_smiles_zinc"), zinc);
  for (std::string& a : zinc_args)
    if (a == "target_column=target") a = "target_column=penalized_logp_normalized";
  zinc_args.insert(zinc_args.end(), {"--set", "dataset_format=zinc250k"});
  const Outcome zinc250k = run(zinc_args, 30);
  INFO(zinc250k.err);
  CHECK(!zinc250k.timed_out);
  CHECK(zinc250k.code == 0);

  // Thread counts above the machine's CPUs are clamped with a warning, not a crash in the GEMM.
  Launch threads{train_args(fresh_dir("threads"), {"--set", "steps=2", "--set", "eval_every=2"})};
  threads.env = {"OMP_NUM_THREADS=100000"};
  const Outcome clamped = run(threads, 60);
  INFO(clamped.err);
  CHECK(clamped.signal == 0);
  CHECK(clamped.code == 0);
  CHECK(has(clamped.err, "urpe: warning: OMP_NUM_THREADS=100000 asks for more threads than"));

#if !defined(__SANITIZE_ADDRESS__)  // ASan reserves terabytes of shadow memory: it cannot run under ulimit -v
  // Under a small address-space limit the binary stops at once with one line (OpenBLAS used to retry
  // its buffer allocation forever), or, without the CUDA libraries, simply starts.
  for (const uint64_t kib : {1000000ull, 1100000ull}) {
    Launch limited{{"help"}};
    limited.address_space_limit = kib * 1024;
    const Outcome o = run(limited, 20);
    INFO("ulimit -v " << kib << ": " << o.err);
    CHECK(!o.timed_out);
    CHECK(o.signal == 0);
    if (o.code != 0) {
      CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
      CHECK((has(o.err, "urpe: error: the address-space limit (ulimit -v") ||
             has(o.err, "error while loading shared libraries")));
    }
  }
#endif
}

// ---- messages ----

namespace {

// stderr of `urpe args` on a pseudo-terminal with TERM=`term` (the progress line's escapes).
std::string on_terminal(const std::vector<std::string>& args, const std::string& term) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const std::string slave_name = ::ptsname(master);
  std::vector<std::string> argv_text = {urpe_binary()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string term_setting = "TERM=" + term;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setsid();
    const int slave = ::open(slave_name.c_str(), O_RDWR);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(slave, 2);
    ::close(master);
    ::putenv(const_cast<char*>(term_setting.c_str()));
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string text;
  char buffer[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    struct pollfd p = {master, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      const ssize_t n = ::read(master, buffer, sizeof buffer);
      if (n > 0) {
        text.append(buffer, static_cast<size_t>(n));
        continue;
      }
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
  }
  ::close(master);
  return text;
}

}  // namespace

TEST_CASE("cli: messages: .urpe-replaced, blank and short splits, NUL bytes, a full stdout, TERM=dumb, duplicate headers") {
  // A run an interrupted --overwrite moved aside is named by every command, not only by --out.
  const std::string run_dir = tiny_run("with_replaced");
  fs::create_directories(run_dir + "/.urpe-replaced");
  write_file(run_dir + "/.urpe-replaced/results.json", "[]\n");
  check_refused(run({"eval", "--run", run_dir}), {".urpe-replaced"});
  check_refused(run({"plot", "--run", run_dir}), {".urpe-replaced"});
  check_refused(run({"train", "--resume", run_dir, "--quiet"}), {".urpe-replaced"});
  fs::remove_all(run_dir + "/.urpe-replaced");

  // Corpus splits: blank (not empty) ones and ones too short for eval_batch name the file.
  auto corpus = [&](const std::string& name, const std::string& valid, const std::string& test) {
    const std::string dir = scratch() + "/" + name;
    fs::create_directories(dir);
    write_file(dir + "/train.txt", sentences(60));
    write_file(dir + "/valid.txt", valid);
    write_file(dir + "/test.txt", test);
    return dir;
  };
  const std::string blank_valid = corpus("blank_valid", "  \n \n", sentences(60));
  check_refused(run(txl_args(fresh_dir("txl_blank_valid"), blank_valid)),
                {blank_valid + "/valid.txt holds no tokens (only blank lines)"});
  const std::string blank_test = corpus("blank_test", sentences(60), "   \n\n  \n");
  check_refused(run(txl_args(fresh_dir("txl_blank_test"), blank_test)), {blank_test + "/test.txt holds no tokens"});
  const std::string short_valid = corpus("short_valid", "cat\n", sentences(60));
  check_refused(run(txl_args(fresh_dir("txl_short_valid"), short_valid)),
                {short_valid + "/valid.txt has 2 tokens", "eval_batch = 2"});

  // A NUL byte in a SMILES no longer cuts the message: what follows it is shown too.
  const std::string nul = molecule_csv("nul.csv", "smiles,target", {std::string("CC\0X", 4) + ",3"});
  check_refused(run(graphormer_args(fresh_dir("nul_smiles"), nul)), {"CC\\x00X"});
  // The same column twice in a header is refused rather than read from the first.
  const std::string twice = scratch() + "/twice.csv";
  write_file(twice, "smiles,smiles,target\nCCO,CCO,1\n");
  check_refused(run(graphormer_args(fresh_dir("twice"), twice)), {"column \"smiles\" twice (columns 1 and 2)"});

  // What eval prints must arrive: a full disk is an error, not exit 0.
  Launch full{{"eval", "--run", run_dir}};
  full.stdout_path = "/dev/full";
  check_refused(run(full), {"cannot write the standard output"});

  // The progress line rewrites itself only on a terminal that understands escape codes.
  const std::vector<std::string> visible = {"train", "--out", fresh_dir("terminal_dumb"), "--set", "steps=30",
                                            "--set", "eval_every=10", "--set", "seq_len=8", "--set", "vocab=6",
                                            "--set", "layers=1", "--set", "d_model=16", "--set", "heads=2",
                                            "--set", "d_ff=32", "--set", "batch=4", "--set", "warmup=1",
                                            "--set", "valid_size=16"};
  const std::string dumb = on_terminal(visible, "dumb");
  INFO(dumb);
  CHECK(has(dumb, "step 30/30"));
  CHECK(!has(dumb, "\033["));
  std::vector<std::string> again = visible;
  again[2] = fresh_dir("terminal_xterm");
  CHECK(has(on_terminal(again, "xterm"), "\033[K"));  // the check above can fail
}

TEST_CASE("urpe::Error spells a NUL byte, so what() is the whole message") {
  const urpe::Error e(std::string("got 'CC\0X'", 10));
  CHECK(std::string(e.what()) == "got 'CC\\x00X'");
}

TEST_CASE("docs/runs.md has every section the code points to") {
  const std::string doc = read_file(std::string(URPE_SOURCE_DIR) + "/docs/runs.md");
  REQUIRE(!doc.empty());
  std::set<std::string> anchors;
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("## ", 0) == 0) {
      std::string anchor;
      for (char c : line.substr(3))
        if (std::isalnum(static_cast<unsigned char>(c))) anchor += static_cast<char>(std::tolower(c));
        else if (c == ' ' || c == '-') anchor += '-';
      anchors.insert(anchor);
    }
  const std::regex link("docs/runs\\.md#([a-z0-9-]+)");
  int links = 0;
  for (const char* layer : {"base", "train", "app"})  // the layers that read and write run directories
    for (const auto& entry : fs::recursive_directory_iterator(std::string(URPE_SOURCE_DIR) + "/" + layer)) {
      if (!entry.is_regular_file()) continue;
      const std::string text = read_file(entry.path().string());
      for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
        ++links;
        INFO(entry.path().string() << " points to docs/runs.md#" << (*it)[1]);
        CHECK(anchors.count((*it)[1]) == 1);
      }
    }
  CHECK(links >= 4);
}

// ---- interrupts never cost a run (issue 39) ----

namespace {

// Every entry under `dir`: its path relative to `dir` and its bytes ("/" for a directory).
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> entries;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    entries[fs::relative(e.path(), dir).string()] = e.is_directory() ? "/" : read_file(e.path().string());
  return entries;
}

// The entries that differ between two snapshots, by name ("" when none does).
std::string differences(const std::map<std::string, std::string>& before, const std::map<std::string, std::string>& after) {
  std::string out;
  for (const auto& [name, bytes] : before) {
    auto it = after.find(name);
    if (it == after.end()) out += " gone:" + name;
    else if (it->second != bytes) out += " changed:" + name;
  }
  for (const auto& [name, bytes] : after)
    if (!before.count(name)) out += " new:" + name;
  return out;
}

std::string run_id_of(const std::string& dir) { return urpe::run_id_in_config_file(read_file(dir + "/config.txt")); }

// A long `--overwrite` of the tiny run in `dir`: no evaluation (and so no checkpoint) before a stop.
Running start_overwrite(const std::string& dir, const std::string& eval_every = "1000000") {
  return start(Launch{train_args(dir, {"--overwrite", "--set", "steps=1000000", "--set", "eval_every=" + eval_every})});
}

}  // namespace

TEST_CASE("cli: a stop before an --overwrite's first checkpoint puts the old run back exactly; after it the new run is kept") {
  const std::string dir = tiny_run("overwritten");
  const auto before = snapshot(dir);
  const std::string old_id = run_id_of(dir);

  // SIGTERM, SIGINT and SIGHUP once the new run has moved the old one aside (it trains now, with no
  // checkpoint yet): the old run is back, byte for byte, and urpe exits as the signal asks.
  for (const auto& [signal, code] : std::vector<std::pair<int, int>>{{SIGTERM, 143}, {SIGINT, 130}, {SIGHUP, 129}}) {
    INFO("signal " << signal);
    const Running running = start_overwrite(dir);
    REQUIRE(wait_for(dir + "/.urpe-replaced", 60));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // well inside the loop
    ::kill(running.pid, signal);
    const Outcome stopped = finish(running, 60);
    INFO(stopped.err);
    CHECK(stopped.code == code);
    CHECK(has(stopped.err, "is back as it was"));
    CHECK(differences(before, snapshot(dir)) == "");
  }
  // Ctrl-C at once, while urpe starts and prepares (nothing is written yet): the old run is untouched.
  for (int delay_ms : {0, 20, 60}) {
    const Running running = start_overwrite(dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(running.pid, SIGINT);
    const Outcome stopped = finish(running, 60);
    INFO("after " << delay_ms << " ms: " << stopped.err);
    CHECK((stopped.code == 130 || stopped.signal == SIGINT));
    CHECK(differences(before, snapshot(dir)) == "");
  }
  // An error before the first checkpoint (a diverging run) puts it back too.
  check_refused(run(train_args(dir, {"--overwrite", "--set", "steps=4", "--set", "eval_every=1", "--set", "lr=1e30"})),
                {"diverged"});
  CHECK(differences(before, snapshot(dir)) == "");

  // After the first checkpoint the new run is kept and resumable, and the old one is gone.
  const Running running = start_overwrite(dir, "20");
  // Conditions that stay true once they hold (a short-lived .urpe-replaced could slip between polls):
  // the new run's config.txt, then its checkpoint, with the old run's files deleted.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto new_run_saved = [&] {
    const std::string id = run_id_of(dir);
    if (id.empty() || id == old_id || fs::exists(dir + "/.urpe-replaced") || !fs::exists(dir + "/model.safetensors"))
      return false;
    try {
      return urpe::load_safetensors(dir + "/model.safetensors").meta("run_id") == id;
    } catch (const urpe::Error&) {
      return false;
    }
  };
  while (!new_run_saved() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(new_run_saved());
  ::kill(running.pid, SIGTERM);
  const Outcome stopped = finish(running, 60);
  INFO(stopped.err);
  CHECK(stopped.code == 143);
  CHECK(run_id_of(dir) != old_id);
  CHECK(urpe::load_safetensors(dir + "/model.safetensors").meta("run_id") == run_id_of(dir));
  CHECK(checkpoint_step(dir + "/model.safetensors") >= 20);
}

TEST_CASE("cli: SIGTERM at random moments of train and repro --overwrite: the old run or a resumable new one, never neither") {
  const std::string dir = tiny_run("overwritten_random");
  const auto before = snapshot(dir);
  for (int delay_ms : {30, 150, 400, 900}) {
    const Running running = start_overwrite(dir, "40");
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(running.pid, SIGTERM);
    const Outcome stopped = finish(running, 60);
    INFO("after " << delay_ms << " ms: " << stopped.err);
    CHECK((stopped.code == 143 || stopped.signal == SIGTERM));
    CHECK(!fs::exists(dir + "/.urpe-replaced"));
    if (differences(before, snapshot(dir)) == "") continue;  // the old run, exactly
    REQUIRE(fs::exists(dir + "/model.safetensors"));           // else the new run, resumable
    const Outcome resumed = run({"train", "--resume", dir, "--quiet", "--set",
                                 "steps=" + std::to_string(checkpoint_step(dir + "/model.safetensors") + 1)});
    INFO(resumed.err);
    CHECK(resumed.code == 0);
    break;  // the old run is gone now
  }

  // A repro grid over an old grid, stopped in its first run before any checkpoint: the old grid is back.
  const std::string grid = fresh_dir("grid_overwritten");
  auto grid_args = [&](const std::string& steps, const std::string& eval_every) {
    return std::vector<std::string>{"repro", "synthetic", "--scale", "tiny", "--tasks", "pi", "--pes", "none",
                                    "--lengths", "2", "--out", grid, "--overwrite", "--set", "steps=" + steps,
                                    "--set", "eval_every=" + eval_every, "--set", "warmup=1"};
  };
  const Outcome first = run(grid_args("4", "2"), 120);
  INFO(first.err);
  REQUIRE(first.code == 0);
  const auto grid_before = snapshot(grid);
  const Running running = start(Launch{grid_args("1000000", "1000000")});
  REQUIRE(wait_for(grid + "/.urpe-replaced", 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(running.pid, SIGTERM);
  const Outcome stopped = finish(running, 60);
  INFO(stopped.out << stopped.err);
  CHECK(stopped.code == 143);
  CHECK(differences(grid_before, snapshot(grid)) == "");
}

TEST_CASE("cli: a file-size limit (ulimit -f) is one error naming the file and the limit; the run is left as it was") {
  const std::string dir = tiny_run("file_size_limit");
  const auto before = snapshot(dir);
  // Room for config.txt, metrics.csv and the best checkpoint, not for the last one (it adds Adam's
  // moments): --resume rewrites config.txt (steps 12) and saves a best before the write that fails.
  const uint64_t best = fs::file_size(dir + "/model.best.safetensors");
  REQUIRE(fs::file_size(dir + "/config.txt") < best);
  REQUIRE(fs::file_size(dir + "/model.safetensors") > best + 4096);
  Launch limited{{"train", "--resume", dir, "--quiet", "--set", "steps=12"}};
  limited.file_size_limit = best + 4096;
  const Outcome o = run(limited);
  check_refused(o, {dir + "/model.safetensors", "file-size limit", "ulimit -f " + std::to_string((best + 4096) / 1024)});
  CHECK(differences(before, snapshot(dir)) == "");
  // A fresh run that cannot write its first file: the same error, and no directory left behind.
  const std::string fresh = fresh_dir("file_size_limit_fresh");
  Launch tiny{train_args(fresh, {"--set", "steps=4", "--set", "eval_every=2"})};
  tiny.file_size_limit = 512;
  check_refused(run(tiny), {fresh + "/config.txt", "file-size limit"});
  CHECK(!fs::exists(fresh));
}

TEST_CASE("cli: a failed --resume leaves the run as it was; a torn last metrics row is dropped with a warning") {
  const std::string dir = tiny_run("torn_metrics");
  const std::string metrics = read_file(dir + "/metrics.csv");
  // A bad row in the middle is not what a crash leaves: refused, and nothing in DIR changes, not even
  // the config.txt the resume rewrites first (steps 12).
  std::string corrupt = metrics;
  corrupt.insert(corrupt.find('\n') + 1, "3,train,oops\n");
  write_file(dir + "/metrics.csv", corrupt);
  const auto before = snapshot(dir);
  check_refused(run({"train", "--resume", dir, "--quiet", "--set", "steps=12"}), {"metrics.csv line 2"});
  CHECK(differences(before, snapshot(dir)) == "");

  // The last row cut in the middle (a crash during its append): the resume drops it with a warning,
  // keeps the file as it was in metrics.csv.torn, and continues.
  const std::string torn = metrics.substr(0, metrics.size() - 9);
  write_file(dir + "/metrics.csv", torn);
  const Outcome resumed = run({"train", "--resume", dir, "--quiet", "--set", "steps=12"});
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(has(resumed.err, "urpe: warning: " + dir + "/metrics.csv ends in a torn row"));
  CHECK(read_file(dir + "/metrics.csv.torn") == torn);
  // The header, the 3 whole rows up to step 6, 2 rows for each of the evaluations at 9 and 12.
  const std::string now = read_file(dir + "/metrics.csv");
  CHECK(now.back() == '\n');
  CHECK(std::count(now.begin(), now.end(), '\n') == 8);
  CHECK(checkpoint_step(dir + "/model.safetensors") == 12);
  CHECK(!fs::exists(dir + "/.urpe-resume"));
}

TEST_CASE("cli: readers beside a live run: eval and plot read it while train writes it") {
  const std::string dir = fresh_dir("live_run");
  const Running writer = start(Launch{train_args(dir, {"--set", "steps=1000000", "--set", "eval_every=20"})});
  REQUIRE(wait_for(dir + "/model.safetensors", 60));
  for (int k = 0; k < 3; ++k) {  // while it keeps saving checkpoints and appending rows
    const Outcome eval = run({"eval", "--run", dir});
    INFO(eval.err);
    CHECK(eval.code == 0);
    CHECK(has(eval.out, "valid accuracy"));
    const Outcome plot = run({"plot", "--run", dir});
    INFO(plot.err);
    CHECK(plot.code == 0);
    CHECK(has(plot.out, "wrote " + dir + "/plots/"));
  }
  // A writer is still refused, and the reader's visits did not disturb the run.
  check_refused(run({"train", "--resume", dir, "--quiet"}), {"pid " + std::to_string(writer.pid)});
  ::kill(writer.pid, SIGINT);
  const Outcome stopped = finish(writer, 60);
  INFO(stopped.err);
  CHECK(stopped.code == 130);
}

TEST_CASE("cli: a closed output pipe (| head) stops the printing, not the training") {
  const std::string dir = fresh_dir("closed_pipe");
  Launch train{{"train", "--out", dir}};
  train.args.insert(train.args.end(), kTiny.begin(), kTiny.end());
  train.args.insert(train.args.end(), {"--set", "steps=60", "--set", "eval_every=20"});
  train.closed_pipe = true;
  const Outcome trained = run(train);
  CHECK(trained.signal == 0);
  CHECK(trained.code == 0);
  CHECK(checkpoint_step(dir + "/model.safetensors") == 60);
  CHECK(fs::exists(dir + "/results.json"));

  const std::string grid = fresh_dir("closed_pipe_grid");
  Launch repro{{"repro", "synthetic", "--scale", "tiny", "--tasks", "pi", "--pes", "none,urpe", "--lengths", "2",
                "--out", grid, "--set", "steps=20", "--set", "eval_every=10", "--set", "warmup=2"}};
  repro.closed_pipe = true;
  const Outcome reproduced = run(repro, 120);
  CHECK(reproduced.signal == 0);
  CHECK(reproduced.code == 0);
  CHECK(fs::exists(grid + "/results.md"));
}

TEST_CASE("cli: smaller faults: a 5,000-character path, a key the task never reads, a bit flipped in a stored config") {
  // The path's two ends are shown, not its 5,000 characters.
  const std::string long_path = "/tmp/" + std::string(5000, 'a') + "/run.cfg";
  const Outcome missing = run({"train", "--config", long_path, "--out", fresh_dir("long_path")});
  check_refused(missing, {"/tmp/aaaa", "aaaa/run.cfg", "characters)"});
  CHECK(missing.err.size() < 700);

  // corpus is read by task = mlm only: on a PI run it is refused, as a key of another family is.
  check_refused(run(train_args(fresh_dir("pi_corpus"), {"--set", "corpus=x"})),
                {"corpus = x", "task = pi never reads it"});

  // A bit flipped inside the config text a checkpoint stores: eval refuses it (its hash no longer
  // matches), as --resume does.
  const std::string dir = tiny_run("flipped_config");
  std::string bytes = read_file(dir + "/model.safetensors");
  std::smatch lr;
  REQUIRE(std::regex_search(bytes, lr, std::regex("\\\\nlr *= 0\\.002")));
  bytes[static_cast<size_t>(lr.position(0) + lr.length(0) - 1)] ^= 0x01;  // '2' (0x32) becomes '3' (0x33)
  write_file(dir + "/model.safetensors", bytes);
  check_refused(run({"eval", "--run", dir}), {dir + "/model.safetensors", "config_hash"});
}
