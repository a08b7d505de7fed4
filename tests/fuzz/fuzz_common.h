// Shared by the fuzz harnesses (tests/fuzz/fuzz_*.cpp). Each harness defines libFuzzer's entry
// point LLVMFuzzerTestOneInput; the same file is linked either with libFuzzer (`make fuzz`, clang)
// or with replay_main.cpp (CTest, any compiler), which feeds it the saved inputs.
//
// The contract of every harness: a urpe::Error is the documented answer to bad input, so it is
// caught and the input is done. Anything else is a bug and must end the process so that libFuzzer
// saves the input: another exception type escapes the harness, a broken invariant calls
// FUZZ_CHECK (message + abort), and the sanitizers report memory errors and undefined behaviour.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../scratch_dir.h"

#define FUZZ_CHECK(cond, msg)                                                                 \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::ostringstream fuzz_check_stream_;                                                  \
      fuzz_check_stream_ << msg;                                                              \
      std::fprintf(stderr, "\nfuzz invariant broken at %s:%d: %s\n  %s\n", __FILE__, __LINE__, \
                   #cond, fuzz_check_stream_.str().c_str());                                  \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

namespace urpe::fuzz {

inline std::string bytes_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A private directory for the files a harness must hand to path-based readers, removed when the
// process exits normally (../scratch_dir.h).
inline const std::string& scratch_dir() {
  static const std::string dir = urpe::test::make_scratch_dir("urpe_fuzz");
  return dir;
}

// Writes `bytes` to `name` inside scratch_dir() (replacing it) and returns the full path.
inline std::string scratch_file(const std::string& name, const std::string& bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  FUZZ_CHECK(out.good(), "cannot write the scratch file " << path);
  return path;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace urpe::fuzz
