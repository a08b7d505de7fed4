// The engine's Philox4x32-10 (tensor/philox.h) against cuRAND's: the design card promises the same
// generator as cuRAND's CURAND_RNG_PSEUDO_PHILOX4_32_10, and this suite checks it bit for bit with
// cuRAND's host generator (curandCreateGeneratorHost: runs on the CPU, needs no GPU). Built with
// cuRAND where CMake finds the CUDA toolkit; elsewhere it exits 77 and CTest reports it skipped.
//
// How the two streams line up (measured here, cuRAND 10.x of CUDA 13):
// - key: cuRAND's seed is the 64-bit Philox key (low word k0, high word k1), as the engine's seed;
// - counter: cuRAND's 128-bit counter is (offset/4 low, high, subsequence low, high); the engine
//   uses subsequence 0 and counter = its stream position / 4, word = position % 4;
// - layout of curandGenerate (orderings DEFAULT, BEST and LEGACY alike): 65,536 subsequences
//   interleaved four words at a time, so flat output n = 4·(65,536·m + t) + j is word j of block m
//   of subsequence t, and the engine's block m is output[4·65,536·m + j];
// - curandSetGeneratorOffset(o) shifts that flat output by o words (not a position along one
//   subsequence).
// Floats do not match: the engine takes the top 24 bits (x >> 8)·2⁻²⁴ ∈ [0, 1), cuRAND's
// curandGenerateUniform x·2⁻³² + 2⁻³³ ∈ (0, 1]; the 32-bit words they start from are the same.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tensor/philox.h"
#include "tensor/rng.h"
#include "test_util.h"

#if defined(URPE_HAVE_CURAND)
#include <curand.h>
#endif

using namespace urpe;

#if !defined(URPE_HAVE_CURAND)

namespace {
struct SkipWithoutCurand {
  SkipWithoutCurand() {
    std::printf("built without the CUDA toolkit's cuRAND: the Philox comparison is skipped\n");
    std::fflush(stdout);
    std::exit(77);
  }
} skip_without_curand;
}  // namespace

#else

namespace {

constexpr uint64_t kSubsequences = 65536;  // cuRAND's interleaving of the host generator's output

#define CURAND_OK(call) REQUIRE((call) == CURAND_STATUS_SUCCESS)

// curandGenerate's first n words for (seed, generator offset, ordering).
std::vector<uint32_t> curand_words(uint64_t seed, uint64_t offset, curandOrdering_t ordering, size_t n) {
  curandGenerator_t g;
  CURAND_OK(curandCreateGeneratorHost(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  CURAND_OK(curandSetPseudoRandomGeneratorSeed(g, seed));
  CURAND_OK(curandSetGeneratorOrdering(g, ordering));
  CURAND_OK(curandSetGeneratorOffset(g, offset));
  std::vector<uint32_t> out(n);
  CURAND_OK(curandGenerate(g, reinterpret_cast<unsigned int*>(out.data()), n));
  CURAND_OK(curandDestroyGenerator(g));
  return out;
}

}  // namespace

TEST_CASE("Philox4x32-10: the engine's blocks are cuRAND's subsequence 0, bit for bit") {
  int version = 0;
  CURAND_OK(curandGetVersion(&version));
  MESSAGE("cuRAND version " << version);
  const uint64_t blocks = 8;
  const size_t n = 4 * kSubsequences * blocks;
  for (const uint64_t seed : {uint64_t(0), uint64_t(1), uint64_t(0x123456789ABCDEFull), ~uint64_t(0)}) {
    for (const curandOrdering_t ordering :
         {CURAND_ORDERING_PSEUDO_DEFAULT, CURAND_ORDERING_PSEUDO_BEST, CURAND_ORDERING_PSEUDO_LEGACY}) {
      CAPTURE(seed);
      CAPTURE(static_cast<int>(ordering));
      const std::vector<uint32_t> words = curand_words(seed, 0, ordering, n);
      for (uint64_t m = 0; m < blocks; ++m) {
        const PhiloxBlock b = philox4x32(seed, m);
        for (int j = 0; j < 4; ++j) {
          CAPTURE(m);
          CAPTURE(j);
          REQUIRE(words[4 * kSubsequences * m + j] == b.x[j]);
        }
      }
      // The other subsequences are other numbers (the engine never uses them): a sanity check
      // that the comparison above is not between two constant streams.
      CHECK(words[4] != words[0]);
      CHECK(words[4 * kSubsequences] != words[0]);
    }
  }
}

TEST_CASE("Philox4x32-10: the engine's stream (seed, offset) read off cuRAND's output") {
  const uint64_t seed = 20221107;
  const std::vector<uint32_t> words = curand_words(seed, 0, CURAND_ORDERING_PSEUDO_DEFAULT, 4 * kSubsequences * 6);
  // Element k of the engine's stream (seed, offset) is word (offset + k) of subsequence 0, and
  // philox_uniform keeps its top 24 bits.
  for (const uint64_t offset : {uint64_t(0), uint64_t(4), uint64_t(12)})
    for (uint64_t k = 0; k < 8; ++k) {
      const uint64_t position = offset + k;
      const uint32_t word = words[4 * kSubsequences * (position / 4) + position % 4];
      CHECK(philox_uniform(seed, offset, k) == static_cast<float>(word >> 8) * (1.0f / 16777216.0f));
    }
  // Rng draws: reserve(4) takes one whole block, below() and next_seed() read its words.
  Rng rng(seed);
  const uint64_t r = rng.below(uint64_t(1) << 62);  // block 0, words 0 and 1
  CHECK(static_cast<uint64_t>(r) == ((uint64_t(words[0]) << 32 | words[1]) % (uint64_t(1) << 62)));
  const uint64_t child = rng.next_seed();  // block 1, words 2 and 3
  CHECK(child == (uint64_t(words[4 * kSubsequences + 2]) << 32 | words[4 * kSubsequences + 3]));
}

TEST_CASE("Philox4x32-10: curandSetGeneratorOffset shifts cuRAND's flat output") {
  const uint64_t seed = 7;
  const std::vector<uint32_t> base = curand_words(seed, 0, CURAND_ORDERING_PSEUDO_DEFAULT, 4 * kSubsequences * 3);
  for (const uint64_t offset : {uint64_t(1), uint64_t(4), uint64_t(4 * kSubsequences)}) {
    CAPTURE(offset);
    const std::vector<uint32_t> shifted = curand_words(seed, offset, CURAND_ORDERING_PSEUDO_DEFAULT, 4 * kSubsequences);
    for (size_t i = 0; i < shifted.size(); i += 997) REQUIRE(shifted[i] == base[i + offset]);
  }
  // So with offset 4·65,536·m the engine's block m comes first.
  const std::vector<uint32_t> from_block_2 = curand_words(seed, 4 * kSubsequences * 2, CURAND_ORDERING_PSEUDO_DEFAULT, 4);
  const PhiloxBlock b = philox4x32(seed, 2);
  for (int j = 0; j < 4; ++j) CHECK(from_block_2[j] == b.x[j]);
}

#endif
