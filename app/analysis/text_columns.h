// Column padding for the theory reports, which mix ASCII with symbols such as "·", "−" and "…":
// printf's widths count bytes, so a column holding a 2- or 3-byte UTF-8 character would come out
// too narrow. These count code points.
#pragma once
#include <cstddef>
#include <string>

namespace urpe {

inline size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) width += (c & 0xC0) != 0x80;  // count every byte but continuations
  return width;
}

// `text` padded with spaces to `width` code points, on the right (left-aligned) or the left.
inline std::string pad(const std::string& text, size_t width, bool align_right = false) {
  const size_t have = display_width(text);
  const std::string fill(have < width ? width - have : 0, ' ');
  return align_right ? fill + text : text + fill;
}

}  // namespace urpe
