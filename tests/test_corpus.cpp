// Language-modelling data: WikiText-format corpora (vocabulary order, <eos> per line, plain and
// gzip files, error messages), char mode, the unigram baseline, the ordered LM batches of
// docs/transformer_xl.md#data-and-batching, and the corpus shipped under data/assets/corpus.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "data/lm_batches.h"
#include "data/text_file.h"
#include "doctest/doctest.h"
#include "tensor/tensor.h"

#if URPE_WITH_ZLIB
#include <zlib.h>
#endif

using namespace urpe;
using namespace urpe::data;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "urpe_corpus_XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::string str() const { return path.string(); }
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

#if URPE_WITH_ZLIB
void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb9");
  REQUIRE(f != nullptr);
  if (!text.empty()) REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) > 0);
  REQUIRE(gzclose(f) == Z_OK);
}
#endif

// A corpus directory with the three splits given as text (plain files).
void write_corpus(const TempDir& dir, const std::string& train, const std::string& valid,
                  const std::string& test) {
  write_text(dir.file("train.txt"), train);
  write_text(dir.file("valid.txt"), valid);
  write_text(dir.file("test.txt"), test);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---- vocabulary and streams ----

TEST_CASE("vocabulary: <eos> is id 0, then train tokens by count, ties by first occurrence") {
  TempDir dir;
  // Counts: b 1, a 2, c 2, d 1, <unk> 1; first occurrences in that order.
  write_corpus(dir, "b a c\n\n  c\ta  d <unk>  \n", "a <unk>\n", "d\n");
  const Corpus corpus = load_corpus(dir.str());
  const std::vector<std::string> expected = {"<eos>", "a", "c", "b", "d", "<unk>"};
  CHECK(corpus.vocab.tokens() == expected);
  CHECK(corpus.vocab.id("<eos>") == kEosId);
  CHECK(corpus.vocab.id("<unk>") == 5);  // an ordinary token, placed by its count
  CHECK(corpus.vocab.id("zzz") == -1);
  CHECK(corpus.vocab.count_of(corpus.vocab.id("a")) == 2);
  CHECK(corpus.vocab.count_of(kEosId) == 0);
  CHECK_THROWS_AS(corpus.vocab.token(6), Error);
  CHECK_THROWS_AS(corpus.vocab.count_of(-1), Error);
  // <eos> after every line, the blank line included; whitespace runs and tabs separate tokens.
  CHECK(corpus.train.ids == std::vector<int32_t>{3, 1, 2, 0, 0, 2, 1, 4, 5, 0});
  CHECK(corpus.train.lines == 3);
  CHECK(corpus.valid.ids == std::vector<int32_t>{1, 5, 0});
  CHECK(corpus.test.ids == std::vector<int32_t>{4, 0});
  CHECK(corpus.split("valid").path == dir.file("valid.txt"));
  CHECK_THROWS_AS(corpus.split("dev"), Error);
}

TEST_CASE("vocabulary: build orders a counter stably, and <eos> is never counted") {
  Vocabulary counter;
  for (const char* t : {"x", "y", "<eos>", "z", "y", "z", "w"}) counter.count(t);
  CHECK(counter.count("<eos>") == -1);
  const Vocabulary vocab = Vocabulary::build(counter);
  CHECK(vocab.tokens() == std::vector<std::string>{"<eos>", "y", "z", "x", "w"});
  CHECK(tokenize_line("  the  cat\tsat \r", TokenMode::word) ==
        std::vector<std::string>{"the", "cat", "sat"});
  CHECK(tokenize_line(" \t ", TokenMode::word).empty());
}

TEST_CASE("corpus files: gzip and plain give the same streams; CRLF and a missing final newline") {
  const std::string train = "the cat sat\r\non the mat\n\nthe end";  // no final newline
  const std::string valid = "the mat\n", test = "cat on the end\n\n";
  TempDir plain;
  write_corpus(plain, train, valid, test);
  const Corpus a = load_corpus(plain.str());
  CHECK(a.train.lines == 4);
  CHECK(a.vocab.tokens() ==
        std::vector<std::string>{"<eos>", "the", "cat", "sat", "on", "mat", "end"});
  CHECK(a.train.ids == std::vector<int32_t>{1, 2, 3, 0, 4, 1, 5, 0, 0, 1, 6, 0});
  CHECK(a.test.ids == std::vector<int32_t>{2, 4, 1, 6, 0, 0});
  CHECK(read_lines(plain.file("train.txt")) ==
        std::vector<std::string>{"the cat sat", "on the mat", "", "the end"});
#if URPE_WITH_ZLIB
  TempDir gz;
  write_gzip(gz.file("train.txt.gz"), train);
  write_gzip(gz.file("valid.txt.gz"), valid);
  write_gzip(gz.file("wiki.test.tokens"), test);  // gzip recognised by content, not by name
  const Corpus b = load_corpus(gz.str());
  CHECK(TextFileReader(gz.file("train.txt.gz")).compressed());
  CHECK(b.vocab.tokens() == a.vocab.tokens());
  CHECK(b.train.ids == a.train.ids);
  CHECK(b.valid.ids == a.valid.ids);
  CHECK(b.test.ids == a.test.ids);
  CHECK(b.test.path == gz.file("wiki.test.tokens"));
  // A line longer than the 1 MiB read chunk survives intact.
  std::string long_line(3 << 20, 'x');
  long_line[1234567] = ' ';
  write_gzip(gz.file("long.gz"), "a\n" + long_line + "\nb");
  const std::vector<std::string> lines = read_lines(gz.file("long.gz"));
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] == long_line);
  CHECK(lines[2] == "b");
#else
  TempDir gz;
  // Any file starting with the gzip magic bytes is refused with a clear message.
  write_text(gz.file("train.txt.gz"), std::string("\x1f\x8b\x08\x00", 4) + "rest");
  CHECK(error_of([&] { read_lines(gz.file("train.txt.gz")); }).find("without zlib") !=
        std::string::npos);
#endif
}

// ---- errors ----

TEST_CASE("corpus errors name the file and the line") {
  TempDir dir;
  write_corpus(dir, "a b\nb c\n", "a\nb\nb zzz c\n", "c\n");
  const std::string oov = error_of([&] { load_corpus(dir.str()); });
  CHECK(oov.find(dir.file("valid.txt") + " line 3") != std::string::npos);
  CHECK(oov.find("'zzz'") != std::string::npos);
  CHECK(oov.find(dir.file("train.txt")) != std::string::npos);

  write_text(dir.file("valid.txt"), "a\n");
  write_text(dir.file("test.txt"), "\n\nc b\nq\n");
  const std::string oov_test = error_of([&] { load_corpus(dir.str()); });
  CHECK(oov_test.find(dir.file("test.txt") + " line 4: token 'q'") != std::string::npos);

  write_text(dir.file("test.txt"), "");
  CHECK(error_of([&] { load_corpus(dir.str()); }) ==
        "corpus split file " + dir.file("test.txt") + " is empty");

  fs::remove(dir.file("test.txt"));
  const std::string missing = error_of([&] { load_corpus(dir.str()); });
  CHECK(missing.find("has no test split") != std::string::npos);
  CHECK(missing.find("test.txt.gz") != std::string::npos);

  write_text(dir.file("test.txt"), "c\n");
  write_text(dir.file("wiki.test.tokens"), "c\n");
  CHECK(error_of([&] { load_corpus(dir.str()); }).find("two test files") != std::string::npos);

  CHECK(error_of([&] { load_corpus(dir.file("nowhere")); }).find("does not exist") !=
        std::string::npos);
  CHECK(error_of([&] { read_lines(dir.file("nothing.txt")); }).find("no such file") !=
        std::string::npos);
  CHECK_THROWS_AS(parse_token_mode("bytes"), Error);
  CHECK(parse_token_mode("char") == TokenMode::character);
}

#if URPE_WITH_ZLIB
namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A few thousand lines of varied words, so that the gzip stream has several deflate blocks' worth
// of data and a cut anywhere in it lands inside real compressed data.
std::string varied_text() {
  std::string text;
  for (int line = 0; line < 3000; ++line) {
    for (int w = 0; w < 6; ++w) text += "w" + std::to_string((line * 7919 + w * 104729) % 997) + " ";
    text += "\n";
  }
  return text;
}

}  // namespace

TEST_CASE("a truncated or corrupt gzip file is one error naming it, never a shorter text") {
  TempDir dir;
  const std::string text = varied_text();
  write_gzip(dir.file("whole.txt.gz"), text);
  const std::string gz = read_bytes(dir.file("whole.txt.gz"));
  REQUIRE(gz.size() > 2000);
  REQUIRE(read_lines(dir.file("whole.txt.gz")).size() == 3000);

  // Cut inside the signature, the header, the deflate data, before the CRC-32 and inside the
  // length of the 8-byte trailer.
  const std::string path = dir.file("train.txt.gz");
  for (size_t keep : {size_t{0}, size_t{1}, size_t{2}, size_t{5}, size_t{10}, gz.size() / 4,
                      gz.size() / 2, gz.size() - 9, gz.size() - 8, gz.size() - 4, gz.size() - 1}) {
    CAPTURE(keep);
    write_text(path, gz.substr(0, keep));
    const std::string error = error_of([&] { read_lines(path); });
    CHECK(error.find(path) != std::string::npos);
    CHECK((error.find("truncated") != std::string::npos));
  }
  // One byte flipped inside the compressed data: inflate fails or the CRC-32 differs.
  for (size_t at : {gz.size() / 4, gz.size() / 2, gz.size() * 3 / 4, gz.size() - 6}) {
    CAPTURE(at);
    std::string damaged = gz;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
    write_text(path, damaged);
    const std::string error = error_of([&] { read_lines(path); });
    CHECK(error.find(path) != std::string::npos);
    CHECK((error.find("corrupt") != std::string::npos));
  }

  // In a corpus, the truncated train split is the error, not a valid/test word that the shorter
  // train text happens to lack.
  write_text(path, gz.substr(0, gz.size() / 2));
  write_text(dir.file("valid.txt"), text.substr(text.size() - 200));
  write_text(dir.file("test.txt"), "w1\n");
  const std::string error = error_of([&] { load_corpus(dir.str()); });
  CHECK(error.find("cannot read " + path + " (gzip)") == 0);
  CHECK(error.find("vocabulary") == std::string::npos);
}
#endif

// ---- char mode ----

// ---- char mode ----

TEST_CASE("char mode: every code point a token, spaces kept inside the line, <eos> per line") {
  TempDir dir;
  // "£" and "é" are two-byte UTF-8 sequences; leading/trailing whitespace is stripped.
  write_corpus(dir, " ab  a \n\n£é a\n", "a b\n", "é£\n");
  const Corpus corpus = load_corpus(dir.str(), TokenMode::character);
  CHECK(corpus.mode == TokenMode::character);
  // Counts: a 3, ' ' 3, b 1, £ 1, é 1; first occurrences a, b, ' ', £, é.
  CHECK(corpus.vocab.tokens() == std::vector<std::string>{"<eos>", "a", " ", "b", "£", "é"});
  CHECK(corpus.train.ids == std::vector<int32_t>{1, 3, 2, 2, 1, 0, 0, 4, 5, 2, 1, 0});
  CHECK(corpus.test.ids == std::vector<int32_t>{5, 4, 0});
  // Tokens concatenate back to the (stripped) text.
  std::string text;
  for (int32_t id : corpus.train.ids) text += id == kEosId ? "\n" : corpus.vocab.token(id);
  CHECK(text == "ab  a\n\n£é a\n");
  // A character absent from train is an out-of-vocabulary error in char mode too.
  write_text(dir.file("valid.txt"), "a\nabc\n");
  CHECK(error_of([&] { load_corpus(dir.str(), TokenMode::character); })
            .find("valid.txt line 2: token 'c'") != std::string::npos);
}

// ---- unigram baseline ----

TEST_CASE("unigram perplexity equals the hand-computed value") {
  // Train counts: id1 2, id2 1, id0 1 of 4 -> p = 1/2, 1/4, 1/4. Eval [1, 2, 0]:
  // PPL = (1/2 · 1/4 · 1/4)^(−1/3) = 32^(1/3).
  CHECK(unigram_perplexity({1, 1, 2, 0}, {1, 2, 0}) == doctest::Approx(std::cbrt(32.0)));
  CHECK(unigram_perplexity({1, 1, 2, 0}, {1, 1}) == doctest::Approx(2.0));
  CHECK_THROWS_AS(unigram_perplexity({1, 1, 2, 0}, {3}), Error);
  CHECK_THROWS_AS(unigram_perplexity({}, {1}), Error);
  // Through a loaded corpus: train "x x y" + <eos>, valid "y" + <eos>: p(y) = p(<eos>) = 1/4.
  TempDir dir;
  write_corpus(dir, "x x y\n", "y\n", "x\n");
  const Corpus corpus = load_corpus(dir.str());
  CHECK(unigram_perplexity(corpus.train.ids, corpus.valid.ids) == doctest::Approx(4.0));
  CHECK(unigram_perplexity(corpus.train.ids, corpus.test.ids) ==
        doctest::Approx(std::sqrt(2.0 * 4.0)));
}

// ---- ordered LM batches ----

TEST_CASE("LM batches: columns, shapes, targets shifted by one, the short last segment") {
  std::vector<int32_t> stream(23);
  for (int32_t k = 0; k < 23; ++k) stream[k] = 100 + k;
  // B = 3: n_step = 7, 2 tokens dropped; columns start at 100, 107, 114.
  const LMOrderedBatches batches(stream, 3, 4);
  CHECK(batches.n_step() == 7);
  CHECK(batches.num_dropped() == 2);
  CHECK(batches.num_segments() == 2);  // rows 0..3, then 4..5 (row 6 is only a target)
  CHECK(batches.num_predicted() == 18);
  CHECK(batches.at(2, 1) == 109);

  const LMSegment first = batches.segment(0);
  CHECK(first.data.shape() == Shape{4, 3});
  CHECK(first.target.shape() == Shape{4, 3});
  CHECK(first.data.dtype() == DType::i32);
  CHECK(first.start == 0);
  CHECK(first.length == 4);
  CHECK(first.data.to_vector_i32() ==
        std::vector<int32_t>{100, 107, 114, 101, 108, 115, 102, 109, 116, 103, 110, 117});
  CHECK(first.target.to_vector_i32() ==
        std::vector<int32_t>{101, 108, 115, 102, 109, 116, 103, 110, 117, 104, 111, 118});

  const LMSegment last = batches.segment(1);
  CHECK(last.start == 4);
  CHECK(last.length == 2);
  CHECK(last.data.shape() == Shape{2, 3});
  CHECK(last.data.to_vector_i32() == std::vector<int32_t>{104, 111, 118, 105, 112, 119});
  CHECK(last.target.to_vector_i32() == std::vector<int32_t>{105, 112, 119, 106, 113, 120});
  CHECK_THROWS_AS(batches.segment(2), Error);
  CHECK_THROWS_AS(batches.segment(-1), Error);

  // tgt_len that divides n_step − 1 exactly: no short segment; a long tgt_len: one segment.
  CHECK(LMOrderedBatches(stream, 3, 3).num_segments() == 2);
  CHECK(LMOrderedBatches(stream, 3, 3).segment(1).length == 3);
  CHECK(LMOrderedBatches(stream, 3, 100).num_segments() == 1);
  CHECK(LMOrderedBatches(stream, 3, 100).segment(0).length == 6);
  // B = 1: the stream itself, every token but the first predicted.
  CHECK(LMOrderedBatches(stream, 1, 5).num_predicted() == 22);

  CHECK_THROWS_AS(LMOrderedBatches(stream, 12, 4), Error);  // n_step 1: nothing to predict
  CHECK_THROWS_AS(LMOrderedBatches(stream, 0, 4), Error);
  CHECK_THROWS_AS(LMOrderedBatches(stream, 3, 0), Error);
}

TEST_CASE("LM batches: one pass predicts each token once, except column starts and the tail") {
  std::vector<int32_t> stream(1003);
  for (int32_t k = 0; k < 1003; ++k) stream[k] = k;
  const int64_t batch = 10, tgt_len = 64;  // the final evaluation (docs/transformer_xl.md#evaluation-protocol)
  const LMOrderedBatches batches(stream, batch, tgt_len);
  std::vector<int> predicted(stream.size(), 0);
  int64_t total_len = 0;
  for (int64_t k = 0; k < batches.num_segments(); ++k) {
    const LMSegment s = batches.segment(k);
    const std::vector<int32_t> data = s.data.to_vector_i32(), target = s.target.to_vector_i32();
    for (size_t j = 0; j < target.size(); ++j) {
      CHECK(target[j] == data[j] + 1);  // the next token of the same column
      ++predicted[target[j]];
    }
    total_len += s.length;
  }
  CHECK(total_len == batches.n_step() - 1);
  const int64_t n_step = 100;
  CHECK(batches.n_step() == n_step);
  for (int32_t k = 0; k < 1003; ++k) {
    const bool column_start = k < batch * n_step && k % n_step == 0;
    const bool dropped = k >= batch * n_step;
    CHECK(predicted[k] == (column_start || dropped ? 0 : 1));
  }
}

// ---- the shipped corpus ----

TEST_CASE("the embedded corpus (Austen + King James Bible) loads") {
  const std::string dir = std::string(URPE_SOURCE_DIR) + "/" + kEmbeddedCorpusPath;
  if (!directory_exists(dir)) {
    MESSAGE("skipped: " << dir << " is absent (rebuild it with python3 tools/make_corpus.py)");
    return;
  }
#if !URPE_WITH_ZLIB
  CHECK(error_of([&] { load_corpus(dir); }).find("built without zlib") != std::string::npos);
  MESSAGE("skipped loading: the embedded corpus is gzip-compressed and this build has no zlib");
  return;
#endif
  const auto start = std::chrono::steady_clock::now();
  const Corpus corpus = load_corpus(dir);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("embedded corpus: train " << corpus.train.ids.size() << ", valid "
                                    << corpus.valid.ids.size() << ", test "
                                    << corpus.test.ids.size() << " tokens, vocabulary "
                                    << corpus.vocab.size() << ", loaded in " << seconds << " s");
  CHECK(corpus.train.ids.size() > 1500000);
  CHECK(corpus.train.ids.size() < 1800000);
  CHECK(corpus.valid.ids.size() > 70000);
  CHECK(corpus.valid.ids.size() < 110000);
  CHECK(corpus.test.ids.size() > 70000);
  CHECK(corpus.test.ids.size() < 110000);
  CHECK(corpus.vocab.size() > 10000);
  CHECK(corpus.vocab.size() < 15000);
  CHECK(corpus.vocab.token(kEosId) == "<eos>");
  CHECK(corpus.vocab.contains("<unk>"));
  CHECK(corpus.vocab.id(",") < 5);  // the most frequent tokens come first
  CHECK(corpus.vocab.contains("Elizabeth"));
  CHECK(corpus.vocab.contains("Jerusalem"));
  // Rare train tokens were mapped to <unk>: every token (but <eos>) was seen at least 3 times.
  int64_t rarest = corpus.train.ids.size();
  for (int32_t id = 1; id < corpus.vocab.size(); ++id) {
    rarest = std::min(rarest, corpus.vocab.count_of(id));
  }
  CHECK(rarest == 3);
  const double ppl = unigram_perplexity(corpus.train.ids, corpus.valid.ids);
  MESSAGE("unigram perplexity: valid " << ppl);
  CHECK(ppl > 300);
  CHECK(ppl < 700);

  // Char mode: every character of valid/test occurs in train (their words all do).
  const Corpus chars = load_corpus(dir, TokenMode::character);
  MESSAGE("char mode: train " << chars.train.ids.size() << " tokens, vocabulary "
                              << chars.vocab.size());
  CHECK(chars.vocab.size() > 60);
  CHECK(chars.vocab.size() < 120);
  CHECK(chars.vocab.token(1) == " ");
  CHECK(chars.train.ids.size() > 7000000);
  CHECK(chars.train.lines == corpus.train.lines);

  // Found from the repository root without being told where it is (an absolute path).
  const fs::path previous = fs::current_path();
  fs::current_path(URPE_SOURCE_DIR);
  const std::string found = embedded_corpus_dir();
  fs::current_path(previous);
  CHECK(fs::path(found).is_absolute());
  CHECK(fs::equivalent(found, dir));
}
