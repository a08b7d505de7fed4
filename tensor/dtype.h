// Element types: f32 for values, bf16 for values stored in half the bytes (mixed precision:
// tensor/bf16.h; computed in FP32), i32 for indices (token ids, bucket maps, masks).
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/bf16.h"

namespace urpe {

enum class DType : uint8_t { f32, i32, bf16 };

inline size_t dtype_size(DType t) { return t == DType::bf16 ? 2 : 4; }
inline const char* dtype_name(DType t) {
  return t == DType::f32 ? "f32" : t == DType::bf16 ? "bf16" : "i32";
}

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<bf16>() { return DType::bf16; }

}  // namespace urpe
