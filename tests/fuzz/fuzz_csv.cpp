// Fuzz target: CSV tables (data/csv_table) and the molecule files built on them
// (data/molecule_dataset: a SMILES + target CSV, the ZINC-250k layout, a split file). The text is
// parsed in memory, then written to a scratch file and read back through the path-based loaders;
// input that starts with the gzip signature is written as a .csv.gz so the zlib path is fuzzed.
#include <cmath>
#include <set>

#include "data/csv_table.h"
#include "data/molecule_dataset.h"
#include "tensor/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace urpe;
using namespace urpe::data;

namespace {

void check_table(const CsvTable& t) {
  FUZZ_CHECK(!t.header.empty(), "a table without a header");
  FUZZ_CHECK(t.rows.size() == t.row_line.size(), "rows and row lines differ in number");
  int64_t previous = 1;  // the header starts on line 1 or later
  for (size_t r = 0; r < t.rows.size(); ++r) {
    FUZZ_CHECK(t.rows[r].size() == t.header.size(), "row " << r << " has " << t.rows[r].size() << " fields");
    FUZZ_CHECK(t.row_line[r] > previous, "row lines not increasing: " << t.row_line[r] << " after " << previous);
    previous = t.row_line[r];
    for (size_t c = 0; c < t.header.size(); ++c) {
      try {
        FUZZ_CHECK(std::isfinite(t.number(r, static_cast<int>(c))), "number() gave a non-finite value");
      } catch (const Error& e) {
        FUZZ_CHECK(fuzz::contains(e.what(), t.source + " line "), "number() error without the place: " << e.what());
      }
    }
  }
  for (size_t c = 0; c < t.header.size(); ++c) {
    const int found = t.column(t.header[c]);
    FUZZ_CHECK(found >= 0 && static_cast<size_t>(found) <= c && t.header[found] == t.header[c], "column()");
  }
}

bool has_column(const CsvTable& t, const std::string& name) {
  for (const auto& h : t.header)
    if (h == name) return true;
  return false;
}

void check_dataset(const MoleculeDataset& ds, size_t rows) {
  FUZZ_CHECK(ds.size() == rows && ds.targets.size() == rows && ds.smiles.size() == rows, "dataset size");
  for (float y : ds.targets) FUZZ_CHECK(std::isfinite(y), "a non-finite target " << y);
  for (const MoleculeGraph& g : ds.graphs)
    for (int32_t type : g.node_type) FUZZ_CHECK(type >= 0 && type < ds.vocabulary.size(), "node type " << type);
}

// Each loader either succeeds with a consistent result or throws urpe::Error naming the file.
template <typename Fn>
void expect_ok_or_error_naming(const std::string& path, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    FUZZ_CHECK(fuzz::contains(e.what(), path), "an error that does not name " << path << ": " << e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::bytes_of(data, size);
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  CsvTable table;
  bool parsed = false;
  try {
    table = parse_csv(text, "fuzz.csv");
    parsed = true;
    check_table(table);
  } catch (const Error& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("fuzz.csv", 0) == 0, "a CSV error not naming the file: " << e.what());
  }

  const std::string path = fuzz::scratch_file(gzip ? "table.csv.gz" : "table.csv", text);
  CsvTable from_file;
  try {
    from_file = read_csv(path);
    FUZZ_CHECK(gzip || parsed, "read_csv accepted what parse_csv refused");
  } catch (const Error& e) {
    FUZZ_CHECK(fuzz::contains(e.what(), path), "a read_csv error not naming the file: " << e.what());
    FUZZ_CHECK(gzip || !parsed, "read_csv refused what parse_csv accepted: " << e.what());
    return 0;
  }
  if (!gzip) {
    FUZZ_CHECK(from_file.header == table.header && from_file.rows == table.rows &&
                   from_file.row_line == table.row_line,
               "read_csv and parse_csv disagree");
  } else {
    check_table(from_file);
  }
  const CsvTable& t = from_file;

  MoleculeCsvOptions options;
  options.smiles_column = has_column(t, "smiles") ? "smiles" : t.header[0];
  options.target_column = t.header.size() > 1 ? t.header[1] : t.header[0];
  options.grow_vocabulary = true;
  expect_ok_or_error_naming(path, [&] { check_dataset(load_molecule_csv(path, options), t.rows.size()); });
  if (has_column(t, "smiles") && has_column(t, "logP") && has_column(t, "SAS"))
    expect_ok_or_error_naming(path, [&] {
      check_dataset(load_zinc250k_csv(path, /*normalized=*/true, /*grow_vocabulary=*/true), t.rows.size());
    });
  if (has_column(t, "row") && has_column(t, "split"))
    expect_ok_or_error_naming(path, [&] {
      const MoleculeSplit split = load_split_file(path, t.rows.size());
      std::set<int64_t> rows;
      for (const auto* part : {&split.train, &split.valid, &split.test})
        for (int64_t r : *part) FUZZ_CHECK(r >= 0 && static_cast<size_t>(r) < t.rows.size() && rows.insert(r).second,
                                           "split row " << r << " out of range or repeated");
      FUZZ_CHECK(rows.size() == t.rows.size(), "the split does not cover every row");
    });
  return 0;
}
