// Every cross-reference in the sources and the docs resolves: Markdown links and their anchors,
// `docs/x.md#anchor` in comments and help texts, paths of the source tree, README "Section"
// citations (tests/doc_links.h says what counts as each). A renamed section, a moved file or a
// deleted page fails here, naming the file and line that still points to it.
// Also: docs/testing.md's table names every suite, so a new suite cannot go undescribed.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "doc_links.h"
#include "doctest/doctest.h"

namespace fs = std::filesystem;
using urpe::test::doc_links::Checker;
using urpe::test::doc_links::heading_anchor;
using urpe::test::doc_links::markdown_anchors;
using urpe::test::doc_links::read_text;

namespace {

// Example locations of downloaded data sets in docs/data.md and docs/reproduce.md (the user makes
// them; the repository holds only data/assets).
void allow_user_data(Checker& checker) {
  for (const char* prefix : {"data/zinc-subset", "data/zinc-full", "data/pcqm4m-v2", "data/wikitext-103"})
    checker.allow_user_path(prefix);
  // docs/architecture.md's "Add a family" example: the files a user writes for a family `toy`.
  checker.allow_user_path("train/families/toy/");
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("anchors are GitHub's") {
  CHECK(heading_anchor("Reproducing the paper's synthetic tasks (Figures 1 and 2)") ==
        "reproducing-the-papers-synthetic-tasks-figures-1-and-2");
  CHECK(heading_anchor("Fused attention (`attention = fused`)") == "fused-attention-attention--fused");
  CHECK(heading_anchor("profile.md: the key averages") == "profilemd-the-key-averages");
  CHECK(heading_anchor("Runtime and memory (§5.4, Table 5)") == "runtime-and-memory-54-table-5");
  CHECK(heading_anchor("E₁₀ and A·1 — a test") == "e₁₀-and-a1--a-test");
  CHECK(heading_anchor("urpe train --profile-steps A:B") == "urpe-train---profile-steps-ab");
  const auto anchors = markdown_anchors("# Title\n\n## Usage\n\n```\n## not a heading\n```\n## Usage\n<a id=\"old-name\"></a>\n");
  CHECK(anchors.count("title") == 1);
  CHECK(anchors.count("usage") == 1);
  CHECK(anchors.count("usage-1") == 1);
  CHECK(anchors.count("old-name") == 1);
  CHECK(anchors.count("not-a-heading") == 0);
}

TEST_CASE("the checker finds each kind of dangling reference") {
  const fs::path root = fs::temp_directory_path() / ("urpe_doc_links_" + std::to_string(::getpid()));
  fs::remove_all(root);
  write(root / "README.md", "# x\n\n## Tests\n\n## Build options\n");
  write(root / "docs/a.md", "# Page A\n\n## Section one\n");
  write(root / "ops/softmax.h", "// softmax\n");
  write(root / "docs/b.md",
        "[fine](a.md#section-one) [gone](a.md#section-two) [missing](c.md)\n"
        "`ops/softmax.h` `ops/soft*` `ops/missing.h` `ops/nothing*`\n"
        "see docs/a.md#section-one and docs/a.md#nowhere\n"
        "[up](../README.md#build-options)\n```\n[in code](nowhere.md)\n```\n");
  write(root / "ops/softmax.cpp",
        "// README \"Tests\", README \"Build options\", README \"Benchmarks\", README: Which one\n"
        "// docs/b.md and docs/old.md\n"
        "// (README, 'Tests'), (README, 'Where position lives'), README's \u201cTests\u201d\n"
        "// `docs/a.md`, \"Section one\"; a.md's 'Section two'; docs/a.md: \"Nowhere\"\n");
  // A user's downloaded data and a virtual environment are not the repository's text.
  write(root / "data/zinc-subset/README.md", "[gone](nowhere.md) `ops/missing.h`\n");
  write(root / ".venv/lib/x.py", "# see ops/missing.h\n");
  Checker checker(root);
  int references = 0;
  for (const fs::path& file : checker.text_files()) references += checker.check_file(file);
  std::string all;
  for (const auto& p : checker.problems()) all += describe(p) + "\n";
  INFO(all);
  CHECK(checker.problems().size() == 11);
  CHECK(all.find("docs/b.md:1: link to 'a.md#section-two': no section with the anchor #section-two in docs/a.md") !=
        std::string::npos);
  CHECK(all.find("docs/b.md:1: link to 'c.md': no such file or folder") != std::string::npos);
  CHECK(all.find("docs/b.md:2: 'ops/missing.h' names no file") != std::string::npos);
  CHECK(all.find("docs/b.md:2: 'ops/nothing*' names no file") != std::string::npos);
  CHECK(all.find("docs/b.md:3: 'docs/a.md#nowhere': no section") != std::string::npos);
  CHECK(all.find("ops/softmax.cpp:1: README has no section \"Benchmarks\"") != std::string::npos);
  CHECK(all.find("ops/softmax.cpp:1: a README section cited as 'README: Which one") != std::string::npos);
  CHECK(all.find("ops/softmax.cpp:2: 'docs/old.md' names no file") != std::string::npos);
  // Quoted section names in prose, after a comma or 's, in straight or curly quotes.
  CHECK(all.find("ops/softmax.cpp:3: README has no section \"Where position lives\"") != std::string::npos);
  CHECK(all.find("ops/softmax.cpp:4: docs/a.md has no section \"Section two\"") != std::string::npos);
  CHECK(all.find("ops/softmax.cpp:4: docs/a.md has no section \"Nowhere\"") != std::string::npos);
  CHECK(all.find("nowhere.md") == std::string::npos);  // code blocks are not links
  CHECK(references >= 19);
  fs::remove_all(root);
}

TEST_CASE("every cross-reference in the sources and docs resolves") {
  Checker checker(URPE_SOURCE_DIR);
  allow_user_data(checker);
  int references = 0, files = 0, markdown = 0;
  for (const fs::path& file : checker.text_files()) {
    references += checker.check_file(file);
    ++files;
    markdown += file.extension() == ".md";
  }
  std::string report;
  for (const auto& p : checker.problems()) report += "  " + describe(p) + "\n";
  MESSAGE(files << " files (" << markdown << " Markdown), " << references << " references checked");
  INFO("dangling references (fix the reference, or the section or file it names):\n" << report);
  CHECK(checker.problems().empty());
  CHECK(markdown >= 15);       // README, docs/, bench/: the scan did reach them
  CHECK(references >= 1000);   // and found the references they hold
}

TEST_CASE("docs/testing.md names every suite") {
  // Its table says what each tests/test_*.cpp checks: a new suite without its row fails here.
  const fs::path root(URPE_SOURCE_DIR);
  const std::string page = read_text(root / "docs/testing.md");
  REQUIRE_MESSAGE(!page.empty(), "docs/testing.md is missing or empty");
  int suites = 0;
  for (const auto& entry : fs::directory_iterator(root / "tests")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("test_", 0) != 0 || entry.path().extension() != ".cpp") continue;
    ++suites;
    const std::string suite = entry.path().stem().string();
    CHECK_MESSAGE(page.find("`" + suite + "`") != std::string::npos,
                  "docs/testing.md has no row naming `" << suite << "` (tests/" << name << ")");
  }
  CHECK(suites >= 40);
}
