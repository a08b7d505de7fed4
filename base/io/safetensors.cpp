// safetensors reading and writing (format in safetensors.h). The reader trusts nothing: every
// length, offset, shape and dtype in the header is checked against the file before any tensor is
// filled, and each failure names the file, the tensor and what was expected.
#include "base/io/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

#include "base/io/json.h"
#include "base/io/crc32.h"

namespace urpe {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the reference implementation's limit

const char* safetensors_dtype(DType t) { return t == DType::f32 ? "F32" : "I32"; }

bool is_known_safetensors_dtype(const std::string& name) {
  static const std::set<std::string> known = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3",
                                              "I16",  "U16", "F16", "BF16",    "I32",
                                              "U32",  "F32", "F64", "I64",     "U64"};
  return known.count(name) > 0;
}

std::string shape_json(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string crc32_hex(uint32_t crc) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", crc);
  return text;
}

// The stored checksum: exactly 8 hex digits (either case), else an error naming the file.
uint32_t parse_crc32(const std::string& path, const std::string& text) {
  bool ok = text.size() == 8;
  uint32_t value = 0;
  for (char c : text) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    ok = ok && digit >= 0;
    value = (value << 4) | static_cast<uint32_t>(digit & 0xF);
  }
  URPE_CHECK(ok, path << ": metadata '" << kDataChecksumKey << "' should be 8 hex digits (the CRC-32 of the tensor data), got '"
                      << (text.size() > 40 ? text.substr(0, 40) + "..." : text) << "'");
  return value;
}

// The checks safetensors_header makes of the tensors (also made before save_safetensors reads
// any tensor's data).
void check_tensors(const std::vector<NamedTensor>& tensors) {
  std::set<std::string> seen;
  for (const auto& [name, tensor] : tensors) {
    URPE_CHECK(!name.empty(), "safetensors: a tensor has an empty name");
    URPE_CHECK(name != "__metadata__", "safetensors: '__metadata__' cannot name a tensor");
    URPE_CHECK(seen.insert(name).second, "safetensors: tensor name '" << name << "' appears twice");
    URPE_CHECK(tensor.defined(), "safetensors: tensor '" << name << "' is undefined");
    URPE_CHECK(tensor.dtype() != DType::bf16, "safetensors: tensor '" << name << "' is bf16; urpe writes "
                                                  "F32 and I32 only (checkpoints keep the FP32 master weights)");
  }
}

// One tensor's header entry after validation.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

}  // namespace

const char* const kDataChecksumKey = "data_crc32";

// ---- TensorFile ----

bool TensorFile::contains(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.first == name) return true;
  return false;
}

const Tensor& TensorFile::at(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.first == name) return t.second;
  std::ostringstream names;
  for (size_t i = 0; i < tensors.size(); ++i) names << (i ? ", " : "") << tensors[i].first;
  throw Error(path + ": no tensor '" + name + "' (it has: " +
              (tensors.empty() ? std::string("none") : names.str()) + ")");
}

const std::string& TensorFile::meta(const std::string& key) const {
  auto it = metadata.find(key);
  URPE_CHECK(it != metadata.end(), path << ": no metadata key '" << key << "'");
  return it->second;
}

// ---- writing ----

std::string safetensors_header(const std::vector<NamedTensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  json::Value header = json::Value::object();
  if (!metadata.empty()) {
    json::Value meta = json::Value::object();
    for (const auto& kv : metadata) meta.set(kv.first, kv.second);
    header.set("__metadata__", meta);
  }
  check_tensors(tensors);
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    json::Value shape = json::Value::array();
    for (int64_t s : tensor.shape()) shape.push(s);
    const uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * dtype_size(tensor.dtype());
    json::Value offsets = json::Value::array();
    offsets.push(offset).push(offset + bytes);
    json::Value entry = json::Value::object();
    entry.set("dtype", safetensors_dtype(tensor.dtype())).set("shape", shape).set("data_offsets", offsets);
    header.set(name, entry);
    offset += bytes;
  }
  return header.dump();
}

void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  try {
    check_tensors(tensors);
  } catch (const Error& e) {
    URPE_FAIL(path << ": " << e.what());
  }
  // The data first: its checksum goes into the header.
  std::vector<Tensor> hosts;
  uint32_t crc = 0;
  for (const auto& named : tensors) {
    hosts.push_back(named.second.cpu());  // a no-op for CPU tensors
    const Tensor& host = hosts.back();
    const size_t size = static_cast<size_t>(host.numel()) * dtype_size(host.dtype());
    if (size) crc = crc32_update(crc, host.impl().storage->data, size);
  }
  std::map<std::string, std::string> meta = metadata;
  meta[kDataChecksumKey] = crc32_hex(crc);
  std::string header;
  try {
    header = safetensors_header(tensors, meta);
  } catch (const Error& e) {
    URPE_FAIL(path << ": " << e.what());
  }
  header.append((8 - header.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  std::string bytes;
  uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) bytes += static_cast<char>((n >> (8 * k)) & 0xFF);
  bytes += header;
  for (const Tensor& host : hosts) {
    const size_t size = static_cast<size_t>(host.numel()) * dtype_size(host.dtype());
    if (size) bytes.append(static_cast<const char*>(host.impl().storage->data), size);
  }
  write_file_atomic(path, bytes);
}

// ---- reading ----

namespace {

Entry parse_entry(const std::string& path, const std::string& name, const json::Value& v) {
  const std::string where = path + ": tensor '" + name + "'";
  URPE_CHECK(v.is_object(), where << ": expected an object with dtype, shape and data_offsets, got "
                                  << json::type_name(v.type()));
  for (const char* field : {"dtype", "shape", "data_offsets"})
    URPE_CHECK(v.contains(field), where << ": missing \"" << field << "\"");

  Entry e;
  e.name = name;
  const json::Value& dtype = v.at("dtype");
  URPE_CHECK(dtype.is_string(), where << ": \"dtype\" must be a string");
  const std::string& d = dtype.as_string();
  if (d == "F32") e.dtype = DType::f32;
  else if (d == "I32") e.dtype = DType::i32;
  else if (is_known_safetensors_dtype(d))
    URPE_FAIL(where << ": dtype " << d << " is not supported (urpe reads F32 and I32)");
  else
    URPE_FAIL(where << ": unknown dtype '" << d << "' (urpe reads F32 and I32)");

  const json::Value& shape = v.at("shape");
  URPE_CHECK(shape.is_array(), where << ": \"shape\" must be an array of sizes");
  URPE_CHECK(shape.size() <= static_cast<size_t>(kMaxDims),
             where << ": shape has " << shape.size() << " dims; urpe tensors have at most " << kMaxDims);
  for (const json::Value& s : shape.items()) {
    URPE_CHECK(s.is_integer() && s.as_integer() >= 0,
               where << ": \"shape\" must hold non-negative integers, got " << s.dump());
    URPE_CHECK(s.as_integer() <= (int64_t{1} << 40), where << ": size " << s.as_integer() << " is implausible");
    e.shape.push_back(s.as_integer());
  }

  const json::Value& offsets = v.at("data_offsets");
  URPE_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_integer() &&
                 offsets[1].is_integer() && offsets[0].as_integer() >= 0 &&
                 offsets[1].as_integer() >= offsets[0].as_integer(),
             where << ": \"data_offsets\" must be [begin, end] with 0 <= begin <= end, got "
                   << offsets.dump());
  e.begin = static_cast<uint64_t>(offsets[0].as_integer());
  e.end = static_cast<uint64_t>(offsets[1].as_integer());

  // Sizes are at most 2^40 each, but their product may still overflow: accumulate in double.
  double numel = 1;
  for (int64_t s : e.shape) numel *= static_cast<double>(s);
  const double expected = numel * 4;
  URPE_CHECK(expected == static_cast<double>(e.end - e.begin),
             where << ": shape " << shape_json(e.shape) << " " << d << " needs "
                   << static_cast<uint64_t>(expected) << " bytes but data_offsets [" << e.begin
                   << ", " << e.end << "] span " << (e.end - e.begin));
  return e;
}

}  // namespace

TensorFile load_safetensors(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  URPE_CHECK(f != nullptr, path << ": cannot open safetensors file (" << std::strerror(errno) << ")");
  struct Closer { std::FILE* f; ~Closer() { std::fclose(f); } } closer{f};

  std::fseek(f, 0, SEEK_END);
  const long file_size_signed = std::ftell(f);
  URPE_CHECK(file_size_signed >= 0, path << ": cannot determine the file size");
  const uint64_t file_size = static_cast<uint64_t>(file_size_signed);
  std::fseek(f, 0, SEEK_SET);

  // ---- header length and header ----
  URPE_CHECK(file_size >= 8, path << ": truncated safetensors file: " << file_size
                                  << " bytes, too short for the 8-byte header length");
  unsigned char len_bytes[8];
  URPE_CHECK(std::fread(len_bytes, 1, 8, f) == 8, path << ": read failed");
  uint64_t header_len = 0;
  for (int k = 7; k >= 0; --k) header_len = (header_len << 8) | len_bytes[k];
  URPE_CHECK(header_len <= file_size - 8,
             path << ": truncated safetensors file: the header length is " << header_len
                  << " bytes but only " << (file_size - 8) << " bytes follow it");
  URPE_CHECK(header_len <= kMaxHeaderBytes,
             path << ": header length " << header_len << " bytes is beyond the 100 MiB limit");
  std::string header_text(header_len, '\0');
  URPE_CHECK(header_len == 0 || std::fread(&header_text[0], 1, header_len, f) == header_len,
             path << ": read failed");

  json::Value header;
  try {
    URPE_CHECK(!header_text.empty() && header_text[0] == '{', "the header must start with '{'");
    header = json::Value::parse(header_text);
  } catch (const Error& e) {
    URPE_FAIL(path << ": bad JSON header: " << e.what());
  }
  URPE_CHECK(header.is_object(), path << ": the header must be a JSON object");

  TensorFile file;
  file.path = path;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.members()) {
    if (key == "__metadata__") {
      URPE_CHECK(value.is_object(), path << ": \"__metadata__\" must be an object of strings");
      for (const auto& [mk, mv] : value.members()) {
        URPE_CHECK(mv.is_string(), path << ": metadata '" << mk << "' must be a string, got "
                                        << json::type_name(mv.type()));
        file.metadata[mk] = mv.as_string();
      }
      continue;
    }
    entries.push_back(parse_entry(path, key, value));
  }
  auto stored_crc = file.metadata.find(kDataChecksumKey);
  const bool has_crc = stored_crc != file.metadata.end();
  const uint32_t expected_crc = has_crc ? parse_crc32(path, stored_crc->second) : 0;

  // ---- offsets: the tensors tile the data buffer exactly ----
  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = file_size - data_start;
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    URPE_CHECK(e.end <= data_size,
               path << ": truncated safetensors file: tensor '" << e.name << "' data_offsets ["
                    << e.begin << ", " << e.end << "] go past the end of the " << data_size
                    << "-byte data buffer");
    if (e.begin < covered) {
      const Entry& prev = entries[i - 1];
      URPE_FAIL(path << ": tensors '" << prev.name << "' [" << prev.begin << ", " << prev.end
                     << "] and '" << e.name << "' [" << e.begin << ", " << e.end
                     << "] have overlapping data_offsets");
    }
    URPE_CHECK(e.begin == covered, path << ": bytes [" << covered << ", " << e.begin
                                        << ") of the data buffer belong to no tensor (before '"
                                        << e.name << "')");
    covered = e.end;
  }
  URPE_CHECK(covered == data_size, path << ": " << (data_size - covered)
                                        << " bytes after the last tensor belong to no tensor");

  // ---- data (in offset order, which tiles the buffer: the running CRC is the buffer's) ----
  uint32_t crc = 0;
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    const size_t bytes = e.end - e.begin;
    if (bytes) {
      URPE_CHECK(std::fseek(f, static_cast<long>(data_start + e.begin), SEEK_SET) == 0 &&
                     std::fread(t.impl().storage->data, 1, bytes, f) == bytes,
                 path << ": read failed for tensor '" << e.name << "'");
      if (has_crc) crc = crc32_update(crc, t.impl().storage->data, bytes);
    }
    file.tensors.emplace_back(e.name, t);
  }
  URPE_CHECK(!has_crc || crc == expected_crc,
             path << ": tensor data checksum mismatch (crc32 stored " << crc32_hex(expected_crc) << ", computed "
                  << crc32_hex(crc) << "): the file is corrupt");
  return file;
}

}  // namespace urpe
