// The corpus's source record sources.tsv (format in the header): parsed line by line from text or
// from a file, every block checked as it is read.
#include "data/corpus_sources.h"

#include <limits>
#include <map>
#include <set>

#include "data/text_file.h"
#include "tensor/error.h"

namespace urpe::data {

namespace {

// A line as an error quotes it: at most 60 characters.
std::string quoted(const std::string& line) {
  return "'" + (line.size() <= 60 ? line : line.substr(0, 60) + "...") + "'";
}

// A field of decimal digits only (no sign, no spaces) as int64, or an error naming the place.
int64_t parse_count(const std::string& field, const char* what, const std::string& where) {
  URPE_CHECK(!field.empty() && field.find_first_not_of("0123456789") == std::string::npos,
             where << ": the " << what << " must be a whole number of digits, got " << quoted(field));
  int64_t value = 0;
  for (char c : field) {
    const int digit = c - '0';
    URPE_CHECK(value <= (std::numeric_limits<int64_t>::max() - digit) / 10,
               where << ": the " << what << " " << quoted(field) << " is too large");
    value = value * 10 + digit;
  }
  return value;
}

// Reads the record a line at a time, checking each block against the previous one of its split.
class RecordParser {
 public:
  explicit RecordParser(const std::string& name) { record_.name = name; }

  void add_line(const std::string& line, int64_t number) {
    if (line.empty() || line[0] == '#') return;
    const std::string where = record_.name + ":" + std::to_string(number);
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t tab = line.find('\t'); tab != std::string::npos; tab = line.find('\t', start)) {
      fields.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    fields.push_back(line.substr(start));
    URPE_CHECK(fields.size() == 4, where << ": expected 'split<TAB>first line<TAB>lines<TAB>source' (4 fields), got "
                                         << fields.size() << " field(s) in " << quoted(line));
    SourceBlock b;
    b.split = fields[0];
    b.source = fields[3];
    b.record_line = number;
    URPE_CHECK(b.split == "train" || b.split == "valid" || b.split == "test",
               where << ": the split must be train, valid or test, got " << quoted(b.split));
    const int64_t first = parse_count(fields[1], "first line", where);
    b.lines = parse_count(fields[2], "line count", where);
    URPE_CHECK(!b.source.empty(), where << ": the source title is empty");
    URPE_CHECK(sources_[b.split].insert(b.source).second,
               where << ": the " << b.split << " split already has a block of " << quoted(b.source));
    const auto end = ends_.find(b.split);
    const int64_t expected = end == ends_.end() ? 0 : end->second;  // 0-based
    URPE_CHECK(first >= 1 && first - 1 == expected && b.lines >= 1,
               where << ": the " << b.split << " block of " << quoted(b.source) << " should start at line " << expected + 1
                     << " with at least one line, got first line " << fields[1] << " and " << fields[2] << " line(s)");
    b.first_line = first - 1;
    URPE_CHECK(b.lines <= std::numeric_limits<int64_t>::max() - b.first_line,
               where << ": the " << b.split << " block of " << quoted(b.source) << " ends beyond any file (" << fields[2]
                     << " lines)");
    ends_[b.split] = b.first_line + b.lines;
    record_.blocks.push_back(b);
  }

  SourceRecord take() { return std::move(record_); }

 private:
  SourceRecord record_;
  std::map<std::string, int64_t> ends_;                // per split: where its next block starts
  std::map<std::string, std::set<std::string>> sources_;  // per split: the titles seen
};

}  // namespace

SourceRecord parse_source_record(const std::string& text, const std::string& name) {
  RecordParser parser(name);
  int64_t number = 0;
  size_t start = 0;
  while (start < text.size()) {  // as TextFileReader: a final '\n' ends the last line
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    size_t n = end - start;
    if (n > 0 && text[start + n - 1] == '\r') --n;
    parser.add_line(text.substr(start, n), ++number);
    start = end + 1;
  }
  return parser.take();
}

SourceRecord read_source_record(const std::string& path) {
  RecordParser parser(path);
  TextFileReader reader(path);
  std::string line;
  while (reader.next_line(line)) parser.add_line(line, reader.line_number());
  return parser.take();
}

std::vector<SourceBlock> source_blocks_of(const SourceRecord& record, const std::string& split, int64_t split_lines) {
  std::vector<SourceBlock> blocks;
  for (const SourceBlock& b : record.blocks)
    if (b.split == split) blocks.push_back(b);
  if (!blocks.empty()) {
    const SourceBlock& last = blocks.back();
    URPE_CHECK(last.first_line + last.lines == split_lines,
               record.name << ":" << last.record_line << ": the " << split << " blocks cover "
                           << last.first_line + last.lines << " lines, but the split has " << split_lines
                           << " (the record belongs to another corpus?)");
  }
  return blocks;
}

std::vector<SourceBlock> read_source_blocks(const std::string& path, const std::string& split, int64_t split_lines) {
  return source_blocks_of(read_source_record(path), split, split_lines);
}

}  // namespace urpe::data
