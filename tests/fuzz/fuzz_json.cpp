// Fuzz target: JSON (base/io/json), the format of safetensors headers and results.json. Text that
// parses must round-trip: dump() (compact and indented) parses again to an equal value, and
// dumping that gives the same text.
#include <cmath>

#include "tensor/error.h"
#include "tests/fuzz/fuzz_common.h"
#include "base/io/json.h"

using namespace urpe;

namespace {

// Equal as JSON values: numbers by value (an integer-valued double may come back as an
// integer: 1.0 is written "1"), objects member by member in order.
bool equal(const json::Value& a, const json::Value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case json::Type::null: return true;
    case json::Type::boolean: return a.as_bool() == b.as_bool();
    case json::Type::number:
      if (a.is_integer() && b.is_integer()) return a.as_integer() == b.as_integer();
      return a.as_number() == b.as_number();
    case json::Type::string: return a.as_string() == b.as_string();
    case json::Type::array:
      if (a.size() != b.size()) return false;
      for (size_t k = 0; k < a.size(); ++k)
        if (!equal(a[k], b[k])) return false;
      return true;
    case json::Type::object:
      if (a.size() != b.size()) return false;
      for (size_t k = 0; k < a.size(); ++k)
        if (a.members()[k].first != b.members()[k].first || !equal(a.members()[k].second, b.members()[k].second))
          return false;
      return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::bytes_of(data, size);
  json::Value value;
  try {
    value = json::Value::parse(text);
  } catch (const Error& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("line ", 0) == 0, "an error without line and column: " << e.what());
    return 0;
  }
  for (int indent : {-1, 2}) {
    const std::string dumped = value.dump(indent);
    json::Value back;
    try {
      back = json::Value::parse(dumped);
    } catch (const Error& e) {
      FUZZ_CHECK(false, "dump(" << indent << ") wrote text that does not parse: " << e.what() << "\n" << dumped);
    }
    FUZZ_CHECK(equal(value, back), "parse(dump(" << indent << ")) differs from the value:\n" << text << "\n---\n" << dumped);
    FUZZ_CHECK(back.dump(indent) == dumped, "dump is not stable:\n" << dumped << "\n---\n" << back.dump(indent));
  }
  return 0;
}
