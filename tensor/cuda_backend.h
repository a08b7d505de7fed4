// The few device primitives the tensor core itself needs (allocation, copies, fill, accumulate).
// Implemented in tensor/cuda_context.cu when CUDA is built, and in tensor/cuda_absent.cpp
// (every call throws a clear "built without CUDA" error) otherwise, so no caller needs #ifdefs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace urpe::cuda {

class Context;

bool built_with_cuda();
int device_count();  // 0 when built without CUDA or when no GPU is visible
std::shared_ptr<Context> create_context(int device_index);

void* allocate(Context* context, size_t bytes);
void release(Context* context, void* pointer, size_t bytes);
void copy_host_to_device(Context* context, void* dst, const void* src, size_t bytes);
void copy_device_to_host(Context* context, void* dst, const void* src, size_t bytes);
void copy_device_to_device(Context* context, void* dst, const void* src, size_t bytes);
void fill_f32(Context* context, float* dst, size_t n, float value);
void fill_i32(Context* context, int32_t* dst, size_t n, int32_t value);
void accumulate_f32(Context* context, float* dst, const float* src, size_t n);  // dst += src
void synchronize(Context* context);

}  // namespace urpe::cuda
