// CUDA simulator: stands in for <cuda_bf16.h> (see cuda_runtime.h here): the bfloat16 type and
// the conversions urpe's kernels call, on the host. Written from the IEEE rule, apart from
// tensor/bf16.h (the CPU's reference), so that the parity suite compares two implementations:
// round to nearest even on the 16 dropped bits by their remainder (above one half: up; exactly
// one half: up when the kept part is odd), every NaN the canonical 0x7FFF, as CUDA documents.
#pragma once
#include <cstdint>
#include <cstring>

#include "cuda_runtime.h"

struct __nv_bfloat16 {
  unsigned short __x;
};

inline __nv_bfloat16 __float2bfloat16_rn(float a) {
  uint32_t u;
  std::memcpy(&u, &a, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return __nv_bfloat16{0x7fffu};
  unsigned short kept = static_cast<unsigned short>(u >> 16);
  const uint32_t remainder = u << 16;  // the dropped bits, as a fraction of one unit in the last place
  if (remainder > 0x80000000u || (remainder == 0x80000000u && (kept & 1u))) ++kept;
  return __nv_bfloat16{kept};
}
inline __nv_bfloat16 __float2bfloat16(float a) { return __float2bfloat16_rn(a); }

inline float __bfloat162float(__nv_bfloat16 a) {
  const uint32_t u = uint32_t(a.__x) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
