// CRC-32 (the zlib / gzip / PNG polynomial) of checkpoint data, so that a flipped bit in a saved
// file is reported instead of loaded silently (base/io/safetensors.cpp stores it in the metadata).
// zlib's crc32 is used when the build has zlib (URPE_WITH_ZLIB); otherwise a byte-at-a-time
// table gives the same values, so files written by either build verify in the other.
#pragma once
#include <cstddef>
#include <cstdint>

namespace urpe {

// The CRC-32 of `bytes` continued from `crc` (0 to start): crc32(crc32(0, a), b) = crc32(0, ab).
uint32_t crc32_update(uint32_t crc, const void* bytes, size_t size);

// The table-driven version, always built (crc32_update uses it when zlib is absent); tests
// compare it with zlib's.
uint32_t crc32_update_portable(uint32_t crc, const void* bytes, size_t size);

}  // namespace urpe
