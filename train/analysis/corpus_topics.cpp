// Finding the Austen/Bible boundary of the embedded corpus from its text (see the header for the rule).
#include "train/analysis/corpus_topics.h"

#include <set>
#include <sstream>

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

int64_t bible_start_token(const data::CorpusSplit& split, data::TokenMode mode) {
  const std::vector<std::string> lines = data::read_lines(split.path);
  const int64_t start = bible_start_line(lines);
  if (start < 0) return -1;
  int64_t offset = 0;
  for (int64_t k = 0; k < start; ++k)
    offset += static_cast<int64_t>(data::tokenize_line(lines[k], mode).size()) + 1;  // + <eos>
  return offset;
}

}  // namespace urpe
