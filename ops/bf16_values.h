// Reading and writing activations of either value dtype (f32, bf16) in FP32 arithmetic: the CPU
// side of "bf16 in, bf16 out, FP32 compute" (docs/cuda.md#mixed-precision). A bf16 value widens
// exactly; a result is rounded once, to nearest even (tensor/bf16.h), as it is stored. The CUDA
// twin is ops/bf16_values.cuh. Kernels are templates over the element type T (float or bf16), so
// the f32 instantiation is the FP32 code it always was.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace urpe {

// An activation an op reads in either value dtype: f32 or bf16 (not i32).
inline void check_value_dtype(const char* op, const char* arg, const Tensor& t) {
  check_defined(op, arg, t);
  URPE_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::bf16,
             op << ": argument '" << arg << "' must be f32 or bf16, got " << t.describe());
}

}  // namespace urpe

namespace urpe::kernels {

inline float load(const float* p, int64_t k) { return p[k]; }
inline float load(const bf16* p, int64_t k) { return to_float(p[k]); }
inline void store(float* p, int64_t k, float v) { p[k] = v; }
inline void store(bf16* p, int64_t k, float v) { p[k] = to_bf16(v); }

// Calls f(T{}) with T the C++ element type of a value dtype (f32 → float, bf16 → bf16).
template <typename F>
void with_value_type(DType dtype, F&& f) {
  if (dtype == DType::bf16) f(bf16{});
  else f(float{});
}

// An operand whose dtype is known only at run time (a mixed f32/bf16 elementwise op): one branch
// per element, the same for every element.
struct AnyValues {
  const void* data;
  bool is_bf16;
  float operator[](int64_t k) const {
    return is_bf16 ? to_float(static_cast<const bf16*>(data)[k]) : static_cast<const float*>(data)[k];
  }
};
inline AnyValues any_values(const Tensor& t) { return {t.impl().storage->data, t.dtype() == DType::bf16}; }

}  // namespace urpe::kernels
