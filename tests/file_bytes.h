// A file's bytes read or written whole, for the suites that damage files and check what a
// command left behind (test_cli_bad_inputs, test_faults).
#pragma once
#include <fstream>
#include <iterator>
#include <string>

#include "doctest/doctest.h"

namespace urpe::test {

// The file's bytes; "" when it cannot be opened.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Replaces the file's bytes (the test's own file: written in place, no temporary name needed).
inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

}  // namespace urpe::test
