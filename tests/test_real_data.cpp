// The real datasets' ways in, each on small data in the real layout: ZINC in the
// benchmarking-GNNs layout (tests/fixtures/zinc_bgnn, made with torch by tools/make_zinc_fixture.py)
// through tools/zinc_to_urpe.py into urpe's graph file and on to `dataset = DIR` and `repro
// molecules --data`; the ZINC-250k CSV through `dataset_format = zinc250k`; a WikiText-103
// directory (wikitext-103/wiki.*.tokens) through `corpus` and `repro lm --corpus`; and one clear
// error, naming the file and line, for each kind of bad data.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_util.h"
#include "data/corpus.h"
#include "data/graph_file.h"
#include "data/molecule_dataset.h"
#include "doctest/doctest.h"
#include "scratch_dir.h"
#include "base/io/json.h"
#include "base/io/run_dir.h"
#include "train/families/graphormer/graphormer_trainer.h"
#include "app/repro/lm.h"
#include "app/repro/molecules.h"
#include "train/config/run_config.h"

using namespace urpe;
using urpe::test::run_command;
using urpe::test::run_urpe;
namespace fs = std::filesystem;

namespace {

const std::string kFixture = std::string(URPE_SOURCE_DIR) + "/tests/fixtures/zinc_bgnn";
const std::string kConverter = std::string(URPE_SOURCE_DIR) + "/tools/zinc_to_urpe.py";

std::string scratch() {
  static const std::string dir = urpe::test::make_scratch_dir("urpe_test_real_data");
  return dir;
}

void write_text(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

bool have_python3() { return run_command("python3 -c 'import pickle, struct'").code == 0; }

// tools/zinc_to_urpe.py SRC OUT FLAGS; the converter's exit code and output.
urpe::test::CliResult convert(const std::string& src, const std::string& out, const std::string& flags) {
  return run_command("python3 '" + kConverter + "' '" + src + "' '" + out + "' " + flags);
}

// The fixture converted once (subset), shared by the tests that only read it.
std::string converted_subset() {
  static const std::string out = [] {
    const std::string dir = scratch() + "/zinc_subset";
    const auto r = convert(kFixture, dir, "--subset");
    INFO(r.output);
    REQUIRE(r.code == 0);
    return dir;
  }();
  return out;
}

struct SourceRow {
  std::string split;
  int64_t index = 0;
  int64_t row = 0;  // row of the embedded set
  std::string smiles;
};

// fixture_source.csv: which embedded molecule each pickled molecule is.
std::vector<SourceRow> fixture_sources() {
  std::ifstream in(kFixture + "/fixture_source.csv");
  std::string line;
  std::getline(in, line);
  std::vector<SourceRow> rows;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    SourceRow r;
    std::string index, row;
    std::getline(fields, r.split, ',');
    std::getline(fields, index, ',');
    std::getline(fields, row, ',');
    std::getline(fields, r.smiles);
    r.index = std::stoll(index);
    r.row = std::stoll(row);
    rows.push_back(r);
  }
  return rows;
}

const char* benchmark_split(const std::string& urpe_split) { return urpe_split == "valid" ? "val" : urpe_split.c_str(); }

// The graph file's graphs, checked against the graphs urpe builds from the same molecules' SMILES
// and their targets against the embedded set's penalized_logp_normalized.
void check_against_smiles(const data::GraphFileData& g, const std::vector<std::pair<std::string, std::vector<int64_t>>>& parts) {
  const std::vector<SourceRow> sources = fixture_sources();
  const data::EmbeddedMolecules embedded = data::load_embedded_molecules(data::embedded_molecules_dir());
  data::AtomVocabulary zinc = data::AtomVocabulary::zinc();
  for (const auto& [split, expected_indices] : parts) {
    const std::vector<int64_t>& rows = split == "train" ? g.split.train : split == "valid" ? g.split.valid : g.split.test;
    REQUIRE(rows.size() == expected_indices.size());
    for (size_t k = 0; k < rows.size(); ++k) {
      const int64_t r = rows[k];
      CHECK(g.source_index[r] == expected_indices[k]);
      const auto source = std::find_if(sources.begin(), sources.end(), [&](const SourceRow& s) {
        return s.split == benchmark_split(split) && s.index == g.source_index[r];
      });
      REQUIRE(source != sources.end());
      CAPTURE(source->smiles);
      const data::MoleculeGraph want = data::molecule_graph(data::parse_smiles(source->smiles), zinc);
      const data::MoleculeGraph& got = g.dataset.graphs[r];
      CHECK(got.num_nodes == want.num_nodes);
      CHECK(got.node_type == want.node_type);
      CHECK(got.edge_type_matrix == want.edge_type_matrix);
      CHECK(g.dataset.targets[r] == embedded.dataset.targets[source->row]);
    }
  }
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A minimal valid graph file (two atoms types) in `dir`, with `body` as its graph lines.
std::string graph_dir(const std::string& name, const std::string& body, int64_t promised,
                      const std::string& first_line = data::kGraphFileFormatLine) {
  const std::string dir = scratch() + "/" + name;
  write_text(dir + "/atom_types.txt", "C\nO\n");
  write_text(dir + "/graphs.tsv", first_line + "\n# graphs: " + std::to_string(promised) +
                                      "\nsplit\tindex\ttarget\tatoms\tbonds\n" + body);
  return dir;
}

}  // namespace

// ---- ZINC: the converter and the graph file ----

TEST_CASE("zinc_to_urpe: the benchmark's subset and full sets become the graphs urpe builds from the same SMILES") {
  if (!have_python3()) {
    MESSAGE("skipped: needs python3 (standard library only) to run tools/zinc_to_urpe.py");
    return;
  }
  const data::GraphFileData subset = data::load_graph_file(converted_subset());
  CHECK(subset.dataset.vocabulary.size() == 28);  // atom_dict.pickle: the benchmark's 28 types
  for (int32_t id = 0; id < 28; ++id) CHECK(subset.dataset.vocabulary.key(id) == data::AtomVocabulary::zinc().key(id));
  // The .index files' rows, in their order (tests/fixtures/zinc_bgnn/*.index).
  check_against_smiles(subset, {{"train", {13, 2, 7, 0, 11, 5, 9, 15}}, {"valid", {4, 1, 3}}, {"test", {5, 0, 2}}});
  CHECK(subset.comments.find("graphs: 14") != std::string::npos);

  const std::string full_dir = scratch() + "/zinc_full";
  const auto r = convert(kFixture, full_dir, "--full");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("wrote 28 graphs (train 16, valid 6, test 6)") != std::string::npos);
  std::vector<int64_t> train(16), six(6);
  for (int64_t k = 0; k < 16; ++k) train[k] = k;
  for (int64_t k = 0; k < 6; ++k) six[k] = k;
  check_against_smiles(data::load_graph_file(full_dir), {{"train", train}, {"valid", six}, {"test", six}});
}

TEST_CASE("zinc_to_urpe: a missing split file, a truncated pickle or an existing output is one error, nothing written") {
  if (!have_python3()) {
    MESSAGE("skipped: needs python3 (standard library only) to run tools/zinc_to_urpe.py");
    return;
  }
  const std::string src = scratch() + "/zinc_broken";
  fs::remove_all(src);  // each subcase starts from a fresh copy
  fs::create_directories(src);
  for (const auto& entry : fs::directory_iterator(kFixture)) fs::copy_file(entry.path(), src + "/" + entry.path().filename().string());
  SUBCASE("missing split file") {
    fs::remove(src + "/val.index");
    const auto r = convert(src, src + "/out", "--subset");
    CHECK(r.code == 1);
    CHECK(r.output.find(src + "/val.index: missing") != std::string::npos);
  }
  SUBCASE("truncated pickle") {
    const std::string bytes = read_all(kFixture + "/test.pickle");
    write_text(src + "/test.pickle", bytes.substr(0, bytes.size() / 2));
    const auto r = convert(src, src + "/out", "--full");
    CHECK(r.code == 1);
    CHECK(r.output.find(src + "/test.pickle: ") != std::string::npos);
    CHECK(r.output.find("truncated") != std::string::npos);
  }
  SUBCASE("an index past the pickle") {
    write_text(src + "/train.index", "1,2,99\r\n");
    const auto r = convert(src, src + "/out", "--subset");
    CHECK(r.code == 1);
    CHECK(r.output.find(src + "/train.index line 1, item 3: expected a row number below 16") != std::string::npos);
  }
  SUBCASE("another layout") {  // the AqSol-style vocabulary of another benchmark
    write_text(src + "/bond_dict.pickle", read_all(kFixture + "/atom_dict.pickle"));
    const auto r = convert(src, src + "/out", "--subset");
    CHECK(r.code == 1);
    CHECK(r.output.find("bond_dict.pickle: expected the bond types") != std::string::npos);
  }
  CHECK(!fs::exists(src + "/out/graphs.tsv"));
  SUBCASE("an existing output is kept") {
    write_text(src + "/out/graphs.tsv", "mine\n");
    const auto r = convert(src, src + "/out", "--subset");
    CHECK(r.code == 1);
    CHECK(r.output.find("pass --overwrite") != std::string::npos);
    CHECK(read_all(src + "/out/graphs.tsv") == "mine\n");
  }
}

TEST_CASE("graph file: each kind of bad data is one error naming the file and line") {
  const std::string good = "train\t0\t0.5\t0 1 0\t0-1-1 1-2-2\nvalid\t1\t-1\t0\t\ntest\t2\t2\t1 1\t0-1-3\n";
  const data::GraphFileData g = data::load_graph_file(graph_dir("good", good, 3));
  CHECK(g.dataset.size() == 3);
  CHECK(g.split.train == std::vector<int64_t>{0});
  CHECK(g.dataset.graphs[0].edge_type_matrix == std::vector<int32_t>{0, 1, 0, 1, 0, 2, 0, 2, 0});
  CHECK(g.dataset.graphs[1].num_nodes == 1);
  CHECK(g.dataset.targets[2] == 2.0f);

  struct Case {
    const char* what;
    std::string body;
    int64_t promised;
    std::string expected;
  };
  const Case cases[] = {
      {"unknown atom type", "train\t0\t0.5\t0 2\t\n", 1, "graphs.tsv line 4: expected atom type ids in [0, 2) (atom_types.txt), got \"2\""},
      {"unknown bond type", "train\t0\t0.5\t0 1\t0-1-4\n", 1, "graphs.tsv line 4: expected bonds \"i-j-t\""},
      {"bond past the atoms", "train\t0\t0.5\t0 1\t0-2-1\n", 1, "graphs.tsv line 4: expected bonds \"i-j-t\" with 0 <= i < j < 2"},
      {"bond twice", "train\t0\t0.5\t0 1\t0-1-1 0-1-2\n", 1, "graphs.tsv line 4: bond \"0-1-2\": atoms 0 and 1 are bonded twice"},
      {"target out of range", "train\t0\t1e39\t0\t\n", 1, "graphs.tsv line 4: expected the target, a finite number within the float range"},
      {"target not a number", "train\t0\tnan\t0\t\n", 1, "graphs.tsv line 4: expected the target"},
      {"unknown split", "val\t0\t0.5\t0\t\n", 1, "graphs.tsv line 4: expected the split train, valid or test, got \"val\""},
      {"wrong field count", "train\t0\t0.5\t0\n", 1, "graphs.tsv line 4: expected 5 tab-separated fields"},
      {"no atoms", "train\t0\t0.5\t\t\n", 1, "graphs.tsv line 4: expected at least one atom type id"},
      {"truncated", good, 5, "graphs.tsv line 6: expected 5 graphs (\"# graphs:\"), the file has 3 (truncated?)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const std::string dir = graph_dir("bad", c.body, c.promised);
    const std::string expected = dir + "/" + c.expected;
    CHECK_THROWS_WITH_AS(data::load_graph_file(dir), doctest::Contains(expected.c_str()), Error);
  }
  const std::string other = graph_dir("other", good, 3, "smiles,y");
  CHECK_THROWS_WITH_AS(data::load_graph_file(other), doctest::Contains("graphs.tsv line 1: expected \"# urpe-graphs 1\""),
                       Error);
  const std::string no_vocab = graph_dir("no_vocab", good, 3);
  fs::remove(no_vocab + "/atom_types.txt");
  const std::string missing = no_vocab + "/atom_types.txt: missing";
  CHECK_THROWS_WITH_AS(data::load_graph_file(no_vocab), doctest::Contains(missing.c_str()), Error);
  const std::string empty_dir = scratch() + "/empty";
  fs::create_directories(empty_dir);
  CHECK_THROWS_WITH_AS(data::load_graph_file(empty_dir), doctest::Contains("there is no graphs.tsv"), Error);
}

TEST_CASE("dataset = a converted ZINC directory: its split column, and `urpe train` runs on it") {
  if (!have_python3()) {
    MESSAGE("skipped: needs python3 (standard library only) to run tools/zinc_to_urpe.py");
    return;
  }
  const std::string dir = converted_subset();
  const Config config = resolve_config("graphormer-tiny", "", {"dataset=" + dir});
  const GraphormerData d = load_graphormer_data(config);
  CHECK(d.split.train.size() == 8);
  CHECK(d.split.valid.size() == 3);
  CHECK(d.split.test.size() == 3);
  CHECK(d.description.find("the graph file's split column") != std::string::npos);
  CHECK(d.description.find("benchmarking-GNNs ZINC subset") != std::string::npos);

  const std::string out = scratch() + "/train_zinc";
  const auto r = run_urpe("train --preset graphormer-tiny --set dataset=" + dir +
                          " --set steps=2 --set warmup=1 --set batch=4 --set eval_every=2 --quiet --out " + out);
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(fs::exists(out + "/results.json"));
  CHECK(read_all(out + "/config.txt").find("= " + dir + " #") != std::string::npos);
  // A dataset path that is not there: the key and the path named, nothing written.
  const auto bad = run_urpe("train --preset graphormer-tiny --set dataset=" + dir + "_absent --quiet --out " + out + "_bad");
  CHECK(bad.code != 0);
  CHECK(bad.output.find("dataset '" + dir + "_absent' does not exist") != std::string::npos);
  CHECK(!fs::exists(out + "_bad"));
  // A graph file cut short: one line on stderr naming the file and line, and no run directory.
  const std::string cut = scratch() + "/zinc_cut";
  fs::create_directories(cut);
  fs::copy_file(dir + "/atom_types.txt", cut + "/atom_types.txt");
  const std::string text = read_all(dir + "/graphs.tsv");
  write_text(cut + "/graphs.tsv", text.substr(0, text.rfind('\n', text.size() - 2) + 1));  // the last graph dropped
  const auto truncated = run_urpe("train --preset graphormer-tiny --set dataset=" + cut + " --quiet --out " + out + "_cut");
  CHECK(truncated.code != 0);
  CHECK(truncated.output.find(cut + "/graphs.tsv line 19: expected 14 graphs (\"# graphs:\"), the file has 13 (truncated?)") !=
        std::string::npos);
  CHECK(!fs::exists(out + "_cut"));
}

TEST_CASE("repro molecules --data DIR: both models on the converted ZINC split") {
  if (!have_python3()) {
    MESSAGE("skipped: needs python3 (standard library only) to run tools/zinc_to_urpe.py");
    return;
  }
  const std::string dir = converted_subset();
  // The library path the CLI takes (--data adds dataset=DIR to the scale's overrides).
  MoleculeRepro repro = molecule_repro_for_scale("tiny");
  repro.overrides = {"dataset=" + dir, "steps=2", "warmup=1", "batch=4", "eval_every=2"};
  const std::string out = scratch() + "/repro_molecules";
  const std::vector<ResultRow> rows = run_molecule_repro(repro, out);
  CHECK(rows.size() == 6);
  const std::string md = read_all(out + "/results.md");
  CHECK(md.find("graph file") != std::string::npos);
  CHECK(md.find("train 8 / valid 3 / test 3") != std::string::npos);

  // The CLI: --data must exist (checked before --out is claimed) and belongs to molecules only.
  const auto absent = run_urpe("repro molecules --data " + dir + "_absent --out " + out + "_cli_absent");
  CHECK(absent.code != 0);
  CHECK(absent.output.find("--data '" + dir + "_absent' does not exist") != std::string::npos);
  CHECK(!fs::exists(out + "_cli_absent"));
  const auto wrong = run_urpe("repro lm --data " + dir + " --out " + out + "_cli_wrong");
  CHECK(wrong.output.find("--data applies to 'repro molecules' only") != std::string::npos);
  // End to end through the CLI at tiny scale needs `repro --set` (issue 31 item 4) for a short run.
  if (run_urpe("repro --help").output.find("--set") == std::string::npos) {
    MESSAGE("skipped: urpe repro molecules --data DIR --set … end to end (this build's repro has no --set yet)");
    return;
  }
  const auto cli = run_urpe("repro molecules --data " + dir + " --set steps=2 --set warmup=1 --set batch=4 "
                            "--set eval_every=2 --out " + out + "_cli");
  INFO(cli.output);
  CHECK(cli.code == 0);
  CHECK(read_all(out + "_cli/results.md").find("train 8 / valid 3 / test 3") != std::string::npos);
}

// ---- ZINC-250k CSV ----

TEST_CASE("dataset_format = zinc250k: the ZINC-250k CSV layout, target computed from logP and SAS") {
  const std::string csv = data::embedded_molecules_dir() + "/zim100.csv";  // 250k_rndm_zinc_drugs_clean_3's layout
  const GraphormerData d = load_graphormer_data(resolve_config("graphormer-tiny", "", {"dataset=" + csv, "dataset_format=zinc250k"}));
  const data::MoleculeDataset want = data::load_zinc250k_csv(csv, /*normalized=*/true, /*grow_vocabulary=*/true);
  REQUIRE(d.dataset.size() == want.size());
  CHECK(d.dataset.targets == want.targets);
  CHECK(d.description.find("ZINC-250k CSV") != std::string::npos);
  const GraphormerData raw = load_graphormer_data(
      resolve_config("graphormer-tiny", "", {"dataset=" + csv, "dataset_format=zinc250k", "target_column=penalized_logp"}));
  CHECK(raw.dataset.targets == data::load_zinc250k_csv(csv, false, true).targets);
  CHECK_THROWS_WITH_AS(
      load_graphormer_data(resolve_config("graphormer-tiny", "", {"dataset=" + csv, "dataset_format=zinc250k", "target_column=qed"})),
      doctest::Contains("target_column 'qed': dataset_format = zinc250k computes the target"), Error);
  CHECK_THROWS_WITH_AS(resolve_config("graphormer-tiny", "", {"dataset_format=zinc250k"}),
                       doctest::Contains("dataset_format = zinc250k applies to a dataset path"), Error);
  // Read as a plain CSV instead, the same file has no penalized_logp_normalized column.
  CHECK_THROWS_WITH_AS(load_graphormer_data(resolve_config("graphormer-tiny", "", {"dataset=" + csv})),
                       doctest::Contains("penalized_logp_normalized"), Error);
}

// ---- WikiText-103 ----

namespace {

// A small directory in wikitext-103-v1's layout (the tokenised variant: wikitext-103/wiki.*.tokens,
// " = Heading = " lines, blank lines, @-@ and @,@ separators, <unk>), from one article pattern.
std::string wikitext103_dir() {
  const std::string root = scratch() + "/wt103";
  const std::string dir = root + "/wikitext-103";
  const auto article = [](int k) {
    std::ostringstream a;
    a << " \n = Valkyria Chronicles " << k % 12 << " = \n \n"
      << " The game @-@ play of the series began in 2 @,@ 00" << k % 5
      << " , and the <unk> of the team was praised . \n"
      << " \n = = Reception = = \n \n"
      << " Critics said the game was a " << (k % 2 ? "success" : "failure") << " in its first year . \n";
    return a.str();
  };
  std::string train, valid, test;
  for (int k = 0; k < 24; ++k) train += article(k);
  for (int k = 24; k < 27; ++k) valid += article(k);
  for (int k = 27; k < 30; ++k) test += article(k);
  write_text(dir + "/wiki.train.tokens", train);
  write_text(dir + "/wiki.valid.tokens", valid);
  write_text(dir + "/wiki.test.tokens", test);
  return dir;
}

std::vector<std::string> tiny_txl_sets() {
  return {"layers=1", "d_model=16", "heads=2", "d_head=8", "d_inner=32", "tgt_len=6", "mem_len=6", "batch=2",
          "steps=2", "warmup=1", "eval_every=2", "eval_batch=2", "eval_tgt_len=5", "eval_mem_len=6",
          "cutoffs=", "max_eval_tokens=0"};
}

}  // namespace

TEST_CASE("wikitext-103 layout: wiki.*.tokens read as the official Transformer-XL reads them, and repro lm --corpus") {
  const std::string dir = wikitext103_dir();
  const data::Corpus corpus = data::load_corpus(dir);
  CHECK(corpus.train.path == dir + "/wiki.train.tokens");
  CHECK(corpus.test.path == dir + "/wiki.test.tokens");
  for (const char* token : {"@-@", "@,@", "<unk>", "=", "Valkyria"}) {
    INFO(token);
    CHECK(corpus.vocab.contains(token));
  }
  CHECK(corpus.train.lines == 24 * 8);  // blank lines count: each is one <eos>

  LmReproPlan plan = lm_plan_for_scale("tiny");
  plan.overrides = tiny_txl_sets();
  plan.overrides.push_back("corpus=" + dir);  // what --corpus DIR adds
  const std::string out = scratch() + "/repro_lm";
  const LmReproSummary summary = run_lm_repro(plan, out);
  CHECK(summary.corpus == dir);
  CHECK(summary.runs.size() == 2);
  CHECK(summary.vocab == corpus.vocab.size());

  const auto absent = run_urpe("repro lm --corpus " + dir + "_absent --out " + out + "_cli_absent");
  CHECK(absent.code != 0);
  CHECK(absent.output.find("--corpus '" + dir + "_absent' is not a directory") != std::string::npos);
  CHECK(!fs::exists(out + "_cli_absent"));
  fs::remove(dir + "/wiki.valid.tokens");  // a missing split file: named, nothing trained
  CHECK_THROWS_WITH_AS(data::load_corpus(dir), doctest::Contains("valid"), Error);
  write_text(dir + "/wiki.valid.tokens", " = Valkyria Chronicles 1 = \n");
  if (run_urpe("repro --help").output.find("--set") == std::string::npos) {
    MESSAGE("skipped: urpe repro lm --corpus DIR --set … end to end (this build's repro has no --set yet)");
    return;
  }
  std::string sets;
  for (const std::string& s : tiny_txl_sets()) sets += " --set " + s;
  const auto cli = run_urpe("repro lm --corpus " + dir + sets + " --out " + out + "_cli");
  INFO(cli.output);
  CHECK(cli.code == 0);
}
