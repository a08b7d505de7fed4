// Numbers on the command line, as a user types them: every integer option and numeric config key
// refuses a huge, negative, zero, non-numeric or non-finite value with one line on stderr naming
// the option or key and what it accepts, exit code 1, and no signal; sizes no machine can hold are
// refused before anything is allocated or written; and running out of memory is one readable line.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "cli_util.h"
#include "doctest/doctest.h"
#include "tensor/error.h"
#include "app/cli/command_line.h"

namespace {

using urpe::test::CliResult;
using urpe::test::run_command;
using urpe::test::run_urpe;

std::string temp_dir(const std::string& name) {
  const std::string dir = "/tmp/urpe_test_cli_numbers_" + std::to_string(::getpid()) + "_" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// Exit 1 (not 2, an internal error; not 128 + n, a signal through the shell), one line, which
// contains every one of `expected`.
void check_refused(const CliResult& r, std::initializer_list<std::string> expected) {
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.rfind("urpe: error: ", 0) == 0);
  for (const std::string& e : expected) CHECK(r.output.find(e) != std::string::npos);
}

}  // namespace

TEST_CASE("integer options: out of range or not an integer is one line naming the option and its range") {
  // --repeats 4294967296 was checked as a long, cast to int 0, and the median read an empty list
  // (SIGSEGV); past long it was clamped to LONG_MAX.
  for (const char* value : {"4294967296", "99999999999999999999", "0", "-1", "1000001", "nan", "1e3", "0x10",
                            "' 5'", "''", "5abc", "2.5"}) {
    INFO(value);
    check_refused(run_urpe(std::string("bench kernels --repeats ") + value),
                  {"option --repeats: expected an integer from 1 to 1000000, got '"});
    check_refused(run_urpe(std::string("bench step --repeats=") + value), {"option --repeats", "1 to 1000000"});
  }
  const std::string out = temp_dir("repro");
  for (const char* value : {"0", "101", "-3", "99999999999999999999", "inf"}) {
    INFO(value);
    check_refused(run_urpe(std::string("repro synthetic --out ") + out + " --seeds " + value),
                  {"option --seeds: expected an integer from 1 to 100, got '" + std::string(value) + "'"});
  }
  CHECK_FALSE(exists(out));  // refused while parsing, before anything was written
  for (const char* value : {"-1", "4294967296", "99999999999999999999", "x"}) {
    INFO(value);
    check_refused(run_urpe(std::string("demo --out ") + out + " --seed " + value),
                  {"option --seed: expected an integer from 0 to 4294967295"});
  }
  CHECK_FALSE(exists(out));
  check_refused(run_urpe("train --preset pi-tiny --out " + out + " --profile-steps 1:99999999999999999999"),
                {"option --profile-steps"});
  // The help shows each range.
  const CliResult help = run_urpe("bench --help");
  CHECK(help.output.find("(default: 50; 1 to 1000000)") != std::string::npos);
}

TEST_CASE("numeric config values: huge, negative, non-finite and non-integer values name the key") {
  const std::string out = temp_dir("set");
  struct Case {
    const char* set;
    const char* expected;
  };
  const Case cases[] = {
      // 2^58: its 2^58 × 64 table's element count wrapped to 0, and the run crashed (SIGSEGV).
      {"vocab=288230376151711744", "key 'vocab' expects an integer from 2 to 2147483647 (token ids are int32)"},
      {"vocab=2147483648", "key 'vocab' expects an integer from 2 to 2147483647"},
      {"batch=100000000000", "key 'batch' expects an integer from 1 to 2147483647"},  // was std::bad_alloc
      {"batch=1e11", "key 'batch' expects an integer"},
      {"batch=0", "key 'batch' expects an integer from 1"},
      {"steps=-1", "key 'steps'"},
      {"d_model=1099511627776", "key 'd_model'"},  // was "out of host memory allocating 492581209243648 bytes"
      {"seed=-1", "key 'seed' expects an integer from 0 to 4294967295"},
      {"lr=nan", "key 'lr' expects a finite number ≥ 0"},
      {"lr=inf", "key 'lr' expects a finite number ≥ 0"},
      {"lr=1e999", "key 'lr'"},
      {"lr=-0.1", "key 'lr'"},
      {"dropout=1", "key 'dropout' expects a number in [0, 1)"},
      {"init_std=0", "key 'init_std' expects a finite number > 0"},
      // Within every key's range, but not within this machine: the size estimate names the key.
      {"seq_len=100000000", "config: seq_len = 100000000 needs attention scores of "},
      {"batch=2147483647", "config: batch = 2147483647 needs "},
      {"d_model=1073741824", "config: d_model = 1073741824 needs "},
      {"vocab=2147483647", "config: vocab = 2147483647 needs "},
  };
  for (const Case& c : cases) {
    INFO(c.set);
    check_refused(run_urpe("train --out " + out + " --quiet --set " + c.set), {c.expected});
  }
  check_refused(run_urpe("train --preset txl-tiny --out " + out + " --quiet --set tgt_len=10000000"),
                {"config: tgt_len = 10000000 needs attention scores"});
  check_refused(run_urpe("train --preset graphormer-tiny --out " + out + " --quiet --set multi_hop_max_dist=1000"),
                {"key 'multi_hop_max_dist' expects an integer from 1 to 40"});
  check_refused(run_urpe("train --preset graphormer-tiny --out " + out + " --quiet --set batch=2000000000"),
                {"config: batch = 2000000000 needs multi-hop edge features"});
  CHECK_FALSE(exists(out));  // every refusal came before the run directory was made
}

// AddressSanitizer reserves terabytes of shadow address space at start, so a sanitizer build
// cannot run under `ulimit -v` at all; `make sanitize` skips this case (the Release suite runs it).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

TEST_CASE("running out of memory is one line, whether the estimate or the allocator sees it" *
          doctest::skip(kAddressSanitizer)) {
  const std::string out = temp_dir("ulimit");
  // With a 2 GB address space the estimate refuses a 3.1 GiB tensor against that limit...
  const std::string limited = "ulimit -v 2000000; " + std::string(URPE_BINARY);
  check_refused(run_command(limited + " train --preset pi-tiny --quiet --out " + out + " --set batch=100000"),
                {"config: batch = 100000 needs the feed-forward hidden layer of 3.1 GiB",
                 "more than what ulimit -v allows this process (1.9 GiB)"});
  CHECK_FALSE(exists(out));
  // ...and one that fits alone but not with the rest is the allocator's line, not a crash.
  check_refused(run_command(limited + " train --preset pi-tiny --quiet --out " + out + " --set batch=20000"),
                {"out of host memory: could not allocate", "try a smaller batch"});
  std::system(("rm -rf '" + out + "'").c_str());
}

TEST_CASE("report_errors: std::bad_alloc and std::length_error are one readable line, not an internal error") {
  // Exit code and what went to the error stream.
  auto report = [](const std::function<int()>& body) {
    std::FILE* err = std::tmpfile();
    REQUIRE(err != nullptr);
    const int code = urpe::cli::report_errors(body, err);
    std::rewind(err);
    std::string text;
    char buffer[512];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, err)) > 0) text.append(buffer, n);
    std::fclose(err);
    return std::make_pair(code, text);
  };
  // Before, main() printed "urpe: internal error: std::bad_alloc" and exited 2.
  auto [code, text] = report([]() -> int { throw std::bad_alloc(); });
  CHECK(code == 1);
  CHECK(text.rfind("urpe: error: out of memory: ", 0) == 0);
  CHECK(text.find("internal error") == std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  std::tie(code, text) = report([]() -> int { throw std::length_error("vector::_M_default_append"); });
  CHECK(code == 1);
  CHECK(text.rfind("urpe: error: a size too large to allocate (vector::_M_default_append)", 0) == 0);
  CHECK(report([]() -> int { throw urpe::Error("config: x"); }) == std::make_pair(1, std::string("urpe: error: config: x\n")));
  CHECK(report([]() -> int { throw std::logic_error("a bug"); }) ==
        std::make_pair(2, std::string("urpe: internal error: a bug\n")));
  CHECK(report([] { return 7; }) == std::make_pair(7, std::string()));
}
