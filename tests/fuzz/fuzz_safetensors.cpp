// Fuzz target: safetensors files (base/io/safetensors), the format of checkpoints and fixtures. The
// bytes are written to a scratch file and loaded. A file that loads must be self-consistent (the
// tensors tile the data buffer) and survive save → load unchanged; a file that does not is one
// urpe::Error naming it.
#include <cstring>
#include <map>
#include <string>

#include "tensor/error.h"
#include "tests/fuzz/fuzz_common.h"
#include "base/io/safetensors.h"

using namespace urpe;

namespace {

std::string tensor_bytes(const Tensor& t) {
  const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
  return bytes ? std::string(static_cast<const char*>(t.impl().storage->data), bytes) : std::string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_file("input.safetensors", fuzz::bytes_of(data, size));
  TensorFile file;
  try {
    file = load_safetensors(path);
  } catch (const Error& e) {
    FUZZ_CHECK(std::string(e.what()).rfind(path + ": ", 0) == 0, "an error not naming the file: " << e.what());
    return 0;
  }
  uint64_t header_len = 0;
  for (int k = 7; k >= 0; --k) header_len = (header_len << 8) | data[k];
  uint64_t total = 0;
  for (const auto& [name, tensor] : file.tensors) {
    FUZZ_CHECK(tensor.defined() && tensor.shape().size() <= static_cast<size_t>(kMaxDims), "tensor '" << name << "'");
    FUZZ_CHECK(tensor.numel() == shape_numel(tensor.shape()), "numel of '" << name << "'");
    total += static_cast<uint64_t>(tensor.numel()) * 4;
  }
  FUZZ_CHECK(total == size - 8 - header_len, "tensors hold " << total << " bytes of a " << size - 8 - header_len << "-byte buffer");

  // Save and load again: same names, dtypes, shapes, bytes and metadata. Saving refuses (with
  // an Error) what urpe never writes: an empty tensor name.
  const std::string copy = fuzz::scratch_dir() + "/copy.safetensors";
  try {
    save_safetensors(copy, file.tensors, file.metadata);
  } catch (const Error& e) {
    FUZZ_CHECK(fuzz::contains(e.what(), "empty name"), "saving a loaded file failed: " << e.what());
    return 0;
  }
  TensorFile back;
  try {
    back = load_safetensors(copy);
  } catch (const Error& e) {
    FUZZ_CHECK(false, "a saved file does not load: " << e.what());
  }
  // Saving (re)computes the data checksum, so data_crc32 may be added or replaced; every other
  // entry must come back as it was.
  auto without_checksum = [](std::map<std::string, std::string> m) {
    m.erase("data_crc32");
    return m;
  };
  FUZZ_CHECK(without_checksum(back.metadata) == without_checksum(file.metadata),
             "metadata changed through save and load");
  FUZZ_CHECK(back.metadata.count("data_crc32") == 1, "a saved file has no data_crc32");
  FUZZ_CHECK(back.tensors.size() == file.tensors.size(), "tensor count changed through save and load");
  for (size_t k = 0; k < file.tensors.size(); ++k) {
    const auto& [name, a] = file.tensors[k];
    const auto& [name_back, b] = back.tensors[k];
    FUZZ_CHECK(name == name_back && a.dtype() == b.dtype() && a.shape() == b.shape() &&
                   tensor_bytes(a) == tensor_bytes(b),
               "tensor '" << name << "' changed through save and load");
  }
  return 0;
}
