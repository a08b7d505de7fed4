// The corpus's topics: the source record sources.tsv, or the Austen/Bible boundary found from the
// text (see the header for both).
#include "app/analysis/corpus_topics.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "data/corpus_sources.h"
#include "data/text_file.h"

namespace urpe {

namespace {

const std::set<std::string>& bible_books() {
  static const std::set<std::string> books = {
      "Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth", "1 Samuel",
      "2 Samuel", "1 Kings", "2 Kings", "1 Chronicles", "2 Chronicles", "Ezra", "Nehemiah", "Esther", "Job",
      "Psalms", "Psalm", "Proverbs", "Ecclesiastes", "Song of Solomon", "Isaiah", "Jeremiah", "Lamentations",
      "Ezekiel", "Daniel", "Hosea", "Joel", "Amos", "Obadiah", "Jonah", "Micah", "Nahum", "Habakkuk",
      "Zephaniah", "Haggai", "Zechariah", "Malachi", "Matthew", "Mark", "Luke", "John", "Acts", "Romans",
      "1 Corinthians", "2 Corinthians", "Galatians", "Ephesians", "Philippians", "Colossians",
      "1 Thessalonians", "2 Thessalonians", "1 Timothy", "2 Timothy", "Titus", "Philemon", "Hebrews", "James",
      "1 Peter", "2 Peter", "1 John", "2 John", "3 John", "Jude", "Revelation"};
  return books;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

// "Acts 22", "1 John 3": a book name and a chapter number, nothing else.
bool is_chapter_heading(const std::string& line) {
  std::vector<std::string> w = words(line);
  if (w.size() < 2 || w.back().find_first_not_of("0123456789") != std::string::npos) return false;
  std::string book;
  for (size_t k = 0; k + 1 < w.size(); ++k) book += (k ? " " : "") + w[k];
  return bible_books().count(book) > 0;
}

bool has_kjv_word(const std::string& line) {
  static const std::set<std::string> marks = {"unto", "thee", "thou", "thy", "thine", "ye",
                                              "hath", "shalt", "saith", "hast", "Lord", "LORD"};
  for (const std::string& w : words(line))
    if (marks.count(w)) return true;
  return false;
}

}  // namespace

int64_t bible_start_line(const std::vector<std::string>& lines) {
  int64_t heading = -1;
  for (size_t k = 0; k < lines.size() && heading < 0; ++k)
    if (is_chapter_heading(lines[k])) heading = static_cast<int64_t>(k);
  if (heading < 0) return -1;
  int64_t after_quote = 0;
  for (int64_t k = heading - 1; k >= 0; --k)
    if (lines[k].find('"') != std::string::npos) {
      after_quote = k + 1;
      break;
    }
  for (int64_t k = after_quote; k < heading; ++k)
    if (has_kjv_word(lines[k])) return k;
  return heading;
}

int SplitTopics::topic_of(int64_t token) const {
  const auto after = std::upper_bound(starts.begin(), starts.end(), token);
  return static_cast<int>(std::max<std::ptrdiff_t>(0, after - starts.begin() - 1));
}

SplitTopics split_topics(const data::CorpusSplit& split, data::TokenMode mode) {
  SplitTopics topics;
  const std::string record = (std::filesystem::path(split.path).parent_path() / "sources.tsv").string();
  const std::vector<std::string> lines = data::read_lines(split.path);
  std::vector<int64_t> line_start(lines.size() + 1, 0);  // token offset of each line (<eos> after each)
  for (size_t k = 0; k < lines.size(); ++k)
    line_start[k + 1] = line_start[k] + static_cast<int64_t>(data::tokenize_line(lines[k], mode).size()) + 1;
  if (std::filesystem::exists(record)) {
    for (const data::SourceBlock& b : data::read_source_blocks(record, split.name, static_cast<int64_t>(lines.size()))) {
      topics.names.push_back(b.source);
      topics.starts.push_back(line_start[b.first_line]);
    }
    if (!topics.names.empty()) {
      topics.how = "sources from " + record;
      return topics;
    }
  }
  const int64_t bible = bible_start_line(lines);
  if (bible > 0) {
    topics.names = {"Austen", "Bible"};
    topics.starts = {0, line_start[bible]};
    topics.how = "Austen before token " + std::to_string(line_start[bible]) +
                 ", Bible from there (no sources.tsv: found from the text)";
  }
  return topics;
}

}  // namespace urpe
