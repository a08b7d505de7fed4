// The safetensors file format (https://github.com/huggingface/safetensors), so a checkpoint written
// by urpe opens with `safetensors.torch.load_file` and a fixture written by PyTorch opens here.
//
// Layout:
//   bytes 0..7      N, the header length, unsigned 64-bit little-endian
//   bytes 8..8+N    a JSON object (UTF-8), space-padded so the data starts at a multiple of 8:
//                     {"__metadata__": {"step": "200", ...},            (optional, string → string)
//                      "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//                      ...}
//   bytes 8+N..     the data buffer: each tensor's row-major little-endian bytes at
//                   [begin, end) relative to the buffer start. The tensors cover the buffer
//                   exactly, without gaps or overlaps.
//
// urpe tensors are f32 or i32, so the dtypes read and written are "F32" and "I32"; any other
// dtype is a clear error. Saving copies device tensors to the host first. Every validation
// failure on load throws urpe::Error naming the file and what is wrong with it.
//
// Integrity: urpe adds the metadata key "data_crc32", the CRC-32 (zlib's) of the whole data
// buffer as 8 lowercase hex digits. The reader checks it when present, so a flipped bit in the
// tensor data is an error rather than a silently different model; files without it (older urpe
// checkpoints, files written by other tools) load as before. Being a string → string entry, it
// leaves the file a plain safetensors file for other readers.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace urpe {

using NamedTensor = std::pair<std::string, Tensor>;

// The contents of one safetensors file: tensors in data-offset order, and the metadata.
struct TensorFile {
  std::string path;  // where it was read from (used in messages)
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> metadata;

  bool contains(const std::string& name) const;
  // The named tensor; a missing one throws "<path>: no tensor 'x' (it has: a, b, c)".
  const Tensor& at(const std::string& name) const;
  // The metadata value; a missing key throws naming the file and the key.
  const std::string& meta(const std::string& key) const;
};

// The metadata key holding the CRC-32 of the data buffer.
extern const char* const kDataChecksumKey;  // "data_crc32"

// Writes `tensors` (names unique, non-empty) and `metadata` to `path` atomically: the bytes go
// to `path.tmp`, are fsynced, then renamed over `path`. The header lists tensors in the given
// order and their data follows in that order. The metadata gains "data_crc32" (a value passed in
// under that key, e.g. copied from a loaded file, is replaced by the checksum of what is written).
void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Reads and validates a whole file into CPU tensors, and checks "data_crc32" when present.
TensorFile load_safetensors(const std::string& path);

// The header JSON text `save_safetensors` would write (before padding): for tests and tools.
std::string safetensors_header(const std::vector<NamedTensor>& tensors,
                               const std::map<std::string, std::string>& metadata);

}  // namespace urpe
