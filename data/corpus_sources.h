// The corpus's source record, `sources.tsv` next to the split files (written by
// tools/make_corpus.py): which lines of each split come from which source, so that `urpe analyze`
// can give each source its own topic (app/analysis/corpus_topics.h).
//
// Format: a line per (split, source) block in file order,
//     split<TAB>first line (from 1)<TAB>line count<TAB>source title
// with split one of train, valid, test; both numbers plain decimal digits (first line ≥ 1, line
// count ≥ 1); a non-empty title, not repeated within a split. Blank lines and lines starting with
// '#' are comments; a '\r' before the '\n' is dropped (as data/text_file reads lines). The blocks of
// each split follow each other from line 1; covering the split exactly is checked against the
// split's length (source_blocks_of). Any other content is one error "<file>:<line>: …" naming
// what was expected.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace urpe::data {

// One source's block of a split: lines [first_line, first_line + lines), 0-based.
struct SourceBlock {
  std::string split;  // "train", "valid" or "test"
  std::string source;
  int64_t first_line = 0, lines = 0;
  int64_t record_line = 0;  // the 1-based line of the record that holds this block
};

struct SourceRecord {
  std::string name;                // the file, as errors show it
  std::vector<SourceBlock> blocks;  // in file order
};

// Parses the record's text; `name` is the file shown in errors.
SourceRecord parse_source_record(const std::string& text, const std::string& name);
SourceRecord read_source_record(const std::string& path);

// The blocks recorded for `split`, checked to cover its `split_lines` lines exactly; empty when
// the record has none for it.
std::vector<SourceBlock> source_blocks_of(const SourceRecord& record, const std::string& split, int64_t split_lines);

// read_source_record, then source_blocks_of.
std::vector<SourceBlock> read_source_blocks(const std::string& path, const std::string& split, int64_t split_lines);

}  // namespace urpe::data
