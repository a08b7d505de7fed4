// safetensors reading/writing (round trips, the exact byte layout, a hand-written file as the
// spec describes it, every corruption the reader must reject, the data checksum), the JSON
// reader/writer under it, and the checkpoint layer on top (every metadata value checked).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "test_util.h"
#include "base/io/json.h"
#include "base/io/safetensors.h"
#include "train/loop/checkpoint.h"
#include "base/io/crc32.h"

using namespace urpe;

namespace {

// A fresh directory for this run's files, removed when the suite exits.
std::string temp_dir() {
  static test::TempDir dir("safetensors");
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
  REQUIRE(g.metadata.size() == 1);  // only the data checksum urpe adds
  CHECK(g.metadata.count("data_crc32") == 1);
  CHECK_FALSE(file_exists(path + ".tmp"));
}

TEST_CASE("safetensors: byte layout of the header and data") {
  const Tensor a = Tensor::from_vector(std::vector<float>{1.0f, -2.0f}, {2});
  const Tensor b = Tensor::from_vector(std::vector<int32_t>{258}, {1, 1});
  const std::string path = temp_path("layout.safetensors");
  save_safetensors(path, {{"a", a}, {"b", b}}, {{"k", "v"}});
  const std::string bytes = read_raw(path);

  // The metadata gains the CRC-32 of the 12 data bytes (the value Python's zlib.crc32 gives).
  const std::string header =
      R"({"__metadata__":{"data_crc32":"2e868a0a","k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I32","shape":[1,1],"data_offsets":[8,12]}})";
  CHECK(safetensors_header({{"a", a}, {"b", b}}, {{"data_crc32", "2e868a0a"}, {"k", "v"}}) == header);
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

// ---- the data checksum ----

TEST_CASE("crc32: the standard check value; zlib and the table agree; pieces chain") {
  const std::string check = "123456789";
  CHECK(crc32_update(0, check.data(), check.size()) == 0xCBF43926u);
  CHECK(crc32_update_portable(0, check.data(), check.size()) == 0xCBF43926u);
  CHECK(crc32_update(0, nullptr, 0) == 0);
  const std::string bytes = f32_bytes(test::random_values({1000}, 3).to_vector_f32());
  const uint32_t whole = crc32_update(0, bytes.data(), bytes.size());
  CHECK(crc32_update_portable(0, bytes.data(), bytes.size()) == whole);
  CHECK(crc32_update(crc32_update(0, bytes.data(), 123), bytes.data() + 123, bytes.size() - 123) == whole);
  CHECK(crc32_update_portable(crc32_update_portable(0, bytes.data(), 7), bytes.data() + 7, bytes.size() - 7) ==
        whole);
}

namespace {

// The byte offset of the data buffer in a safetensors file.
size_t data_start(const std::string& bytes) {
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(bytes[k]);
  return static_cast<size_t>(8 + n);
}

std::string flip_bit(std::string bytes, size_t at, int bit) {
  bytes[at] = static_cast<char>(bytes[at] ^ (1 << bit));
  return bytes;
}

}  // namespace

TEST_CASE("safetensors: a flipped bit in the tensor data is reported, not loaded") {
  const Tensor w = test::random_values({4, 5}, 11);
  const Tensor ids = Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {3});
  const std::string path = temp_path("crc_good.safetensors");
  save_safetensors(path, {{"w", w}, {"ids", ids}}, {{"k", "v"}});
  const std::string good = read_raw(path);
  const TensorFile f = load_safetensors(path);
  const std::string stored = f.meta("data_crc32");
  CHECK(stored.size() == 8);
  CHECK(stored.find_first_not_of("0123456789abcdef") == std::string::npos);
  const std::string data = good.substr(data_start(good));
  char expected[9];
  std::snprintf(expected, sizeof expected, "%08x", crc32_update(0, data.data(), data.size()));
  CHECK(stored == expected);

  // One bit in the first tensor, in the middle, in the very last byte: each one is caught.
  const size_t begin = data_start(good);
  const std::pair<size_t, int> flips[] = {{begin, 0}, {begin + 41, 6}, {good.size() - 1, 7}};
  for (const auto& [at, bit] : flips) {
    INFO("byte " << at << " bit " << bit);
    const std::string corrupt = flip_bit(good, at, bit);
    std::string body = corrupt.substr(begin);
    char computed[9];
    std::snprintf(computed, sizeof computed, "%08x", crc32_update(0, body.data(), body.size()));
    const std::string bad = temp_path("crc_flipped.safetensors");
    write_raw(bad, corrupt);
    CHECK_THROWS_WITH_AS(load_safetensors(bad),
                         (bad + ": tensor data checksum mismatch (crc32 stored " + stored + ", computed " +
                          computed + "): the file is corrupt")
                             .c_str(),
                         Error);
  }

  // The stored value itself must be a CRC-32: 8 hex digits.
  for (const char* value : {"xyz", "2e868a0", "2e868a0a0", "-1", "2E868A0G", ""}) {
    INFO("value '" << std::string(value) << "'");
    const std::string header = R"({"__metadata__":{"data_crc32":")" + std::string(value) +
                               R"("},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    expect_rejected("crc_malformed", make_file(header, f32_bytes({1, 2})),
                    "metadata 'data_crc32' should be 8 hex digits (the CRC-32 of the tensor data), got '" +
                        std::string(value) + "'");
  }
  // Upper-case hex digits are the same checksum.
  const std::string upper = R"({"__metadata__":{"data_crc32":"2E868A0A"},"a":{"dtype":"F32","shape":[2],)"
                            R"("data_offsets":[0,8]},"b":{"dtype":"I32","shape":[1,1],"data_offsets":[8,12]}})";
  const std::string layout_data = f32_bytes({1.0f, -2.0f}) + std::string("\x02\x01\x00\x00", 4);
  write_raw(temp_path("crc_upper.safetensors"), make_file(upper, layout_data));
  CHECK(load_safetensors(temp_path("crc_upper.safetensors")).tensors.size() == 2);
}

TEST_CASE("safetensors: a file without the checksum (older urpe, other writers) loads; saving it adds one") {
  // As urpe wrote it before the checksum: the same header without "data_crc32".
  const Tensor w = test::random_values({3, 2}, 4);
  const std::string header = safetensors_header({{"w", w}}, {{"step", "7"}});
  const std::string data = f32_bytes(w.to_vector_f32());
  const std::string path = temp_path("old.safetensors");
  write_raw(path, make_file(header, data));
  const TensorFile old = load_safetensors(path);
  CHECK(old.metadata.count("data_crc32") == 0);
  CHECK(old.at("w").to_vector_f32() == w.to_vector_f32());
  // Without a checksum a flipped bit cannot be noticed: the file loads with the changed value.
  write_raw(path, flip_bit(make_file(header, data), 8 + header.size(), 0));
  CHECK(load_safetensors(path).at("w").to_vector_f32() != w.to_vector_f32());

  // Saving again (as resuming an old run does) writes the checksum, and a checksum passed in (here
  // a stale one copied from elsewhere) is replaced by the one of the data written.
  std::map<std::string, std::string> meta = old.metadata;
  meta["data_crc32"] = "00000000";
  save_safetensors(path, old.tensors, meta);
  const TensorFile again = load_safetensors(path);
  char expected[9];
  std::snprintf(expected, sizeof expected, "%08x", crc32_update(0, data.data(), data.size()));
  CHECK(again.meta("data_crc32") == expected);
  CHECK(again.meta("step") == "7");
}

// ---- checkpoints ----

namespace {

struct TinyModel {
  ParameterSet params;
  TinyModel(uint64_t seed) {
    params.add("w", test::random_values({3, 4}, seed));
    params.add("b", test::random_values({4}, seed + 1));
  }
};

TrainingProgress sample_progress() {
  TrainingProgress p;
  p.step = 12;
  p.data_rng = Rng(0xFFFFFFFFFFFFFFFFull, 40);
  p.dropout_rng = Rng(6, 1u << 20);
  p.seconds = 3.25;
  p.pending_loss_sum = 0.1 + 0.2;  // not exact in decimal: needs all 17 digits to read back
  p.pending_loss_count = 2;
  return p;
}

// A checkpoint of TinyModel with sample_progress(), its metadata then rewritten by `edit`
// (the data checksum is recomputed on saving, so only the edited value is wrong).
std::string edited_checkpoint(const std::string& name,
                              const std::function<void(std::map<std::string, std::string>&)>& edit) {
  const std::string path = temp_path(name);
  TinyModel model(1);
  Adam adam(model.params.tensors());
  TrainerState state;
  state.meta["epoch"] = "3";
  save_checkpoint(path, model.params, &adam, sample_progress(), "steps = 20\n", state);
  TensorFile file = load_safetensors(path);
  edit(file.metadata);
  save_safetensors(path, file.tensors, file.metadata);
  return path;
}

}  // namespace

TEST_CASE("checkpoint: every metadata field round-trips; the file carries the data checksum") {
  TinyModel saved(1);
  Adam adam(saved.params.tensors());
  // One update, so that the Adam moments are not zeros.
  add(sum_all(mul(saved.params.find("w"), saved.params.find("w"))), sum_all(saved.params.find("b"))).backward();
  adam.step(0.1f);
  TrainerState state;
  state.meta["epoch"] = "3";
  state.meta["segment"] = "17";
  state.tensors.emplace_back("mems.0", test::random_values({2, 3, 4}, 9));
  const std::string path = temp_path("ckpt_round.safetensors");
  save_checkpoint(path, saved.params, &adam, sample_progress(), "steps = 20\nlr = 0.1\n", state);

  TinyModel loaded(50);
  Adam loaded_adam(loaded.params.tensors());
  const CheckpointInfo info = load_checkpoint(path, loaded.params, &loaded_adam);
  const TrainingProgress want = sample_progress();
  CHECK(info.progress.step == want.step);
  CHECK(info.progress.data_rng.seed() == want.data_rng.seed());
  CHECK(info.progress.data_rng.offset() == want.data_rng.offset());
  CHECK(info.progress.dropout_rng.seed() == want.dropout_rng.seed());
  CHECK(info.progress.dropout_rng.offset() == want.dropout_rng.offset());
  CHECK(info.progress.seconds == want.seconds);
  CHECK(info.progress.pending_loss_sum == want.pending_loss_sum);  // bit for bit
  CHECK(info.progress.pending_loss_count == want.pending_loss_count);
  CHECK(info.config_text == "steps = 20\nlr = 0.1\n");
  CHECK(info.state.meta.size() == 2);
  CHECK(info.state.meta.at("segment") == "17");
  REQUIRE(info.state.tensors.size() == 1);
  CHECK(info.state.tensors[0].second.to_vector_f32() == state.tensors[0].second.to_vector_f32());
  CHECK(loaded.params.find("w").to_vector_f32() == saved.params.find("w").to_vector_f32());
  CHECK(loaded_adam.steps() == 1);
  const auto want_state = adam.state(), got_state = loaded_adam.state();
  REQUIRE(want_state.size() == got_state.size());
  for (size_t k = 0; k < want_state.size(); ++k) {
    INFO(want_state[k].first);
    const Tensor& a = want_state[k].second;
    const Tensor& b = got_state[k].second;
    REQUIRE(a.numel() == b.numel());
    CHECK(std::memcmp(a.impl().storage->data, b.impl().storage->data, a.numel() * 4) == 0);
  }
  CHECK(state_integer(info.state, path, "segment", 0, 17) == 17);
  CHECK(load_safetensors(path).meta("data_crc32").size() == 8);

  // A flipped bit in a parameter's data: the checkpoint is refused, the model left as it was.
  std::string bytes = read_raw(path);
  bytes = flip_bit(bytes, data_start(bytes) + 5, 3);
  write_raw(path, bytes);
  TinyModel untouched(50);
  CHECK_THROWS_WITH_AS(load_checkpoint(path, untouched.params, nullptr),
                       doctest::Contains((path + ": tensor data checksum mismatch").c_str()), Error);
  CHECK(untouched.params.find("w").to_vector_f32() == TinyModel(50).params.find("w").to_vector_f32());
}

TEST_CASE("checkpoint: a bad metadata value is one error naming the file, the key and what was expected") {
  const std::string step_range = "an integer from 0 to 9007199254740992, got ";  // steps up to 2^53
  const std::string u64 = "an integer from 0 to 18446744073709551615, got ";
  const std::string number = "a finite number >= 0, got ";
  struct Bad { const char* key; const char* value; std::string expected; };
  const std::vector<Bad> cases = {
      {"format", "urpe-checkpoint-9", "not a urpe checkpoint (format 'urpe-checkpoint-9', expected "},
      {"step", "abc", step_range + "'abc'"},
      {"step", "-5", step_range + "'-5'"},
      {"step", "9007199254740993", step_range + "'9007199254740993'"},
      {"step", "9223372036854775808", step_range + "'9223372036854775808'"},
      {"step", "99999999999999999999999", step_range + "'99999999999999999999999'"},
      {"step", "nan", step_range + "'nan'"},
      {"step", "", step_range + "''"},
      {"step", " 12", step_range + "' 12'"},
      {"step", "+12", step_range + "'+12'"},
      {"step", "12.0", step_range + "'12.0'"},
      {"step", "1e3", step_range + "'1e3'"},
      {"data_rng_seed", "x", u64 + "'x'"},
      {"data_rng_seed", "-1", u64 + "'-1'"},
      {"data_rng_seed", "18446744073709551616", u64 + "'18446744073709551616'"},
      {"data_rng_seed", "nan", u64 + "'nan'"},
      {"data_rng_offset", "0x10", u64 + "'0x10'"},
      {"data_rng_offset", "-4", u64 + "'-4'"},
      {"data_rng_offset", "18446744073709551620", u64 + "'18446744073709551620'"},
      {"data_rng_offset", "42", "should be a multiple of 4 (the stream advances in whole Philox blocks), got '42'"},
      {"dropout_rng_seed", "seed", u64 + "'seed'"},
      {"dropout_rng_seed", "-7", u64 + "'-7'"},
      {"dropout_rng_seed", "1e30", u64 + "'1e30'"},
      {"dropout_rng_offset", "nan", u64 + "'nan'"},
      {"dropout_rng_offset", "-8", u64 + "'-8'"},
      {"dropout_rng_offset", "5", "should be a multiple of 4"},
      {"seconds", "abc", number + "'abc'"},
      {"seconds", "-1.5", number + "'-1.5'"},
      {"seconds", "1e999", number + "'1e999'"},
      {"seconds", "nan", number + "'nan'"},
      {"seconds", "inf", number + "'inf'"},
      {"seconds", "3.5s", number + "'3.5s'"},
      {"seconds", " 3.5", number + "' 3.5'"},
      {"seconds", "", number + "''"},
      {"pending_loss_sum", "loss", number + "'loss'"},
      {"pending_loss_sum", "-0.25", number + "'-0.25'"},
      {"pending_loss_sum", "1e400", number + "'1e400'"},
      {"pending_loss_sum", "NaN", number + "'NaN'"},
      {"pending_loss_sum", "-inf", number + "'-inf'"},
      {"pending_loss_count", "two", "an integer from 0 to 12 (the step, 12), got 'two'"},
      {"pending_loss_count", "-1", "an integer from 0 to 12 (the step, 12), got '-1'"},
      {"pending_loss_count", "13", "an integer from 0 to 12 (the step, 12), got '13'"},
      {"pending_loss_count", "18446744073709551616", "an integer from 0 to 12 (the step, 12), got '1844674407370955"},
      {"pending_loss_count", "nan", "an integer from 0 to 12 (the step, 12), got 'nan'"},
      {"pending_loss_count", "0", "metadata 'pending_loss_sum' should be 0 when 'pending_loss_count' is 0, got"},
  };
  for (const Bad& c : cases) {
    INFO("metadata " << std::string(c.key) << " = '" << std::string(c.value) << "'");
    const std::string path = edited_checkpoint("ckpt_bad.safetensors", [&](auto& meta) { meta[c.key] = c.value; });
    // The key is named, except for the format and the sum/count pair (whose message names both).
    const std::string named = std::string(c.key) == "format" || std::string(c.key) == "pending_loss_count"
                                  ? path + ": "
                                  : path + ": metadata '" + c.key + "' should be ";
    CHECK_THROWS_WITH_AS(read_checkpoint_info(path), doctest::Contains(named.c_str()), Error);
    CHECK_THROWS_WITH_AS(read_checkpoint_info(path), doctest::Contains(c.expected.c_str()), Error);
    TinyModel model(2);
    CHECK_THROWS_WITH_AS(load_checkpoint(path, model.params, nullptr), doctest::Contains(c.expected.c_str()), Error);
  }

  // A long bad value is shown shortened.
  const std::string long_path =
      edited_checkpoint("ckpt_long.safetensors", [](auto& meta) { meta["seconds"] = std::string(5000, '7') + "x"; });
  CHECK_THROWS_WITH_AS(read_checkpoint_info(long_path),
                       (long_path + ": metadata 'seconds' should be a finite number >= 0, got '" +
                        std::string(40, '7') + "...'")
                           .c_str(),
                       Error);
  // Each field is required.
  for (const char* key : {"format", "step", "config", "data_rng_seed", "data_rng_offset", "dropout_rng_seed",
                          "dropout_rng_offset", "seconds", "pending_loss_sum", "pending_loss_count"}) {
    INFO("without " << std::string(key));
    const std::string path = edited_checkpoint("ckpt_missing.safetensors", [&](auto& meta) { meta.erase(key); });
    CHECK_THROWS_WITH_AS(read_checkpoint_info(path),
                         (path + ": no metadata key '" + std::string(key) + "'").c_str(), Error);
  }
  // The extremes of each range are accepted.
  const std::string edge = edited_checkpoint("ckpt_edge.safetensors", [](auto& meta) {
    meta["step"] = "9007199254740992";
    meta["data_rng_seed"] = "18446744073709551615";
    meta["data_rng_offset"] = "18446744073709551612";
    meta["seconds"] = "0";
    meta["pending_loss_sum"] = "0";
    meta["pending_loss_count"] = "0";
  });
  const CheckpointInfo info = read_checkpoint_info(edge);
  CHECK(info.progress.step == int64_t{1} << 53);
  CHECK(info.progress.data_rng.seed() == std::numeric_limits<uint64_t>::max());
  CHECK(info.progress.data_rng.offset() == std::numeric_limits<uint64_t>::max() - 3);
}

TEST_CASE("checkpoint: a trainer-state integer is checked against its range") {
  TrainerState state;
  state.meta = {{"epoch", "4"}, {"neg", "-1"}, {"word", "four"}, {"big", "99999999999999999999"}, {"space", "4 "}};
  CHECK(state_integer(state, "ck.safetensors", "epoch", 0, 4) == 4);
  CHECK(state_integer(state, "ck.safetensors", "epoch", 4, 100) == 4);
  CHECK_THROWS_WITH_AS(state_integer(state, "ck.safetensors", "epoch", 0, 3),
                       "ck.safetensors: metadata 'state.epoch' should be an integer from 0 to 3, got '4'", Error);
  CHECK_THROWS_WITH_AS(state_integer(state, "ck.safetensors", "epoch", 5, 9),
                       "ck.safetensors: metadata 'state.epoch' should be an integer from 5 to 9, got '4'", Error);
  for (const char* key : {"neg", "word", "big", "space"}) {
    INFO(key);
    CHECK_THROWS_WITH_AS(state_integer(state, "ck.safetensors", key, 0, 1000),
                         doctest::Contains(("ck.safetensors: metadata 'state." + std::string(key) +
                                            "' should be an integer from 0 to 1000, got '")
                                               .c_str()),
                         Error);
  }
  CHECK_THROWS_WITH_AS(state_integer(state, "ck.safetensors", "segment", 0, 10),
                       doctest::Contains("ck.safetensors: no metadata key 'state.segment'"), Error);
}
