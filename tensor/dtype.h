// Element types: f32 for values, i32 for indices (token ids, bucket maps, masks).
#pragma once
#include <cstddef>
#include <cstdint>

namespace urpe {

enum class DType : uint8_t { f32, i32 };

inline size_t dtype_size(DType) { return 4; }  // both types are 32-bit
inline const char* dtype_name(DType t) { return t == DType::f32 ? "f32" : "i32"; }

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }

}  // namespace urpe
