// A private scratch folder for one test or fuzz process: created with mkdtemp under $TMPDIR (or
// /tmp) and removed, with everything in it, when the process exits normally (a failed doctest
// check returns from main, so it counts; a crash or a kill does not). Shared by test_dist and the
// fuzz harnesses, which both hand files to path-based readers and must leave nothing behind.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace urpe::test {

// Creates "$TMPDIR/<prefix>_XXXXXX" and registers it for removal at exit; aborts (with the
// reason) when the folder cannot be made, since no test could run without it.
inline std::string make_scratch_dir(const std::string& prefix) {
  static struct Removers {
    std::vector<std::string> paths;
    ~Removers() {
      for (const std::string& path : paths) {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
      }
    }
  } removers;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror((prefix + ": mkdtemp").c_str());
    std::abort();
  }
  removers.paths.push_back(pattern);
  return pattern;
}

}  // namespace urpe::test
