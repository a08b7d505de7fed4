// CRC-32 (see crc32.h): zlib's when built with it, otherwise the classic reflected table.
#include "base/io/crc32.h"

#include <algorithm>
#include <array>

#if URPE_WITH_ZLIB
#include <zlib.h>
#endif

namespace urpe {

namespace {

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}

}  // namespace

uint32_t crc32_update_portable(uint32_t crc, const void* bytes, size_t size) {
  static const std::array<uint32_t, 256> table = make_table();
  const unsigned char* p = static_cast<const unsigned char*>(bytes);
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t crc32_update(uint32_t crc, const void* bytes, size_t size) {
#if URPE_WITH_ZLIB
  // zlib takes the length as uInt (32 bits): longer buffers go in pieces.
  const unsigned char* p = static_cast<const unsigned char*>(bytes);
  uLong c = crc;
  while (size > 0) {
    const size_t piece = std::min<size_t>(size, size_t{1} << 30);
    c = ::crc32(c, p, static_cast<uInt>(piece));
    p += piece;
    size -= piece;
  }
  return static_cast<uint32_t>(c);
#else
  return crc32_update_portable(crc, bytes, size);
#endif
}

}  // namespace urpe
