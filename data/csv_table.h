// A small CSV reader (RFC 4180): a header row, comma-separated fields, double-quoted fields that
// may hold commas, doubled quotes and newlines (ZINC-250k's SMILES field ends with a newline
// inside its quotes). Files ending in .gz are inflated with zlib when the build has it
// (URPE_WITH_ZLIB); one that is not gzip, is cut off or fails zlib's checks is an error naming it.
// Errors name the file, the line and the column (or the field's name).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace urpe::data {

struct CsvTable {
  std::string source;                          // file name shown in messages
  std::vector<std::string> header;             // (C,)
  std::vector<std::vector<std::string>> rows;  // (R, C) data rows, the header excluded
  std::vector<int64_t> row_line;               // (R,) 1-based line where each row starts

  // Index of the column named `name`; an error lists the columns there are.
  int column(const std::string& name) const;
  // "file.csv line 12, column \"logP\"" for messages about one field.
  std::string where(size_t row, int column) const;
  // The field parsed as a finite number; an error names where and what was there.
  double number(size_t row, int column) const;
};

CsvTable parse_csv(const std::string& text, const std::string& source);
CsvTable read_csv(const std::string& path);  // plain or .gz

// A whole file as bytes, inflated when the name ends in .gz.
std::string read_maybe_gzipped(const std::string& path);

}  // namespace urpe::data
