// The CUDA twin of ops/bf16_values.h: device loads and stores of f32 or bf16 activations, computed
// in FP32. bf16 → f32 is exact (__bfloat162float: a 16-bit shift); f32 → bf16 rounds to nearest
// even (__float2bfloat16_rn: one cvt.rn.bf16.f32 on sm_80+), the bits tensor/bf16.h gives on the
// CPU. A kernel templated over T (float or __nv_bfloat16) moves 2 bytes an element instead of 4
// when T is bf16; its f32 instantiation is the FP32 kernel unchanged.
#pragma once
#include <cuda_bf16.h>

#include "tensor/tensor.h"

namespace urpe::kernels {

static_assert(sizeof(__nv_bfloat16) == sizeof(bf16), "__nv_bfloat16 and urpe::bf16 share a layout");

__device__ __forceinline__ float load(const float* p, int64_t k) { return p[k]; }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t k) { return __bfloat162float(p[k]); }
__device__ __forceinline__ void store(float* p, int64_t k, float v) { p[k] = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t k, float v) { p[k] = __float2bfloat16_rn(v); }

// A tensor's data as the device element type T (float or __nv_bfloat16): T must match its dtype.
template <typename T> T* values(const Tensor& t);
template <> inline float* values<float>(const Tensor& t) { return t.f32(); }
template <> inline __nv_bfloat16* values<__nv_bfloat16>(const Tensor& t) {
  return reinterpret_cast<__nv_bfloat16*>(t.data<bf16>());
}

// Calls f(T{}) with T the device element type of a value dtype (f32 → float, bf16 → __nv_bfloat16).
template <typename F>
void with_device_value_type(DType dtype, F&& f) {
  if (dtype == DType::bf16) f(__nv_bfloat16{});
  else f(float{});
}

// An operand whose dtype is known only at run time (mixed f32/bf16 elementwise ops); the branch is
// the same for every thread.
struct AnyDeviceValues {
  const void* data;
  bool is_bf16;
  __device__ __forceinline__ float operator[](int64_t k) const {
    return is_bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(data)[k])
                   : static_cast<const float*>(data)[k];
  }
};
inline AnyDeviceValues any_device_values(const Tensor& t) {
  return {t.impl().storage->data, t.dtype() == DType::bf16};
}

}  // namespace urpe::kernels
