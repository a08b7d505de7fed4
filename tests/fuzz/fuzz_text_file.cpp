// Fuzz target: text files and corpora (data/text_file, data/corpus). The first two bytes steer
// the case, the rest is the file content:
//   byte 0, bit 0   token mode char (else word)
//           bit 1   the harness gzips the train file itself and names it train.txt.gz: it must
//                   read back as exactly the same lines as the plain file
//           bit 2   ... and cuts that gzip stream short (keeping byte 1 / 256 of it): reading it
//                   must be one urpe::Error naming the file, never a shorter text
//           bit 3   the content holds train, valid and test separated by NUL bytes (else all
//                   three splits are the same text)
// Content that itself starts with the gzip signature is written as it is (zlib reads it).
#include <zlib.h>

#include <algorithm>
#include <filesystem>

#include "data/corpus.h"
#include "data/text_file.h"
#include "tensor/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace urpe;
using namespace urpe::data;

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// The lines text_file.h promises, computed independently: split at '\n', drop one '\r' before
// it, a last line without '\n' counts, a final '\n' does not start an empty line.
std::vector<std::string> expected_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    const size_t stop = end == std::string::npos ? text.size() : end;
    std::string line = text.substr(begin, stop - begin);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    begin = stop + 1;
  }
  return lines;
}

std::string gzip_bytes(const std::string& text) {
  z_stream z{};
  FUZZ_CHECK(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void check_tokens(const std::string& line, TokenMode mode) {
  const std::vector<std::string> tokens = tokenize_line(line, mode);
  size_t b = 0, e = line.size();
  while (b < e && is_space(line[b])) ++b;
  while (e > b && is_space(line[e - 1])) --e;
  const std::string stripped = line.substr(b, e - b);
  std::string joined;
  for (const std::string& t : tokens) {
    FUZZ_CHECK(!t.empty(), "an empty token");
    if (mode == TokenMode::word) {
      FUZZ_CHECK(std::none_of(t.begin(), t.end(), is_space), "a word token holding whitespace");
      if (!joined.empty()) joined += ' ';
    } else {
      FUZZ_CHECK(t.size() <= 4, "a character token of " << t.size() << " bytes");
    }
    joined += t;
  }
  if (mode == TokenMode::character) {
    FUZZ_CHECK(joined == stripped, "character tokens do not spell the stripped line");
  } else {
    std::string normalised;  // runs of whitespace → one space
    for (size_t k = 0; k < stripped.size(); ++k) {
      if (is_space(stripped[k])) {
        if (!is_space(stripped[k - 1])) normalised += ' ';
      } else {
        normalised += stripped[k];
      }
    }
    FUZZ_CHECK(joined == normalised, "word tokens do not spell the line");
  }
}

void check_split(const CorpusSplit& split, const Corpus& corpus, const std::vector<std::string>& lines) {
  FUZZ_CHECK(split.lines == static_cast<int64_t>(lines.size()), split.name << " lines " << split.lines);
  size_t tokens = 0;
  for (const std::string& line : lines) tokens += tokenize_line(line, corpus.mode).size() + 1;
  FUZZ_CHECK(split.ids.size() == tokens, split.name << " has " << split.ids.size() << " ids for " << tokens << " tokens");
  const int64_t eos = std::count(split.ids.begin(), split.ids.end(), kEosId);
  FUZZ_CHECK(eos >= split.lines, "fewer <eos> than lines");
  for (int32_t id : split.ids) FUZZ_CHECK(id >= 0 && id < corpus.vocab.size(), "id " << id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t flags = data[0], cut = data[1];
  const TokenMode mode = (flags & 1) ? TokenMode::character : TokenMode::word;
  const bool compress = flags & 2, truncate = flags & 4, three_parts = flags & 8;
  const std::string content = fuzz::bytes_of(data + 2, size - 2);

  std::string parts[3] = {content, content, content};
  if (three_parts) {
    size_t begin = 0;
    for (int k = 0; k < 3; ++k) {
      const size_t nul = k < 2 ? content.find('\0', begin) : std::string::npos;
      parts[k] = begin <= content.size() ? content.substr(begin, nul == std::string::npos ? nul : nul - begin) : "";
      begin = nul == std::string::npos ? content.size() + 1 : nul + 1;
    }
  }
  const bool raw_gzip = parts[0].size() >= 2 && static_cast<uint8_t>(parts[0][0]) == 0x1f &&
                        static_cast<uint8_t>(parts[0][1]) == 0x8b;

  // A fresh corpus directory per input: left-over split files would make it ambiguous.
  const std::string dir = fuzz::scratch_dir() + "/corpus";
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  std::filesystem::create_directory(dir);
  auto write = [&](const std::string& name, const std::string& bytes) {
    return fuzz::scratch_file("corpus/" + name, bytes);
  };

  // ---- the train file alone, line by line ----
  std::string train_path;
  std::vector<std::string> lines;
  if (compress && !raw_gzip) {
    std::string gz = gzip_bytes(parts[0]);
    if (truncate) gz.resize(gz.size() * cut / 256);
    train_path = write("train.txt.gz", gz);
    if (truncate) {
      try {
        read_lines(train_path);
      } catch (const Error& e) {
        FUZZ_CHECK(fuzz::contains(e.what(), train_path), "a gzip error not naming the file: " << e.what());
        return 0;
      }
      FUZZ_CHECK(false, "a gzip stream cut to " << gz.size() << " bytes read as complete");
    }
  } else {
    train_path = write("train.txt", parts[0]);
  }
  try {
    TextFileReader reader(train_path);
    std::string line;
    while (reader.next_line(line)) {
      lines.push_back(line);
      FUZZ_CHECK(reader.line_number() == static_cast<int64_t>(lines.size()), "line_number()");
    }
    FUZZ_CHECK(reader.compressed() == (compress || raw_gzip), "compressed()");
  } catch (const Error& e) {
    FUZZ_CHECK(raw_gzip, "reading a plain file or a gzip stream the harness wrote failed: " << e.what());
    FUZZ_CHECK(fuzz::contains(e.what(), train_path), "a read error not naming the file: " << e.what());
    return 0;
  }
  if (!raw_gzip) FUZZ_CHECK(lines == expected_lines(parts[0]), "the lines read differ from the file's lines");
  for (const std::string& line : lines) check_tokens(line, mode);

  // ---- the three splits as a corpus ----
  const std::string valid_path = write("valid.txt", parts[1]);
  const std::string test_path = write("test.txt", parts[2]);
  try {
    const Corpus corpus = load_corpus(dir, mode);
    FUZZ_CHECK(corpus.vocab.size() >= 1 && corpus.vocab.token(kEosId) == kEosToken, "<eos> is not id 0");
    check_split(corpus.train, corpus, lines);
    // A split whose content is itself gzip is read inflated: compare with what read_lines sees.
    check_split(corpus.valid, corpus, has_gzip_magic(valid_path) ? read_lines(valid_path) : expected_lines(parts[1]));
    check_split(corpus.test, corpus, has_gzip_magic(test_path) ? read_lines(test_path) : expected_lines(parts[2]));
    int64_t counted = 0;
    for (int32_t id = 1; id < corpus.vocab.size(); ++id) {
      FUZZ_CHECK(corpus.vocab.count_of(id) >= 1, "a vocabulary token never counted");
      FUZZ_CHECK(id == 1 || corpus.vocab.count_of(id) <= corpus.vocab.count_of(id - 1), "counts not descending");
      counted += corpus.vocab.count_of(id);
    }
    // Every train id is a counted token or <eos> (one per line, plus any literal "<eos>" word,
    // which is never counted and reads as the end-of-line id, as in Transformer-XL).
    const int64_t eos = std::count(corpus.train.ids.begin(), corpus.train.ids.end(), kEosId);
    FUZZ_CHECK(counted + eos == static_cast<int64_t>(corpus.train.ids.size()),
               "vocabulary counts do not add up to the train stream");
    if (corpus.valid.ids.size() > 0 && corpus.train.ids.size() > 0) {
      const double ppl = unigram_perplexity(corpus.train.ids, corpus.valid.ids);
      FUZZ_CHECK(ppl >= 1.0 - 1e-9, "unigram perplexity " << ppl << " below 1");
    }
  } catch (const Error& e) {
    const std::string m = e.what();
    FUZZ_CHECK(fuzz::contains(m, dir), "a corpus error not naming the directory or a file: " << m);
  }
  return 0;
}
