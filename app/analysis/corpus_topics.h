// Which source a stretch of the corpus comes from, so `urpe analyze` can ask whether context
// vectors cluster by topic (data/assets/README: each split lists the six Austen novels, then the
// King James Bible, each source one contiguous block).
//
// The record: `sources.tsv` next to the split files (data/corpus_sources.h: its format and
// checks), written by tools/make_corpus.py. Every source it records is a topic: each Austen novel
// separately, and the Bible.
//
// Without the record (a corpus built before it, or another corpus) the fallback is the text rule
// below, which finds two topics, Austen and the Bible (the novels cannot be told apart reliably
// from the text: a valid/test block starts mid-novel). The Bible's block starts at the first
// line, after the last Austen line with a double quote (the KJV has no quotation marks) before the
// first Bible chapter heading ("Genesis 1", "Acts 22"), that holds a KJV word (unto, thee, thou,
// thy, thine, ye, hath, shalt, saith, hast, Lord, LORD). On the shipped corpus that is exactly the
// Bible's first line in all three splits (train: line 9363 "Genesis 1"; valid: 499; test: 435,
// checked by hand against the text and tested).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/corpus.h"

namespace urpe {

// The 0-based line where the Bible begins in `lines`, or −1 when no Bible chapter heading is found
// (another corpus: no topics).
int64_t bible_start_line(const std::vector<std::string>& lines);

// The topics of a split's token stream: topic k covers the tokens [starts[k], starts[k + 1]) (the
// last to the end); names[k] is its title (one topic per block: the reader refuses a title
// repeated within a split). Empty names: no topics.
struct SplitTopics {
  std::vector<std::string> names;
  std::vector<int64_t> starts;
  std::string how;  // in words: "sources.tsv" or the Austen/Bible text rule
  int topic_of(int64_t token) const;  // the topic holding token offset `token`
};
// From <split's directory>/sources.tsv when it exists, else the Austen/Bible rule, else none.
SplitTopics split_topics(const data::CorpusSplit& split, data::TokenMode mode);

}  // namespace urpe
