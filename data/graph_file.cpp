// Reading urpe's molecule-graph file (graphs.tsv): every field checked, every error naming the
// file and line.
#include "data/graph_file.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "data/text_file.h"
#include "tensor/error.h"

namespace urpe::data {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::vector<std::string> split_on(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

// A whole non-negative decimal integer below `limit`; false for anything else ("", "-1", "1.0", "7x").
bool parse_index(const std::string& text, int64_t limit, int64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value >= limit) return false;
  *out = value;
  return true;
}

// The space-separated tokens of a field; empty tokens (two spaces) are an error of the caller.
std::vector<std::string> tokens_of(const std::string& field) {
  return field.empty() ? std::vector<std::string>{} : split_on(field, ' ');
}

class GraphFileParser {
 public:
  GraphFileParser(const std::string& file, const AtomVocabulary& vocabulary) : file_(file), vocabulary_(vocabulary) {}

  [[noreturn]] void fail(int64_t line, const std::string& message) const {
    throw Error(file_ + " line " + std::to_string(line) + ": " + message);
  }

  void graph_line(const std::string& text, int64_t line, GraphFileData& out) {
    const std::vector<std::string> f = split_on(text, '\t');
    if (f.size() != 5)
      fail(line, "expected 5 tab-separated fields (split, index, target, atoms, bonds), got " + std::to_string(f.size()));
    const std::string& split = f[0];
    std::vector<int64_t>* part = split == "train" ? &out.split.train
                                 : split == "valid" ? &out.split.valid
                                 : split == "test"  ? &out.split.test
                                                    : nullptr;
    if (!part) fail(line, "expected the split train, valid or test, got \"" + split + "\"");
    int64_t index = 0;
    if (!parse_index(f[1], std::numeric_limits<int64_t>::max() / 10, &index))
      fail(line, "expected the source index, a whole number >= 0, got \"" + f[1] + "\"");
    out.dataset.targets.push_back(target(f[2], line));
    out.source_index.push_back(index);

    std::vector<int32_t> atoms;
    for (const std::string& t : tokens_of(f[3])) {
      int64_t id = 0;
      if (!parse_index(t, vocabulary_.size(), &id))
        fail(line, "expected atom type ids in [0, " + std::to_string(vocabulary_.size()) + ") (atom_types.txt), got \"" +
                       t + "\" (atom " + std::to_string(atoms.size()) + ")");
      atoms.push_back(static_cast<int32_t>(id));
    }
    if (atoms.empty()) fail(line, "expected at least one atom type id, the atoms field is empty");
    const int64_t n = static_cast<int64_t>(atoms.size());

    std::vector<Bond> bonds;
    std::set<std::pair<int64_t, int64_t>> seen;
    for (const std::string& t : tokens_of(f[4])) {
      const std::vector<std::string> p = split_on(t, '-');
      int64_t i = 0, j = 0, type = 0;
      if (p.size() != 3 || !parse_index(p[0], n, &i) || !parse_index(p[1], n, &j) ||
          !parse_index(p[2], kGraphFileBondTypes + 1, &type) || type == 0 || i >= j)
        fail(line, "expected bonds \"i-j-t\" with 0 <= i < j < " + std::to_string(n) +
                       " (the atoms) and t = 1, 2 or 3 (single, double, triple), got \"" + t + "\"");
      if (!seen.insert({i, j}).second) fail(line, "bond \"" + t + "\": atoms " + p[0] + " and " + p[1] + " are bonded twice");
      bonds.push_back({static_cast<int32_t>(i), static_cast<int32_t>(j), static_cast<BondType>(type)});
    }
    out.dataset.graphs.push_back(molecule_graph_from_bonds(std::move(atoms), bonds));
    part->push_back(static_cast<int64_t>(out.dataset.graphs.size()) - 1);
  }

 private:
  float target(const std::string& text, int64_t line) const {
    errno = 0;
    char* end = nullptr;
    const double value = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value) ||
        std::fabs(value) > std::numeric_limits<float>::max())
      fail(line, "expected the target, a finite number within the float range (|x| <= 3.4e38), got \"" + text + "\"");
    return static_cast<float>(value);
  }

  std::string file_;
  const AtomVocabulary& vocabulary_;
};

}  // namespace

bool is_graph_file_dataset(const std::string& path) {
  if (directory_exists(path))
    return file_exists(path + "/" + kGraphFileName) || file_exists(path + "/" + kGraphFileName + ".gz");
  return ends_with(path, ".tsv") || ends_with(path, ".tsv.gz");
}

GraphFileData load_graph_file(const std::string& path) {
  std::string file = path;
  if (directory_exists(path)) {
    file = path + "/" + kGraphFileName;
    if (!file_exists(file) && file_exists(file + ".gz")) file += ".gz";
    URPE_CHECK(file_exists(file), path << ": expected a graph-file dataset directory holding " << kGraphFileName
                                       << " and atom_types.txt (tools/zinc_to_urpe.py writes them), but there is no "
                                       << kGraphFileName);
  }
  URPE_CHECK(file_exists(file), file << ": the graph file does not exist");
  const std::string vocabulary_path = parent_dir(file) + "/atom_types.txt";
  URPE_CHECK(file_exists(vocabulary_path), vocabulary_path << ": missing; expected the atom vocabulary beside "
                                                           << file << " (one type per line, line k = id k)");
  GraphFileData out;
  out.dataset.source = file;
  out.dataset.vocabulary = AtomVocabulary::load(vocabulary_path);
  GraphFileParser parser(file, out.dataset.vocabulary);

  TextFileReader reader(file);
  std::string text;
  if (!reader.next_line(text) || text != kGraphFileFormatLine)
    parser.fail(1, std::string("expected \"") + kGraphFileFormatLine +
                       "\" (a graph file written by tools/zinc_to_urpe.py), got \"" + text.substr(0, 60) + "\"");
  int64_t promised = -1;
  bool header = false;
  while (reader.next_line(text)) {
    const int64_t line = reader.line_number();
    if (!header) {
      if (text.rfind("# ", 0) == 0) {
        const std::string comment = text.substr(2);
        out.comments += (out.comments.empty() ? "" : "; ") + comment;
        if (comment.rfind("graphs: ", 0) == 0 &&
            !parse_index(comment.substr(8), std::numeric_limits<int64_t>::max() / 10, &promised))
          parser.fail(line, "expected \"# graphs: N\" with N a whole number, got \"" + text + "\"");
        continue;
      }
      if (text != "split\tindex\ttarget\tatoms\tbonds")
        parser.fail(line, "expected the header row \"split<TAB>index<TAB>target<TAB>atoms<TAB>bonds\", got \"" +
                              text.substr(0, 60) + "\"");
      if (promised < 0) parser.fail(line, "expected a \"# graphs: N\" line before the header row");
      header = true;
      continue;
    }
    parser.graph_line(text, line, out);
  }
  if (!header) parser.fail(reader.line_number(), "the file ends before the header row (truncated?)");
  const int64_t found = static_cast<int64_t>(out.dataset.graphs.size());
  if (found != promised)
    parser.fail(reader.line_number(), "expected " + std::to_string(promised) + " graphs (\"# graphs:\"), the file has " +
                                          std::to_string(found) + (found < promised ? " (truncated?)" : ""));
  out.dataset.smiles.assign(out.dataset.graphs.size(), "");
  return out;
}

}  // namespace urpe::data
