// WikiText-format language-modelling corpora, as Transformer-XL reads them
// (docs/transformer_xl.md#data-and-batching;
// TXL data_utils.py + utils/vocabulary.py):
//   * a corpus directory holds three splits, train / valid / test, each one file named
//     `<split>.txt`, `<split>.txt.gz`, `wiki.<split>.tokens` or `wiki.<split>.tokens.gz`
//     (plain or gzip, see text_file.h);
//   * word mode: each line is stripped and split on whitespace (no lower-casing); char mode: each
//     character (UTF-8 code point) of the stripped line is a token, spaces inside the line
//     included as the one-character token " ", so that concatenating tokens gives the text back
//     (TXL's `delimiter=''`). Either way `<eos>` is appended to every line, blank lines included
//     (a blank line is the single token `<eos>`);
//   * the vocabulary comes from train only: `<eos>` first (id 0), then every train token by
//     descending count, ties in order of first occurrence (Python's Counter.most_common).
//     `<unk>` is an ordinary token. A valid/test token outside it is an error naming file and line.
// Whitespace here is ASCII whitespace (space, \t, \n, \v, \f, \r).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace urpe::data {

enum class TokenMode { word, character };
TokenMode parse_token_mode(const std::string& text);  // "word" | "char"
const char* token_mode_name(TokenMode mode);          // "word" | "char"

constexpr const char* kEosToken = "<eos>";
constexpr int32_t kEosId = 0;

// The tokens of one line in the given mode, without the `<eos>`.
std::vector<std::string> tokenize_line(const std::string& line, TokenMode mode);

class Vocabulary {
 public:
  // Counts a token; returns its index in first-occurrence order (−1 for `<eos>`, which is never
  // counted). build() then orders the counted tokens.
  int32_t count(const std::string& token);
  // `<eos>`, then the counted tokens by descending count, ties by first occurrence.
  static Vocabulary build(const Vocabulary& counter);

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  int32_t id(const std::string& token) const;  // -1 when absent
  bool contains(const std::string& token) const { return id(token) >= 0; }
  const std::string& token(int32_t id) const;  // throws for an id out of range
  const std::vector<std::string>& tokens() const { return tokens_; }
  int64_t count_of(int32_t id) const;  // the train count (0 for <eos>)

 private:
  int32_t add(const std::string& token, int64_t count);
  std::vector<std::string> tokens_;
  std::vector<int64_t> counts_;
  std::unordered_map<std::string, int32_t> index_;
};

struct CorpusSplit {
  std::string name;             // "train", "valid" or "test"
  std::string path;             // the file it was read from
  int64_t lines = 0;
  std::vector<int32_t> ids;     // the whole split as one stream, `<eos>` after every line
};

struct Corpus {
  std::string directory;
  TokenMode mode = TokenMode::word;
  Vocabulary vocab;
  CorpusSplit train, valid, test;
  const CorpusSplit& split(const std::string& name) const;  // "train" | "valid" | "test"
};

// Reads the three splits of `directory`. Errors (urpe::Error) name the directory or the file and
// line: missing directory, missing or ambiguous split file, empty split file, an out-of-vocabulary
// token in valid/test.
Corpus load_corpus(const std::string& directory, TokenMode mode = TokenMode::word);

// The file that holds one split of a corpus directory (see the names above).
std::string find_split_file(const std::string& directory, const std::string& split);

// Perplexity of `eval` under the train unigram distribution p(w) = count_train(w) / |train|, over
// every token of `eval` (its `<eos>` included): exp(−(1/|eval|) Σ log p(w)). The no-context
// baseline an LM must beat. A token never seen in train is an error.
double unigram_perplexity(const std::vector<int32_t>& train, const std::vector<int32_t>& eval);

// The corpus shipped with urpe (tools/make_corpus.py: Jane Austen + King James Bible), relative
// to the repository root.
constexpr const char* kEmbeddedCorpusPath = "data/assets/corpus";
// Finds the embedded corpus from the working directory or from the running executable's folder
// and its parents (so both `./build/urpe` from the repository and an installed copy work);
// throws a message naming the places looked at when it is absent.
std::string embedded_corpus_dir();

}  // namespace urpe::data
