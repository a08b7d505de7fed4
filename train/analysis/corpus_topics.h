// Which source a stretch of the embedded corpus comes from, so `urpe analyze` can ask whether
// context vectors cluster by topic (data/assets/README: each split lists the six Austen novels,
// then the King James Bible, each source one contiguous block). The corpus files do not record the
// boundaries, and the novels cannot be told apart reliably from the text (a valid/test block starts
// mid-novel), so there are two topics, Austen and the Bible. The Bible's block starts at the first
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

// The token offset in `split`'s id stream (an `<eos>` after every line) where the Bible begins, or
// −1 when the split's file has no Bible block.
int64_t bible_start_token(const data::CorpusSplit& split, data::TokenMode mode);

}  // namespace urpe
