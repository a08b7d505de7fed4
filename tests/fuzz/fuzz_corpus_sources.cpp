// Fuzz target: the corpus's source record sources.tsv (data/corpus_sources), which `urpe analyze`
// reads to give each source of the corpus its own topic. The text is parsed in memory, then
// written to a scratch file and read back through the path-based reader; both must agree. Every
// error is one line "<file>:<line>: …" with a line the input has.
#include <map>
#include <set>

#include "data/corpus_sources.h"
#include "tensor/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace urpe;
using namespace urpe::data;

namespace {

// The lines of `text` as data/text_file reads them (for the checks below).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    size_t n = end - start;
    if (n > 0 && text[start + n - 1] == '\r') --n;
    lines.push_back(text.substr(start, n));
    start = end + 1;
  }
  return lines;
}

// "<name>:<L>: <message>" on one line, 1 ≤ L ≤ the number of lines.
void check_error_names_line(const std::string& message, const std::string& name, size_t line_count) {
  FUZZ_CHECK(message.rfind(name + ":", 0) == 0, "an error not naming " << name << ": " << message);
  const size_t colon = message.find(": ", name.size() + 1);
  FUZZ_CHECK(colon != std::string::npos, "an error without '<file>:<line>: ': " << message);
  const std::string digits = message.substr(name.size() + 1, colon - name.size() - 1);
  FUZZ_CHECK(!digits.empty() && digits.size() < 19 && digits.find_first_not_of("0123456789") == std::string::npos,
             "an error without a line number: " << message);
  const long long line = std::stoll(digits);
  FUZZ_CHECK(line >= 1 && static_cast<size_t>(line) <= line_count,
             "an error naming line " << line << " of " << line_count << ": " << message);
  FUZZ_CHECK(message.find('\n') == std::string::npos, "an error of several lines: " << message);
}

// Each block is a record line of its own, and each split's blocks tile [0, end) in order.
std::map<std::string, int64_t> check_record(const SourceRecord& record, const std::vector<std::string>& lines) {
  std::map<std::string, int64_t> ends;
  std::map<std::string, std::set<std::string>> titles;
  int64_t previous_line = 0;
  for (const SourceBlock& b : record.blocks) {
    FUZZ_CHECK(b.split == "train" || b.split == "valid" || b.split == "test", "split '" << b.split << "'");
    FUZZ_CHECK(b.record_line > previous_line && static_cast<size_t>(b.record_line) <= lines.size(),
               "record line " << b.record_line << " after " << previous_line);
    previous_line = b.record_line;
    const std::string& line = lines[b.record_line - 1];
    FUZZ_CHECK(line.rfind(b.split + "\t", 0) == 0 && line.size() > b.source.size() &&
                   line.compare(line.size() - b.source.size() - 1, std::string::npos, "\t" + b.source) == 0,
               "the block does not come from its line: '" << line << "'");
    FUZZ_CHECK(!b.source.empty() && titles[b.split].insert(b.source).second, "title '" << b.source << "'");
    FUZZ_CHECK(b.first_line == ends[b.split] && b.lines >= 1, "blocks of " << b.split << " not contiguous");
    FUZZ_CHECK(b.lines <= INT64_MAX - b.first_line, "a block past int64");
    ends[b.split] = b.first_line + b.lines;
  }
  return ends;
}

bool same_blocks(const std::vector<SourceBlock>& a, const std::vector<SourceBlock>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].split != b[k].split || a[k].source != b[k].source || a[k].first_line != b[k].first_line ||
        a[k].lines != b[k].lines || a[k].record_line != b[k].record_line)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::bytes_of(data, size);
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;  // the file reader inflates it
  const std::vector<std::string> lines = lines_of(text);
  const std::string path = fuzz::scratch_file("sources.tsv", text);

  SourceRecord record;
  std::string parse_error;
  try {
    record = parse_source_record(text, path);
  } catch (const Error& e) {
    parse_error = e.what();
    check_error_names_line(parse_error, path, lines.size());
  }
  try {
    const SourceRecord from_file = read_source_record(path);
    FUZZ_CHECK(gzip || parse_error.empty(), "read_source_record accepted what parse_source_record refused");
    if (!gzip) FUZZ_CHECK(same_blocks(from_file.blocks, record.blocks), "the text and the file readers disagree");
  } catch (const Error& e) {
    FUZZ_CHECK(fuzz::contains(e.what(), path), "a file error not naming " << path << ": " << e.what());
    FUZZ_CHECK(gzip || parse_error == e.what(), "the readers give different errors: '" << parse_error << "' and '"
                                                                                        << e.what() << "'");
  }
  if (!parse_error.empty()) return 0;

  // Each split checked against its own length, one line short and one line long.
  const std::map<std::string, int64_t> ends = check_record(record, lines);
  for (const char* split : {"train", "valid", "test"}) {
    const auto end = ends.find(split);
    if (end == ends.end()) {
      FUZZ_CHECK(source_blocks_of(record, split, 0).empty() && source_blocks_of(record, split, 7).empty(),
                 "blocks for a split the record does not have");
      continue;
    }
    const std::vector<SourceBlock> blocks = source_blocks_of(record, split, end->second);
    FUZZ_CHECK(!blocks.empty() && blocks.back().first_line + blocks.back().lines == end->second, "split " << split);
    for (int64_t wrong : {end->second - 1, end->second == INT64_MAX ? int64_t{0} : end->second + 1}) {
      try {
        source_blocks_of(record, split, wrong);
        FUZZ_CHECK(false, "blocks covering " << end->second << " lines accepted for a split of " << wrong);
      } catch (const Error& e) {
        check_error_names_line(e.what(), path, lines.size());
        FUZZ_CHECK(fuzz::contains(e.what(), ":" + std::to_string(blocks.back().record_line) + ": "),
                   "the coverage error does not name the split's last block: " << e.what());
      }
    }
  }
  return 0;
}
