// Byte counts as people read them ("23.4 GiB"), for the messages that report memory: an
// allocation that failed, a config whose tensors cannot fit.
#pragma once
#include <cstdio>
#include <string>

namespace urpe {

// Binary units (KiB = 1024 B), one decimal; exact bytes below 1 KiB. A double, so that sizes
// beyond 64 bits (a size estimate that overflows) still print.
inline std::string human_bytes(double bytes) {
  static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 8) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[64];
  if (unit == 0) std::snprintf(text, sizeof text, "%.0f bytes", bytes);
  else std::snprintf(text, sizeof text, "%.1f %s", bytes, units[unit]);
  return text;
}

}  // namespace urpe
