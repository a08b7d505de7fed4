// A small JSON value with a strict reader and a writer: enough for safetensors headers and the
// results.json files of a run. Objects keep their insertion order (so written files read in the
// order they were built); numbers keep an exact int64 when the text was an integer.
//
//   json::Value row = json::Value::object();
//   row.set("task", "copy").set("metric", 0.93).set("steps", int64_t{2000});
//   write_text_file(path, row.dump(2));
//   json::Value back = json::Value::parse(text);   // throws urpe::Error "line 3, column 7: ..."
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace urpe::json {

enum class Type { null, boolean, number, string, array, object };
const char* type_name(Type type);  // "null", "a boolean", "a number", ...

class Value {
 public:
  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool b) : type_(Type::boolean), bool_(b) {}
  Value(double x) : type_(Type::number), number_(x) {}
  Value(float x) : Value(static_cast<double>(x)) {}
  Value(int x) : Value(static_cast<int64_t>(x)) {}
  Value(int64_t x)
      : type_(Type::number), number_(static_cast<double>(x)), integer_(x), is_integer_(true) {}
  Value(uint64_t x) : Value(static_cast<int64_t>(x)) {}
  Value(std::string s) : type_(Type::string), string_(std::move(s)) {}
  Value(const char* s) : Value(std::string(s)) {}
  static Value array() { Value v; v.type_ = Type::array; return v; }
  static Value object() { Value v; v.type_ = Type::object; return v; }

  // ---- reading ----
  // Parses a whole document (trailing text other than whitespace is an error). Errors are
  // urpe::Error "line L, column C: expected ..."; callers add the file name.
  static Value parse(const std::string& text);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::null; }
  bool is_bool() const { return type_ == Type::boolean; }
  bool is_number() const { return type_ == Type::number; }
  bool is_string() const { return type_ == Type::string; }
  bool is_array() const { return type_ == Type::array; }
  bool is_object() const { return type_ == Type::object; }
  // True for numbers written without fraction or exponent that fit in int64.
  bool is_integer() const { return type_ == Type::number && is_integer_; }

  // Typed access; the wrong type throws urpe::Error ("expected a string, got a number").
  bool as_bool() const;
  double as_number() const;
  int64_t as_integer() const;  // only for is_integer() values
  const std::string& as_string() const;
  const std::vector<Value>& items() const;                         // array elements
  const std::vector<std::pair<std::string, Value>>& members() const;  // object members, in order

  size_t size() const;  // elements of an array or members of an object
  const Value& operator[](size_t index) const;
  bool contains(const std::string& key) const;
  const Value* find(const std::string& key) const;  // nullptr when absent
  const Value& at(const std::string& key) const;    // throws naming the missing key

  // ---- building ----
  Value& push(Value element);                       // append to an array; returns *this
  Value& set(const std::string& key, Value value);  // add or replace an object member; *this

  // ---- writing ----
  // indent < 0: one line, no spaces. indent >= 0: pretty, that many spaces per level.
  // Non-finite numbers are written as null (JSON has no NaN or infinity).
  std::string dump(int indent = -1) const;

 private:
  void write(std::string& out, int indent, int depth) const;
  void expect(Type type) const;

  Type type_ = Type::null;
  bool bool_ = false;
  double number_ = 0;
  int64_t integer_ = 0;
  bool is_integer_ = false;
  std::string string_;
  std::vector<Value> items_;
  std::vector<std::pair<std::string, Value>> members_;

  friend class Parser;
};

// Writes `value.dump(2)` plus a newline to `path` atomically (see write_file_atomic).
void write_file(const std::string& path, const Value& value);
// Reads and parses a JSON file; errors name the file ("results.json: line 3, column 7: ...").
Value read_file(const std::string& path);

// The JSON text of a string, quotes included, with ", \, and control characters escaped.
std::string quote(const std::string& text);
// The shortest decimal text that reads back as the same double ("0.1", "3e-05", "12").
std::string format_number(double x);

}  // namespace urpe::json

namespace urpe {
// Writes `bytes` to `path` so that a reader sees the old file or the new one, never half of one:
// the bytes go to a temp file beside it (`path.tmp.PID`, so two processes writing one path, such
// as a training run and `urpe plot` redrawing its plots, never share one), are flushed and
// fsynced, then renamed over `path`. Before anything is written it calls before_writing(path)
// (base/io/run_dir.h: an --overwrite moves the old run aside only now). Failures throw
// urpe::Error naming the file and the reason (write_failure); the temp file is removed and the
// file at `path` stays as it was.
void write_file_atomic(const std::string& path, const std::string& bytes);
// The message of a write to `path` that failed with `error` (an errno): a full disk or quota, and
// the file-size limit of `ulimit -f` (EFBIG, with the limit), are named as such.
std::string write_failure(const std::string& path, int error);
// The whole file as bytes; a missing or unreadable file throws naming it.
std::string read_file_bytes(const std::string& path);
}  // namespace urpe
