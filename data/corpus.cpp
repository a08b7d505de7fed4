// Corpus loading: train is read once, counting tokens in first-occurrence order while keeping the
// stream of those provisional ids; the vocabulary is then ordered (count desc, ties by first
// occurrence) and the stream renumbered. Valid and test are looked up in that vocabulary.
#include "data/corpus.h"

#include "data/asset_path.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "data/text_file.h"
#include "tensor/error.h"

namespace urpe::data {

// ---- token modes ----

TokenMode parse_token_mode(const std::string& text) {
  if (text == "word") return TokenMode::word;
  if (text == "char") return TokenMode::character;
  URPE_FAIL("unknown token mode '" << text << "': expected word or char");
}

const char* token_mode_name(TokenMode mode) {
  return mode == TokenMode::word ? "word" : "char";
}

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Length in bytes of the UTF-8 code point starting at s[k]; 1 for a byte that does not start a
// valid sequence (such a byte becomes a token of its own rather than an error).
size_t utf8_length(const std::string& s, size_t k) {
  const unsigned char lead = static_cast<unsigned char>(s[k]);
  const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3
                 : (lead >> 3) == 0x1E ? 4 : 1;
  if (k + n > s.size()) return 1;
  for (size_t j = 1; j < n; ++j) {
    if ((static_cast<unsigned char>(s[k + j]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

// Calls fn(token) for each token of the line (the `<eos>` is the caller's), reusing one string.
template <typename Fn>
void for_each_token(const std::string& line, TokenMode mode, std::string& token, Fn&& fn) {
  size_t begin = 0, end = line.size();
  while (begin < end && is_space(line[begin])) ++begin;
  while (end > begin && is_space(line[end - 1])) --end;
  size_t k = begin;
  while (k < end) {
    if (mode == TokenMode::character) {
      const size_t n = utf8_length(line, k);
      token.assign(line, k, n);
      fn(token);
      k += n;
      continue;
    }
    size_t stop = k;
    while (stop < end && !is_space(line[stop])) ++stop;
    token.assign(line, k, stop - k);
    fn(token);
    k = stop;
    while (k < end && is_space(line[k])) ++k;
  }
}

std::string quoted(const std::string& token) {
  constexpr size_t kMax = 60;
  return "'" + (token.size() > kMax ? token.substr(0, kMax) + "..." : token) + "'";
}

}  // namespace

std::vector<std::string> tokenize_line(const std::string& line, TokenMode mode) {
  std::vector<std::string> tokens;
  std::string token;
  for_each_token(line, mode, token, [&](const std::string& t) { tokens.push_back(t); });
  return tokens;
}

// ---- vocabulary ----

int32_t Vocabulary::add(const std::string& token, int64_t count) {
  const int32_t id = static_cast<int32_t>(tokens_.size());
  tokens_.push_back(token);
  counts_.push_back(count);
  index_.emplace(token, id);
  return id;
}

int32_t Vocabulary::count(const std::string& token) {
  if (token == kEosToken) return -1;
  auto it = index_.find(token);
  if (it != index_.end()) {
    ++counts_[it->second];
    return it->second;
  }
  URPE_CHECK(tokens_.size() < static_cast<size_t>(INT32_MAX), "vocabulary: more than 2^31 tokens");
  return add(token, 1);
}

Vocabulary Vocabulary::build(const Vocabulary& counter) {
  std::vector<int32_t> order(counter.tokens_.size());
  std::iota(order.begin(), order.end(), 0);
  // Stable: equal counts keep counting order, i.e. first occurrence (Counter.most_common).
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return counter.counts_[a] > counter.counts_[b];
  });
  Vocabulary vocab;
  vocab.tokens_.reserve(order.size() + 1);
  vocab.counts_.reserve(order.size() + 1);
  vocab.index_.reserve(order.size() + 1);
  vocab.add(kEosToken, 0);
  for (int32_t k : order) vocab.add(counter.tokens_[k], counter.counts_[k]);
  return vocab;
}

int32_t Vocabulary::id(const std::string& token) const {
  auto it = index_.find(token);
  return it == index_.end() ? -1 : it->second;
}

const std::string& Vocabulary::token(int32_t id) const {
  URPE_CHECK(id >= 0 && id < size(),
             "vocabulary: token id " << id << " out of range [0, " << size() << ")");
  return tokens_[id];
}

int64_t Vocabulary::count_of(int32_t id) const {
  token(id);  // range check
  return counts_[id];
}

// ---- corpus ----

const CorpusSplit& Corpus::split(const std::string& name) const {
  if (name == "train") return train;
  if (name == "valid") return valid;
  if (name == "test") return test;
  URPE_FAIL("unknown corpus split '" << name << "': expected train, valid or test");
}

std::string find_split_file(const std::string& directory, const std::string& split) {
  URPE_CHECK(directory_exists(directory), "corpus directory " << directory << " does not exist");
  const std::string base = directory + "/";
  const std::vector<std::string> names = {split + ".txt", split + ".txt.gz",
                                          "wiki." + split + ".tokens",
                                          "wiki." + split + ".tokens.gz"};
  std::vector<std::string> found;
  for (const auto& name : names) {
    if (file_exists(base + name)) found.push_back(base + name);
  }
  URPE_CHECK(!found.empty(), "corpus directory " << directory << " has no " << split
                                                 << " split: expected a file named " << names[0]
                                                 << ", " << names[1] << ", " << names[2]
                                                 << " or " << names[3]);
  URPE_CHECK(found.size() == 1, "corpus directory " << directory << " has two " << split
                                                    << " files, " << found[0] << " and "
                                                    << found[1] << ": keep only one");
  return found[0];
}

namespace {

CorpusSplit read_train(const std::string& path, TokenMode mode, Vocabulary& vocab) {
  CorpusSplit split{"train", path, 0, {}};
  Vocabulary counter;
  std::vector<int32_t> provisional;  // counting-order ids, −1 for <eos>
  TextFileReader reader(path);
  std::string line, token;
  while (reader.next_line(line)) {
    for_each_token(line, mode, token,
                   [&](const std::string& t) { provisional.push_back(counter.count(t)); });
    provisional.push_back(-1);
  }
  split.lines = reader.line_number();
  URPE_CHECK(split.lines > 0, "corpus split file " << path << " is empty");
  URPE_CHECK(counter.size() > 0, "corpus split file " << path << " holds no tokens (only blank lines)");
  vocab = Vocabulary::build(counter);
  std::vector<int32_t> renumber(counter.size());
  for (int32_t k = 0; k < counter.size(); ++k) renumber[k] = vocab.id(counter.token(k));
  split.ids.resize(provisional.size());
  for (size_t k = 0; k < provisional.size(); ++k) {
    split.ids[k] = provisional[k] < 0 ? kEosId : renumber[provisional[k]];
  }
  return split;
}

CorpusSplit read_eval(const std::string& name, const std::string& path, TokenMode mode,
                      const Vocabulary& vocab, const std::string& train_path) {
  CorpusSplit split{name, path, 0, {}};
  TextFileReader reader(path);
  std::string line, token;
  int64_t words = 0;  // tokens other than <eos>
  while (reader.next_line(line)) {
    for_each_token(line, mode, token, [&](const std::string& t) {
      const int32_t id = vocab.id(t);
      URPE_CHECK(id >= 0, path << " line " << reader.line_number() << ": token " << quoted(t)
                               << " is not in the vocabulary of " << train_path
                               << " (valid and test may only use train tokens; WikiText maps "
                                  "rare words to <unk>)");
      split.ids.push_back(id);
      ++words;
    });
    split.ids.push_back(kEosId);
  }
  split.lines = reader.line_number();
  URPE_CHECK(split.lines > 0, "corpus split file " << path << " is empty");
  URPE_CHECK(words > 0, "corpus split file " << path << " holds no tokens (only blank lines)");
  return split;
}

}  // namespace

Corpus load_corpus(const std::string& directory, TokenMode mode) {
  Corpus corpus;
  corpus.directory = directory;
  corpus.mode = mode;
  // Find all three files first, so a missing split is reported before any slow reading.
  const std::string train_path = find_split_file(directory, "train");
  const std::string valid_path = find_split_file(directory, "valid");
  const std::string test_path = find_split_file(directory, "test");
  corpus.train = read_train(train_path, mode, corpus.vocab);
  corpus.valid = read_eval("valid", valid_path, mode, corpus.vocab, train_path);
  corpus.test = read_eval("test", test_path, mode, corpus.vocab, train_path);
  return corpus;
}

// ---- unigram baseline ----

double unigram_perplexity(const std::vector<int32_t>& train, const std::vector<int32_t>& eval) {
  URPE_CHECK(!train.empty() && !eval.empty(), "unigram_perplexity: empty token stream (train "
                                                  << train.size() << ", eval " << eval.size()
                                                  << " tokens)");
  std::vector<int64_t> counts;
  for (int32_t id : train) {
    URPE_CHECK(id >= 0, "unigram_perplexity: negative token id " << id << " in train");
    if (static_cast<size_t>(id) >= counts.size()) counts.resize(id + 1, 0);
    ++counts[id];
  }
  const double log_total = std::log(static_cast<double>(train.size()));
  double nll = 0;
  for (int32_t id : eval) {
    URPE_CHECK(id >= 0 && static_cast<size_t>(id) < counts.size() && counts[id] > 0,
               "unigram_perplexity: token id " << id << " never occurs in train");
    nll += log_total - std::log(static_cast<double>(counts[id]));
  }
  return std::exp(nll / static_cast<double>(eval.size()));
}

// ---- the embedded corpus ----

std::string embedded_corpus_dir() {
  return find_asset_dir(kEmbeddedCorpusPath, "train.txt.gz", "the embedded corpus", "python3 tools/make_corpus.py");
}

}  // namespace urpe::data
