// The cross-references a reader follows, found in the repository's text and resolved against its
// files: Markdown links (`[text](path#anchor)`), `docs/x.md#anchor` written anywhere, paths of
// the source tree (`ops/softmax.h`, `tests/cuda_sim/`, `ops/urpe_attention*`) and a section cited
// by its quoted name in prose (`README "Tests"`, `(theory.md, 'Theory you can run')`). test_doc_links runs it over the repository, so a renamed
// section or a moved file cannot leave a dangling pointer behind (docs/testing.md).
#pragma once
#include <fnmatch.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace urpe::test::doc_links {

namespace fs = std::filesystem;

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---- anchors ----

// The next UTF-8 code point of `s` at `i` (advancing i); a stray byte is returned as itself.
inline uint32_t next_code_point(const std::string& s, size_t& i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
  if (i + extra >= s.size() + (extra == 0 ? 1 : 0) && extra > 0) extra = 0;
  uint32_t cp = extra == 0 ? c : extra == 1 ? (c & 0x1F) : extra == 2 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (byte(i + k) & 0x3F);
  i += 1 + extra;
  return cp;
}

// Whether GitHub keeps a non-ASCII code point in an anchor: it drops every character that is not
// a letter, mark, number or connector; these are the blocks of symbols and punctuation the docs
// use (×, ·, §, —, →, ≤, ⊙, √, …), keeping the digits among super- and subscripts (E₁₀).
inline bool anchor_keeps(uint32_t cp) {
  if (cp >= 0x80 && cp <= 0xBF) return cp == 0xB2 || cp == 0xB3 || cp == 0xB9 || (cp >= 0xBC && cp <= 0xBE);
  if (cp == 0xD7 || cp == 0xF7) return false;
  if (cp >= 0x2070 && cp <= 0x209F) return cp == 0x2070 || (cp >= 0x2074 && cp <= 0x2079) || (cp >= 0x2080 && cp <= 0x2089);
  if (cp >= 0x2000 && cp <= 0x2BFF) return false;  // punctuation, arrows, maths, shapes
  if (cp >= 0x3000 && cp <= 0x303F) return false;
  if (cp >= 0xFE30 && cp <= 0xFE4F) return false;
  return true;
}

// The anchor GitHub gives a heading: lower case, every character but letters, digits, `_`, `-`
// and spaces dropped, each space a `-`.
inline std::string heading_anchor(const std::string& heading) {
  std::string out;
  for (size_t i = 0; i < heading.size();) {
    const size_t start = i;
    const uint32_t cp = next_code_point(heading, i);
    if (cp < 0x80) {
      const char c = static_cast<char>(cp);
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') out += static_cast<char>(std::tolower(c));
      else if (c == ' ') out += '-';
    } else if (anchor_keeps(cp)) {
      out += heading.substr(start, i - start);
    }
  }
  return out;
}

// A Markdown file's lines, each flagged when it lies in a fenced code block (``` or ~~~).
struct MarkdownLine {
  std::string text;
  bool in_code = false;
};

inline std::vector<MarkdownLine> markdown_lines(const std::string& text) {
  std::vector<MarkdownLine> lines;
  std::istringstream in(text);
  bool code = false;
  std::string fence;
  for (std::string line; std::getline(in, line);) {
    size_t indent = line.find_first_not_of(' ');
    const std::string body = indent == std::string::npos ? "" : line.substr(indent);
    const bool is_fence = body.rfind("```", 0) == 0 || body.rfind("~~~", 0) == 0;
    if (is_fence && (!code || body.rfind(fence, 0) == 0)) {
      if (!code) fence = body.substr(0, 3);
      lines.push_back({line, true});
      code = !code;
      continue;
    }
    lines.push_back({line, code});
  }
  return lines;
}

// The headings of a Markdown file, as written (without the #s).
inline std::vector<std::string> markdown_headings(const std::string& text) {
  std::vector<std::string> headings;
  for (const MarkdownLine& line : markdown_lines(text)) {
    if (line.in_code || line.text.empty() || line.text[0] != '#') continue;
    const size_t hashes = line.text.find_first_not_of('#');
    if (hashes == std::string::npos || hashes > 6 || line.text[hashes] != ' ') continue;
    std::string heading = line.text.substr(hashes + 1);
    while (!heading.empty() && (heading.back() == '#' || heading.back() == ' ')) heading.pop_back();
    headings.push_back(heading);
  }
  return headings;
}

// Every anchor a link may name in a Markdown file: each heading's (a repeated one gets -1, -2, …)
// and each `<a id="...">` / `<a name="...">`.
inline std::set<std::string> markdown_anchors(const std::string& text) {
  std::set<std::string> anchors;
  std::map<std::string, int> seen;
  for (const std::string& heading : markdown_headings(text)) {
    const std::string anchor = heading_anchor(heading);
    const int n = seen[anchor]++;
    anchors.insert(n == 0 ? anchor : anchor + "-" + std::to_string(n));
  }
  for (const std::string attribute : {"<a id=\"", "<a name=\""}) {
    for (size_t at = text.find(attribute); at != std::string::npos; at = text.find(attribute, at + 1)) {
      const size_t start = at + attribute.size(), end = text.find('"', start);
      if (end != std::string::npos) anchors.insert(text.substr(start, end - start));
    }
  }
  return anchors;
}

// ---- the checker ----

struct Problem {
  std::string file;  // relative to the root
  int line = 0;
  std::string message;
};

inline std::string describe(const Problem& p) { return p.file + ":" + std::to_string(p.line) + ": " + p.message; }

class Checker {
 public:
  explicit Checker(fs::path root) : root_(std::move(root)) {
    for (const auto& entry : fs::directory_iterator(root_))
      if (entry.is_directory() && !skipped_directory(entry.path().filename().string()))
        top_dirs_.insert(entry.path().filename().string());
  }

  // Paths that name data a user downloads or makes (docs/data.md's examples), not files of the
  // repository: a path starting with one of them is not checked.
  void allow_user_path(const std::string& prefix) { user_paths_.push_back(prefix); }

  // The files whose text is read: Markdown, sources, scripts and build files, outside build and
  // run directories, vendored code and data (fixtures, fuzz corpora, data/assets).
  std::vector<fs::path> text_files() const {
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(root_); it != fs::recursive_directory_iterator(); ++it) {
      const fs::path rel = fs::relative(it->path(), root_);
      if (it->is_directory()) {
        if (skipped_directory(rel.generic_string()) || skipped_directory(rel.filename().string()))
          it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file()) continue;
      const std::string name = rel.filename().string(), ext = rel.extension().string();
      static const std::set<std::string> kExtensions = {".md", ".h", ".hpp", ".cpp", ".cu", ".cuh",
                                                         ".py", ".sh", ".cmake"};
      if (rel == "tests/doc_links.h" || rel == "tests/test_doc_links.cpp") continue;  // their examples are broken on purpose
      if (kExtensions.count(ext) || name == "CMakeLists.txt" || name == "Makefile" || rel.generic_string() == ".ci/run")
        files.push_back(rel);
    }
    std::sort(files.begin(), files.end());
    return files;
  }

  // Checks one file (relative to the root); returns how many references it resolved or refused.
  int check_file(const fs::path& rel) {
    const std::string text = read_text(root_ / rel);
    const bool markdown = rel.extension() == ".md";
    int references = 0;
    if (markdown) references += check_markdown_links(rel, text);
    // A dated record under bench/results/ names the files as they were on its date; its links
    // (to the logs beside it, to other records) must still resolve.
    if (rel.generic_string().rfind("bench/results/", 0) != 0) references += check_paths(rel, text);
    references += check_section_citations(rel, text);
    return references;
  }

  const std::vector<Problem>& problems() const { return problems_; }

 private:
  // Not a path of the repository, though it looks like one: a placeholder (`ops/NAME.h`,
  // `bench/results/sim_checks_DATE.md`) or the corpus's three splits (`train/valid/test.txt`).
  static bool is_placeholder(const std::string& path) {
    for (const char* word : {"NAME", "DATE", "DIR", "FILE"})
      if (path.find(word) != std::string::npos) return true;
    return path.rfind("train/valid/test", 0) == 0;
  }

  static bool skipped_directory(const std::string& rel) {
    static const std::set<std::string> kSkipped = {".git", "runs", "third_party", "tests/fixtures", "tests/fuzz/corpus",
                                                   "tests/fuzz/crashes", "data/assets", "__pycache__", ".whl",
                                                   "gpu_logs", "docs/images"};
    if (kSkipped.count(rel) > 0 || rel.rfind("build", 0) == 0) return true;
    // Hidden folders but CI's own (a virtual environment, an editor's), and every folder under
    // data/: the data sets a user downloads go there (docs/data.md), and their files are not ours.
    if (rel.size() > 1 && rel[0] == '.' && rel != ".ci") return true;
    return rel.rfind("data/", 0) == 0;
  }

  void problem(const fs::path& rel, const std::string& text, size_t at, const std::string& message) {
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
    problems_.push_back({rel.generic_string(), line, message});
  }

  const std::set<std::string>& anchors_of(const fs::path& abs) {
    const std::string key = abs.lexically_normal().generic_string();
    auto found = anchors_.find(key);
    if (found == anchors_.end()) found = anchors_.emplace(key, markdown_anchors(read_text(abs))).first;
    return found->second;
  }

  // `target` (a file or folder, `*` allowed in its last part) relative to `base`: does it exist?
  static bool exists(const fs::path& base, const std::string& target) {
    const fs::path path = (base / target).lexically_normal();
    if (target.find('*') == std::string::npos) {
      std::error_code error;
      return fs::exists(path, error);
    }
    const fs::path parent = path.parent_path();
    const std::string pattern = path.filename().string();
    std::error_code error;
    if (pattern.empty() || !fs::is_directory(parent, error)) return false;
    for (const auto& entry : fs::directory_iterator(parent))
      if (fnmatch(pattern.c_str(), entry.path().filename().c_str(), 0) == 0) return true;
    return false;
  }

  // An anchor in a Markdown file: "" when it resolves, else the reason.
  std::string anchor_problem(const fs::path& md, const std::string& anchor) {
    if (anchor.empty()) return "";
    if (md.extension() != ".md") return "";
    std::error_code error;
    if (!fs::is_regular_file(md, error)) return "";  // the missing file is reported on its own
    if (anchors_of(md).count(anchor)) return "";
    return "no section with the anchor #" + anchor + " in " + fs::relative(md, root_).generic_string();
  }

  // [text](target) and ![alt](target) outside code: the target relative to the Markdown file.
  int check_markdown_links(const fs::path& rel, const std::string& text) {
    int count = 0;
    size_t offset = 0;
    for (const MarkdownLine& line : markdown_lines(text)) {
      const size_t line_start = offset;
      offset += line.text.size() + 1;
      if (line.in_code) continue;
      const std::string& s = line.text;
      bool in_span = false;
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        if (s[i] == '`') in_span = !in_span;
        if (in_span || s[i] != ']' || s[i + 1] != '(') continue;
        const size_t close = s.find(')', i + 2);
        if (close == std::string::npos) continue;
        std::string target = s.substr(i + 2, close - i - 2);
        if (target.find(' ') != std::string::npos) target = target.substr(0, target.find(' '));  // a title
        if (target.empty() || target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 ||
            target.rfind("mailto:", 0) == 0)
          continue;
        ++count;
        const size_t hash = target.find('#');
        const std::string path = target.substr(0, hash);
        const std::string anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
        const fs::path base = (root_ / rel).parent_path();
        if (!path.empty() && !exists(base, path)) {
          problem(rel, text, line_start + i, "link to '" + target + "': no such file or folder");
          continue;
        }
        const fs::path md = path.empty() ? root_ / rel : base / path;
        const std::string why = anchor_problem(md.lexically_normal(), anchor);
        if (!why.empty()) problem(rel, text, line_start + i, "link to '" + target + "': " + why);
      }
    }
    return count;
  }

  // A path of the source tree written anywhere (a comment, a string, a code span, a command):
  // starts with a top-level folder's name after a space, quote, bracket or the line's start.
  int check_paths(const fs::path& rel, const std::string& text) {
    int count = 0;
    const auto path_char = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '*' || c == '+' ||
             c == '-';
    };
    static const std::string kBefore = " \t\n([`\"',;:*|>";
    for (size_t i = 0; i < text.size(); ++i) {
      if (i > 0 && kBefore.find(text[i - 1]) == std::string::npos) continue;
      if (!path_char(text[i]) || text[i] == '/' || (text[i] == '.' && text.compare(i, 4, ".ci/") != 0)) continue;
      const size_t slash = text.find('/', i);
      const bool readme_anchor = text.compare(i, 10, "README.md#") == 0;
      if (!readme_anchor) {
        if (slash == std::string::npos || slash == i || slash - i > 40) continue;
        if (top_dirs_.count(text.substr(i, slash - i)) == 0) continue;
      }
      size_t end = i;
      while (end < text.size() && path_char(text[end])) ++end;
      std::string path = text.substr(i, end - i);
      while (!path.empty() && (path.back() == '.' || path.back() == ',' || path.back() == ':' || path.back() == ';'))
        path.pop_back();
      std::string anchor;
      if (end < text.size() && text[end] == '#' && path.size() > 3 && path.compare(path.size() - 3, 3, ".md") == 0) {
        size_t a = end + 1;
        while (a < text.size() && (std::isalnum(static_cast<unsigned char>(text[a])) || text[a] == '-' || text[a] == '_'))
          ++a;
        anchor = text.substr(end + 1, a - end - 1);
      }
      if (end < text.size() && text[end] == '\\') continue;  // a regular expression, e.g. "docs/runs\\.md#"
      if (path.find("...") != std::string::npos || path.find("//") != std::string::npos) continue;
      if (is_placeholder(path)) continue;
      if (std::any_of(user_paths_.begin(), user_paths_.end(),
                      [&](const std::string& prefix) { return path.rfind(prefix, 0) == 0; }))
        continue;
      ++count;
      if (!exists(root_, path) && !exists(root_, path + ".*")) {  // a module: ops/softmax is ops/softmax.{h,cpp}
        problem(rel, text, i, "'" + path + "' names no file or folder of the repository");
        i = end;
        continue;
      }
      const std::string why = anchor_problem((root_ / path).lexically_normal(), anchor);
      if (!why.empty()) problem(rel, text, i, "'" + path + "#" + anchor + "': " + why);
      i = end;
    }
    return count;
  }

  // A quoted section name after a Markdown file, in prose: README "Section", README's "Section",
  // (README, 'Section'), `docs/x.md`, "Section", theory.md's ‘Section’ (straight or curly quotes,
  // after an optional comma or colon). It must start one of that file's headings. The file is the
  // bare word README (the root's README.md) or a name ending in .md, found beside the citing file,
  // at the root or in docs/. A README section named any other way (README: Section, README,
  // Section) cannot be checked, so it is refused.
  int check_section_citations(const fs::path& rel, const std::string& text) {
    int count = 0;
    for (size_t at = 0; at < text.size(); ++at) {
      fs::path cited;
      size_t q = 0;
      if (text.compare(at, 6, "README") == 0 && (at == 0 || !path_char(text[at - 1]))) {
        q = at + 6;
        if (text.compare(q, 3, ".md") == 0) q += 3;
        if (q < text.size() && (path_char(text[q]) || text[q] == '#')) continue;  // README.md#anchor, READMEs
        cited = root_ / "README.md";
      } else if (text.compare(at, 3, ".md") == 0 && at > 0 && path_char(text[at - 1]) &&
                 (at + 3 >= text.size() || !path_char(text[at + 3]))) {
        size_t from = at;
        while (from > 0 && path_char(text[from - 1])) --from;
        const std::string name = text.substr(from, at + 3 - from);
        q = at + 3;
        if (q < text.size() && text[q] == '`') ++q;
        const fs::path base = (root_ / rel).parent_path();
        std::error_code error;
        for (const fs::path& candidate : {base / name, root_ / name, root_ / "docs" / name})
          if (cited.empty() && fs::is_regular_file(candidate.lexically_normal(), error)) cited = candidate.lexically_normal();
        if (cited.empty()) continue;
      } else {
        continue;
      }
      if (text.compare(q, 2, "'s") == 0 || text.compare(q, 4, "\xe2\x80\x99s") == 0) q += text[q] == '\'' ? 2 : 4;
      const bool separated = q < text.size() && (text[q] == ',' || text[q] == ':');
      if (separated) ++q;
      if (q + 1 >= text.size() || text[q] != ' ') continue;
      ++q;
      std::string close;
      size_t open = 0;
      if (text[q] == '"' || text[q] == '\'') close = std::string(1, text[q]), open = 1;
      else if (text.compare(q, 3, "\xe2\x80\x9c") == 0) close = "\xe2\x80\x9d", open = 3;
      else if (text.compare(q, 3, "\xe2\x80\x98") == 0) close = "\xe2\x80\x99", open = 3;
      if (open == 0) {
        if (separated && cited == root_ / "README.md" && std::isupper(static_cast<unsigned char>(text[q]))) {
          ++count;
          problem(rel, text, at,
                  "a README section cited as '" + text.substr(at, std::min<size_t>(40, text.size() - at)) +
                      "…': write README \"Section\" (or link docs/page.md#anchor) so that it can be checked");
        }
        continue;
      }
      const size_t end = text.find(close, q + open);
      if (end == std::string::npos || end - q > 100 || text.find('\n', q) < end) continue;
      const std::string section = text.substr(q + open, end - q - open);
      if (section.empty() || !std::isupper(static_cast<unsigned char>(section[0]))) continue;  // a section title
      ++count;
      const std::vector<std::string> headings = markdown_headings(read_text(cited));
      const bool found = std::any_of(headings.begin(), headings.end(),
                                     [&](const std::string& h) { return h.rfind(section, 0) == 0; });
      const std::string file = fs::relative(cited, root_).generic_string();
      if (!found)
        problem(rel, text, at, (file == "README.md" ? std::string("README") : file) + " has no section \"" + section + "\"");
    }
    return count;
  }

  static bool path_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-';
  }

  fs::path root_;
  std::set<std::string> top_dirs_;
  std::vector<std::string> user_paths_;
  std::map<std::string, std::set<std::string>> anchors_;
  std::vector<Problem> problems_;
};

}  // namespace urpe::test::doc_links
