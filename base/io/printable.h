// User text made safe to echo inside a one-line error message: control bytes and bytes that are
// not UTF-8 become \xNN (\t, \n, \r as such), so a stray vertical tab or a binary file can neither
// split the `urpe: error:` line nor garble the terminal. Printable text, UTF-8 included, is
// unchanged, so escaping twice is the same as once (main() escapes every message it prints, the
// config parser the lines it quotes).
#pragma once
#include <cstdint>
#include <string>

namespace urpe {

std::string printable(const std::string& text);

// Every word (a run of characters without a space) longer than `max_word` characters keeps its first
// and last `max_word / 3` characters, and its middle becomes "...(N characters)...": a 5,000-character
// path in an error stays one readable line that still shows where the path starts and ends. UTF-8
// sequences are never cut.
std::string shorten_long_words(const std::string& text, size_t max_word = 300);

// 1234567 → "1,234,567": counts (parameters, molecules) read at a glance in logs and tables.
std::string with_thousands_separators(int64_t value);

}  // namespace urpe
