// CSV reading: a character-level state machine (unquoted / quoted / after a closing quote) that
// tracks line and column for its messages, plus a zlib reader for .gz files.
#include "data/csv_table.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#if URPE_WITH_ZLIB
#include <zlib.h>
#endif

#include "data/text_file.h"
#include "tensor/error.h"

namespace urpe::data {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string read_maybe_gzipped(const std::string& path) {
  if (ends_with(path, ".gz")) {
#if URPE_WITH_ZLIB
    gzFile file = gzopen(path.c_str(), "rb");
    URPE_CHECK(file != nullptr, path << ": cannot open the file");
    // gzread passes bytes without the gzip signature through unchanged, so a .gz file cut off in
    // its first two bytes or damaged there would read as plain text: check the signature first.
    if (!has_gzip_magic(path)) {
      gzclose(file);
      check_gzip_name_matches_content(path);  // throws
    }
    std::string text;
    char buffer[1 << 16];
    int got = 0;
    while ((got = gzread(file, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(got));
    int code = 0;
    const char* message = gzerror(file, &code);
    const bool failed = got < 0 || (code != Z_OK && code != Z_STREAM_END);
    const std::string why = message ? message : "";
    gzclose(file);
    URPE_CHECK(!failed, path << ": expected a gzip file, inflating failed (" << why << ")");
    return text;
#else
    throw Error(path + ": this build has no zlib, so .gz files cannot be read; install zlib1g-dev "
                       "and rebuild, or gunzip the file");
#endif
  }
  std::ifstream in(path, std::ios::binary);
  URPE_CHECK(in, path << ": cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

CsvTable parse_csv(const std::string& text, const std::string& source) {
  CsvTable table;
  table.source = source;
  std::vector<std::vector<std::string>> records;
  std::vector<int64_t> record_line;
  std::vector<std::string> record;
  std::string field;
  int64_t line = 1, column = 1;
  int64_t record_start = 1, quote_line = 0, quote_column = 0;
  enum { start_of_field, unquoted, quoted, after_quote } state = start_of_field;
  bool record_has_content = false;

  auto end_field = [&] {
    record.push_back(field);
    field.clear();
    state = start_of_field;
  };
  auto end_record = [&] {
    end_field();
    if (!(record.size() == 1 && record[0].empty() && !record_has_content)) {  // skip blank lines
      records.push_back(std::move(record));
      record_line.push_back(record_start);
    }
    record.clear();
    record_has_content = false;
  };

  for (size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (state == quoted) {
      if (c == '"') {
        if (k + 1 < text.size() && text[k + 1] == '"') {
          field += '"';
          ++k, ++column;
        } else {
          state = after_quote;
        }
      } else {
        field += c;
        if (c == '\n') ++line, column = 0;
      }
      ++column;
      continue;
    }
    if (c == '\r' && k + 1 < text.size() && text[k + 1] == '\n') continue;  // CRLF
    if (c == '\n') {
      end_record();
      ++line, column = 1;
      record_start = line;
      continue;
    }
    if (c == ',') {
      end_field();
      record_has_content = true;
      ++column;
      continue;
    }
    if (state == after_quote)
      URPE_FAIL(source << " line " << line << ", column " << column
                       << ": expected ',' or the end of the line after a closing quote, got '" << c << "'");
    if (c == '"') {
      URPE_CHECK(state == start_of_field,
                 source << " line " << line << ", column " << column
                        << ": expected no '\"' inside an unquoted field (quote the whole field)");
      state = quoted;
      quote_line = line, quote_column = column;
    } else {
      field += c;
      state = unquoted;
    }
    record_has_content = true;
    ++column;
  }
  URPE_CHECK(state != quoted, source << " line " << quote_line << ", column " << quote_column
                                     << ": expected a closing '\"' for the field opened here, "
                                        "the file ends first");
  if (record_has_content || !field.empty() || !record.empty()) end_record();

  URPE_CHECK(!records.empty(), source << ": expected a header line, the file is empty");
  table.header = std::move(records[0]);
  // A name twice would make column() pick the first silently, whichever the file meant.
  std::map<std::string, size_t> first_column;
  for (size_t c = 0; c < table.header.size(); ++c) {
    if (table.header[c].empty()) continue;
    const auto [it, added] = first_column.emplace(table.header[c], c);
    URPE_CHECK(added, source << " line 1: the header names column \"" << table.header[c] << "\" twice (columns "
                             << it->second + 1 << " and " << c + 1 << "); give each column its own name");
  }
  for (size_t r = 1; r < records.size(); ++r) {
    URPE_CHECK(records[r].size() == table.header.size(),
               source << " line " << record_line[r] << ", column 1: expected " << table.header.size()
                      << " fields as in the header, got " << records[r].size());
    table.rows.push_back(std::move(records[r]));
    table.row_line.push_back(record_line[r]);
  }
  return table;
}

CsvTable read_csv(const std::string& path) { return parse_csv(read_maybe_gzipped(path), path); }

int CsvTable::column(const std::string& name) const {
  for (size_t c = 0; c < header.size(); ++c)
    if (header[c] == name) return static_cast<int>(c);
  std::string have;
  for (const auto& h : header) have += (have.empty() ? "" : ", ") + h;
  throw Error(source + " line 1: expected a column named \"" + name + "\", the header has: " + have);
}

std::string CsvTable::where(size_t row, int column) const {
  std::ostringstream m;
  m << source << " line " << row_line.at(row) << ", column \"" << header.at(column) << "\"";
  return m.str();
}

double CsvTable::number(size_t row, int column) const {
  const std::string& text = rows.at(row).at(column);
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  bool ok = !text.empty() && errno == 0 && std::isfinite(value);
  while (ok && *end == ' ') ++end;
  ok = ok && *end == '\0';
  URPE_CHECK(ok, where(row, column) << ": expected a number, got \"" << text << "\"");
  return value;
}

}  // namespace urpe::data
