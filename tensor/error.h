// One error type for every user-facing failure: a readable message that names the op / file /
// option and what was expected. Nothing in urpe reports a user mistake any other way.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace urpe {

struct Error : std::runtime_error {
  explicit Error(const std::string& message) : std::runtime_error(without_nul(message)) {}

  // what() is a C string: a NUL byte echoed from user data (a SMILES, a file name) would cut the
  // message there, so it is spelled "\x00", as printable() spells control bytes.
  static std::string without_nul(const std::string& message) {
    if (message.find('\0') == std::string::npos) return message;
    std::string out;
    for (char c : message) out += c == '\0' ? std::string("\\x00") : std::string(1, c);
    return out;
  }
};

// Builds the message with operator<< so call sites read like a sentence:
//   URPE_CHECK(a.dim() == 2, "matmul: expected a 2-D tensor, got " << shape_str(a.shape()));
#define URPE_CHECK(cond, msg)                       \
  do {                                              \
    if (!(cond)) {                                  \
      std::ostringstream urpe_check_stream_;        \
      urpe_check_stream_ << msg;                    \
      throw ::urpe::Error(urpe_check_stream_.str()); \
    }                                               \
  } while (0)

#define URPE_FAIL(msg) URPE_CHECK(false, msg)

}  // namespace urpe
