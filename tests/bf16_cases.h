// Float → bf16 rounding cases with their results derived by hand (not by any implementation):
// the CPU suite (test_bf16) checks tensor/bf16.h and the cast op with them, the parity suite
// the CUDA cast kernel (the GPU's cvt.rn.bf16.f32, or the simulator's <cuda_bf16.h>).
// A float's top 16 bits are kept; the low 16 are the remainder r, compared with one half (0x8000).
#pragma once
#include <cstdint>
#include <vector>

namespace urpe::test {

struct Bf16Case {
  const char* what;
  uint32_t f32_bits;
  uint16_t bf16_bits;
};

inline const std::vector<Bf16Case>& bf16_cases() {
  static const std::vector<Bf16Case> cases{
      {"1.0: exact", 0x3F800000u, 0x3F80u},
      {"r below one half: down", 0x3F807FFFu, 0x3F80u},
      {"r above one half: up", 0x3F808001u, 0x3F81u},
      {"tie, kept part even: stays", 0x3F808000u, 0x3F80u},
      {"tie, kept part odd: up to even", 0x3F818000u, 0x3F82u},
      {"negative tie, odd: away from zero to even", 0xBF818000u, 0xBF82u},
      {"negative tie, even: stays", 0xBF808000u, 0xBF80u},
      {"carry into the exponent (1.9999999 → 2)", 0x3FFFFFFFu, 0x4000u},
      {"+0", 0x00000000u, 0x0000u},
      {"-0", 0x80000000u, 0x8000u},
      {"+inf", 0x7F800000u, 0x7F80u},
      {"-inf", 0xFF800000u, 0xFF80u},
      {"largest bf16: exact", 0x7F7F0000u, 0x7F7Fu},
      {"just under the overflow tie: largest bf16", 0x7F7F7FFFu, 0x7F7Fu},
      {"overflow tie (odd): +inf", 0x7F7F8000u, 0x7F80u},
      {"largest float: +inf", 0x7F7FFFFFu, 0x7F80u},
      {"negative largest float: -inf", 0xFF7FFFFFu, 0xFF80u},
      {"quiet NaN: canonical NaN", 0x7FC00000u, 0x7FFFu},
      {"NaN with payload only in the dropped bits: NaN, not inf", 0x7F800001u, 0x7FFFu},
      {"negative NaN: canonical NaN", 0xFFC00001u, 0x7FFFu},
      {"smallest subnormal: down to +0", 0x00000001u, 0x0000u},
      {"subnormal tie, even: +0", 0x00008000u, 0x0000u},
      {"subnormal above one half: up", 0x00008001u, 0x0001u},
      {"subnormal tie, odd: up to even", 0x00018000u, 0x0002u},
      {"largest subnormal: up to the smallest normal", 0x007FFFFFu, 0x0080u},
      {"negative subnormal: down in magnitude", 0x80012345u, 0x8001u},
  };
  return cases;
}

}  // namespace urpe::test
