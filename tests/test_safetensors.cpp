// safetensors reading/writing (round trips, the exact byte layout, a hand-written file as the
// spec describes it, every corruption the reader must reject) and the JSON reader/writer under it.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"
#include "train/io/json.h"
#include "train/io/safetensors.h"

using namespace urpe;

namespace {

// A fresh directory for this run's files, removed when the suite exits.
struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/urpe_test_safetensors_XXXXXX";
    if (mkdtemp(pattern)) path = pattern;
  }
  ~TempDir() {
    if (!path.empty()) std::filesystem::remove_all(path);
  }
};

std::string temp_dir() {
  static TempDir dir;
  REQUIRE(!dir.path.empty());
  return dir.path;
}

std::string temp_path(const std::string& name) { return temp_dir() + "/" + name; }

void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string u64_le(uint64_t n) {
  std::string s;
  for (int k = 0; k < 8; ++k) s += static_cast<char>((n >> (8 * k)) & 0xFF);
  return s;
}

std::string f32_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

// A file made of `header` (unpadded) and `data`, as any writer following the spec could make it.
std::string make_file(const std::string& header, const std::string& data) {
  return u64_le(header.size()) + header + data;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Writes `bytes` to a fresh file and checks that loading it fails with a message naming the file
// and containing `expected`.
void expect_rejected(const std::string& name, const std::string& bytes, const std::string& expected) {
  const std::string path = temp_path(name);
  write_raw(path, bytes);
  INFO("case " << name);
  CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains(path.c_str()), Error);
  CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains(expected.c_str()), Error);
}

}  // namespace

// ---- JSON ----

TEST_CASE("json: parse values, escapes, numbers and nesting") {
  const json::Value v = json::Value::parse(
      R"( {"a": [1, -2, 3.5, 1e3, -0.25E-2], "s": "q\"\\\/\n\t\u00e9\ud83d\ude00", "t": true,)"
      R"( "f": false, "n": null, "o": {"big": 12345678901234, "e": {}}} )");
  REQUIRE(v.is_object());
  CHECK(v.size() == 6);
  CHECK(v.members()[0].first == "a");  // insertion order kept
  const json::Value& a = v.at("a");
  CHECK(a.size() == 5);
  CHECK(a[0].is_integer());
  CHECK(a[0].as_integer() == 1);
  CHECK(a[1].as_integer() == -2);
  CHECK_FALSE(a[2].is_integer());
  CHECK(a[2].as_number() == 3.5);
  CHECK(a[3].as_number() == 1000.0);
  CHECK(a[4].as_number() == -0.0025);
  CHECK(v.at("s").as_string() == "q\"\\/\n\t\xC3\xA9\xF0\x9F\x98\x80");
  CHECK(v.at("t").as_bool());
  CHECK_FALSE(v.at("f").as_bool());
  CHECK(v.at("n").is_null());
  CHECK(v.at("o").at("big").as_integer() == 12345678901234);
  CHECK(v.at("o").at("e").size() == 0);
  CHECK(v.find("missing") == nullptr);
  CHECK_THROWS_WITH_AS(v.at("missing"), doctest::Contains("missing key \"missing\""), Error);
  CHECK_THROWS_WITH_AS(v.at("t").as_string(), "expected a string, got a boolean", Error);
  CHECK_THROWS_WITH_AS(a[2].as_integer(), "expected an integer, got 3.5", Error);
}

TEST_CASE("json: syntax errors give line and column") {
  struct Bad { const char* text; const char* message; };
  const Bad cases[] = {
      {"{\"a\": 1,}", "line 1, column 9: expected a string key"},
      {"{\"a\" 1}", "expected ':' after a key"},
      {"[1, 2", "expected ',' or ']' in an array (at the end of the text)"},
      {"{\n  \"a\": tru\n}", "line 2, column 8: expected 'true'"},
      {"\"abc", "unterminated string"},
      {"\"a\\qb\"", "unknown escape"},
      {"01", "expected the end of the document"},
      {"-", "expected a digit"},
      {"1.", "expected a digit after '.'"},
      {"{\"a\": 1, \"a\": 2}", "duplicate key \"a\""},
      {"[1] x", "expected the end of the document"},
      {"\"\\ud800x\"", "expected a low surrogate"},
      {"", "expected a value"},
      {"NaN", "expected a value"},
  };
  for (const Bad& c : cases) {
    INFO("text: " << std::string(c.text));
    CHECK_THROWS_WITH_AS(json::Value::parse(c.text), doctest::Contains(c.message), Error);
  }
  CHECK_THROWS_WITH_AS(json::Value::parse(std::string(300, '[') + std::string(300, ']')),
                       doctest::Contains("deeper than 256"), Error);
}

TEST_CASE("json: writer escapes strings, keeps order, round-trips numbers") {
  json::Value row = json::Value::object();
  row.set("task", "copy \"x\"\n").set("metric", 0.1).set("steps", int64_t{2000}).set("ok", true);
  json::Value list = json::Value::array();
  list.push(1.5).push(json::Value()).push(std::nan("")).push(3e-5);
  row.set("list", list).set("empty", json::Value::object()).set("metric", 0.25);  // replaces
  CHECK(row.dump() ==
        R"({"task":"copy \"x\"\n","metric":0.25,"steps":2000,"ok":true,"list":[1.5,null,null,3e-05],"empty":{}})");
  CHECK(row.dump(2).find("\n  \"task\": \"copy") != std::string::npos);
  CHECK(json::quote(std::string("a\x01") + "b") == "\"a\\u0001b\"");
  // Pretty and compact forms parse back to the same document.
  CHECK(json::Value::parse(row.dump(2)).dump() == row.dump());
  for (double x : {0.1, 1.0 / 3.0, 1e-300, 123456.789, -2.5e17, 0.3f * 1.0})
    CHECK(std::strtod(json::format_number(x).c_str(), nullptr) == x);
  CHECK(json::format_number(0.1) == "0.1");
  CHECK(json::format_number(12) == "12");

  const std::string path = temp_path("row.json");
  json::write_file(path, row);
  CHECK(json::read_file(path).at("steps").as_integer() == 2000);
  CHECK_FALSE(file_exists(path + ".tmp"));
  write_raw(path, "{\"a\": }");
  CHECK_THROWS_WITH_AS(json::read_file(path), doctest::Contains((path + ": line 1, column 7").c_str()), Error);
  CHECK_THROWS_WITH_AS(json::read_file(temp_path("absent.json")),
                       doctest::Contains("absent.json: cannot open"), Error);
}

// ---- safetensors ----

TEST_CASE("safetensors: round trip of f32 and i32 tensors with metadata") {
  const Tensor w = test::random_values({3, 4}, 5);
  const Tensor ids = Tensor::from_vector(std::vector<int32_t>{7, -1, 2147483647, 0, 3, 9}, {2, 3});
  const Tensor scalar = Tensor::full({}, 2.5f);
  const Tensor empty = Tensor::zeros({0, 5});
  const Tensor big = test::random_values({2, 3, 4, 5}, 6);
  const std::string path = temp_path("round.safetensors");
  save_safetensors(path,
                   {{"layer.0.w", w}, {"ids", ids}, {"scalar", scalar}, {"empty", empty}, {"big", big}},
                   {{"step", "200"}, {"config", "lr = 0.001\nmodel = \"urpe\"\n"}});
  CHECK_FALSE(file_exists(path + ".tmp"));

  const TensorFile f = load_safetensors(path);
  REQUIRE(f.tensors.size() == 5);
  CHECK(f.tensors[0].first == "layer.0.w");  // data-offset order = the order written
  CHECK(f.at("layer.0.w").shape() == Shape{3, 4});
  CHECK(f.at("layer.0.w").to_vector_f32() == w.to_vector_f32());
  CHECK(f.at("ids").dtype() == DType::i32);
  CHECK(f.at("ids").to_vector_i32() == ids.to_vector_i32());
  CHECK(f.at("scalar").shape().empty());
  CHECK(f.at("scalar").item() == 2.5f);
  CHECK(f.at("empty").shape() == Shape{0, 5});
  CHECK(f.at("big").to_vector_f32() == big.to_vector_f32());
  CHECK(f.meta("step") == "200");
  CHECK(f.meta("config") == "lr = 0.001\nmodel = \"urpe\"\n");
  CHECK(f.contains("ids"));
  CHECK_FALSE(f.contains("nope"));
  CHECK_THROWS_WITH_AS(f.at("nope"), doctest::Contains("no tensor 'nope' (it has: layer.0.w, ids"), Error);
  CHECK_THROWS_WITH_AS(f.meta("seed"), doctest::Contains((path + ": no metadata key 'seed'").c_str()), Error);

  // Saving over an existing file replaces it, still without a temp file left behind.
  save_safetensors(path, {{"only", ids}});
  const TensorFile g = load_safetensors(path);
  CHECK(g.tensors.size() == 1);
  CHECK(g.metadata.empty());
  CHECK_FALSE(file_exists(path + ".tmp"));
}

TEST_CASE("safetensors: byte layout of the header and data") {
  const Tensor a = Tensor::from_vector(std::vector<float>{1.0f, -2.0f}, {2});
  const Tensor b = Tensor::from_vector(std::vector<int32_t>{258}, {1, 1});
  const std::string path = temp_path("layout.safetensors");
  save_safetensors(path, {{"a", a}, {"b", b}}, {{"k", "v"}});
  const std::string bytes = read_raw(path);

  const std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I32","shape":[1,1],"data_offsets":[8,12]}})";
  CHECK(safetensors_header({{"a", a}, {"b", b}}, {{"k", "v"}}) == header);
  const size_t padded = (header.size() + 7) / 8 * 8;
  REQUIRE(bytes.size() == 8 + padded + 12);
  CHECK(bytes.substr(0, 8) == u64_le(padded));
  CHECK(bytes.substr(8, header.size()) == header);
  CHECK(bytes.substr(8 + header.size(), padded - header.size()) == std::string(padded - header.size(), ' '));
  CHECK((8 + padded) % 8 == 0);
  const std::string data = bytes.substr(8 + padded);
  CHECK(data.substr(0, 8) == f32_bytes({1.0f, -2.0f}));
  CHECK(data.substr(8) == std::string("\x02\x01\x00\x00", 4));  // 258 little-endian
}

TEST_CASE("safetensors: reads a file written by hand from the spec") {
  // Keys in an arbitrary order, no metadata, no padding, offsets not in key order, extra spaces.
  const std::string header =
      R"({ "second" : {"shape": [2], "dtype": "F32", "data_offsets": [12, 20]},)"
      R"(  "first": {"data_offsets": [0, 12], "dtype": "I32", "shape": [3]} })";
  std::string data;
  const int32_t ints[3] = {1, 2, -3};
  data.append(reinterpret_cast<const char*>(ints), 12);
  data += f32_bytes({0.5f, 4.0f});
  const std::string path = temp_path("by_hand.safetensors");
  write_raw(path, make_file(header, data));
  const TensorFile f = load_safetensors(path);
  REQUIRE(f.tensors.size() == 2);
  CHECK(f.tensors[0].first == "first");
  CHECK(f.at("first").to_vector_i32() == std::vector<int32_t>{1, 2, -3});
  CHECK(f.at("second").to_vector_f32() == std::vector<float>{0.5f, 4.0f});
  CHECK(f.metadata.empty());

  // An empty file of tensors is valid too.
  write_raw(path, make_file("{}", ""));
  CHECK(load_safetensors(path).tensors.empty());
}

TEST_CASE("safetensors: every corruption is an error naming the file") {
  const std::string good_entry = R"("x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight = f32_bytes({1, 2});

  CHECK_THROWS_WITH_AS(load_safetensors(temp_path("missing.safetensors")),
                       doctest::Contains("missing.safetensors: cannot open safetensors file (No such file"),
                       Error);
  expect_rejected("short", std::string("\x05\x00\x00", 3), "too short for the 8-byte header length");
  expect_rejected("header_past_end", u64_le(1000) + "{}", "the header length is 1000 bytes but only 2");
  expect_rejected("bad_json", make_file(R"({"x":{"dtype":"F32",}})", ""), "bad JSON header: line 1");
  expect_rejected("not_json", make_file("hello", ""), "bad JSON header: the header must start with '{'");
  expect_rejected("not_object", make_file(R"({"x": 3})", ""), "tensor 'x': expected an object");
  expect_rejected("unknown_dtype",
                  make_file(R"({"x":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", eight),
                  "tensor 'x': unknown dtype 'Q7'");
  expect_rejected("unsupported_dtype",
                  make_file(R"({"x":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", eight),
                  "tensor 'x': dtype F16 is not supported (urpe reads F32 and I32)");
  expect_rejected("shape_mismatch",
                  make_file(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
                  "tensor 'x': shape [3] F32 needs 12 bytes but data_offsets [0, 8] span 8");
  expect_rejected("negative_shape",
                  make_file(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight),
                  "must hold non-negative integers, got -2");
  expect_rejected("too_many_dims",
                  make_file(R"({"x":{"dtype":"F32","shape":[1,1,1,1,2],"data_offsets":[0,8]}})", eight),
                  "shape has 5 dims");
  expect_rejected("missing_field", make_file(R"({"x":{"dtype":"F32","shape":[2]}})", eight),
                  "tensor 'x': missing \"data_offsets\"");
  expect_rejected("reversed_offsets",
                  make_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight),
                  "\"data_offsets\" must be [begin, end]");
  expect_rejected("data_past_end", make_file("{" + good_entry + "}", eight.substr(0, 5)),
                  "truncated safetensors file: tensor 'x' data_offsets [0, 8] go past the end of the 5-byte");
  expect_rejected("overlap",
                  make_file("{" + good_entry +
                                R"(,"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                            eight + eight.substr(0, 4)),
                  "tensors 'x' [0, 8] and 'y' [4, 12] have overlapping data_offsets");
  expect_rejected("gap",
                  make_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight),
                  "bytes [0, 4) of the data buffer belong to no tensor");
  expect_rejected("trailing", make_file("{" + good_entry + "}", eight + "xyzw"),
                  "4 bytes after the last tensor belong to no tensor");
  expect_rejected("bad_metadata",
                  make_file(R"({"__metadata__":{"step":200},)" + good_entry + "}", eight),
                  "metadata 'step' must be a string, got a number");
  expect_rejected("duplicate_tensor", make_file("{" + good_entry + "," + good_entry + "}", eight),
                  "duplicate key \"x\"");
}

TEST_CASE("safetensors: bad save arguments and unwritable paths") {
  const Tensor a = Tensor::ones({2});
  CHECK_THROWS_WITH_AS(save_safetensors(temp_path("dup.safetensors"), {{"a", a}, {"a", a}}),
                       doctest::Contains("dup.safetensors: safetensors: tensor name 'a' appears twice"), Error);
  CHECK_THROWS_WITH_AS(save_safetensors(temp_path("undef.safetensors"), {{"u", Tensor()}}),
                       doctest::Contains("tensor 'u' is undefined"), Error);
  CHECK_THROWS_WITH_AS(save_safetensors("/nonexistent_dir_urpe/x.safetensors", {{"a", a}}),
                       doctest::Contains("/nonexistent_dir_urpe/x.safetensors: cannot write"), Error);
  CHECK_FALSE(file_exists(temp_path("dup.safetensors")));
}
