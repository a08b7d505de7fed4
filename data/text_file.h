// Line-by-line reading of a text file, plain or gzip-compressed. Compression is recognised by the
// gzip magic bytes (1f 8b), not by the file name, and needs zlib (URPE_WITH_ZLIB); without it a
// gzip file is refused with a message saying how to proceed. A name ending in .gz must hold gzip,
// and a gzip stream that is cut off or fails zlib's checks (CRC-32, length) is an error naming the
// file: never a shorter text read as if complete. Lines end at '\n'; a trailing '\r'
// is removed (CRLF files); a last line without '\n' still counts, and a final '\n' does not start
// an extra empty line (the same lines Python's `for line in open(path)` sees).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace urpe::data {

class TextFileReader {
 public:
  explicit TextFileReader(const std::string& path);  // throws urpe::Error if it cannot be opened
  ~TextFileReader();
  TextFileReader(const TextFileReader&) = delete;
  TextFileReader& operator=(const TextFileReader&) = delete;

  // Reads the next line into `line` (without its end-of-line); false at the end of the file.
  bool next_line(std::string& line);
  int64_t line_number() const { return line_number_; }  // 1-based number of the last line read
  const std::string& path() const { return path_; }
  bool compressed() const { return compressed_; }

 private:
  bool refill();  // reads the next chunk into buffer_; false at the end of the file

  std::string path_;
  bool compressed_ = false;
  struct Source;
  std::unique_ptr<Source> source_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;  // unread bytes: buffer_[begin_, end_)
  bool at_eof_ = false;
  int64_t line_number_ = 0;
};

// Every line of a file (plain or gzip).
std::vector<std::string> read_lines(const std::string& path);

// Whether the file starts with the gzip signature 1f 8b (false when it cannot be opened).
bool has_gzip_magic(const std::string& path);
// A name ending in .gz promises gzip content: a file so named that lacks the signature (cut off
// within its first two bytes, or damaged there) is an error naming it, not plain text.
void check_gzip_name_matches_content(const std::string& path);

bool file_exists(const std::string& path);      // a regular file (or a link to one)
bool directory_exists(const std::string& path);

}  // namespace urpe::data
