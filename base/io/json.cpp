// JSON reader (recursive descent, strict RFC 8259: no comments, no trailing commas, no NaN) and
// writer. Duplicate object keys are rejected: in a safetensors header they would make a tensor
// ambiguous, and nothing urpe writes ever has them.
#include "base/io/json.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/error.h"
#include "base/io/run_dir.h"

namespace urpe::json {

const char* type_name(Type type) {
  switch (type) {
    case Type::null: return "null";
    case Type::boolean: return "a boolean";
    case Type::number: return "a number";
    case Type::string: return "a string";
    case Type::array: return "an array";
    case Type::object: return "an object";
  }
  return "?";
}

// ---- access ----

void Value::expect(Type type) const {
  URPE_CHECK(type_ == type, "expected " << type_name(type) << ", got " << type_name(type_));
}

bool Value::as_bool() const { expect(Type::boolean); return bool_; }
double Value::as_number() const { expect(Type::number); return number_; }
int64_t Value::as_integer() const {
  expect(Type::number);
  URPE_CHECK(is_integer_, "expected an integer, got " << format_number(number_));
  return integer_;
}
const std::string& Value::as_string() const { expect(Type::string); return string_; }
const std::vector<Value>& Value::items() const { expect(Type::array); return items_; }
const std::vector<std::pair<std::string, Value>>& Value::members() const {
  expect(Type::object);
  return members_;
}

size_t Value::size() const {
  if (type_ == Type::array) return items_.size();
  expect(Type::object);
  return members_.size();
}

const Value& Value::operator[](size_t index) const {
  expect(Type::array);
  URPE_CHECK(index < items_.size(), "index " << index << " out of range for an array of "
                                             << items_.size());
  return items_[index];
}

const Value* Value::find(const std::string& key) const {
  expect(Type::object);
  for (const auto& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

bool Value::contains(const std::string& key) const { return find(key) != nullptr; }

const Value& Value::at(const std::string& key) const {
  const Value* v = find(key);
  URPE_CHECK(v != nullptr, "missing key " << quote(key));
  return *v;
}

Value& Value::push(Value element) {
  expect(Type::array);
  items_.push_back(std::move(element));
  return *this;
}

Value& Value::set(const std::string& key, Value value) {
  expect(Type::object);
  for (auto& m : members_)
    if (m.first == key) {
      m.second = std::move(value);
      return *this;
    }
  members_.emplace_back(key, std::move(value));
  return *this;
}

// ---- writing ----

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through unchanged
        }
    }
  }
  return out + "\"";
}

std::string format_number(double x) {
  if (!std::isfinite(x)) return "null";
  // "-0" would read back as the integer 0 and lose its sign; "-0.0" stays the double -0.0.
  if (x == 0 && std::signbit(x)) return "-0.0";
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

static void newline(std::string& out, int indent, int depth) {
  if (indent < 0) return;
  out += '\n';
  out.append(static_cast<size_t>(indent) * depth, ' ');
}

void Value::write(std::string& out, int indent, int depth) const {
  switch (type_) {
    case Type::null: out += "null"; break;
    case Type::boolean: out += bool_ ? "true" : "false"; break;
    case Type::number: out += is_integer_ ? std::to_string(integer_) : format_number(number_); break;
    case Type::string: out += quote(string_); break;
    case Type::array:
      out += '[';
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, depth + 1);
        items_[i].write(out, indent, depth + 1);
      }
      if (!items_.empty()) newline(out, indent, depth);
      out += ']';
      break;
    case Type::object:
      out += '{';
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, depth + 1);
        out += quote(members_[i].first);
        out += indent < 0 ? ":" : ": ";
        members_[i].second.write(out, indent, depth + 1);
      }
      if (!members_.empty()) newline(out, indent, depth);
      out += '}';
      break;
  }
}

std::string Value::dump(int indent) const {
  std::string out;
  write(out, indent, 0);
  return out;
}

// ---- reading ----

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Value document() {
    skip_space();
    Value v = value(0);
    skip_space();
    if (pos_ < text_.size()) fail("expected the end of the document");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 256;  // deeper nesting is refused rather than overflowing

  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') { ++line; column = 1; }
      else ++column;
    }
    std::string near;
    if (pos_ >= text_.size()) near = " (at the end of the text)";
    else if (static_cast<unsigned char>(text_[pos_]) >= 0x20)
      near = std::string(" (found '") + text_[pos_] + "')";
    URPE_FAIL("line " << line << ", column " << column << ": " << what << near);
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) { ++pos_; return true; }
    return false;
  }

  void literal(const char* word) {
    const size_t start = pos_;
    for (const char* p = word; *p; ++p)
      if (!consume(*p)) {
        pos_ = start;  // point at the word, not at the letter that broke it
        fail(std::string("expected '") + word + "'");
      }
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than 256 levels");
    if (pos_ >= text_.size()) fail("expected a value");
    const char c = text_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Value(string());
    if (c == 't') { literal("true"); return Value(true); }
    if (c == 'f') { literal("false"); return Value(false); }
    if (c == 'n') { literal("null"); return Value(); }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail("expected a value");
  }

  Value object(int depth) {
    ++pos_;  // '{'
    Value v = Value::object();
    skip_space();
    if (consume('}')) return v;
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string key");
      const size_t key_pos = pos_;
      std::string key = string();
      for (const auto& m : v.members_)
        if (m.first == key) {
          pos_ = key_pos;
          fail("duplicate key " + quote(key));
        }
      skip_space();
      if (!consume(':')) fail("expected ':' after a key");
      skip_space();
      Value member = value(depth + 1);
      v.members_.emplace_back(std::move(key), std::move(member));
      skip_space();
      if (consume('}')) return v;
      if (!consume(',')) fail("expected ',' or '}' in an object");
    }
  }

  Value array(int depth) {
    ++pos_;  // '['
    Value v = Value::array();
    skip_space();
    if (consume(']')) return v;
    for (;;) {
      skip_space();
      v.items_.push_back(value(depth + 1));
      skip_space();
      if (consume(']')) return v;
      if (!consume(',')) fail("expected ',' or ']' in an array");
    }
  }

  unsigned hex4() {
    unsigned code = 0;
    for (int k = 0; k < 4; ++k) {
      if (pos_ >= text_.size()) fail("expected 4 hex digits after \\u");
      const char h = text_[pos_];
      unsigned d;
      if (h >= '0' && h <= '9') d = h - '0';
      else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
      else fail("expected 4 hex digits after \\u");
      code = code * 16 + d;
      ++pos_;
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_];
      if (c == '"') { ++pos_; return out; }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character inside a string");
      if (c != '\\') { out += c; ++pos_; continue; }
      ++pos_;
      if (pos_ >= text_.size()) fail("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xD800 && code < 0xDC00) {  // high surrogate: a low one must follow
            if (!consume('\\') || !consume('u')) fail("expected a low surrogate \\uDC00-\\uDFFF");
            const unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("expected a low surrogate \\uDC00-\\uDFFF");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            fail("unpaired low surrogate");
          }
          append_utf8(out, code);
          break;
        }
        default: --pos_; fail("unknown escape in a string");
      }
    }
  }

  Value number() {
    const size_t start = pos_;
    bool integral = true;
    consume('-');
    if (consume('0')) {
    } else if (pos_ < text_.size() && text_[pos_] >= '1' && text_[pos_] <= '9') {
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    } else {
      fail("expected a digit");
    }
    if (consume('.')) {
      integral = false;
      if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_])))
        fail("expected a digit after '.'");
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (!consume('+')) consume('-');
      if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_])))
        fail("expected a digit in the exponent");
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    const std::string digits = text_.substr(start, pos_ - start);
    if (integral) {
      errno = 0;
      const long long n = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == 0) return Value(static_cast<int64_t>(n));
    }
    const double x = std::strtod(digits.c_str(), nullptr);  // too big for int64: a double
    // Past ±1.8e308 strtod gives infinity, which dump() can only write as null: refuse it here
    // so that a parsed document always writes back as itself.
    if (!std::isfinite(x)) {
      pos_ = start;
      fail("a number within the range of a double (|x| < 1.8e308)");
    }
    return Value(x);
  }

  const std::string& text_;
  size_t pos_ = 0;
};

Value Value::parse(const std::string& text) { return Parser(text).document(); }

}  // namespace urpe::json

// ---- files ----

namespace urpe {

std::string write_failure(const std::string& path, int error) {
  std::string text = path + ": cannot write it: ";
  struct stat st;
  const std::string kept = ::stat(path.c_str(), &st) == 0 ? "the file already there is unchanged" : "nothing was written";
  if (error == EFBIG) {
    struct rlimit limit;
    std::string value = "the limit";
    if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
      value = "ulimit -f " + std::to_string(limit.rlim_cur / 1024) + ", " + std::to_string(limit.rlim_cur) + " bytes";
    return text + "the file would exceed this process's file-size limit (" + value + "); " + kept +
           ". Raise the limit (ulimit -f unlimited) and run the command again";
  }
  if (error == ENOSPC || error == EDQUOT)
    return text + "the disk is full (" + std::strerror(error) + "); " + kept +
           ". Free some space and run the command again";
  return text + std::strerror(error);
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  URPE_CHECK(!path.empty(), "cannot write a file with an empty path");
  before_writing(path);
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long>(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  URPE_CHECK(fd >= 0, write_failure(path, errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n == 0 ? ENOSPC : errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      URPE_FAIL(write_failure(path, err));
    }
    done += static_cast<size_t>(n);
  }
  const int synced = ::fsync(fd) == 0 ? 0 : errno;
  const int closed = ::close(fd) == 0 ? 0 : errno;
  if (synced != 0 || closed != 0) {
    const int err = synced != 0 ? synced : closed;
    ::unlink(tmp.c_str());
    URPE_FAIL(write_failure(path, err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    URPE_FAIL(path << ": cannot rename " << tmp << " into place (" << std::strerror(err) << ")");
  }
}

std::string read_file_bytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  URPE_CHECK(f != nullptr, path << ": cannot open (" << std::strerror(errno) << ")");
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  URPE_CHECK(!failed, path << ": read failed");
  return bytes;
}

namespace json {

void write_file(const std::string& path, const Value& value) {
  write_file_atomic(path, value.dump(2) + "\n");
}

Value read_file(const std::string& path) {
  const std::string text = read_file_bytes(path);
  Value value;
  try {
    value = Value::parse(text);
  } catch (const Error& e) {
    URPE_FAIL(path << ": " << e.what());
  }
  return value;
}

}  // namespace json
}  // namespace urpe
