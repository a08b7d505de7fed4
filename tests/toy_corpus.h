// The toy WikiText-format corpus of the suites that train Transformer-XL under another harness
// (test_dist under mpirun, test_cuda_training on the CUDA path): short sentences of a fixed
// pattern, 60 train lines and 6 each for valid and test, small because the final evaluation reads
// the whole valid and test splits.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "doctest/doctest.h"

namespace urpe::test {

// Writes train.txt, valid.txt and test.txt into `root` (created); returns root.
inline std::string write_toy_corpus(const std::string& root) {
  std::system(("mkdir -p '" + root + "'").c_str());
  const char* words[] = {"the cat", "a dog", "sat on", "ran to", "the mat", "a tree", "."};
  for (const auto& [name, lines] : {std::pair<const char*, int>{"train", 60}, {"valid", 6}, {"test", 6}}) {
    std::FILE* out = std::fopen((root + "/" + name + ".txt").c_str(), "w");
    REQUIRE(out != nullptr);
    for (int k = 0; k < lines; ++k)
      std::fprintf(out, " %s %s %s %s\n", words[k % 2], words[2 + k % 3 % 2], words[4 + k % 2], words[6]);
    std::fclose(out);
  }
  return root;
}

}  // namespace urpe::test
