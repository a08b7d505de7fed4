// Running the `urpe` binary (or any shell command) from a test, the way a user would: exit code
// plus stdout and stderr together.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "doctest/doctest.h"

namespace urpe::test {

struct CliResult {
  int code = -1;       // the exit status; -1 when the command did not exit normally
  std::string output;  // stdout and stderr together
};

inline CliResult run_command(const std::string& command) {
  CliResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `urpe <arguments>` with the binary this test suite was built with.
inline CliResult run_urpe(const std::string& arguments) {
  return run_command(std::string(URPE_BINARY) + " " + arguments);
}

}  // namespace urpe::test
