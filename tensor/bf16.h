// bfloat16 on the host: the storage type of DType::bf16 and its two conversions, the CPU's
// reference for every BF16 kernel (the CUDA kernels use __nv_bfloat16 and the hardware's
// cvt.rn.bf16.f32; test_cast checks both against hand-derived bit patterns).
//
// A bf16 is the top 16 bits of an IEEE float32: sign, the same 8-bit exponent, 7 mantissa bits.
//   to float:   exact, bits << 16.
//   from float: round to nearest, ties to even, on the 16 bits dropped:
//                 u = bits(x);  u + 0x7FFF + ((u >> 16) & 1), then >> 16
//               (adding 0x7FFF rounds a remainder above one half up and one below down; the low
//               bit of the kept part breaks the tie toward even). Finite values that round past
//               the largest bf16 (3.3895e38) carry into the exponent and become ±inf, as IEEE
//               RNE overflow does; ±inf stays ±inf (its dropped bits are zero); subnormals round
//               like any other value (no flush to zero). Every NaN becomes the canonical NaN
//               0x7FFF, as CUDA's __float2bfloat16_rn does (cvt.rn.bf16.f32 on the GPU; the
//               carry would otherwise turn a NaN whose payload is only in the dropped bits into
//               inf), so the CPU and the GPU agree bit for bit on every input.
#pragma once
#include <cstdint>
#include <cstring>

namespace urpe {

struct bf16 {
  uint16_t bits = 0;
};
static_assert(sizeof(bf16) == 2, "bf16 is two bytes");

inline uint16_t float_to_bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFFu;  // NaN
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_bits_to_float(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

inline bf16 to_bf16(float x) { return bf16{float_to_bf16_bits(x)}; }
inline float to_float(bf16 x) { return bf16_bits_to_float(x.bits); }

}  // namespace urpe
