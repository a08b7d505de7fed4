// printable(): user text made safe to echo in a one-line error message, and with_thousands_separators()
// for counts (see printable.h).
#include "base/io/printable.h"

namespace urpe {

// Length of the UTF-8 sequence starting at text[i], or 0 when the bytes there are not one.
static size_t utf8_sequence_length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  unsigned min_code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2, min_code = 0x80;
  else if (lead >= 0xE0 && lead <= 0xEF) length = 3, min_code = 0x800;
  else if (lead >= 0xF0 && lead <= 0xF4) length = 4, min_code = 0x10000;
  else return 0;
  if (i + length > text.size()) return 0;
  unsigned code = lead & (0xFF >> (length + 1));
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += text[i++];
    } else if (c == '\t' || c == '\n' || c == '\r') {
      out += c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r";
      ++i;
    } else if (const size_t n = c >= 0x80 ? utf8_sequence_length(text, i) : 0) {
      out.append(text, i, n);
      i += n;
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
  return out;
}

std::string shorten_long_words(const std::string& text, size_t max_word) {
  const size_t keep = max_word / 3;
  // Moves `at` back to the start of the UTF-8 sequence it is inside (a continuation byte is 10xxxxxx).
  const auto boundary = [&](size_t at) {
    while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
    return at;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find(' ', begin);
    if (end == std::string::npos) end = text.size();
    if (end - begin <= max_word) {
      out.append(text, begin, end - begin);
    } else {
      const size_t head_end = boundary(begin + keep), tail_begin = boundary(end - keep);
      out.append(text, begin, head_end - begin);
      out += "...(" + std::to_string(tail_begin - head_end) + " characters)...";
      out.append(text, tail_begin, end - tail_begin);
    }
    if (end < text.size()) out += ' ';
    begin = end + 1;
  }
  return out;
}

std::string with_thousands_separators(int64_t value) {
  const std::string digits = std::to_string(value);
  const size_t first = (value < 0) ? 1 : 0;  // keep a minus sign out of the digit groups
  std::string out = digits.substr(0, first);
  for (size_t k = first; k < digits.size(); ++k) {
    if (k > first && (digits.size() - k) % 3 == 0) out += ',';
    out += digits[k];
  }
  return out;
}

}  // namespace urpe
