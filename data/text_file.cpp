// Plain files are read with stdio, gzip files with zlib's gzread (which also handles files made
// of several concatenated gzip members), both in 1 MiB chunks split into lines here.
#include "data/text_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tensor/error.h"

#if URPE_WITH_ZLIB
#include <zlib.h>
#endif

namespace urpe::data {

namespace {
constexpr size_t kChunkBytes = 1 << 20;

bool ends_with_gz(const std::string& path) {
  return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}
}  // namespace

bool has_gzip_magic(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  unsigned char magic[2] = {0, 0};
  const size_t n = std::fread(magic, 1, 2, f);
  std::fclose(f);
  return n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

void check_gzip_name_matches_content(const std::string& path) {
  URPE_CHECK(!ends_with_gz(path) || has_gzip_magic(path),
             path << ": expected a gzip file (the name ends in .gz), but it does not start with the "
                     "gzip signature 1f 8b: the file is truncated, corrupt or not gzip");
}

struct TextFileReader::Source {
  FILE* plain = nullptr;
#if URPE_WITH_ZLIB
  gzFile gz = nullptr;
#endif
  ~Source() {
    if (plain != nullptr) std::fclose(plain);
#if URPE_WITH_ZLIB
    if (gz != nullptr) gzclose(gz);
#endif
  }
};

TextFileReader::TextFileReader(const std::string& path)
    : path_(path), source_(std::make_unique<Source>()), buffer_(kChunkBytes) {
  URPE_CHECK(!directory_exists(path), "cannot read " << path << ": it is a directory");
  URPE_CHECK(file_exists(path), "cannot read " << path << ": no such file");
  check_gzip_name_matches_content(path);
  compressed_ = has_gzip_magic(path);
  if (compressed_) {
#if URPE_WITH_ZLIB
    source_->gz = gzopen(path.c_str(), "rb");
    URPE_CHECK(source_->gz != nullptr, "cannot open " << path << ": " << std::strerror(errno));
    gzbuffer(source_->gz, 1 << 17);
#else
    URPE_FAIL(path << " is gzip-compressed, but urpe was built without zlib: install zlib "
                      "(apt-get install zlib1g-dev) and rebuild, or decompress the file (`gunzip "
                   << path << "` replaces it by the plain file)");
#endif
  } else {
    source_->plain = std::fopen(path.c_str(), "rb");
    URPE_CHECK(source_->plain != nullptr, "cannot open " << path << ": " << std::strerror(errno));
  }
}

TextFileReader::~TextFileReader() = default;

bool TextFileReader::refill() {
  if (at_eof_) return false;
  // Keep the unread tail (a partial line) at the front, growing the buffer for very long lines.
  const size_t tail = end_ - begin_;
  if (tail > 0 && begin_ > 0) std::memmove(buffer_.data(), buffer_.data() + begin_, tail);
  begin_ = 0;
  end_ = tail;
  if (buffer_.size() - end_ < kChunkBytes) buffer_.resize(end_ + kChunkBytes);
  size_t got = 0;
  if (compressed_) {
#if URPE_WITH_ZLIB
    const int n = gzread(source_->gz, buffer_.data() + end_, static_cast<unsigned>(kChunkBytes));
    // gzread reports a stream that stops before its end ("unexpected end of file", Z_BUF_ERROR)
    // as a short read, not as n < 0: without asking gzerror, a truncated file would read as a
    // complete, shorter one.
    int code = 0;
    const char* message = gzerror(source_->gz, &code);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      URPE_FAIL("cannot read " << path_ << " (gzip) after line " << line_number_ << ": "
                               << (code == Z_ERRNO ? std::strerror(errno) : message)
                               << "; the file is truncated or corrupt");
    }
    got = static_cast<size_t>(n);
#endif
  } else {
    got = std::fread(buffer_.data() + end_, 1, kChunkBytes, source_->plain);
    URPE_CHECK(!std::ferror(source_->plain),
               "cannot read " << path_ << " after line " << line_number_ << ": "
                              << std::strerror(errno));
  }
  end_ += got;
  if (got == 0) at_eof_ = true;
  return got > 0;
}

bool TextFileReader::next_line(std::string& line) {
  while (true) {
    const char* start = buffer_.data() + begin_;
    const void* newline = std::memchr(start, '\n', end_ - begin_);
    if (newline != nullptr) {
      size_t n = static_cast<const char*>(newline) - start;
      begin_ += n + 1;
      if (n > 0 && start[n - 1] == '\r') --n;
      line.assign(start, n);
      ++line_number_;
      return true;
    }
    if (!refill()) break;
  }
  if (begin_ == end_) return false;  // nothing left (a final '\n' ends the last line)
  size_t n = end_ - begin_;
  const char* start = buffer_.data() + begin_;
  if (start[n - 1] == '\r') --n;
  line.assign(start, n);
  begin_ = end_;
  ++line_number_;
  return true;
}

std::vector<std::string> read_lines(const std::string& path) {
  TextFileReader reader(path);
  std::vector<std::string> lines;
  std::string line;
  while (reader.next_line(line)) lines.push_back(line);
  return lines;
}

bool file_exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool directory_exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace urpe::data
